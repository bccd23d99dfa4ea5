package ctl

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

const consoleToken = "s3cret-operator-token"

// consoleBundle is a console over b's database and a browser for it.
type consoleBundle struct {
	*testBundle
	console *Console
}

func setupConsole(t *testing.T, opts ConsoleOptions) *consoleBundle {
	t.Helper()
	b := setup(t)
	env := &Env{Actor: "tester@test-host", Logger: quiet(), app: &App{Commands: commands, SettleSkipTx: settleOrder}}
	opts.Addr = "127.0.0.1:8099"
	c, err := NewConsole(env, b.Pool, opts)
	require.NoError(t, err)
	return &consoleBundle{testBundle: b, console: c}
}

// browser keeps a session's cookies, as a browser does.
type browser struct {
	c       *Console
	cookies map[string]string
	header  http.Header
	host    string
}

func (cb *consoleBundle) browser() *browser {
	return &browser{c: cb.console, cookies: map[string]string{}, header: http.Header{}, host: "127.0.0.1:8099"}
}

// answer is one response.
type answer struct {
	code int
	body string
	hdr  http.Header
}

func (br *browser) do(method, path string, form url.Values) answer {
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, path, body)
	r.Host = br.host
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, vs := range br.header {
		r.Header[k] = vs
	}
	for k, v := range br.cookies {
		r.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	w := httptest.NewRecorder()
	br.c.ServeHTTP(w, r)
	for _, ck := range w.Result().Cookies() {
		if ck.MaxAge < 0 {
			delete(br.cookies, ck.Name)
		} else {
			br.cookies[ck.Name] = ck.Value
		}
	}
	return answer{code: w.Code, body: w.Body.String(), hdr: w.Header()}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrf opens a page and returns the session's CSRF token from its forms.
func (br *browser) csrf(t *testing.T) string {
	t.Helper()
	a := br.do("GET", "/login", nil)
	require.Equal(t, http.StatusOK, a.code, a.body)
	m := csrfField.FindStringSubmatch(a.body)
	require.NotNil(t, m, "the page has a CSRF field:\n%s", a.body)
	return m[1]
}

// snapshot is every event row, for "nothing changed".
func (cb *consoleBundle) snapshot(t *testing.T) string {
	t.Helper()
	var s string
	require.NoError(t, cb.Pool.QueryRow(cb.Ctx, `SELECT coalesce(string_agg(row_to_json(e)::text, E'\n' ORDER BY event_id), '') FROM outbox_events e`).Scan(&s))
	var audits string
	require.NoError(t, cb.Pool.QueryRow(cb.Ctx, `SELECT count(*)::text FROM outbox_bulk_retries`).Scan(&audits))
	return s + "\naudits=" + audits
}

// quarantined enqueues one event and quarantines it.
func (cb *consoleBundle) quarantined(t *testing.T, lastError string) uuid.UUID {
	t.Helper()
	ev := cb.Enqueue(t, cb.order(t), "OrderCreated")[0]
	cb.Quarantine(t, ev.ID, lastError)
	return ev.ID
}

// actions are every action's form for event id, confirmed.
func actions(id uuid.UUID) map[string]url.Values {
	return map[string]url.Values{
		"/actions/retry":             {"event_id": {id.String()}, "confirm": {"yes"}},
		"/actions/skip":              {"event_id": {id.String()}, "reason": {"test"}, "confirm": {"yes"}},
		"/actions/retry-quarantined": {"reason": {"test"}, "confirm": {"yes"}},
		"/actions/replay":            {"from": {"1h"}, "confirm": {"yes"}},
	}
}

// TestConsolePayloadsFollowPersonal: without the token, a payload the
// Personal option calls personal is hidden and any other is shown; with
// the token, every payload is shown.
func TestConsolePayloadsFollowPersonal(t *testing.T) {
	t.Parallel()
	cb := setupConsole(t, ConsoleOptions{Token: consoleToken, Personal: func(eventType string, _ []byte) bool {
		return eventType == "OrderCreated"
	}})
	personal := cb.quarantined(t, "permanent: bad payload")
	other := cb.Enqueue(t, cb.order(t), "OrderCancelled")[0].ID
	anon := cb.browser()
	page := anon.do("GET", "/events/"+personal.String(), nil)
	require.Contains(t, page.body, "hidden: it holds personal data")
	require.NotContains(t, page.body, `{&#34;order_id&#34;:`)
	page = anon.do("GET", "/events/"+other.String(), nil)
	require.NotContains(t, page.body, "hidden:", "a payload without personal data is shown to every visitor")
	require.Contains(t, page.body, `{&#34;order_id&#34;:`)
	signed := cb.browser()
	signed.header.Set("Authorization", "Bearer "+consoleToken)
	page = signed.do("GET", "/events/"+personal.String(), nil)
	require.NotContains(t, page.body, "hidden:", "a token holder sees every payload")
	require.Contains(t, page.body, `{&#34;order_id&#34;:`)
}

func TestConsoleReadOnlyWithoutToken(t *testing.T) {
	t.Parallel()
	for name, token := range map[string]string{"token not presented": consoleToken, "no token configured": ""} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cb := setupConsole(t, ConsoleOptions{Token: token})
			id := cb.quarantined(t, "permanent: bad payload")
			before := cb.snapshot(t)
			br := cb.browser()
			page := br.do("GET", "/events/"+id.String(), nil)
			require.Equal(t, http.StatusOK, page.code)
			require.Contains(t, page.body, "hidden: it holds personal data, shown only to a holder of the operator token")
			require.NotContains(t, page.body, `{&#34;order_id&#34;:`, "the payload is not shown without the token")
			require.NotContains(t, page.body, `action="/actions/`, "no action form without the token")
			csrf := br.csrf(t)
			br.header.Set("X-Forwarded-User", "mallory") // trusted only alongside the token
			for path, form := range actions(id) {
				form.Set("csrf", csrf)
				a := br.do("POST", path, form)
				require.Equal(t, http.StatusUnauthorized, a.code, "%s: %s", path, a.body)
				require.Contains(t, a.body, "read-only")
			}
			br.header.Set("Authorization", "Bearer wrong-token")
			a := br.do("POST", "/actions/retry", url.Values{"csrf": {csrf}, "event_id": {id.String()}, "confirm": {"yes"}})
			require.Equal(t, http.StatusUnauthorized, a.code, a.body)
			require.Equal(t, before, cb.snapshot(t), "nothing changed")
		})
	}
}

func TestConsoleCSRF(t *testing.T) {
	t.Parallel()
	cb := setupConsole(t, ConsoleOptions{Token: consoleToken})
	id := cb.quarantined(t, "permanent: bad payload")
	before := cb.snapshot(t)
	br := cb.browser()
	br.header.Set("Authorization", "Bearer "+consoleToken)
	csrf := br.csrf(t)
	for path, form := range actions(id) {
		a := br.do("POST", path, form) // no CSRF token
		require.Equal(t, http.StatusForbidden, a.code, "%s: %s", path, a.body)
		form.Set("csrf", strings.Repeat("0", len(csrf)))
		a = br.do("POST", path, form) // another's
		require.Equal(t, http.StatusForbidden, a.code, "%s: %s", path, a.body)
	}
	// Another session's token is refused too.
	other := cb.browser()
	other.header.Set("Authorization", "Bearer "+consoleToken)
	a := other.do("POST", "/actions/retry", url.Values{"csrf": {csrf}, "event_id": {id.String()}, "confirm": {"yes"}})
	require.Equal(t, http.StatusForbidden, a.code, a.body)
	require.Equal(t, before, cb.snapshot(t), "nothing changed")

	// With the session's token: the plan first, and nothing changes...
	a = br.do("POST", "/actions/retry", url.Values{"csrf": {csrf}, "event_id": {id.String()}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "plan: retry "+id.String())
	require.Contains(t, a.body, "quarantined -&gt; pending")
	require.Equal(t, before, cb.snapshot(t), "the plan changed nothing")
	// ...then, confirmed, the retry.
	a = br.do("POST", "/actions/retry", url.Values{"csrf": {csrf}, "event_id": {id.String()}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "retried "+id.String())
	row := cb.Row(t, id)
	require.Nil(t, row.QuarantinedAt)
	require.Zero(t, row.Attempts)
}

func TestConsoleCrossSitePost(t *testing.T) {
	t.Parallel()
	cb := setupConsole(t, ConsoleOptions{Token: consoleToken})
	id := cb.quarantined(t, "permanent: bad payload")
	before := cb.snapshot(t)
	br := cb.browser()
	br.header.Set("Authorization", "Bearer "+consoleToken)
	csrf := br.csrf(t)
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
		{"Origin": "http://evil.example"},
		{"Origin": "null"},
	} {
		for k, v := range h {
			br.header.Set(k, v)
		}
		for path, form := range actions(id) {
			form.Set("csrf", csrf)
			a := br.do("POST", path, form)
			require.Equal(t, http.StatusForbidden, a.code, "%v %s: %s", h, path, a.body)
		}
		for k := range h {
			br.header.Del(k)
		}
	}
	require.Equal(t, before, cb.snapshot(t), "nothing changed")
	// The console's own origin passes.
	br.header.Set("Origin", "http://127.0.0.1:8099")
	br.header.Set("Sec-Fetch-Site", "same-origin")
	a := br.do("POST", "/actions/retry", url.Values{"csrf": {csrf}, "event_id": {id.String()}})
	require.Equal(t, http.StatusOK, a.code, a.body)
}

func TestConsoleGetNeverChangesState(t *testing.T) {
	t.Parallel()
	cb := setupConsole(t, ConsoleOptions{Token: consoleToken})
	id := cb.quarantined(t, "permanent: bad payload")
	pending := cb.Enqueue(t, cb.order(t), "OrderCreated", "OrderPaid")
	before := cb.snapshot(t)
	br := cb.browser()
	br.header.Set("Authorization", "Bearer "+consoleToken)
	paths := []string{"/", "/login", "/console.css", "/events/" + id.String(), "/events/" + pending[1].ID.String()}
	for _, s := range listStates {
		paths = append(paths, "/events?state="+s)
	}
	for path, form := range actions(id) {
		paths = append(paths, path+"?"+form.Encode())
	}
	for _, p := range paths {
		a := br.do("GET", p, nil)
		if strings.HasPrefix(p, "/actions/") {
			require.Equal(t, http.StatusMethodNotAllowed, a.code, "GET %s: %s", p, a.body)
			continue
		}
		require.Equal(t, http.StatusOK, a.code, "GET %s: %s", p, a.body)
		require.Contains(t, a.hdr.Get("Content-Security-Policy"), "default-src 'none'")
		require.Contains(t, a.hdr.Get("Content-Security-Policy"), "frame-ancestors 'none'")
		// Not no-referrer: a browser then sends "Origin: null" with the
		// console's own forms.
		require.Equal(t, "same-origin", a.hdr.Get("Referrer-Policy"))
	}
	for _, m := range []string{"PUT", "DELETE", "PATCH"} {
		a := br.do(m, "/actions/retry?event_id="+id.String(), nil)
		require.Equal(t, http.StatusMethodNotAllowed, a.code, a.body)
	}
	require.Equal(t, before, cb.snapshot(t), "no GET changed anything")
	// The event page shows the payload to the token holder, and its lane.
	a := br.do("GET", "/events/"+pending[0].ID.String(), nil)
	require.Contains(t, a.body, "order_id")
	require.Contains(t, a.body, pending[1].ID.String(), "what waits behind it")
}

func TestConsoleHostCheck(t *testing.T) {
	t.Parallel()
	cb := setupConsole(t, ConsoleOptions{})
	br := cb.browser()
	for host, want := range map[string]int{
		"127.0.0.1:8099":      http.StatusOK,
		"localhost:8099":      http.StatusOK,
		"evil.example:8099":   http.StatusForbidden,
		"evil.example":        http.StatusForbidden,
		"127.0.0.1:8100":      http.StatusForbidden,
		"attacker.test:80":    http.StatusForbidden,
		"localhost.evil:8099": http.StatusForbidden,
	} {
		br.host = host
		a := br.do("GET", "/", nil)
		require.Equal(t, want, a.code, "Host %s: %s", host, a.body)
	}
}

func TestConsoleSkipNeedsReasonAndIsAudited(t *testing.T) {
	t.Parallel()
	cb := setupConsole(t, ConsoleOptions{Token: consoleToken})
	id := cb.quarantined(t, "permanent: bad payload")
	before := cb.snapshot(t)
	br := cb.browser()
	br.header.Set("Authorization", "Bearer "+consoleToken)
	br.header.Set("X-Forwarded-User", "alice@example.com")
	csrf := br.csrf(t)
	for _, reason := range []string{"", "   "} {
		a := br.do("POST", "/actions/skip", url.Values{"csrf": {csrf}, "event_id": {id.String()}, "reason": {reason}, "confirm": {"yes"}})
		require.Equal(t, http.StatusBadRequest, a.code, a.body)
		require.Contains(t, a.body, "a reason is mandatory")
	}
	require.Equal(t, before, cb.snapshot(t))
	a := br.do("POST", "/actions/skip", url.Values{"csrf": {csrf}, "event_id": {id.String()}, "reason": {"refunded by hand, OPS-7"}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "plan: skip "+id.String()+" (OrderCreated order/")
	require.Contains(t, a.body, "by console/alice@example.com")
	require.Contains(t, a.body, "projection settled", "the binary's SettleSkipTx is in the plan, as in the CLI's")
	require.Equal(t, before, cb.snapshot(t), "the plan changed nothing")
	a = br.do("POST", "/actions/skip", url.Values{"csrf": {csrf}, "event_id": {id.String()}, "reason": {"refunded by hand, OPS-7"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	row := cb.Row(t, id)
	require.NotNil(t, row.SkippedAt)
	require.Equal(t, "console/alice@example.com", row.SkippedBy)
	require.Equal(t, "refunded by hand, OPS-7", row.SkipReason)
	// The skipped list has it.
	a = br.do("GET", "/events?state=skipped", nil)
	require.Contains(t, a.body, id.String())
}

func TestConsoleLoginCookie(t *testing.T) {
	t.Parallel()
	cb := setupConsole(t, ConsoleOptions{Token: consoleToken})
	id := cb.quarantined(t, "permanent: bad payload")
	br := cb.browser()
	csrf := br.csrf(t)
	a := br.do("POST", "/login", url.Values{"csrf": {csrf}, "token": {"wrong"}})
	require.Equal(t, http.StatusUnauthorized, a.code, a.body)
	require.NotContains(t, br.cookies, authCookie)
	a = br.do("POST", "/login", url.Values{"token": {consoleToken}})
	require.Equal(t, http.StatusForbidden, a.code, "the login form needs its CSRF token too")
	a = br.do("POST", "/login", url.Values{"csrf": {csrf}, "token": {consoleToken}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Contains(t, br.cookies, authCookie)
	a = br.do("POST", "/actions/retry", url.Values{"csrf": {csrf}, "event_id": {id.String()}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Nil(t, cb.Row(t, id).QuarantinedAt)
	// The cookie is bound to its session: another session cannot use it.
	other := cb.browser()
	ocsrf := other.csrf(t)
	other.cookies[authCookie] = br.cookies[authCookie]
	a = other.do("POST", "/actions/retry", url.Values{"csrf": {ocsrf}, "event_id": {id.String()}})
	require.Equal(t, http.StatusUnauthorized, a.code, a.body)
	a = br.do("POST", "/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, a.code)
	require.NotContains(t, br.cookies, authCookie)
}

var eventLink = regexp.MustCompile(`<td><a href="/events/([0-9a-f-]{36})">`)

func TestConsolePagination(t *testing.T) {
	t.Parallel()
	cb := setupConsole(t, ConsoleOptions{PageSize: 3})
	var want []string
	for i := range 7 {
		msg := "Unavailable: sink down"
		if i%2 == 1 {
			msg = "permanent: bad payload"
		}
		id := cb.quarantined(t, msg)
		if i%2 == 0 {
			want = append(want, id.String())
		}
	}
	br := cb.browser()
	var got []string
	next := "/events?state=quarantined&error=unavailable"
	for pages := 0; next != ""; pages++ {
		require.Less(t, pages, 5)
		a := br.do("GET", next, nil)
		require.Equal(t, http.StatusOK, a.code, a.body)
		for _, m := range eventLink.FindAllStringSubmatch(a.body, -1) {
			got = append(got, m[1])
		}
		next = ""
		if m := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(a.body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	require.Equal(t, want, got, "every page in order, none twice, only the filter's")
	a := br.do("GET", "/events?state=quarantined&after=garbage", nil)
	require.Equal(t, http.StatusBadRequest, a.code)
}

// TestConsoleOverTheLogSource: the console works for the log source as
// the CLI does: the overview shows the log, the quarantined list has the
// hold by the event it is stuck on, the event's page shows it and its
// order's lane, and a retry shows the CLI's plan for a log hold, then
// acts.
func TestConsoleOverTheLogSource(t *testing.T) {
	t.Parallel()
	cb := setupConsole(t, ConsoleOptions{Token: consoleToken})
	bad := cb.order(t)
	evs := cb.enqueueLog(t, testdb.Event(t, bad, "OrderCreated"), testdb.Event(t, bad, "OrderCancelled"))
	rec := &logRecorder{poison: map[uuid.UUID]bool{evs[0].ID: true}}
	cb.runLogRelay(t, rec)
	eventually(t, 30*time.Second, func() bool {
		hs, err := outboxops.LogHolds(cb.Ctx, cb.Pool)
		require.NoError(t, err)
		return len(hs) == 1 && hs[0].Quarantined
	}, "the order's hold quarantined")
	br := cb.browser()
	br.header.Set("Authorization", "Bearer "+consoleToken)
	a := br.do("GET", "/", nil)
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "Log source")
	a = br.do("GET", "/events?state=quarantined", nil)
	require.Contains(t, a.body, evs[0].ID.String())
	require.Contains(t, a.body, "quarantined (log hold, partition")
	a = br.do("GET", "/events/"+evs[0].ID.String(), nil)
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "source log")
	require.Contains(t, a.body, evs[1].ID.String(), "what waits behind it in its order")
	csrf := br.csrf(t)
	a = br.do("POST", "/actions/retry", url.Values{"csrf": {csrf}, "event_id": {evs[0].ID.String()}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "plan: retry the log hold of order/"+bad)
	a = br.do("POST", "/actions/retry", url.Values{"csrf": {csrf}, "event_id": {evs[0].ID.String()}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "retried the log hold of order/"+bad)
}
