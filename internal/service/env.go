package service

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/cli"
)

// Env reads typed settings from the environment. A malformed value is
// recorded, its default kept, and [Env.Err] reports every one of them at
// once, so an operator fixes the configuration in one go.
type Env struct {
	getenv func(string) string
	errs   []error
}

// NewEnv reads through getenv (os.Getenv, or a map's lookup in tests).
func NewEnv(getenv func(string) string) *Env { return &Env{getenv: getenv} }

// String returns the variable, or def when it is unset or empty.
func (e *Env) String(name, def string) string {
	if v := e.getenv(name); v != "" {
		return v
	}
	return def
}

// Duration returns the variable as a Go duration, or def when it is unset.
// Zero is accepted only when zeroOK (a setting where 0 means "off");
// negative durations never are.
func (e *Env) Duration(name string, def time.Duration, zeroOK bool) time.Duration {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	d, err := cli.Duration(name, v, zeroOK)
	if err != nil {
		e.errs = append(e.errs, err)
		return def
	}
	return d
}

// PositiveInt returns the variable as an integer of at least 1, or def when
// it is unset.
func (e *Env) PositiveInt(name string, def int) int {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a positive integer", name, v))
		return def
	}
	return n
}

// PositiveFloat returns the variable as a number above 0, or def when it is
// unset.
func (e *Env) PositiveFloat(name string, def float64) float64 {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: want a positive number", name, v))
		return def
	}
	return f
}

// Fail records a problem found while reading the environment.
func (e *Env) Fail(err error) { e.errs = append(e.errs, err) }

// Err is every problem found so far, joined, as a configuration error
// (cli.ConfigError: exit status 2, one plain line each); nil when there
// was none.
func (e *Env) Err() error { return cli.Config(errors.Join(e.errs...)) }

// TaskQueueEnv names the workflows' task queue.
const TaskQueueEnv = "OUTFLOW_TASK_QUEUE"

// TaskQueue is the task queue the worker polls and the relay starts
// workflows on: OUTFLOW_TASK_QUEUE, default handoff.DefaultTaskQueue.
func TaskQueue(env *Env) string { return env.String(TaskQueueEnv, handoff.DefaultTaskQueue) }
