package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/bench/benchdb"
	"github.com/outflow/outflow/internal/bench/benchstat"
	"github.com/outflow/outflow/orders"
)

// measureWriteOverhead compares what the outbox costs the producer: an
// order-only transaction (the InsertOrder statement of orders.CreateOrderTx,
// run alone) against orders.CreateOrderTx (the same insert plus its
// OrderCreated event, one round trip). The two alternate in random order so
// drift hits both alike, and the ratio is of their medians — the method of
// orders.BenchmarkOrderWrite.
func (b *bench) measureWriteOverhead(ctx context.Context) error {
	pool, done, err := b.srv.scratchPool(ctx, "write")
	if err != nil {
		return err
	}
	defer done()

	p := benchdb.Order()
	orderOnly := func() error { return orderOnlyTx(ctx, pool, p) }
	withOutbox := func() error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := orders.CreateOrderTx(ctx, tx, p)
			return err
		})
	}
	for range 20 { // connections and plan caches
		if err := orderOnly(); err != nil {
			return err
		}
		if err := withOutbox(); err != nil {
			return err
		}
	}
	n := b.cfg.writePairs
	b.progress("write: %d order-only and %d order+outbox transactions, interleaved in random order", n, n)
	only := make([]time.Duration, 0, n)
	with := make([]time.Duration, 0, n)
	timed := func(f func() error, into *[]time.Duration) error {
		start := time.Now()
		if err := f(); err != nil {
			return err
		}
		*into = append(*into, time.Since(start))
		return nil
	}
	for range n {
		var err error
		if rand.IntN(2) == 0 {
			if err = timed(orderOnly, &only); err == nil {
				err = timed(withOutbox, &with)
			}
		} else {
			if err = timed(withOutbox, &with); err == nil {
				err = timed(orderOnly, &only)
			}
		}
		if err != nil {
			return err
		}
	}
	mOnly, mWith := benchstat.Median(only), benchstat.Median(with)
	b.rep.add(metric{name: "write_order_only_median_ms", value: benchstat.Ms(mOnly), decimals: 2})
	b.rep.add(metric{name: "write_order_outbox_median_ms", value: benchstat.Ms(mWith), decimals: 2})
	b.rep.add(metric{name: "write_overhead_ratio", value: benchstat.Ratio(float64(mWith), float64(mOnly)), decimals: 2, target: atMost(1.3)})
	b.rep.note("write: %d pairs, each an order-only transaction (orders.SQL(\"InsertOrder\"), the statement CreateOrderTx "+
		"sends) and orders.CreateOrderTx (that insert plus outbox.EnqueueBatch, one round trip), in random order; "+
		"ratio of medians, wall time from BEGIN to the return of COMMIT.", n)
	return nil
}

// orderOnlyTx writes the order row alone, in a transaction of its own, with
// the same validation, IDs and insert as orders.CreateOrderTx.
func orderOnlyTx(ctx context.Context, pool *pgxpool.Pool, p orders.CreateOrderParams) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		p, amount, err := p.Validate()
		if err != nil {
			return err
		}
		order, err := uuid.NewV7()
		if err != nil {
			return err
		}
		event, err := uuid.NewV7()
		if err != nil {
			return err
		}
		items, err := json.Marshal(p.Items)
		if err != nil {
			return err
		}
		batch := &pgx.Batch{}
		var status orders.Status
		batch.Queue(orders.SQL("InsertOrder"), pgx.StrictNamedArgs{
			"id": order, "customer_email": p.CustomerEmail, "currency": p.Currency, "payment_method": p.PaymentMethod,
			"amount": amount, "items": items, "created_event_id": event,
		}).QueryRow(func(row pgx.Row) error { return row.Scan(&status) })
		return tx.SendBatch(ctx, batch).Close()
	})
}
