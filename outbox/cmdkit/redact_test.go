package cmdkit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable":  "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"postgres://app:s3cret@db.example:5432/orders?sslmode=require": "postgres://app:xxxxx@db.example:5432/orders?sslmode=require",
		"postgresql://app@db/orders?password=s3cret&sslmode=disable":   "postgresql://app@db/orders?password=xxxxx&sslmode=disable",
		"host=db user=app password=s3cret dbname=orders":               "host=db user=app password=xxxxx dbname=orders",
		"host=db password = 'with space' dbname=orders":                "host=db password = xxxxx dbname=orders",
		"postgres://app:s3cret@db:bad port/orders":                     "postgres://(malformed URL, not shown)",
	} {
		got := Redact(in)
		require.Equal(t, want, got, in)
		require.NotContains(t, got, "s3cret")
		require.NotContains(t, got, "with space")
	}
}
