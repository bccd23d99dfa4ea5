package ctl

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/cmdkit"
)

// OpenOutbox is the default [App.OpenDB]: cmdkit.Open, then a refusal of
// an outbox schema behind this build (outbox.CheckSchema), naming the fix.
func OpenOutbox(ctx context.Context, url string) (*pgxpool.Pool, error) {
	return cmdkit.OpenChecked(ctx, url, nil, outbox.CheckSchema)
}
