package relaycmd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/outboxops"
)

// SourceEnv is the deprecated way to choose the relay's source. The
// source is recorded in the database (`outboxctl source set
// poll|cdc|log`), where the producers' outbox.Enqueue reads it too, and
// the starter follows it. For one release a starter started with
// SourceEnv set records that value in the database at start, logging a
// deprecation line: "poll" claims committed events by polling
// outbox_events; "cdc" streams them from PostgreSQL's logical replication
// log (wal_level=logical), with a polling sweeper; "log" reads the
// append-only log outbox_log.
const SourceEnv = "OUTFLOW_RELAY_SOURCE"

// CDCSlotEnv names the CDC source's replication slot; default
// outboxops.CDCSlotDefault. Slots are server-wide: relays of different
// databases on one server need different names.
const CDCSlotEnv = "OUTFLOW_CDC_SLOT"

// CDCGraceEnv is the CDC source's grace period (outbox.RelayConfig.CDCGrace).
const CDCGraceEnv = "OUTFLOW_CDC_GRACE"

// sourceFromEnv reads the deprecated OUTFLOW_RELAY_SOURCE: "" when unset.
func sourceFromEnv(env *env) string {
	v := env.String(SourceEnv, "")
	if strings.TrimSpace(v) == "" {
		return ""
	}
	s, err := outboxops.ParseSource(v)
	if err != nil {
		env.Fail(fmt.Errorf("%s=%q: want poll (claim committed events by polling outbox_events), cdc (stream them from the logical replication log; needs wal_level=logical) or log (read the append-only log outbox_log); better, unset it and record the source in the database: outboxctl source set poll|cdc|log", SourceEnv, v))
		return ""
	}
	return s
}

// adoptEnvSource records the deprecated OUTFLOW_RELAY_SOURCE's value in
// the database when it differs from the recorded one, so a deployment
// that set it on its starters keeps its source for this release; it says
// so in a deprecation line either way.
func adoptEnvSource(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, source string) error {
	st, err := outboxops.Source(ctx, pool)
	if err != nil {
		return err
	}
	if st.Source == source {
		logger.Warn(SourceEnv+" is deprecated: the relay's source is recorded in the database, which already says "+source+
			"; unset "+SourceEnv+" (`outboxctl source` prints the source, `outboxctl source set` changes it)", "source", source)
		return nil
	}
	if _, err := outboxops.SetSource(ctx, pool, source, "starter ("+SourceEnv+", deprecated)", "set by a starter's "+SourceEnv); err != nil {
		return fmt.Errorf("%s=%s: %w", SourceEnv, source, err)
	}
	logger.Warn(SourceEnv+" is deprecated: this starter recorded its value in the database, which said "+st.Source+
		", so producers and every starter now use "+source+"; unset "+SourceEnv+" and use `outboxctl source set` instead",
		"source", source, "previous", st.Source)
	return nil
}
