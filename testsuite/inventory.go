package testsuite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/namedsql"
)

// inventoryEvent is one event of the inventory's outbox with the stored
// answers that name it.
type inventoryEvent struct {
	EventID     string `db:"event_id"`
	AggregateID string `db:"aggregate_id"`
	Type        string `db:"event_type"`
	Sequence    int64  `db:"aggregate_sequence"`
	Published   bool   `db:"published"`
	Quarantined bool   `db:"quarantined"`
	Answers     int64  `db:"answers"`
}

// inventoryReservation is one order's reservation with its events.
type inventoryReservation struct {
	OrderID        string `db:"order_id"`
	Status         string `db:"status"`
	ReservedEvents int64  `db:"reserved_events"`
	ReleasedEvents int64  `db:"released_events"`
	Held           int64  `db:"held"`
}

// inventoryStock is one SKU's levels and what reservations hold of it.
type inventoryStock struct {
	SKU       string `db:"sku"`
	Available int64  `db:"available"`
	Reserved  int64  `db:"reserved"`
	Held      int64  `db:"held"`
}

// InventoryReport summarises what [CheckInventory] saw.
type InventoryReport struct {
	Events, Reservations, Reserved, Released int
}

func (r InventoryReport) String() string {
	return fmt.Sprintf("inventory events=%d reservations=%d (reserved=%d released=%d)", r.Events, r.Reservations, r.Reserved, r.Released)
}

// CheckInventory asserts the four invariants on the inventory service's
// database (cmd/inventory), as [CheckInvariants] does on the order
// database, and that its stock is consistent:
//
//  1. every committed reserve or release has exactly one event, named by
//     its one stored answer, in a gap-free per-order sequence;
//  2. no event without its committed change (an answer naming it), and no
//     answer naming an event the outbox lacks;
//  3. every event was published, none quarantined, none before a
//     predecessor of its order (the saga's signals go by signal, so no
//     workflow has the event's ID to look for);
//  4. the stock counts each reservation once: per SKU, reserved equals what
//     the reservations still held hold and available+reserved equals the
//     total stocked (total, by SKU); a reservation held has one
//     StockReserved and no StockReleased, a released one one StockReleased.
//
// orders, when not nil, is the order database: every reservation's order
// must exist there, and one still held must be confirmed.
func CheckInventory(ctx context.Context, inv, orders *pgxpool.Pool, total map[string]int64) (InventoryReport, error) {
	var rep InventoryReport
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	events, err := qInventoryEvents.All(ctx, inv, namedsql.NoArgs{})
	if err != nil {
		return rep, err
	}
	rep.Events = len(events)
	next := map[string]int64{}
	for _, e := range events {
		next[e.AggregateID]++
		if e.Sequence != next[e.AggregateID] {
			fail("invariant 1: inventory event %s (%s) of order %s has sequence %d, want %d (gap or duplicate)",
				e.EventID, e.Type, e.AggregateID, e.Sequence, next[e.AggregateID])
			next[e.AggregateID] = e.Sequence
		}
		if e.Answers != 1 {
			fail("invariants 1 and 2: inventory event %s (%s) of order %s is named by %d stored answers, want 1",
				e.EventID, e.Type, e.AggregateID, e.Answers)
		}
		if !e.Published || e.Quarantined {
			fail("invariant 3: inventory event %s (%s) of order %s: published %v, quarantined %v",
				e.EventID, e.Type, e.AggregateID, e.Published, e.Quarantined)
		}
	}
	lost, err := qInventoryAnswersWithoutEvent.Value(ctx, inv, namedsql.NoArgs{})
	if err != nil {
		return rep, err
	}
	if lost != 0 {
		fail("invariant 1: %d stored inventory answers name an event the outbox lacks", lost)
	}
	outOfOrder, err := qPublishedOutOfOrder.Value(ctx, inv, namedsql.NoArgs{})
	if err != nil {
		return rep, err
	}
	if outOfOrder != 0 {
		fail("invariant 3: %d inventory events published before a predecessor of their order", outOfOrder)
	}

	reservations, err := qInventoryReservations.All(ctx, inv, namedsql.NoArgs{})
	if err != nil {
		return rep, err
	}
	rep.Reservations = len(reservations)
	for _, r := range reservations {
		switch r.Status {
		case "reserved":
			rep.Reserved++
			if r.ReservedEvents != 1 || r.ReleasedEvents != 0 || r.Held == 0 {
				fail("invariant 4: reservation of order %s held (%d units) with %d StockReserved and %d StockReleased, want some units, 1 and 0",
					r.OrderID, r.Held, r.ReservedEvents, r.ReleasedEvents)
			}
		case "released":
			rep.Released++
			if r.ReservedEvents > 1 || r.ReleasedEvents != 1 {
				fail("invariant 4: released reservation of order %s with %d StockReserved and %d StockReleased, want at most 1 and 1",
					r.OrderID, r.ReservedEvents, r.ReleasedEvents)
			}
		}
		if orders == nil {
			continue
		}
		status, err := qOrderStatus.Value(ctx, orders, orderIDArgs{ID: r.OrderID})
		switch {
		case err != nil:
			fail("reservation of order %s: the order database has no such order: %v", r.OrderID, err)
		case r.Status == "reserved" && status != "confirmed":
			fail("reservation of order %s still held, but the order is %s", r.OrderID, status)
		}
	}

	stock, err := qInventoryStock.All(ctx, inv, namedsql.NoArgs{})
	if err != nil {
		return rep, err
	}
	for _, s := range stock {
		if s.Reserved != s.Held {
			fail("invariant 4: SKU %s has %d reserved but its held reservations hold %d", s.SKU, s.Reserved, s.Held)
		}
		if want, ok := total[s.SKU]; ok && s.Available+s.Reserved != want {
			fail("invariant 4: SKU %s has %d available and %d reserved, want %d in all", s.SKU, s.Available, s.Reserved, want)
		}
	}
	return rep, errors.Join(errs...)
}

// WaitInventory runs [CheckInventory] until it passes (the relay may still
// be publishing) or timeout passes, and returns its last result.
func WaitInventory(ctx context.Context, inv, orders *pgxpool.Pool, total map[string]int64, timeout time.Duration) (InventoryReport, error) {
	deadline := time.Now().Add(timeout)
	for {
		rep, err := CheckInventory(ctx, inv, orders, total)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return rep, err
		}
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
