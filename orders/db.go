package orders

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// DB is what the commands need from a database handle. *pgxpool.Pool and
// *pgx.Conn satisfy it, and so does pgx.Tx (Begin then opens a savepoint),
// so a caller can run a command inside its own transaction.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
