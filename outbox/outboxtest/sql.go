package outboxtest

import (
	"embed"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed outboxtest.sql
var sqlFiles embed.FS

// The package's statements (outboxtest.sql), bound to their Go types when the
// package is initialised.
var (
	queries             = namedsql.MustLoad(sqlFiles, "outboxtest.sql")
	qEvents             = namedsql.Bind[matchArgs, Event](queries, "TestEvents")
	qDeleteEvents       = namedsql.Bind[matchArgs, namedsql.NoRows](queries, "TestDeleteEvents")
	qSetOccurred        = namedsql.Bind[agoArgs, namedsql.NoRows](queries, "TestSetOccurred")
	qSetPublished       = namedsql.Bind[agoArgs, namedsql.NoRows](queries, "TestSetPublished")
	qSetQuarantined     = namedsql.Bind[quarantinedArgs, namedsql.NoRows](queries, "TestSetQuarantined")
	qSetFailed          = namedsql.Bind[failedArgs, namedsql.NoRows](queries, "TestSetFailed")
	qSetLeased          = namedsql.Bind[leasedArgs, namedsql.NoRows](queries, "TestSetLeased")
	qSetSkipped         = namedsql.Bind[skippedArgs, namedsql.NoRows](queries, "TestSetSkipped")
	qSetReplayRequested = namedsql.Bind[idsArgs, namedsql.NoRows](queries, "TestSetReplayRequested")
	qHolders            = namedsql.Bind[namedsql.NoArgs, holderRow](queries, "TestHolders")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qEvents.Info(), qDeleteEvents.Info(), qSetOccurred.Info(), qSetPublished.Info(), qSetQuarantined.Info(),
	qSetFailed.Info(), qSetLeased.Info(), qSetSkipped.Info(), qSetReplayRequested.Info(), qHolders.Info(),
}

// holderRow is one state of TestHolders.
type holderRow struct {
	State  string `db:"state"`
	Events int64  `db:"events"`
	Holder string `db:"holder"`
	Detail string `db:"detail"`
}

// matchArgs is a [Match]; EventID is nil for any event.
type matchArgs struct {
	EventID       *uuid.UUID `db:"event_id"`
	AggregateType string     `db:"aggregate_type"`
	AggregateID   string     `db:"aggregate_id"`
	EventType     string     `db:"event_type"`
}

func (m Match) args() matchArgs {
	a := matchArgs{AggregateType: m.AggregateType, AggregateID: m.AggregateID, EventType: m.Type}
	if m.ID != uuid.Nil {
		a.EventID = &m.ID
	}
	return a
}

type idsArgs struct {
	EventIDs []uuid.UUID `db:"event_ids"`
}

type agoArgs struct {
	EventIDs []uuid.UUID `db:"event_ids"`
	AgoMS    int64       `db:"ago_ms"`
}

type quarantinedArgs struct {
	EventIDs  []uuid.UUID `db:"event_ids"`
	AgoMS     int64       `db:"ago_ms"`
	Attempts  int         `db:"attempts"`
	LastError string      `db:"last_error"`
}

type failedArgs struct {
	EventIDs  []uuid.UUID `db:"event_ids"`
	Attempts  int         `db:"attempts"`
	LastError string      `db:"last_error"`
	RetryInMS int64       `db:"retry_in_ms"`
}

type leasedArgs struct {
	EventIDs []uuid.UUID `db:"event_ids"`
	Owner    string      `db:"owner"`
	LeaseMS  int64       `db:"lease_ms"`
}

type skippedArgs struct {
	EventIDs   []uuid.UUID `db:"event_ids"`
	AgoMS      int64       `db:"ago_ms"`
	SkippedBy  string      `db:"skipped_by"`
	SkipReason string      `db:"skip_reason"`
}
