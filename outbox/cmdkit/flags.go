package cmdkit

import (
	"errors"
	"flag"
	"io"
	"regexp"
	"strings"
)

// longFlag is a line of flag.PrintDefaults that names a flag of more than
// one letter, which it writes with one dash.
var longFlag = regexp.MustCompile(`(?m)^  -([^-\s]{2,})`)

// flagInError is a flag named in one of the flag package's errors, which
// it writes with one dash ("flag provided but not defined: -bogus").
var flagInError = regexp.MustCompile(`(^|\s)-([a-zA-Z][^\s:=]+)`)

// ParseFlags is fs.Parse(args), but the flag package prints nothing itself,
// and its error for a bad flag names it with two dashes (flag provided but
// not defined: --bogus), the style of [PrintFlags]; the caller says it.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	if strings.HasPrefix(err.Error(), "bad flag syntax") { // as typed
		return err
	}
	return errors.New(flagInError.ReplaceAllString(err.Error(), "$1--$2"))
}

// PrintFlags writes fs's flags as flag.PrintDefaults does, but every flag
// longer than one letter with two dashes (--database-url): the one style
// every binary's help and messages use. The flag package accepts both.
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	out := fs.Output()
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	io.WriteString(w, longFlag.ReplaceAllString(b.String(), "  --$1"))
}
