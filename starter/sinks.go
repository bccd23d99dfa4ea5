package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/natscodec"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/internal/temporalclient"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/natspub"
)

// The sink variables (docs/reference.md, "Environment").
const (
	// SinksEnv selects where each event goes: temporal (the default),
	// jetstream, or temporal,jetstream (each event to both).
	SinksEnv = "OUTFLOW_SINKS"
	// NATSURLEnv is the NATS server of the jetstream sink.
	NATSURLEnv = "OUTFLOW_NATS_URL"
	// NATSStreamEnv is the jetstream sink's stream.
	NATSStreamEnv = "OUTFLOW_NATS_STREAM"
	// NATSSubjectPrefixEnv is the first token of the jetstream sink's subjects.
	NATSSubjectPrefixEnv = "OUTFLOW_NATS_SUBJECT_PREFIX"
)

const (
	sinkTemporal  = "temporal"
	sinkJetStream = "jetstream"
)

// sinks is which sinks OUTFLOW_SINKS selects, in the order each event is
// published to them (Temporal first).
type sinks []string

func (s sinks) has(name string) bool { return slices.Contains(s, name) }

func (s sinks) String() string { return strings.Join(s, ",") }

// sinksFromEnv reads OUTFLOW_SINKS.
func sinksFromEnv(env *service.Env) sinks {
	raw := env.String(SinksEnv, sinkTemporal)
	var out sinks
	for _, part := range strings.Split(raw, ",") {
		name := strings.ToLower(strings.TrimSpace(part))
		switch {
		case name != sinkTemporal && name != sinkJetStream:
			env.Fail(fmt.Errorf("%s=%q: %q is no sink; want temporal (the default), jetstream, or temporal,jetstream", SinksEnv, raw, name))
			return sinks{sinkTemporal}
		case !out.has(name):
			out = append(out, name)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(b, a) }) // temporal, then jetstream
	return out
}

// natsSettings are the jetstream sink's variables.
type natsSettings struct {
	url, stream, prefix string
}

func natsSettingsFromEnv(env *service.Env) natsSettings {
	return natsSettings{
		url:    env.String(NATSURLEnv, natspub.URLDefault),
		stream: env.String(NATSStreamEnv, natspub.StreamDefault),
		prefix: env.String(NATSSubjectPrefixEnv, natspub.SubjectPrefixDefault),
	}
}

// newJetStreamSink connects to NATS and returns the jetstream sink's
// publisher, after checking the stream's duplicate window against relay's
// settings (creating the stream, with the window the relay needs, when it
// does not exist). The connection reconnects for ever; close it after the
// relay stopped.
func newJetStreamSink(ctx context.Context, ns natsSettings, relay outbox.RelayConfig, enc natspub.PayloadEncoder, fps *failpoints.Set, reg prometheus.Registerer, logger *slog.Logger) (*natspub.Publisher, *nats.Conn, error) {
	nc, err := nats.Connect(ns.url, nats.Name("outflow-starter"), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			logger.Warn("NATS connection lost; reconnecting", "url", ns.url, service.ErrorKey, err)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { logger.Info("NATS connection back", "url", c.ConnectedUrlRedacted()) }))
	if err != nil {
		return nil, nil, fmt.Errorf("%s=%s: connect to NATS: %w", NATSURLEnv, ns.url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream on %s: %w", ns.url, err)
	}
	pub, err := natspub.New(ctx, js, natspub.Config{
		Stream:        ns.stream,
		SubjectPrefix: ns.prefix,
		MinWindow:     natspub.RequiredWindow(relay),
		CreateStream:  true,
		Encoder:       enc,
		Failpoints:    fps,
		Logger:        logger,
		Registerer:    reg,
	})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return pub, nc, nil
}

// streamEncoder is the jetstream sink's payload encoder: the payload codec
// of OUTFLOW_CODEC_KEYS, with the customer keys of pool, the same as the
// Temporal sink's, after checking that its master keys unwrap pool's
// customer keys; nil when the codec is off (the stream gets the payloads as
// enqueued). summary describes it for the start-up log line.
func streamEncoder(ctx context.Context, pool *pgxpool.Pool) (enc natspub.PayloadEncoder, summary string, err error) {
	dc, err := temporalclient.CodecDataConverter(temporalclient.WithCustomerKeys(pool))
	if err != nil || dc == nil {
		return nil, "off", err
	}
	if err := codec.CheckCustomerKeys(ctx, pool, dc.Keys()); err != nil {
		return nil, "", err
	}
	return natscodec.New(dc), "AES-256-GCM, " + dc.Keys().String(), nil
}
