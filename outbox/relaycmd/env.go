package relaycmd

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// env reads the variables through getenv and collects every malformed one,
// so that the starter reports them all at once.
type env struct {
	getenv func(string) string
	errs   []error
}

func (e *env) String(name, def string) string {
	if v := e.getenv(name); v != "" {
		return v
	}
	return def
}

// Duration reads a Go duration; 0 is refused unless zeroOK.
func (e *env) Duration(name string, def time.Duration, zeroOK bool) time.Duration {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d == 0 && !zeroOK) {
		want := "a positive Go duration such as 30s, 10m or 168h"
		if zeroOK {
			want += ", or 0 to turn it off"
		}
		e.Fail(fmt.Errorf("%s=%q: want %s", name, v, want))
		return def
	}
	return d
}

func (e *env) PositiveInt(name string, def int) int {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		e.Fail(fmt.Errorf("%s=%q: want a positive integer", name, v))
		return def
	}
	return n
}

func (e *env) PositiveFloat(name string, def float64) float64 {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		e.Fail(fmt.Errorf("%s=%q: want a positive number", name, v))
		return def
	}
	return f
}

func (e *env) Fail(err error) { e.errs = append(e.errs, err) }

func (e *env) Err() error { return errors.Join(e.errs...) }
