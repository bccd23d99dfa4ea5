package codec_test

import (
	"context"
	"testing"

	"go.temporal.io/sdk/converter"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
	// The order app's tables in testdb's template (it migrates the sets
	// the binary registers).
	_ "github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// BenchmarkConvert is the CPU cost of one payload written and read back:
// the OrderCreated input (the relay's one payload per start, under the
// customer's key, cached) and a charge input (master key), plain JSON
// against the codec with and without zlib.
//
//	go test -run - -bench Convert -benchmem ./internal/codec/
func BenchmarkConvert(b *testing.B) {
	k, err := codec.ParseKeys(k1)
	if err != nil {
		b.Fatal(err)
	}
	store := codec.NewMemoryStore()
	in := orderInput(&testing.T{}, "ada@example.com")
	charge := activities.ChargeInput{EventID: in.EventID, OrderID: "order-1", Amount: 2500, Currency: "usd", PaymentMethod: "pm_card_visa"}
	for _, c := range []struct {
		name string
		dc   converter.DataConverter
	}{
		{"plain", converter.GetDefaultDataConverter()},
		{"codec", codec.NewDataConverter(k, codec.Options{Store: store, Subject: personal.Subject})},
		{"codec-nozlib", codec.NewDataConverter(k, codec.Options{Store: store, Subject: personal.Subject, NoCompression: true})},
	} {
		for _, v := range []struct {
			name string
			val  any
		}{{"order-input", in}, {"charge-input", charge}} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				for b.Loop() {
					ps, err := c.dc.ToPayloads(v.val)
					if err != nil {
						b.Fatal(err)
					}
					var out handoff.EventInput
					if v.name == "order-input" {
						err = c.dc.FromPayloads(ps, &out)
					} else {
						var ci activities.ChargeInput
						err = c.dc.FromPayloads(ps, &ci)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkEncodeCustomerPG is the cost of encoding a customer's payload
// against the real key store: every encode reads the customer's key (FOR
// KEY SHARE), so that no process encrypts with an erased key; wal_B/op is
// what that read writes to PostgreSQL's WAL.
//
//	go test -run - -bench EncodeCustomerPG -benchmem ./internal/codec/
func BenchmarkEncodeCustomerPG(b *testing.B) {
	k, err := codec.ParseKeys(k1)
	if err != nil {
		b.Fatal(err)
	}
	pool, _ := testdb.New(b)
	ctx := context.Background()
	dc := codec.NewDataConverter(k, codec.Options{Store: codec.NewPGStore(pool)})
	in := orderInput(&testing.T{}, "ada@example.com")
	if _, err := dc.ToPayloads(in); err != nil {
		b.Fatal(err)
	}
	var before, after int64
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&before); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := dc.ToPayloads(in); err != nil {
			b.Fatal(err)
		}
	}
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&after); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(after-before)/float64(b.N), "wal_B/op")
}
