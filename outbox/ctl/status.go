package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/outflow/outflow/outbox/outboxops"
)

// runStatus prints the outbox's backlog, quarantine, leases and throughput.
func runStatus(ctx context.Context, env *Env, args []string) error {
	fs := NewFlagSet(env, "status", "status [--json]")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := Parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return Usagef(fs, "status takes no arguments, got %q", pos)
	}
	pool, err := OpenDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The cdc relay source's slot, when one exists (OUTFLOW_CDC_SLOT names
	// it as for the starter), and the log source's state, when the log was
	// ever written, are in the report.
	s, err := outboxops.StatusOf(ctx, pool, outboxops.StatusOptions{CDCSlot: env.getenv(CDCSlotVar)})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "source\t%s\t(since %s, by %s%s)\n", s.Source.Source, s.Source.ChangedAt.UTC().Format(time.RFC3339), s.Source.ChangedBy, reasonSuffix(s.Source.Reason))
	oldest := "-"
	if s.Pending > 0 {
		oldest = s.OldestPendingAge.Round(time.Millisecond).String()
	}
	fmt.Fprintf(tw, "pending\t%d\t(oldest %s)\n", s.Pending, oldest)
	fmt.Fprintf(tw, "  backing off\t%d\t\n", s.BackingOff)
	fmt.Fprintf(tw, "  replays\t%d\t\n", s.Replaying)
	hint := ""
	if s.Quarantined > 0 {
		hint = "(outboxctl list --quarantined; then retry or skip)"
	}
	fmt.Fprintf(tw, "quarantined\t%d\t%s\n", s.Quarantined, hint)
	fmt.Fprintf(tw, "skipped\t%d\t\n", s.Skipped)
	fmt.Fprintf(tw, "published\t1m: %d  5m: %d  15m: %d\t\n", s.Published.Last1m, s.Published.Last5m, s.Published.Last15m)
	if len(s.Leases) == 0 {
		fmt.Fprintf(tw, "leases\tnone\t\n")
	}
	for _, l := range s.Leases {
		fmt.Fprintf(tw, "leases\t%s\t%d events, first expires in %s\n", l.Owner, l.Events, l.EarliestExpiry.Sub(s.CheckedAt).Round(time.Millisecond))
	}
	if len(s.SinkBreakers) == 0 {
		fmt.Fprintf(tw, "sink breakers\tall closed\t\n")
	}
	for _, b := range s.SinkBreakers {
		state := "open"
		if b.Stale {
			state = "stale"
		}
		fmt.Fprintf(tw, "sink breaker\t%s\t%s for %s, %d probes failed, last %s\n", b.Owner, state,
			s.CheckedAt.Sub(b.OpenedAt).Round(time.Second), b.Probes, lastError(b.LastError))
	}
	horizon := "never ran"
	if s.CleanupHorizon != nil {
		horizon = "events published before " + s.CleanupHorizon.UTC().Format(time.RFC3339) + " may be deleted"
	}
	fmt.Fprintf(tw, "cleanup\t%s\t\n", horizon)
	if slot := s.CDCSlot; slot != nil {
		state := "active (a cdc relay streams it)"
		if !slot.Active {
			state = "inactive (no cdc relay streams it; it still retains WAL)"
		}
		fmt.Fprintf(tw, "cdc slot\t%s\t%s\n", slot.Name, state)
		fmt.Fprintf(tw, "  lag\t%s\t(confirmed %s)\n", bytesText(slot.LagBytes), slot.ConfirmedFlushLSN)
		limit := "max_slot_wal_keep_size unlimited"
		if slot.MaxSlotWALKeepSizeBytes >= 0 {
			limit = "max_slot_wal_keep_size " + bytesText(slot.MaxSlotWALKeepSizeBytes)
		}
		fmt.Fprintf(tw, "  retained WAL\t%s\t(%s, wal_status %s)\n", bytesText(slot.RetainedBytes), limit, slot.WALStatus)
		if slot.WALStatus == "lost" {
			fmt.Fprintf(tw, "  LOST\t\tthe slot can no longer stream: see docs/operations.md, \"A lost slot\"\n")
		}
	}
	if s.Log != nil {
		writeLogStatus(tw, *s.Log)
	}
	return tw.Flush()
}

// writeLogStatus prints the log source's part of the status: its pending
// events, the horizon, its holds and each partition's cursor and lease.
func writeLogStatus(tw io.Writer, lg outboxops.LogStatusReport) {
	seconds := func(s float64) string {
		return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
	}
	oldest := "-"
	if lg.Pending > 0 {
		oldest = seconds(lg.OldestPendingAgeSeconds)
	}
	fmt.Fprintf(tw, "log pending\t%d\t(oldest %s)\n", lg.Pending, oldest)
	fmt.Fprintf(tw, "  horizon age\t%s\t(the oldest open transaction holding an xid; no log event committed after it began is read)\n", seconds(lg.HorizonAgeSeconds))
	fmt.Fprintf(tw, "log holds\t%d\t\n", lg.Holds)
	hint := ""
	if lg.Quarantined > 0 {
		hint = "(outboxctl list --quarantined; then retry or skip)"
	}
	fmt.Fprintf(tw, "  quarantined\t%d\t%s\n", lg.Quarantined, hint)
	oldestKept, horizon := "-", "nothing dropped yet"
	if lg.Ranges.OldestKept != nil {
		oldestKept = lg.Ranges.OldestKept.UTC().Format(time.RFC3339)
	}
	if lg.Ranges.Horizon != nil {
		horizon = "events before " + lg.Ranges.Horizon.UTC().Format(time.RFC3339) + " may be dropped"
	}
	hint = ""
	if lg.Ranges.Ahead == 0 {
		hint = " (none ahead: enqueues fail once the current range is full; outboxctl cleanup makes ranges)"
	}
	fmt.Fprintf(tw, "log ranges\t%d\t(%d ahead of the sequence, oldest kept made %s; %s)%s\n",
		lg.Ranges.Kept, lg.Ranges.Ahead, oldestKept, horizon, hint)
	for _, p := range lg.Partitions {
		lease := "no lease"
		if p.Owner != nil && p.LeaseUntil != nil {
			if left := p.LeaseUntil.Sub(lg.CheckedAt); left > 0 {
				lease = fmt.Sprintf("%s, lease %s left", *p.Owner, left.Round(time.Millisecond))
			} else {
				lease = fmt.Sprintf("%s, lease expired %s ago", *p.Owner, (-left).Round(time.Millisecond))
			}
		}
		tries := ""
		if p.Tries > 0 {
			tries = fmt.Sprintf(" tries=%d", p.Tries)
		}
		fmt.Fprintf(tw, "  partition %d\tcursor (%d, %d)\tpending=%d holds=%d quarantined=%d%s, %s\n",
			p.Partition, p.Gate, p.Pos, p.Pending, p.Holds, p.Quarantined, tries, lease)
	}
}

// bytesText renders a byte count in binary units.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
