package outbox

import (
	"context"
	"fmt"
	"time"
)

// The log relays share the partitions evenly: each relay renews its row in
// outbox_log_relays whenever it looks for free partitions (LogBeat), learns
// from the live rows how many relays run and what each holds, and works out
// its share (logShares) as every relay does from the same rows. A relay
// under its share takes free partitions at once; a relay over it for
// ShareDelay gives one back per look, the way a graceful shutdown gives
// them all back (its reader finishes and advances its batch, its hold
// worker stops, then LogRelease), so sharing adds no step to the protocol
// (model/log.pml checks a live reader's release and later retake: RELEASES).

// logShares splits the [LogPartitions] partitions between the live relays
// (in owner order): one at a time to each relay still under its
// MaxPartitions, in turn, so that n relays hold 16/n each, the first
// 16 mod n by owner one more (three relays: 6, 5, 5); what a relay's
// MaxPartitions leaves goes to the others.
func logShares(relays []logRelayRow) map[string]int {
	shares := make(map[string]int, len(relays))
	for left := logPartitions; left > 0; {
		gave := false
		for _, rl := range relays {
			if left > 0 && shares[rl.Owner] < rl.MaxPartitions {
				shares[rl.Owner]++
				left--
				gave = true
			}
		}
		if !gave {
			break
		}
	}
	return shares
}

// share renews this relay's row of the registry and returns its share of
// the partitions and the number of live relays.
func (r *logRelay) share(ctx context.Context) (share, relays int, err error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	rows, err := qLogBeat.All(cctx, r.pool, logBeatArgs{
		Owner: r.cfg.Owner, MaxPartitions: r.cfg.MaxPartitions, LeaseMS: r.cfg.Lease.Milliseconds(),
	})
	if err != nil {
		return 0, 0, fmt.Errorf("outbox: renew the log relay's registration: %w", err)
	}
	share = logShares(rows)[r.cfg.Owner]
	r.metrics.share.Set(float64(share))
	return share, len(rows), nil
}

// giveBack gives one partition back when this relay has held more than its
// share since ShareDelay: its reader stops after its batch's advance and
// releases the lease (readPartition). A partition already being given back
// counts as gone. It prefers a partition without holds (whose hold worker
// has nothing to stop), then the highest.
func (r *logRelay) giveBack(share int, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	keeping := 0
	var pick *logPartition
	for _, p := range r.parts {
		if p.release.Load() {
			continue
		}
		keeping++
		if pick == nil || logReleaseFirst(p, pick) {
			pick = p
		}
	}
	if keeping <= share {
		r.overSince = time.Time{}
		return
	}
	if r.overSince.IsZero() {
		r.overSince = now
	}
	if now.Sub(r.overSince) < r.cfg.ShareDelay {
		return
	}
	pick.release.Store(true)
	wakeChan(pick.wake)
	r.cfg.Logger.Info("outbox log relay: giving a partition back to share them evenly",
		"owner", r.cfg.Owner, "partition", pick.id, "holding", keeping, "share", share)
}

// logReleaseFirst reports whether p is a better partition to give back than
// q: one without known holds, then the higher.
func logReleaseFirst(p, q *logPartition) bool {
	ph, qh := p.holdsDue.Load() != 0, q.holdsDue.Load() != 0
	if ph != qh {
		return !ph
	}
	return p.id > q.id
}

// leave deletes this relay's row of the registry at a graceful shutdown.
func (r *logRelay) leave(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	if _, err := qLogUnregister.Exec(cctx, r.pool, logUnregisterArgs{Owner: r.cfg.Owner}); err != nil {
		r.cfg.Logger.Warn("outbox log relay: leaving the registry failed; the other relays see it gone after its lease",
			"owner", r.cfg.Owner, "error", err)
	}
}
