package temporalpub

// WhoseFaultForTest is whoseFault.
func WhoseFaultForTest(err error) error { return whoseFault(err) }
