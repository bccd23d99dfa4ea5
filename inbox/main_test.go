package inbox_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/outflow/outflow/internal/testdb"
)

// TestMain fails the package if a test leaves a goroutine behind. The
// Example functions read DATABASE_URL as a service would: a scratch
// database of their own.
func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	url, drop, err := testdb.Scratch(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("DATABASE_URL", url)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		drop()
		os.Exit(code)
	}))
}
