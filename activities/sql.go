package activities

import (
	"embed"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/internal/namedsql"
)

//go:embed *.sql
var sqlFiles embed.FS

// queries are the activities' own statements (inbox.sql), by name.
var queries = namedsql.MustLoad(sqlFiles, "inbox.sql")

// inboxArgs are the named arguments of an inbox statement.
func inboxArgs(consumer, eventID string) pgx.StrictNamedArgs {
	return pgx.StrictNamedArgs{"consumer": consumer, "event_id": eventID}
}
