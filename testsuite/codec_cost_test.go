package testsuite

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// codecCostEnv sets BenchmarkCodecCost's orders per round (default
// codecCostOrders):
//
//	OUTFLOW_CODEC_COST=400 go test -run '^$' -bench CodecCost -benchtime 1x ./testsuite/
const codecCostEnv = "OUTFLOW_CODEC_COST"

const codecCostOrders = 300

// costRound is what one stack measured.
type costRound struct {
	codec                      bool
	relayPerS, workerPerS      float64
	workflows                  int
	bytes, bytesNoZlib, plainB int64
}

// BenchmarkCodecCost measures, in one run, what the payload codec costs: the
// relay's start rate (events published per second while draining a backlog,
// from the first to the last published_at) and the worker's rate (orders
// settled per second once it starts on the started workflows), with the
// codec and without it, every order a new customer (so every start creates
// a customer key) with a shipping address; and the size of the histories
// Temporal stores: plain, encrypted without compression, and encrypted
// with zlib where it pays (the encrypted-without-zlib size is computed from
// the same histories' decoded payloads). Rounds alternate plain and codec;
// the ratios are codec over plain, from the same run. One iteration takes
// minutes: run it with -benchtime 1x.
func BenchmarkCodecCost(b *testing.B) {
	n := codecCostOrders
	if v := os.Getenv(codecCostEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			b.Fatalf("%s=%q: want a number of orders, at least 2", codecCostEnv, v)
		}
	}
	for range b.N {
		codecCost(b, n)
	}
}

func codecCost(t testing.TB, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	var rounds []costRound
	for _, withCodec := range []bool{false, true, false, true} {
		rounds = append(rounds, costOf(ctx, t, n, withCodec))
	}
	var plain, enc costRound
	for _, r := range rounds {
		t.Logf("codec=%v relay %.1f events/s, worker %.1f orders/s, %d workflows, %.0f bytes of history per workflow (encrypted without zlib %.0f)",
			r.codec, r.relayPerS, r.workerPerS, r.workflows, float64(r.bytes)/float64(r.workflows), float64(r.bytesNoZlib)/float64(r.workflows))
		acc := &plain
		if r.codec {
			acc = &enc
		}
		acc.relayPerS += r.relayPerS / 2
		acc.workerPerS += r.workerPerS / 2
		acc.bytes += r.bytes
		acc.bytesNoZlib += r.bytesNoZlib
		acc.plainB += r.plainB
		acc.workflows += r.workflows
	}
	per := func(b int64, wf int) float64 { return float64(b) / float64(wf) }
	report := fmt.Sprintf(`payload codec cost (%d orders a round, 2 rounds each, every order a new customer with a shipping address)
  relay:  %.1f events/s with the codec vs %.1f without: ratio %.2f
  worker: %.1f orders/s with the codec vs %.1f without: ratio %.2f
  history per workflow: plain %.0f B, encrypted %.0f B (ratio %.2f), encrypted without zlib %.0f B (ratio %.2f);
          the same encrypted histories decoded: %.0f B`,
		n, enc.relayPerS, plain.relayPerS, enc.relayPerS/plain.relayPerS,
		enc.workerPerS, plain.workerPerS, enc.workerPerS/plain.workerPerS,
		per(plain.bytes, plain.workflows), per(enc.bytes, enc.workflows), per(enc.bytes, enc.workflows)/per(plain.bytes, plain.workflows),
		per(enc.bytesNoZlib, enc.workflows), per(enc.bytesNoZlib, enc.workflows)/per(plain.bytes, plain.workflows),
		per(enc.plainB, enc.workflows))
	t.Log(report)
	fmt.Println(report)
	if b, ok := t.(*testing.B); ok {
		b.ReportMetric(enc.relayPerS/plain.relayPerS, "relay_ratio")
		b.ReportMetric(enc.workerPerS/plain.workerPerS, "worker_ratio")
		b.ReportMetric(per(enc.bytes, enc.workflows)/per(plain.bytes, plain.workflows), "history_ratio")
	}
}

func costOf(ctx context.Context, t testing.TB, n int, withCodec bool) costRound {
	s := NewStack(t)
	if !withCodec {
		s.CodecKeys = ""
	}
	s.Start("orderapi", "")
	ids := make([]string, 0, n)
	for range n {
		id, err := placeOrder(ctx, s, newCustomer("cost"), "pm_card_visa")
		require.NoError(t, err)
		ids = append(ids, id)
	}
	r := costRound{codec: withCodec}

	s.Start("starter", "")
	require.Eventually(t, func() bool {
		var left int
		return s.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox_events WHERE published_at IS NULL`).Scan(&left) == nil && left == 0
	}, 5*time.Minute, 50*time.Millisecond)
	var first, last time.Time
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT min(published_at), max(published_at) FROM outbox_events`).Scan(&first, &last))
	r.relayPerS = float64(n-1) / last.Sub(first).Seconds()

	start := time.Now()
	s.Start("worker", "")
	require.NoError(t, WaitDrained(ctx, s.Pool, 20*time.Minute))
	r.workerPerS = float64(n) / time.Since(start).Seconds()
	s.Proc("starter").Stop(10 * time.Second)
	s.Proc("worker").Stop(10 * time.Second)

	var codecs []converter.PayloadCodec
	if withCodec {
		codecs = s.DataConverter().Codecs()
	}
	for _, h := range rawHistories(ctx, t, s, ids...) {
		r.workflows++
		for _, ev := range h.events {
			size := int64(proto.Size(ev))
			r.bytes += size
			noZlib, plain := size, size
			payloadsOf(ev.ProtoReflect(), "", func(_ string, p *commonpb.Payload) {
				d := p
				if withCodec {
					out, err := decodeAll(codecs, p)
					require.NoError(t, err)
					d = out
				}
				// Encrypted without zlib: the decoded payload, sealed
				// (12-byte nonce, 16-byte tag), under the same metadata.
				sealed := &commonpb.Payload{Metadata: p.Metadata, Data: make([]byte, proto.Size(d)+28)}
				if string(p.Metadata[converter.MetadataEncoding]) != "binary/encrypted" {
					sealed = p // memo, search attributes
				}
				noZlib += int64(proto.Size(sealed) - proto.Size(p))
				plain += int64(proto.Size(d) - proto.Size(p))
			})
			r.bytesNoZlib += noZlib
			r.plainB += plain
		}
	}
	return r
}

// decodeAll runs a payload through codecs the way a data converter decodes.
func decodeAll(codecs []converter.PayloadCodec, p *commonpb.Payload) (*commonpb.Payload, error) {
	ps := []*commonpb.Payload{p}
	var err error
	for _, c := range codecs {
		if ps, err = c.Decode(ps); err != nil {
			return nil, err
		}
	}
	return ps[0], nil
}
