package testsuite

import (
	"context"
	"embed"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/ctl"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

//go:embed console_bench.sql
var benchSQL embed.FS

// The console benchmark's statements (console_bench.sql).
var (
	benchQueries     = namedsql.MustLoad(benchSQL, "console_bench.sql")
	qBenchFillEvents = namedsql.Bind[benchFillArgs, namedsql.NoRows](benchQueries, "BenchFillEvents")
	qBenchAnalyze    = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](benchQueries, "BenchAnalyze")
	benchStatements  = []namedsql.Info{qBenchFillEvents.Info(), qBenchAnalyze.Info()}
)

type benchFillArgs struct {
	Events int64 `db:"events"`
}

// BenchmarkConsoleList fills an outbox with 1,000,000 events (3% of them
// unpublished: quarantined, blocked behind them, pending) and measures the
// console's list pages over HTTP beside the call `outboxctl list` makes
// (outboxops.ListAll) on the same data: p50 and p99 over 200 requests each,
// and their ratio. Run it alone: go test -run '^$' -bench ConsoleList
// -benchtime 1x ./testsuite.
func BenchmarkConsoleList(b *testing.B) {
	const events, requests = 1_000_000, 200
	ctx := context.Background()
	pool, _ := testdb.New(b)
	start := time.Now()
	_, err := qBenchFillEvents.Exec(ctx, pool, benchFillArgs{Events: events})
	require.NoError(b, err)
	_, err = qBenchAnalyze.Exec(ctx, pool, namedsql.NoArgs{})
	require.NoError(b, err)
	b.Logf("filled %d events in %s", events, time.Since(start).Round(time.Millisecond))

	env := &ctl.Env{Actor: "bench", Logger: slog.New(slog.DiscardHandler), Stdout: io.Discard, Stderr: io.Discard}
	srv := httptest.NewUnstartedServer(nil)
	c, err := ctl.NewConsole(env, pool, ctl.ConsoleOptions{AllowedHosts: []string{srv.Listener.Addr().String()}})
	require.NoError(b, err)
	srv.Config.Handler = c
	srv.Start()
	defer srv.Close()

	// A deep page: the 100th pending page, reached by its next links; the
	// CLI's call starts after the same key (the 5,000th pending event).
	deepPath := "/events?state=pending"
	for range 99 {
		resp, err := http.Get(srv.URL + deepPath)
		require.NoError(b, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := nextLink.FindSubmatch(body)
		require.NotNil(b, m, "page %s has a next page", deepPath)
		deepPath = strings.ReplaceAll(string(m[1]), "&amp;", "&")
	}
	deep, err := outboxops.List(ctx, pool, outboxops.ListOptions{Pending: true, Limit: 99 * 50})
	require.NoError(b, err)
	after := deep[len(deep)-1].Key()

	for _, cse := range []struct {
		name string
		path string
		opts outboxops.ListOptions
	}{
		{"quarantined", "/events?state=quarantined", outboxops.ListOptions{Quarantined: true, Limit: 51}},
		{"pending", "/events?state=pending", outboxops.ListOptions{Pending: true, Limit: 51}},
		{"pending_page_100", deepPath, outboxops.ListOptions{Pending: true, Limit: 51, After: &after}},
		{"held", "/events?state=held", outboxops.ListOptions{Held: true, Limit: 51}},
		{"quarantined_error", "/events?state=quarantined&error=permanent", outboxops.ListOptions{Quarantined: true, ErrorContains: "permanent", Limit: 51}},
	} {
		page := measure(b, requests, func() {
			resp, err := http.Get(srv.URL + cse.path)
			require.NoError(b, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(b, http.StatusOK, resp.StatusCode)
		})
		cli := measure(b, requests, func() {
			_, err := outboxops.ListAll(ctx, pool, cse.opts)
			require.NoError(b, err)
		})
		fmt.Printf("console_list_%s_p50_ms %.2f\nconsole_list_%s_p99_ms %.2f\ncli_list_%s_p50_ms %.2f\ncli_list_%s_p99_ms %.2f\nconsole_vs_cli_%s_p50_ratio %.2f\n",
			cse.name, ms(page[0]), cse.name, ms(page[1]), cse.name, ms(cli[0]), cse.name, ms(cli[1]), cse.name, ms(page[0])/ms(cli[0]))
		b.ReportMetric(ms(page[0]), cse.name+"_page_p50_ms")
	}
}

var nextLink = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)

// measure runs f n times (after a warm-up) and returns the p50 and p99.
func measure(b *testing.B, n int, f func()) [2]time.Duration {
	b.Helper()
	for range 5 {
		f()
	}
	ds := make([]time.Duration, n)
	for i := range ds {
		t := time.Now()
		f()
		ds[i] = time.Since(t)
	}
	slices.Sort(ds)
	return [2]time.Duration{ds[n/2], ds[n*99/100]}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
