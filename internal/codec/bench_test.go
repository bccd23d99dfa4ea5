package codec_test

import (
	"testing"

	"go.temporal.io/sdk/converter"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
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
