package testsuite

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
)

const consoleTestToken = "console-test-token"

// TestConsoleInBrowser drives `outboxctl serve` (the root's binary) in a
// real headless Chromium over a stack with real relays and Temporal: a
// quarantined order event is found in the list, its retry plan shown,
// retried, and delivered by a relay; a skip needs a reason and is
// audited; without the token every action is refused and nothing changes;
// a form posted from another site is refused.
func TestConsoleInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := NewStack(t)
	s.Start("orderapi", "")

	// An order whose first event the relay gave up on: placed while no
	// relay runs, then quarantined as the relay leaves such an event.
	o, err := s.API().Create(ctx, "console-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	created := outboxtest.Force(t, s.Pool, outboxtest.Match{AggregateType: "order", AggregateID: o.OrderID, Type: "OrderCreated"},
		outboxtest.SetQuarantined(time.Minute, "rpc error: code = Unavailable desc = connection refused (the console test's)"))
	require.Len(t, created, 1)
	stuck := created[0].ID

	// An event no workflow takes: the relay quarantines it itself.
	ev, err := outbox.NewEvent("shipment", "console-poison-"+uuid.NewString()[:8], "OrderTeleported", 1, map[string]string{})
	require.NoError(t, err)
	var poison outbox.Event
	require.NoError(t, pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		written, err := outbox.Enqueue(ctx, tx, ev)
		if err == nil {
			poison = written[0]
		}
		return err
	}))
	s.Start("worker", "")
	s.Start("starter", "")
	outboxtest.WaitFor(t, s.Pool, outboxtest.Match{ID: poison.ID}, time.Minute, outboxtest.AllQuarantined, "the relay quarantines the unroutable event")

	port, err := ports.Free()
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	base := "http://" + addr
	console, err := startProcess("console", s.Env.Bin.Outboxctl, filepath.Join(s.Env.Dir, "console-"+s.TaskQueue+".log"),
		[]string{"DATABASE_URL=" + s.DatabaseURL, "OUTFLOW_CONSOLE_ADDR=" + addr, "OUTFLOW_CONSOLE_TOKEN=" + consoleTestToken},
		"serve", "--temporal-ui", "http://127.0.0.1:8233")
	require.NoError(t, err)
	t.Cleanup(func() { console.Stop(5 * time.Second) })
	require.NoError(t, console.WaitLog(ctx, "outbox console on"))

	alloc := browser(t, ctx)

	snapshot := func() string {
		var out string
		require.NoError(t, s.Pool.QueryRow(ctx, `SELECT string_agg(row_to_json(e)::text, E'\n' ORDER BY event_id)
			|| (SELECT count(*) FROM outbox_bulk_retries)::text FROM outbox_events e WHERE event_id = ANY($1)`,
			[]uuid.UUID{stuck, poison.ID}).Scan(&out))
		return out
	}

	// Read-only: no token, no action; a form forged into the page is
	// refused, and nothing changes.
	t.Run("read-only", func(t *testing.T) {
		bctx, cancel := chromedp.NewContext(alloc)
		defer cancel()
		before := snapshot()
		require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/events/"+stuck.String())))
		body := text(t, bctx, "main")
		require.Contains(t, body, "Read-only")
		require.Contains(t, body, "hidden: it holds personal data, shown only to a holder of the operator token")
		forms, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("form[action^='/actions/']").length`))
		require.NoError(t, err)
		require.Zero(t, forms, "no action form without the token")
		for _, action := range []string{"retry", "skip", "replay", "retry-quarantined"} {
			// The login page's CSRF token is the session's: a forged form
			// carries it, and still the console refuses.
			require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/login")))
			_, err := chromedp.Run(bctx, chromedp.Evaluate[bool](forgedForm("/actions/"+action, stuck.String(), poison.ID.String())))
			require.NoError(t, err)
			waitText(t, bctx, "read-only")
		}
		require.Equal(t, before, snapshot(), "nothing changed without the token")
	})

	bctx, cancelB := chromedp.NewContext(alloc)
	defer cancelB()
	// Signed in through the login form.
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(base+"/login"),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), consoleTestToken),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`.cards`)),
	))
	shot(t, bctx, "console-overview.png")

	t.Run("cross-site post refused", func(t *testing.T) {
		// Another site's page (another origin: localhost, its own port)
		// posts a bulk retry to the console, in the signed-in browser.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/actions/retry-quarantined">
<input type="hidden" name="confirm" value="yes"><button id="go">win a prize</button></form>`, base)
		}))
		defer evil.Close()
		before := snapshot()
		require.NoError(t, chromedp.Do(bctx,
			chromedp.Navigate(strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)),
			chromedp.Click(chromedp.CSS(`#go`)),
		))
		waitText(t, bctx, "forbidden")
		require.Equal(t, before, snapshot(), "nothing changed")
	})

	t.Run("retry, delivered", func(t *testing.T) {
		require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/events?state=quarantined")))
		require.Contains(t, text(t, bctx, "table.events"), stuck.String(), "the quarantined event is in the list")
		require.NoError(t, chromedp.Do(bctx,
			chromedp.Click(chromedp.CSS(`a[href="/events/`+stuck.String()+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`form[action="/actions/retry"]`)),
		))
		href, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS(`a[href*="/workflows/"]`), "href"))
		require.NoError(t, err)
		require.Equal(t, "http://127.0.0.1:8233/namespaces/default/workflows/"+stuck.String(), href.Value)
		shot(t, bctx, "console-event.png")
		require.NoError(t, chromedp.Do(bctx,
			chromedp.Click(chromedp.CSS(`form[action="/actions/retry"] button`)),
			chromedp.WaitVisible(chromedp.CSS(`pre.plan`)),
		))
		require.Contains(t, text(t, bctx, "pre.plan"), "plan: retry "+stuck.String()+" (OrderCreated order/"+o.OrderID+" seq=1): quarantined -> pending")
		require.NotNil(t, outboxtest.RequireEnqueued(t, s.Pool, outboxtest.Match{ID: stuck}).QuarantinedAt, "the plan changed nothing")
		require.NoError(t, chromedp.Do(bctx,
			chromedp.Click(chromedp.CSS(`button.go`)),
			chromedp.WaitVisible(chromedp.CSS(`pre.done`)),
		))
		require.Contains(t, text(t, bctx, "pre.done"), "retried "+stuck.String())
		outboxtest.WaitFor(t, s.Pool, outboxtest.Match{ID: stuck}, time.Minute, outboxtest.AllPublished, "the relay delivers the retried event")
		require.NoError(t, WaitStatus(ctx, s, o.OrderID, "confirmed", 2*time.Minute), "its order goes on")
	})

	t.Run("skip needs a reason, audited", func(t *testing.T) {
		before := snapshot()
		require.NoError(t, chromedp.Do(bctx,
			chromedp.Navigate(base+"/events/"+poison.ID.String()),
			chromedp.Click(chromedp.CSS(`form[action="/actions/skip"] button`)), // no reason: the browser will not send it
		))
		url, err := chromedp.Run(bctx, chromedp.Location())
		require.NoError(t, err)
		require.Equal(t, base+"/events/"+poison.ID.String(), url, "no reason, no request")
		require.Equal(t, before, snapshot())
		require.NoError(t, chromedp.Do(bctx,
			chromedp.SendKeys(chromedp.CSS(`form[action="/actions/skip"] input[name="reason"]`), "unroutable test event, INC-1"),
			chromedp.Click(chromedp.CSS(`form[action="/actions/skip"] button`)),
			chromedp.WaitVisible(chromedp.CSS(`pre.plan`)),
		))
		require.Contains(t, text(t, bctx, "pre.plan"), "plan: skip "+poison.ID.String())
		require.Equal(t, before, snapshot(), "the plan changed nothing")
		require.NoError(t, chromedp.Do(bctx,
			chromedp.Click(chromedp.CSS(`button.go`)),
			chromedp.WaitVisible(chromedp.CSS(`pre.done`)),
		))
		row := outboxtest.RequireEnqueued(t, s.Pool, outboxtest.Match{ID: poison.ID})
		require.NotNil(t, row.SkippedAt)
		require.Equal(t, "unroutable test event, INC-1", row.SkipReason)
		require.True(t, strings.HasPrefix(row.SkippedBy, "console/"), row.SkippedBy)
	})

}

// text is the text of the first element sel selects.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return s
}

// forgedForm is a script that builds and submits a confirmed action form
// with the page's CSRF token: what a user without the token could craft.
func forgedForm(action, eventID, poisonID string) string {
	return fmt.Sprintf(`(() => {
  const f = document.createElement("form"); f.method = "post"; f.action = %q;
  const add = (n, v) => { const i = document.createElement("input"); i.type = "hidden"; i.name = n; i.value = v; f.appendChild(i); };
  add("csrf", document.querySelector("input[name=csrf]").value);
  add("event_id", %q); add("reason", "forged"); add("from", "1h"); add("confirm", "yes");
  document.body.appendChild(f); f.submit(); return true;
})()`, action, map[bool]string{true: poisonID, false: eventID}[strings.HasSuffix(action, "skip")])
}
