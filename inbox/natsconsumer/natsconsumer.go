// Package natsconsumer forwards to
// [github.com/outflow/outflow/outbox/natspub/natsconsumer], where the
// JetStream consumer moved into the JetStream sink's module. It stays for
// one release so existing imports keep building; import the new path (this
// one brings the example's module, and with it its dependencies, into
// yours).
//
// Deprecated: use github.com/outflow/outflow/outbox/natspub/natsconsumer.
package natsconsumer

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/outflow/outflow/outbox/natspub/natsconsumer"
)

// The defaults of Config: [natsconsumer.BatchDefault] and the others.
const (
	BatchDefault      = natsconsumer.BatchDefault
	AckWaitDefault    = natsconsumer.AckWaitDefault
	RetryDelayDefault = natsconsumer.RetryDelayDefault
	FetchWaitDefault  = natsconsumer.FetchWaitDefault
)

// ApplyFunc is [natsconsumer.ApplyFunc].
type ApplyFunc = natsconsumer.ApplyFunc

// Config is [natsconsumer.Config].
type Config = natsconsumer.Config

// Consumer is [natsconsumer.Consumer].
type Consumer = natsconsumer.Consumer

// Message is [natsconsumer.Message].
type Message = natsconsumer.Message

// Positions is [natsconsumer.Positions].
type Positions = natsconsumer.Positions

// New is [natsconsumer.New].
func New(ctx context.Context, js jetstream.JetStream, db *pgxpool.Pool, cfg Config) (*Consumer, error) {
	return natsconsumer.New(ctx, js, db, cfg)
}
