package sinktest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSinkNamesEveryMissingField: a Sink without its mandatory fields is
// refused with one error naming each of them and what to set.
func TestSinkNamesEveryMissingField(t *testing.T) {
	t.Parallel()
	err := Sink{}.validate()
	for _, want := range []string{"Sink.Publisher is nil", "Sink.Effects is nil", "Sink.Refused is nil", "Sink.MaxPayload is 0", "Sink.Outage is nil"} {
		require.ErrorContains(t, err, want)
	}
}

// TestEventPayloadIsTheSizeAsked: the suite's events carry a JSON payload
// of exactly the size a case asks for, so "just over the limit" is.
func TestEventPayloadIsTheSizeAsked(t *testing.T) {
	t.Parallel()
	s := Sink{}
	s.setDefaults()
	for _, size := range []int{64, 1000, 2<<20 + 1} {
		e := s.event(t, size)
		require.Len(t, e.Payload, size)
		require.True(t, json.Valid(e.Payload), "the payload is JSON")
	}
	require.Len(t, s.event(t, 0).Payload, len(`{"data":""}`)+16, "a small event")
}
