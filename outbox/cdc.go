package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/internal/relaysql"
)

// The defaults of the cdc source's knobs (RelayConfig.CDC*); the slot's
// and the publication's are relaysql's, which outboxops shares.
const (
	cdcGraceDefault          = 10 * time.Second
	cdcStatusIntervalDefault = time.Second
	cdcStandbyRetryDefault   = 2 * time.Second
)

// cdcConfig tunes a [cdcRelay] (RelayConfig.CDC*).
type cdcConfig struct {
	// RelayConfig holds what the stream shares with its sweeper (a polling
	// relay, see [CDCRelay]): Owner, BatchSize (the most events one sort
	// statement reads), Lease, PublishTimeout, MaxInFlight, MaxAttempts,
	// the retry backoff, the mark batching, GaugeInterval, Registerer,
	// Logger and Failpoints (cdc.after_receive, cdc.after_publish,
	// cdc.before_confirm besides the relay's). PollInterval is the
	// sweeper's. Defaults as documented on RelayConfig.
	RelayConfig
	// Slot is the logical replication slot; created when missing. Defaults
	// to relaysql.CDCSlotDefault ("outflow_outbox").
	Slot string
	// Publication is the publication streamed. Defaults to
	// relaysql.CDCPublicationDefault ("outflow_outbox", made by the
	// outbox's migrations).
	Publication string
	// Grace is how old an unpublished event must be before the sweeper takes
	// it without being handed it: the stream's head start on every event it
	// received. Defaults to 10 seconds.
	Grace time.Duration
	// StatusInterval is how often the stream confirms its position to the
	// server (standby status update). Defaults to one second.
	StatusInterval time.Duration
	// StandbyRetry is how long a relay waits before trying the slot again
	// when another relay streams it. Defaults to 2 seconds. A failed
	// session is retried with errorBackoff instead.
	StandbyRetry time.Duration
}

func (c *cdcConfig) setDefaults() error {
	if err := c.RelayConfig.setDefaults(); err != nil {
		return err
	}
	c.Slot = cmp.Or(c.Slot, relaysql.CDCSlotDefault)
	c.Publication = cmp.Or(c.Publication, relaysql.CDCPublicationDefault)
	c.Grace = cmp.Or(c.Grace, cdcGraceDefault)
	c.StatusInterval = cmp.Or(c.StatusInterval, cdcStatusIntervalDefault)
	c.StandbyRetry = cmp.Or(c.StandbyRetry, cdcStandbyRetryDefault)
	return nil
}

func (c *cdcConfig) validate() error {
	if err := c.RelayConfig.validate(); err != nil {
		return err
	}
	switch {
	case c.Grace < 10*time.Millisecond:
		return fmt.Errorf("outbox: RelayConfig.CDCGrace %s is too short; use at least 10ms (default %s)", c.Grace, cdcGraceDefault)
	case c.StatusInterval < 10*time.Millisecond:
		return fmt.Errorf("outbox: RelayConfig.CDCStatusInterval %s is too short; use at least 10ms (default %s)", c.StatusInterval, cdcStatusIntervalDefault)
	case c.StandbyRetry < 10*time.Millisecond:
		return fmt.Errorf("outbox: RelayConfig.CDCStandbyRetry %s is too short; use at least 10ms (default %s)", c.StandbyRetry, cdcStandbyRetryDefault)
	}
	return nil
}

// CDCRelay hands committed outbox events to a [Publisher] from PostgreSQL's
// logical replication log instead of by polling: the second relay source,
// with the same guarantees as [Relay].
//
// It streams the publication's inserts from a replication slot (pgoutput)
// and sorts each received batch with one statement: an event goes to the
// publisher when the stream holds every unpublished predecessor of it
// itself, so one aggregate's events are published in sequence order, one at
// a time, and different aggregates concurrently (MaxInFlight). The stream
// leases what it publishes, as a polling relay's claim does (CDCLease, one
// statement per batch, under [cdcStreamOwner]), and the database confirms in
// the lease's transaction that every unpublished predecessor is under the
// stream's lease too (CDCLeaseVerify): the lease is what other relays and an
// operator's replay see, so a replayed predecessor waits until the stream's
// event in flight is done, and a successor never passes a replayed
// predecessor. Acknowledged events are marked published in batches, fenced
// by the lease (a late mark never swallows a replay), and the slot's confirmed position
// advances only over transactions whose every event is settled:
// acknowledged and marked, recorded as failed, or handed off. A restart
// therefore resumes after the last settled transaction, and what it streams
// again is either skipped (already published) or published again and
// absorbed by the publisher, as after a polling relay's crash.
//
// Everything unusual goes to the sweeper, a polling [Relay] in the same
// process whose claim leaves young events to the stream: failed publishes
// (backoff, quarantine, OUTFLOW_MAX_ATTEMPTS), events behind a predecessor
// the stream does not hold (quarantined, in backoff, claimed by another
// relay), replays, and anything older than Grace. Before each streaming
// session the sweeper backfills every unpublished event, after the slot
// exists, so nothing committed before the slot's consistent point is missed.
//
// PostgreSQL lets one session stream a slot at a time: a second CDCRelay on
// the same slot waits as a standby and takes over when the first dies.
type cdcRelay struct {
	pool *pgxpool.Pool
	pub  Publisher
	cfg  cdcConfig
	// streamOwner is the stream's claimant name (cdcStreamOwner), apart
	// from the sweeper's Owner.
	streamOwner string
	sweeper     *pollRelay
	sweep       *sweeper
	replConfig  *pgconn.Config
	metrics     *metrics
	cdcMetrics  *cdcMetrics
	// mark is where the slot gauges read the stream's oldest unsettled
	// commit; nil while no session streams.
	mark    atomic.Pointer[watermark]
	running atomic.Bool
	// walsender is the server pid of the last session's replication
	// connection (0 before the first): the slot active under that pid is
	// this relay's own session, not yet ended by the server.
	walsender int32
}

// NewCDCRelay returns a CDC relay over pool that publishes through pub, with
// cfg's zero fields defaulted. It opens a replication connection
// (replication=database) from pool's configuration when it runs.
func newCDCRelay(pool *pgxpool.Pool, pub Publisher, cfg cdcConfig) (*cdcRelay, error) {
	if pool == nil || pub == nil {
		return nil, errors.New("outbox: NewRelay needs a pool and a Publisher")
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sweeperRelay, err := newPollRelay(pool, pub, cfg.RelayConfig)
	if err != nil {
		return nil, err
	}
	sw := &sweeper{minAge: cfg.Grace, handed: map[uuid.UUID]time.Time{}}
	sweeperRelay.sweep = sw
	cm, err := newCDCMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	rc := pool.Config().ConnConfig.Config.Copy()
	if rc.RuntimeParams == nil {
		rc.RuntimeParams = map[string]string{}
	}
	rc.RuntimeParams["replication"] = "database"
	rc.RuntimeParams["application_name"] = cdcApplicationName(cfg.Owner)
	return &cdcRelay{
		pool:        pool,
		pub:         pub,
		cfg:         cfg,
		streamOwner: cdcStreamOwner(cfg.Owner),
		sweeper:     sweeperRelay,
		sweep:       sw,
		replConfig:  rc,
		metrics:     sweeperRelay.metrics,
		cdcMetrics:  cm,
	}, nil
}

// CDCApplicationName is the application_name of the replication connection
// of the CDC relay called owner, as pg_stat_replication shows it.
func cdcApplicationName(owner string) string {
	name := "outbox-cdc " + owner
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// cdcStreamOwner is the claimant name, written to claimed_by, of the stream
// of the CDC relay called owner: the stream leases what it publishes under
// this name, its sweeper claims under owner, so that neither counts the
// other's events as its own.
func cdcStreamOwner(owner string) string { return owner + "/stream" }

// Owner returns the relay's identity, as its sweeper writes it to
// claimed_by; the stream writes [cdcStreamOwner] of it.
func (c *cdcRelay) Owner() string { return c.cfg.Owner }

// Config returns the relay's configuration with defaults applied.
func (c *cdcRelay) Config() cdcConfig { return c.cfg }

type dropSlotArgs struct {
	Slot string `db:"slot"`
}

// dropIdleCDCSlot drops the CDC source's replication slot (slot; ""
// means relaysql.CDCSlotDefault) when no relay streams it, and returns its name,
// or "" when it does not exist or a relay streams it. A database that left
// the cdc source needs its slot gone: a slot nobody streams retains WAL
// for ever.
func dropIdleCDCSlot(ctx context.Context, pool *pgxpool.Pool, slot string) (string, error) {
	slot = cmp.Or(slot, relaysql.CDCSlotDefault)
	names, err := qCDCDropIdleSlot.All(ctx, pool, dropSlotArgs{Slot: slot})
	if err != nil {
		return "", fmt.Errorf("outbox: drop the idle replication slot %s: %w", slot, err)
	}
	if len(names) == 0 {
		return "", nil
	}
	return names[0], nil
}

// Run relays until ctx ends, then shuts down gracefully: in-flight publishes
// finish, acknowledged events are marked, the settled position is confirmed
// and the sweeper stops. It returns an error at once when the server cannot
// serve CDC (see relaysql.CheckCDC); every later failure is retried: a slot
// streamed by another relay after StandbyRetry, a lost connection or a
// restarted server with the relay's error backoff (the first try within
// 100ms, then up to 5s apart).
func (c *cdcRelay) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("outbox: the cdc relay's Run called twice; create one Relay per loop")
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := relaysql.CheckCDC(cctx, c.pool, c.cfg.Publication)
	cancel()
	if err != nil {
		return err
	}
	bg, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() { _ = c.sweeper.Run(bg) })
	if c.cfg.Registerer != nil {
		wg.Go(func() { c.slotGaugeLoop(bg) })
	}

	failures := 0
	standingBy := false
	for ctx.Err() == nil {
		began := time.Now()
		streamed, err := c.session(ctx)
		if ctx.Err() != nil {
			break
		}
		// A session that streamed a while ended on a new failure (a
		// restarted server, a dropped connection): the backoff starts
		// over, so the first try comes within errorBackoff.Base. One that
		// fails again soon after it streamed keeps backing off.
		if streamed && time.Since(began) >= errorBackoff.Max {
			failures = 0
		}
		failures++
		delay := c.cfg.StandbyRetry
		switch {
		case errors.Is(err, errSlotLingering):
			delay = errorBackoff.Delay(failures)
			c.cfg.Logger.Debug("outbox cdc: the server has not yet ended the last session's walsender; trying again",
				"owner", c.cfg.Owner, "slot", c.cfg.Slot, "walsender", c.walsender, "retry_in", delay)
		case errors.Is(err, errSlotActive):
			// Said once when it begins, not at every retry.
			level := slog.LevelDebug
			if !standingBy {
				level = slog.LevelInfo
			}
			c.cfg.Logger.Log(ctx, level, "outbox cdc: another relay streams the slot; standing by until it stops",
				"owner", c.cfg.Owner, "slot", c.cfg.Slot, "retry_every", delay)
			standingBy = true
			if !sleep(ctx, delay) {
				return nil
			}
			continue
		default:
			delay = errorBackoff.Delay(failures)
			c.cfg.Logger.Error("outbox cdc: streaming session ended; starting again", "owner", c.cfg.Owner, "slot", c.cfg.Slot, "retry_in", delay, "error", err)
		}
		standingBy = false
		if !sleep(ctx, delay) {
			break
		}
	}
	return nil
}

// errSlotActive: another session streams the slot.
var errSlotActive = errors.New("outbox cdc: the slot is streamed by another session")

// errSlotLingering: the slot is still held by the walsender of this relay's
// last session, whose connection ended; the server ends it soon.
var errSlotLingering = errors.New("outbox cdc: the slot is still held by this relay's last session")

// ensureSlot creates the slot when it is missing and returns its status.
func (c *cdcRelay) ensureSlot(ctx context.Context) (slotState, bool, error) {
	st, found, err := slotStatus(ctx, c.pool, c.cfg.Slot)
	if err != nil || found {
		return st, false, err
	}
	if _, err := qCDCCreateSlot.One(ctx, c.pool, slotArgs{SlotName: c.cfg.Slot}); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42710" { // duplicate_object: another relay was first
			return st, false, fmt.Errorf("outbox cdc: create slot %s: %w", c.cfg.Slot, err)
		}
	}
	st, found, err = slotStatus(ctx, c.pool, c.cfg.Slot)
	if err == nil && !found {
		err = fmt.Errorf("outbox cdc: slot %s vanished right after its creation", c.cfg.Slot)
	}
	return st, true, err
}

// slotStatus reads the slot called name of pool's database.
func slotStatus(ctx context.Context, db reader, name string) (slotState, bool, error) {
	rows, err := qCDCSlot.All(ctx, db, slotArgs{SlotName: name})
	if err != nil || len(rows) == 0 {
		return slotState{}, false, err
	}
	return rows[0], true, nil
}

// backfill has the sweeper publish every unpublished event it can claim,
// young ones included, until a claim finds none: what committed before the
// slot's consistent point (or while no slot existed) reaches the publisher
// even though the stream never sees it.
func (c *cdcRelay) backfill(ctx context.Context) (int, error) {
	total := 0
	for ctx.Err() == nil {
		n, _, err := c.sweeper.cycle(ctx, true)
		if err != nil {
			return total, err
		}
		if n == 0 {
			break
		}
		total += n
	}
	return total, ctx.Err()
}

// sweeper narrows a CDC relay's polling relay to what the stream leaves: see
// RelayClaim's @min_age_ms and @handed_off.
type sweeper struct {
	minAge time.Duration
	mu     sync.Mutex
	handed map[uuid.UUID]time.Time
}

// maxHandedOff bounds the hand-off list a claim carries; beyond it the
// events wait for Grace.
const maxHandedOff = 1000

func (s *sweeper) filter() (int64, []uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cutoff := time.Now().Add(-s.minAge)
	var ids []uuid.UUID
	for id, at := range s.handed {
		if at.Before(cutoff) {
			delete(s.handed, id) // old enough to be claimed anyway
			continue
		}
		if len(ids) < maxHandedOff {
			ids = append(ids, id)
		}
	}
	return s.minAge.Milliseconds(), ids
}

func (s *sweeper) claimed(batch []claimed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range batch {
		delete(s.handed, e.ID)
	}
}

func (s *sweeper) handOff(ids ...uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for _, id := range ids {
		s.handed[id] = now
	}
}
