package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/internal/relaysql"
)

// cdcTxn is one committed transaction the stream received: its outbox
// events, and the position to confirm once every one of them is settled.
type cdcTxn struct {
	end       pglogrepl.LSN
	committed time.Time
	ids       []uuid.UUID
	remaining int // unsettled events; guarded by the watermark's mutex
}

// cdcEvent is an event the stream publishes, the transaction it came in,
// and the stream's lease on it.
type cdcEvent struct {
	Event
	txn   *cdcTxn
	lease lease
}

// maxUnsettled bounds the events received but not yet settled: beyond it the
// stream stops reading and the server holds the rest in its WAL.
const maxUnsettled = 4096

// session runs one streaming session: it makes sure the slot exists, stands
// by when another session streams it, backfills, then streams until an
// error or ctx's end. streamed reports whether replication started.
func (c *cdcRelay) session(ctx context.Context) (streamed bool, err error) {
	bk := context.WithoutCancel(ctx)
	sctx, cancel := context.WithTimeout(ctx, bookkeepingTimeout)
	slot, created, err := c.ensureSlot(sctx)
	cancel()
	if err != nil {
		return false, err
	}
	if slot.Active {
		if c.walsender != 0 && slot.ActivePID == c.walsender {
			return false, errSlotLingering
		}
		return false, errSlotActive
	}
	if created {
		c.cfg.Logger.Warn("outbox cdc: created the replication slot; backfilling every unpublished event before streaming",
			"owner", c.cfg.Owner, "slot", c.cfg.Slot, "consistent_point", slot.ConfirmedFlushLSN)
	}
	// The slot exists before the backfill's first claim: whatever commits
	// after its consistent point is streamed, whatever committed before is
	// claimable now. Duplicates between the two are absorbed; a gap cannot
	// open.
	n, err := c.backfill(ctx)
	if err != nil {
		return false, fmt.Errorf("backfill: %w", err)
	}
	if n > 0 {
		c.cfg.Logger.Info("outbox cdc: backfilled unpublished events by polling", "owner", c.cfg.Owner, "events", n)
	}
	start, err := pglogrepl.ParseLSN(slot.ConfirmedFlushLSN)
	if err != nil {
		return false, fmt.Errorf("slot %s position %q: %w", c.cfg.Slot, slot.ConfirmedFlushLSN, err)
	}

	connectCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgconn.ConnectConfig(connectCtx, c.replConfig)
	cancel()
	if err != nil {
		return false, fmt.Errorf("replication connection: %w", err)
	}
	c.walsender = int32(conn.PID())
	defer func() {
		closeCtx, cancel := context.WithTimeout(bk, 5*time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	err = pglogrepl.StartReplication(ctx, conn, pgIdent(c.cfg.Slot), 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + c.cfg.Publication + "'"},
	})
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55006" { // object_in_use: a standby lost the race
			return false, errSlotActive
		}
		return false, fmt.Errorf("START_REPLICATION on slot %s: %w", c.cfg.Slot, err)
	}
	c.cfg.Logger.Info("outbox cdc: streaming", "owner", c.cfg.Owner, "slot", c.cfg.Slot, "from", start)

	s := newStream(c, start)
	c.mark.Store(s.wm)
	defer c.mark.Store(nil)
	return true, s.run(ctx, bk, conn)
}

// pgIdent quotes a slot name for START_REPLICATION.
func pgIdent(name string) string {
	return `"` + name + `"`
}

// stream is one session's moving parts: the receiver (this goroutine, the
// only user of the replication connection), the sorter, the lanes' workers
// and the marker.
type stream struct {
	c     *cdcRelay
	wm    *watermark
	lanes *lanes
	txns  chan *cdcTxn
	acks  chan *cdcEvent
	fails chan streamFailure
	// dropped are the leased events the workers returned unattempted at
	// the session's end; their leases are released after the workers stop.
	droppedMu sync.Mutex
	dropped   []uuid.UUID
}

func newStream(c *cdcRelay, start pglogrepl.LSN) *stream {
	return &stream{
		c:     c,
		wm:    newWatermark(start),
		lanes: newLanes(),
		txns:  make(chan *cdcTxn, 1024),
		acks:  make(chan *cdcEvent, 1024),
		fails: make(chan streamFailure, 1024),
	}
}

func (s *stream) run(ctx, bk context.Context, conn *pgconn.PgConn) error {
	sctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	var workers, bookkeepers sync.WaitGroup
	for range s.c.cfg.MaxInFlight {
		workers.Go(func() { s.work(sctx, bk) })
	}
	bookkeepers.Go(func() { s.markLoop(bk) })
	bookkeepers.Go(func() { s.failLoop(bk) })
	sorted := make(chan struct{})
	go func() {
		defer close(sorted)
		if err := s.sortLoop(sctx, bk); err != nil {
			fail(err)
		}
	}()

	err := s.receive(sctx, conn)
	fail(err)
	// Shut down in order: nothing new is sorted or published, the
	// publishes in flight finish, their acknowledgements are marked and
	// their failures recorded, and the settled position is confirmed.
	<-sorted
	s.lanes.close()
	workers.Wait()
	s.release(bk, s.dropped)
	close(s.acks)
	close(s.fails)
	bookkeepers.Wait()
	if conn.IsClosed() {
		return err
	}
	if pos, ok := s.wm.toConfirm(); ok {
		if ferr := s.c.cfg.Failpoints.Inject(bk, failpoints.CDCBeforeConfirm); ferr == nil {
			_ = pglogrepl.SendStandbyStatusUpdate(bk, conn, pglogrepl.StandbyStatusUpdate{WALWritePosition: pos})
		}
	}
	if cause := context.Cause(sctx); ctx.Err() == nil && cause != nil {
		return cause
	}
	return nil
}

// receive reads the replication stream until an error or ctx's end, hands
// each committed transaction with outbox events to the sorter and confirms
// the settled position every StatusInterval (or when the server asks).
func (s *stream) receive(ctx context.Context, conn *pgconn.PgConn) error {
	eventIDColumn := map[uint32]int{}
	var cur *cdcTxn
	nextStatus := time.Now()
	reply := false
	for {
		if reply || !time.Now().Before(nextStatus) {
			if err := s.confirm(ctx, conn); err != nil {
				return err
			}
			nextStatus, reply = time.Now().Add(s.c.cfg.StatusInterval), false
		}
		if s.wm.unsettled() >= maxUnsettled {
			// Back-pressure: the server keeps what we do not read.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-s.wm.progress:
			case <-time.After(time.Until(nextStatus)):
			}
			continue
		}
		rctx, cancel := context.WithDeadline(ctx, nextStatus)
		msg, err := conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if pgconn.Timeout(err) {
				continue
			}
			return fmt.Errorf("receive: %w", err)
		}
		var data []byte
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			data = m.Data
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("replication: %w", pgconn.ErrorResponseToPgError(m))
		default:
			continue
		}
		if len(data) == 0 {
			continue
		}
		switch data[0] {
		case pglogrepl.PrimaryKeepaliveMessageByteID:
			ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
			if err != nil {
				return fmt.Errorf("keepalive: %w", err)
			}
			if cur == nil {
				// Everything before the server's sent position has reached
				// us; when nothing is unsettled, it is settled too.
				s.wm.idle(ka.ServerWALEnd)
			}
			reply = reply || ka.ReplyRequested
		case pglogrepl.XLogDataByteID:
			xld, err := pglogrepl.ParseXLogData(data[1:])
			if err != nil {
				return fmt.Errorf("xlogdata: %w", err)
			}
			lm, err := pglogrepl.Parse(xld.WALData)
			if err != nil {
				return fmt.Errorf("decode pgoutput message: %w", err)
			}
			switch m := lm.(type) {
			case *pglogrepl.RelationMessage:
				eventIDColumn[m.RelationID] = -1
				for i, col := range m.Columns {
					if col.Name == "event_id" {
						eventIDColumn[m.RelationID] = i
					}
				}
			case *pglogrepl.BeginMessage:
				cur = &cdcTxn{committed: m.CommitTime}
			case *pglogrepl.InsertMessage:
				i, ok := eventIDColumn[m.RelationID]
				if !ok || i < 0 || cur == nil || m.Tuple == nil || i >= len(m.Tuple.Columns) {
					return fmt.Errorf("insert into relation %d without its event_id column", m.RelationID)
				}
				id, err := uuid.ParseBytes(m.Tuple.Columns[i].Data)
				if err != nil {
					return fmt.Errorf("event_id %q: %w", m.Tuple.Columns[i].Data, err)
				}
				cur.ids = append(cur.ids, id)
			case *pglogrepl.CommitMessage:
				if cur == nil {
					continue
				}
				cur.end = m.TransactionEndLSN
				t := cur
				cur = nil
				s.wm.received(t)
				if len(t.ids) == 0 {
					continue
				}
				select {
				case s.txns <- t:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
	}
}

// confirm sends the settled position to the server (standby status update),
// after the cdc.before_confirm failpoint when the position moved.
func (s *stream) confirm(ctx context.Context, conn *pgconn.PgConn) error {
	pos, moved := s.wm.toConfirm()
	if moved {
		if err := s.c.cfg.Failpoints.Inject(ctx, failpoints.CDCBeforeConfirm); err != nil {
			s.c.cfg.Logger.Warn("outbox cdc: confirm skipped", "owner", s.c.cfg.Owner, "error", err)
			return nil
		}
	}
	if err := pglogrepl.SendStandbyStatusUpdate(ctx, conn, pglogrepl.StandbyStatusUpdate{WALWritePosition: pos}); err != nil {
		return fmt.Errorf("standby status update: %w", err)
	}
	s.wm.confirmed(pos)
	return nil
}

// sortLoop takes every transaction received since its last turn, at most
// BatchSize events (always whole transactions), sorts them with one
// statement and dispatches each event: to its lane, to the sweeper, or
// straight to settled. Under load batches grow while a sort runs; idle, a
// transaction is sorted as soon as it arrives.
func (s *stream) sortLoop(ctx, bk context.Context) error {
	for {
		var batch []*cdcTxn
		select {
		case <-ctx.Done():
			return nil
		case t := <-s.txns:
			batch = append(batch, t)
		}
		n := len(batch[0].ids)
	more:
		for n < s.c.cfg.BatchSize {
			select {
			case t := <-s.txns:
				batch = append(batch, t)
				n += len(t.ids)
			default:
				break more
			}
		}
		if err := s.c.cfg.Failpoints.Inject(ctx, failpoints.CDCAfterReceive); err != nil {
			return fmt.Errorf("outbox cdc: after receive: %w", err)
		}
		ids := make([]uuid.UUID, 0, n)
		for _, t := range batch {
			ids = append(ids, t.ids...)
		}
		rows, err := s.sort(ctx, bk, ids)
		if err != nil {
			return err
		}
		if err := s.dispatch(bk, batch, rows); err != nil {
			return err
		}
	}
}

// sortRetries bound how long sort waits for received events to become
// visible: pauses doubling from sortPause, about 1.6 seconds in all.
const (
	sortRetries = 13
	sortPause   = 200 * time.Microsecond
)

// sort runs CDCSort on ids. The log can deliver a commit a moment before
// the transaction is visible to other snapshots (the commit record is
// written, then the transaction leaves the proc array), so an event that
// the statement does not return is asked for again, a few times with a
// doubling pause from sortPause (the gap is usually microseconds, but a
// committing backend descheduled on a busy machine can stretch it). One still missing after that was deleted
// (cleanup of a long-published event) and is settled as such by dispatch;
// were it only invisible, the sweeper would take it after Grace.
func (s *stream) sort(ctx, bk context.Context, ids []uuid.UUID) ([]cdcSortRow, error) {
	var rows []cdcSortRow
	pause := sortPause
	for attempt := 0; ; attempt++ {
		qctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
		got, err := qCDCSort.All(qctx, s.c.pool, eventIDsArgs{EventIDs: ids})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("outbox cdc: sort %d received events: %w", len(ids), err)
		}
		rows = append(rows, got...)
		if len(got) == len(ids) || attempt == sortRetries {
			return rows, nil
		}
		found := make(map[uuid.UUID]bool, len(got))
		for _, r := range got {
			found[r.EventID] = true
		}
		missing := ids[:0:0]
		for _, id := range ids {
			if !found[id] {
				missing = append(missing, id)
			}
		}
		ids = missing
		if !sleep(ctx, pause) {
			return rows, nil
		}
		pause *= 2
	}
}

// dispatch decides each received event's fate, in commit order: settled
// at once (done, or the sweeper's), to its lane, or handed to the sweeper.
// An event goes to its lane only when the stream holds each of its
// unpublished predecessors, and the database agrees: the stream leases the
// candidates and verifies them in one transaction (lease). It returns an
// error only when the lease's transaction fails; the session then ends and
// the next one streams the batch again.
func (s *stream) dispatch(bk context.Context, batch []*cdcTxn, rows []cdcSortRow) error {
	byID := make(map[uuid.UUID]*cdcSortRow, len(rows))
	for i := range rows {
		byID[rows[i].EventID] = &rows[i]
	}
	var handed []uuid.UUID
	var settled []*cdcTxn
	var candidates []*cdcEvent
	isCandidate := map[uuid.UUID]bool{}
	sinkUp := s.c.sweeper.sink.closed()
	s.lanes.mu.Lock()
	s.lanes.pruneRecent(time.Now())
	for _, t := range batch {
		for _, id := range t.ids {
			row, ok := byID[id]
			switch {
			case !ok || row.Verdict == "done" || row.Verdict == "sweeper":
				settled = append(settled, t)
			case !sinkUp:
				// The sink is down: the sweeper takes the event once it
				// answers (and probes it meanwhile).
				handed = append(handed, id)
				settled = append(settled, t)
			case s.lanes.holdsAllLocked(row.Blockers, isCandidate):
				candidates = append(candidates, &cdcEvent{Event: row.event(), txn: t})
				isCandidate[id] = true
			default:
				// A predecessor the stream does not hold is unpublished: the
				// lane is the polling path's until it drains.
				handed = append(handed, id)
				settled = append(settled, t)
			}
		}
	}
	s.lanes.mu.Unlock()

	kept, err := s.lease(bk, candidates)
	if err != nil {
		return err
	}
	// Under the mutex again: a predecessor held at the sort may have left
	// since (its lane broke on a failure, which the database learns only
	// when failLoop records it), so each blocker the verification saw must
	// still be held, or marked by the stream.
	var refused []uuid.UUID
	s.lanes.mu.Lock()
	for _, e := range candidates {
		blockers, ok := kept[e.ID]
		if ok && s.lanes.holdsAllLocked(blockers, nil) {
			s.lanes.addLocked(e, blockers)
			continue
		}
		if ok {
			refused = append(refused, e.ID)
		}
		handed = append(handed, e.ID)
		settled = append(settled, e.txn)
	}
	s.lanes.mu.Unlock()
	s.release(bk, refused)
	for _, t := range settled {
		s.wm.settle(t)
	}
	if len(handed) > 0 {
		s.c.sweep.handOff(handed...)
		s.c.sweeper.wakeUp()
		s.c.cfg.Logger.Debug("outbox cdc: handed events to the sweeper: an unpublished predecessor is not the stream's", "owner", s.c.cfg.Owner, "events", handed)
	}
	return nil
}

// lease takes the stream's lease on candidates and verifies it, in one
// transaction (CDCLease, then CDCLeaseVerify),
// and returns the events kept with the blockers the verification saw. Each
// kept event's local lease deadline is taken from before the transaction
// began, so it never outlives claim_until.
func (s *stream) lease(bk context.Context, candidates []*cdcEvent) (map[uuid.UUID][]uuid.UUID, error) {
	if len(candidates) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(candidates))
	for i, e := range candidates {
		ids[i] = e.ID
	}
	l := newLease(time.Now(), s.c.cfg.Lease)
	ctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	defer cancel()
	var kept map[uuid.UUID][]uuid.UUID
	err := pgx.BeginFunc(ctx, s.c.pool, func(tx pgx.Tx) error {
		leased, err := qCDCLease.All(ctx, tx, cdcLeaseArgs{Owner: s.c.streamOwner, EventIDs: ids, LeaseMS: s.c.cfg.Lease.Milliseconds()})
		if err != nil || len(leased) == 0 {
			return err
		}
		// A new statement, with a new snapshot. One is enough: an event given
		// back because a predecessor is not the stream's has that predecessor
		// in common with every later event of its order, which it gives back
		// too.
		rows, err := qCDCLeaseVerify.All(ctx, tx, relaysql.EventsArgs{Owner: s.c.streamOwner, EventIDs: leased})
		if err != nil {
			return err
		}
		kept = make(map[uuid.UUID][]uuid.UUID, len(rows))
		for _, r := range rows {
			if !r.Blocked {
				kept[r.EventID] = r.Blockers
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox cdc: lease %d received events: %w", len(ids), err)
	}
	for _, e := range candidates {
		e.lease = l
	}
	return kept, nil
}

// release gives back the stream's leases on events it never attempted
// (RelayRelease under the stream's name; the stream counted no attempt, and
// the release leaves attempt_count at zero). A failed release is logged: the
// leases expire, and the sweeper takes the events then.
func (s *stream) release(bk context.Context, ids []uuid.UUID) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	defer cancel()
	if _, err := qRelayRelease.Exec(ctx, s.c.pool, relaysql.EventsArgs{Owner: s.c.streamOwner, EventIDs: ids}); err != nil {
		s.c.cfg.Logger.Error("outbox cdc: releasing unattempted leases failed; the sweeper takes the events when the leases expire",
			"owner", s.c.cfg.Owner, "events", len(ids), "error", err)
	}
}

// handBack gives events the stream leased but will not publish to the
// sweeper: their leases released first, so that its claim finds them free.
func (s *stream) handBack(bk context.Context, events []*cdcEvent) {
	if len(events) == 0 {
		return
	}
	ids := make([]uuid.UUID, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	s.release(bk, ids)
	s.c.sweep.handOff(ids...)
	for _, e := range events {
		s.wm.settle(e.txn)
	}
	s.c.sweeper.wakeUp()
}

// work publishes ready lane heads until the lanes close. A publish starts
// only when the whole PublishTimeout fits in the event's lease (as a
// polling relay's does), so no other relay can take an event over while the
// stream still publishes it; an event whose lease ran too short waited too
// long in its lane, and the lane goes to the sweeper unattempted.
func (s *stream) work(ctx, bk context.Context) {
	margin := s.c.cfg.Lease / 10
	for {
		e, ok := s.lanes.next()
		if !ok {
			return
		}
		if ctx.Err() != nil {
			// Shutting down: never attempted, not settled; the next session
			// streams it again, and its lease is released.
			s.lanes.drop(e)
			s.droppedMu.Lock()
			s.dropped = append(s.dropped, e.ID)
			s.droppedMu.Unlock()
			continue
		}
		sink, pace := s.c.sweeper.sink, s.c.sweeper.pace
		if !sink.closed() {
			// The sink is down: the sweeper probes it and takes the lane
			// once it answers.
			s.handBack(bk, append([]*cdcEvent{e}, s.lanes.broken(e)...))
			continue
		}
		if err := pace.acquire(ctx); err != nil {
			s.lanes.drop(e) // shutting down
			s.droppedMu.Lock()
			s.dropped = append(s.dropped, e.ID)
			s.droppedMu.Unlock()
			continue
		}
		call := &publishCall{}
		deadline, ok := e.lease.publishDeadline(time.Now(), s.c.cfg.PublishTimeout, margin)
		if !ok {
			pace.done(faultEvent, false, call)
			s.handBack(bk, append([]*cdcEvent{e}, s.lanes.broken(e)...))
			continue
		}
		w := sink.watch(deadline)
		pctx, cancel := context.WithDeadline(withCall(bk, call), deadline)
		err := s.publishOne(pctx, e)
		err = w.judge(err, e.ID, pctx.Err() != nil, call)
		cancel()
		f := classify(err)
		pace.done(f, err == nil, call)
		if err == nil {
			sink.acked()
			s.c.metrics.handoff.Observe(time.Since(e.OccurredAt).Seconds())
			s.lanes.acked(e)
			s.acks <- e
			continue
		}
		s.c.metrics.publishErrors[f].Inc()
		// The lane breaks: its queued successors go to the sweeper, which
		// keeps them in order behind the failure.
		rest := s.lanes.broken(e)
		if f != faultEvent {
			// The sink's fault: no attempt is counted, and the event goes to
			// the sweeper with its lane, after the breaker if it opens.
			if f == faultSink {
				sink.sinkFault(err)
			}
			s.c.sweeper.wakeAt(s.c.sweeper.releaseSinkFaults(bk, s.c.streamOwner, []failure{s.c.sweeper.sinkFailure(claimed{Event: e.Event}, err, f)}))
			s.handBack(bk, append([]*cdcEvent{e}, rest...))
			continue
		}
		// The event's own: failLoop records it (an attempt, backoff or
		// quarantine).
		s.handBack(bk, rest)
		s.fails <- streamFailure{e: e, err: err}
	}
}

// streamFailure is a publish of the stream that did not end in an
// acknowledgement.
type streamFailure struct {
	e   *cdcEvent
	err error
}

// publishOne publishes e and runs cdc.after_publish after the
// acknowledgement, as Relay.publishOne does for relay.after_publish.
func (s *stream) publishOne(ctx context.Context, e *cdcEvent) error {
	return publishAcked(ctx, &s.c.cfg.RelayConfig, 1, s.c.pub, e.Event, s.c.cfg.Failpoints, failpoints.CDCAfterPublish)
}
