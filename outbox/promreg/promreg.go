// Package promreg is the one way outflow's components register their
// Prometheus collectors: on the registry their caller gives them, sharing
// the collector another component of the same kind registered there first
// (two relays, two publishers or two workers in one process then add up into
// one series), and failing only when a collector of another kind or shape
// holds the name.
package promreg

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it, or returns the collector of
// the same description already registered there. A nil reg registers
// nothing and returns c: the component counts for itself (tests). Any other
// refusal (the same name with other labels or help, or a collector of
// another type) is an error naming the collector.
func Register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if reg == nil {
		return c, nil
	}
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register %s: %w", describe(c), err)
}

// RegisterAll is [Register] for several collectors of one type, each
// replaced by the collector to use; it stops at the first error.
func RegisterAll[T prometheus.Collector](reg prometheus.Registerer, cs ...*T) error {
	for _, c := range cs {
		var err error
		if *c, err = Register(reg, *c); err != nil {
			return err
		}
	}
	return nil
}

// describe names c's metrics for an error.
func describe(c prometheus.Collector) string {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	var names []string
	for d := range ch {
		names = append(names, d.String())
	}
	if len(names) == 0 {
		return "a collector"
	}
	return fmt.Sprint(names)
}
