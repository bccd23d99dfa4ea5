// Command orderfeed is the example consumer of the JetStream sink: it reads
// the order events the starter publishes to NATS JetStream
// (OUTFLOW_SINKS=jetstream) with package natspub/natsconsumer, and keeps one
// row per order in its own table order_feed (status, amount, currency,
// created and cancelled times), each event applied once and in the order's
// sequence, until SIGINT or SIGTERM.
//
// Its database (DATABASE_URL) gets the outbox's schema (outbox.Migrate, for
// the inbox's processed_events) and order_feed at start. With
// OUTFLOW_CODEC_KEYS set (the starter's keys) it decrypts the payloads the
// starter encrypted on their way to the stream, reading the customers' keys
// from the outflow database (OUTFLOW_CODEC_DATABASE_URL, default
// DATABASE_URL). `orderfeed -h`
// lists its variables, touching nothing; docs/jetstream.md is the guide.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/natscodec"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/natspub"
	"github.com/outflow/outflow/outbox/natspub/natsconsumer"
)

// consumerName is the durable consumer's and the inbox's name: stable.
const consumerName = "orderfeed"

// codecDatabaseEnv names the database of the customers' keys.
const codecDatabaseEnv = "OUTFLOW_CODEC_DATABASE_URL"

var command = cli.Command{
	Name:    "orderfeed",
	Summary: "example consumer of the JetStream sink: order events from NATS into order_feed, each applied once, in order.",
	Env: cli.Vars(
		[]cli.Var{
			service.DatabaseVar(database.DefaultURL, "its own database; the outbox's schema (for the inbox) and order_feed are created at start"),
			{Name: "OUTFLOW_NATS_URL", Default: natspub.URLDefault, Meaning: "the NATS server"},
			{Name: "OUTFLOW_NATS_STREAM", Default: natspub.StreamDefault, Meaning: "the stream the starter publishes to"},
			{Name: "OUTFLOW_NATS_SUBJECT_PREFIX", Default: natspub.SubjectPrefixDefault, Meaning: "the starter's subject prefix; PREFIX.order.> is consumed"},
			{Name: codec.KeysEnv, Default: "no decryption", Meaning: "the starter's payload encryption keys: comma-separated KEY_ID:BASE64_32_BYTES"},
			{Name: codec.KeysFileEnv, Meaning: "a file holding those keys instead, one a line"},
			{Name: codecDatabaseEnv, Default: "DATABASE_URL", Meaning: "the outflow database whose customer_keys decrypt the customers' payloads"},
			service.FailpointsVar(),
		},
		service.LogVars(),
	),
	Notes: "A malformed setting stops it at start (exit status 2). See docs/jetstream.md.",
}

func main() { service.Main("orderfeed", &command, "orderfeed failed", run) }

func run(logger *slog.Logger, env *service.Env) error {
	fps, err := failpoints.Parse(os.Getenv(failpoints.EnvVar))
	if err != nil {
		env.Fail(fmt.Errorf("%s: %w", failpoints.EnvVar, err))
	}
	url := env.String("OUTFLOW_NATS_URL", natspub.URLDefault)
	stream := env.String("OUTFLOW_NATS_STREAM", natspub.StreamDefault)
	prefix := env.String("OUTFLOW_NATS_SUBJECT_PREFIX", natspub.SubjectPrefixDefault)
	keys, err := codec.LoadKeys(os.Getenv)
	if err != nil {
		env.Fail(err)
	}
	keysURL := env.String(codecDatabaseEnv, database.URL())
	if err := env.Err(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	pool, err := database.Open(ctx, database.URL())
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := outbox.Migrate(ctx, pool); err != nil {
		return err
	}
	if _, err := qSchema.Exec(ctx, pool, namedsql.NoRows{}); err != nil {
		return fmt.Errorf("orderfeed: create order_feed: %w", err)
	}
	nc, err := nats.Connect(url, nats.Name("outflow-orderfeed"), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("OUTFLOW_NATS_URL=%s: connect to NATS: %w", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ib, err := inbox.New(nil)
	if err != nil {
		return err
	}
	var dec natspub.PayloadDecoder
	if keys != nil {
		keysDB := pool
		if keysURL != database.URL() {
			if keysDB, err = database.Open(ctx, keysURL); err != nil {
				return fmt.Errorf("%s: %w", codecDatabaseEnv, err)
			}
			defer keysDB.Close()
		}
		if err := codec.CheckCustomerKeys(ctx, keysDB, keys); err != nil {
			return err
		}
		dec = payloadDecoder(keys, keysDB)
	}
	c, err := natsconsumer.New(ctx, js, pool, natsconsumer.Config{
		Name:          consumerName,
		Stream:        stream,
		FilterSubject: prefix + "." + orders.AggregateType + ".>",
		Inbox:         ib,
		Positions:     feed{},
		Apply:         feed{}.apply,
		Decoder:       dec,
		Failpoints:    fps,
		Logger:        logger,
	})
	if err != nil {
		return err
	}
	logger.Info("orderfeed started", "payload_codec", keysSummary(keys), "nats", url, "stream", stream, "subjects", prefix+"."+orders.AggregateType+".>", "consumer", consumerName)
	err = c.Run(ctx)
	logger.Info("orderfeed stopped")
	return err
}

// keysSummary names the decrypting keys for the start-up line, by id.
func keysSummary(keys *codec.Keyring) string {
	if keys == nil {
		return "off"
	}
	return "AES-256-GCM, " + keys.String()
}

// payloadDecoder decrypts what the starter's payload codec encrypted, with
// the master keys and the customer keys of db (the outflow database).
func payloadDecoder(keys *codec.Keyring, db codec.DB) natspub.PayloadDecoder {
	return natscodec.New(codec.NewDataConverter(keys, codec.Options{Store: codec.NewPGStore(db)}))
}
