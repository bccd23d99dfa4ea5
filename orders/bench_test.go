package orders

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// BenchmarkOrderWrite measures what the outbox costs the write path: the same
// order insert (queueInsertOrder, the InsertOrder statement) in a transaction of
// its own, and followed by outbox.Enqueue of its OrderCreated event as
// CreateOrderTx does. "interleaved" alternates the two in random order, so
// drift in the machine's load hits both alike, and reports the ratio of their
// medians (target: at most 1.30):
//
//	go test -run '^$' -bench BenchmarkOrderWrite -benchtime 2000x ./orders/
func BenchmarkOrderWrite(b *testing.B) {
	pool, _ := testdb.New(b)
	ctx := context.Background()
	p, amount, err := validParams().Validate()
	if err != nil {
		b.Fatal(err)
	}
	orderOnly := func() error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, _, err := p.Validate(); err != nil { // the same CPU work as the outbox variant
				return err
			}
			ids, err := newOrderIDs()
			if err != nil {
				return err
			}
			b := &pgx.Batch{}
			var status Status
			if err := queueInsertOrder(b, ids, p, amount, &status); err != nil {
				return err
			}
			return tx.SendBatch(ctx, b).Close()
		})
	}
	withOutbox := func() error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			ids, err := newOrderIDs()
			if err != nil {
				return err
			}
			_, err = createOrderTx(ctx, tx, p, ids, nil)
			return err
		})
	}
	warmUp(b, orderOnly, withOutbox)

	b.Run("order-only", func(b *testing.B) {
		for b.Loop() {
			if err := orderOnly(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("order+outbox", func(b *testing.B) {
		for b.Loop() {
			if err := withOutbox(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("interleaved", func(b *testing.B) {
		var only, with []time.Duration
		time1 := func(f func() error, into *[]time.Duration) {
			start := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			*into = append(*into, time.Since(start))
		}
		for b.Loop() {
			if rand.IntN(2) == 0 {
				time1(orderOnly, &only)
				time1(withOutbox, &with)
			} else {
				time1(withOutbox, &with)
				time1(orderOnly, &only)
			}
		}
		mOnly, mWith := median(only), median(with)
		b.ReportMetric(float64(mOnly.Nanoseconds()), "order-only-median-ns")
		b.ReportMetric(float64(mWith.Nanoseconds()), "order+outbox-median-ns")
		b.ReportMetric(float64(mWith)/float64(mOnly), "ratio")
	})
}

// warmUp fills the connection pool and the plan caches so the first
// sub-benchmark does not pay for them.
func warmUp(b *testing.B, fs ...func() error) {
	for range 20 {
		for _, f := range fs {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
