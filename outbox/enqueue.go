package outbox

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/internal/namedsql"
)

//go:embed *.sql
var sqlFiles embed.FS

var queries = namedsql.MustLoad(sqlFiles, "queries.sql")

// Enqueue writes events as immutable outbox rows inside tx, the caller's own
// business transaction, and returns them with their IDs, sequences and
// timestamps filled in. Nothing is visible to relays unless tx commits; when
// it does, relays listening on [NotifyChannel] are woken.
//
// Events of one aggregate get consecutive sequence numbers in the order
// given. Aggregates are locked in a stable order (type, then ID) so two
// transactions touching the same aggregates cannot deadlock on each other.
//
// There is deliberately no form of Enqueue that opens its own transaction: an
// event written outside the business change it describes is exactly the dual
// write the outbox exists to prevent.
func Enqueue(ctx context.Context, tx pgx.Tx, events ...Event) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	out := slices.Clone(events)
	type lane struct {
		aggType, aggID string
		idx            []int
	}
	var lanes []*lane
	byKey := map[[2]string]*lane{}
	for i := range out {
		e := &out[i]
		if err := e.validate(); err != nil {
			return nil, err
		}
		if e.ID == uuid.Nil {
			id, err := uuid.NewV7()
			if err != nil {
				return nil, fmt.Errorf("outbox: new event id: %w", err)
			}
			e.ID = id
		}
		key := [2]string{e.AggregateType, e.AggregateID}
		l := byKey[key]
		if l == nil {
			l = &lane{aggType: e.AggregateType, aggID: e.AggregateID}
			byKey[key] = l
			lanes = append(lanes, l)
		}
		l.idx = append(l.idx, i)
	}
	slices.SortFunc(lanes, func(a, b *lane) int {
		if c := strings.Compare(a.aggType, b.aggType); c != 0 {
			return c
		}
		return strings.Compare(a.aggID, b.aggID)
	})
	for _, l := range lanes {
		ids := make([]uuid.UUID, len(l.idx))
		types := make([]string, len(l.idx))
		versions := make([]int32, len(l.idx))
		payloads := make([]string, len(l.idx))
		for j, i := range l.idx {
			ids[j], types[j], versions[j], payloads[j] = out[i].ID, out[i].Type, int32(out[i].SchemaVersion), string(out[i].Payload)
		}
		rows, err := tx.Query(ctx, queries.Get("EnqueueAggregate"), l.aggType, l.aggID, ids, types, versions, payloads)
		if err != nil {
			return nil, fmt.Errorf("outbox: enqueue %s/%s: %w", l.aggType, l.aggID, err)
		}
		j := 0
		for rows.Next() {
			e := &out[l.idx[j]]
			var id uuid.UUID
			if err := rows.Scan(&id, &e.Sequence, &e.OccurredAt); err != nil {
				rows.Close()
				return nil, fmt.Errorf("outbox: enqueue %s/%s: %w", l.aggType, l.aggID, err)
			}
			if id != e.ID {
				rows.Close()
				return nil, fmt.Errorf("outbox: enqueue %s/%s: rows returned out of order", l.aggType, l.aggID)
			}
			j++
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("outbox: enqueue %s/%s: %w", l.aggType, l.aggID, err)
		}
		if j != len(l.idx) {
			return nil, fmt.Errorf("outbox: enqueue %s/%s: %d of %d events written", l.aggType, l.aggID, j, len(l.idx))
		}
	}
	return out, nil
}
