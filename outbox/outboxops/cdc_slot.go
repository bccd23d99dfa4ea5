package outboxops

import (
	"context"
	"fmt"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/internal/relaysql"
	"github.com/outflow/outflow/outbox/namedsql"
)

// The cdc source's objects in the database, by default: the replication
// slot a relay streams (outbox.RelayConfig.CDCSlot's default) and the
// publication it streams (RelayConfig.CDCPublication's), which the outbox's
// migrations make.
const (
	CDCSlotDefault        = relaysql.CDCSlotDefault
	CDCPublicationDefault = relaysql.CDCPublicationDefault
)

// ErrWALLevel is wrapped by the error of a switch to the cdc source
// ([SetSource]) on a server without wal_level=logical.
var ErrWALLevel = relaysql.ErrWALLevel

// qCDCSlot is the relay's own slot statement (package outbox checks it),
// read here for the status.
var qCDCSlot = namedsql.Bind[slotArgs, SlotStatus](relaysql.Queries, "CDCSlot")

type slotArgs struct {
	SlotName string `db:"slot_name"`
}

// SlotStatus is the cdc source's replication slot as PostgreSQL reports it
// (pg_replication_slots), for `outboxctl status`.
type SlotStatus struct {
	Name string `db:"-" json:"name"`
	// Active: a session streams the slot now.
	Active bool `db:"active" json:"active"`
	// ActivePID is the walsender that streams it (0 when none).
	ActivePID int32 `db:"active_pid" json:"active_pid"`
	// ConfirmedFlushLSN is where a restarted stream resumes.
	ConfirmedFlushLSN string `db:"confirmed_flush_lsn" json:"confirmed_flush_lsn"`
	// LagBytes is the server's WAL position minus the confirmed position.
	LagBytes int64 `db:"lag_bytes" json:"lag_bytes"`
	// RetainedBytes is the WAL the slot keeps from being recycled.
	RetainedBytes int64 `db:"retained_bytes" json:"retained_wal_bytes"`
	// WALStatus is reserved, extended, unreserved or lost (the slot can no
	// longer stream: see docs/operations.md).
	WALStatus string `db:"wal_status" json:"wal_status"`
	// MaxSlotWALKeepSizeBytes is the server's max_slot_wal_keep_size; -1
	// when unlimited.
	MaxSlotWALKeepSizeBytes int64 `db:"max_slot_wal_keep_size_bytes" json:"max_slot_wal_keep_size_bytes"`
}

// Slot returns the status of the cdc source's slot called name (empty: the
// default, [CDCSlotDefault]) in db's database; false when it does not
// exist.
func Slot(ctx context.Context, db outbox.LookupDB, name string) (SlotStatus, bool, error) {
	if name == "" {
		name = CDCSlotDefault
	}
	rows, err := qCDCSlot.All(ctx, db, slotArgs{SlotName: name})
	if err != nil {
		return SlotStatus{}, false, fmt.Errorf("outbox: read slot %s: %w", name, err)
	}
	if len(rows) == 0 {
		return SlotStatus{}, false, nil
	}
	rows[0].Name = name
	return rows[0], true, nil
}
