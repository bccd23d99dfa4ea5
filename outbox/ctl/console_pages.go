package ctl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/outboxops"
)

// page is what every template gets: the visit's rights and CSRF token, and
// the page's own data.
type page struct {
	Title  string
	Authed bool
	Token  bool // the console has a token at all
	CSRF   string
	Error  string
	Data   any
}

func (c *Console) routes() {
	c.mux.HandleFunc("GET /{$}", c.overview)
	c.mux.HandleFunc("GET /events", c.list)
	c.mux.HandleFunc("GET /events/{id}", c.event)
	c.mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		c.render(w, r, c.visitOf(w, r), http.StatusOK, "login", page{Title: "Sign in"})
	})
	c.mux.HandleFunc("POST /login", c.login)
	c.mux.HandleFunc("POST /logout", c.logout)
	c.mux.HandleFunc("POST /actions/retry", c.action(c.retryPlan))
	c.mux.HandleFunc("POST /actions/retry-quarantined", c.action(c.retryQuarantinedPlan))
	c.mux.HandleFunc("POST /actions/skip", c.action(c.skipPlan))
	c.mux.HandleFunc("POST /actions/replay", c.action(c.replayPlan))
	c.mux.HandleFunc("GET /console.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		http.ServeFileFS(w, r, consoleFiles, "console/console.css")
	})
}

// render writes the page name with p, the visit's rights filled in.
func (c *Console) render(w http.ResponseWriter, r *http.Request, v visit, status int, name string, p page) {
	p.Authed, p.CSRF, p.Token = v.authed, v.csrf, c.opts.Token != ""
	var b bytes.Buffer
	if err := consoleTemplates[name].Execute(&b, p); err != nil {
		c.env.Logger.Error("console: rendering", "page", name, "error", err)
		http.Error(w, "rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}

// fail renders an error page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, v visit, status int, err error) {
	c.render(w, r, v, status, "error", page{Title: "Error", Error: err.Error()})
}

// overviewData is the overview: outboxops' status report (the sink
// breakers included).
type overviewData struct {
	S outboxops.StatusReport
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	v := c.visitOf(w, r)
	s, err := outboxops.StatusOf(r.Context(), c.db, outboxops.StatusOptions{CDCSlot: c.opts.CDCSlot})
	if err != nil {
		c.fail(w, r, v, http.StatusInternalServerError, err)
		return
	}
	c.render(w, r, v, http.StatusOK, "overview", page{Title: "Overview", Data: overviewData{S: s}})
}

// listStates are the lists the console shows, by their ?state=.
var listStates = []string{"pending", "held", "quarantined", "skipped"}

// listData is one page of a list.
type listData struct {
	State                                        string
	States                                       []string
	AggregateType, Aggregate, Type, Error, Older string
	Events                                       []outboxops.EventInfo
	LogHolds                                     []outboxops.LogHold
	LogEvents                                    []outboxops.LogEvent
	// Next is the URL of the next page, "" on the last.
	Next  string
	First bool
}

// pageKey is a next page's start in its URL: each table's key.
type pageKey struct {
	Events *outboxops.ListKey `json:"e,omitempty"`
	Log    *outboxops.LogKey  `json:"l,omitempty"`
}

// listOptions reads a list's filters from the query: state, aggregate_type,
// aggregate, type, error, older_than (a duration) and after (a keyset).
func listOptions(q url.Values, size int) (outboxops.ListOptions, listData, error) {
	d := listData{
		State: q.Get("state"), States: listStates,
		AggregateType: q.Get("aggregate_type"), Aggregate: q.Get("aggregate"),
		Type: q.Get("type"), Error: q.Get("error"), Older: q.Get("older_than"),
	}
	if d.State == "" {
		d.State = "quarantined"
	}
	o := outboxops.ListOptions{
		AggregateType: d.AggregateType, AggregateID: d.Aggregate, EventType: d.Type,
		ErrorContains: d.Error, Limit: size + 1,
	}
	switch d.State {
	case "pending":
		o.Pending = true
	case "held":
		o.Held = true
	case "quarantined":
		o.Quarantined = true
	case "skipped":
		o.Skipped = true
	default:
		return o, d, errors.New("state " + d.State + ": want pending, held, quarantined or skipped")
	}
	if d.Older != "" {
		age, err := time.ParseDuration(d.Older)
		if err != nil || age < 0 {
			return o, d, errors.New("older_than " + d.Older + ": want a duration such as 10m or 2h")
		}
		o.OccurredBefore = time.Now().Add(-age)
	}
	if a := q.Get("after"); a != "" {
		raw, err := base64.RawURLEncoding.DecodeString(a)
		var k pageKey
		if err == nil {
			err = json.Unmarshal(raw, &k)
		}
		if err != nil || k.Events == nil && k.Log == nil {
			return o, d, errors.New("after: not a page key of this console")
		}
		o.After, o.LogAfter = k.Events, k.Log
	}
	d.First = o.After == nil && o.LogAfter == nil
	return o, d, nil
}

func (c *Console) list(w http.ResponseWriter, r *http.Request) {
	v := c.visitOf(w, r)
	q := r.URL.Query()
	o, d, err := listOptions(q, c.opts.PageSize)
	if err != nil {
		c.fail(w, r, v, http.StatusBadRequest, err)
		return
	}
	// The same call as `outboxctl list`: outbox_events' events, then the
	// log's, each table a keyset page at a time; one entry more than the
	// page tells whether there is a next.
	l, err := outboxops.ListAll(r.Context(), c.db, o)
	if err != nil {
		c.fail(w, r, v, http.StatusInternalServerError, err)
		return
	}
	if l.Len() > c.opts.PageSize {
		l = l.Head(c.opts.PageSize)
		next := l.Next(o)
		key, _ := json.Marshal(pageKey{Events: next.After, Log: next.LogAfter})
		q.Set("after", base64.RawURLEncoding.EncodeToString(key))
		d.Next = "/events?" + q.Encode()
	}
	d.Events, d.LogHolds, d.LogEvents = l.Events, l.LogHolds, l.LogEvents
	c.render(w, r, v, http.StatusOK, "list", page{Title: "Events " + d.State, Data: d})
}

// eventData is one event's page.
type eventData struct {
	ID         uuid.UUID
	Source     string
	State      string
	Columns    []eventColumn
	Aggregate  struct{ Type, ID string }
	OccurredAt string
	Quarantine bool
	// Lane is the event's aggregate's events (outbox_events'), or its
	// order's events in the log.
	Lane      []outboxops.EventInfo
	LogLane   []outboxops.LogEvent
	Workflow  string
	Trace     string
	PayloadOK bool
}

type eventColumn struct{ Name, Value string }

// eventType is the row's event_type ("" without one).
func eventType(row orderedRow) string {
	for _, col := range row {
		if col.Name == "event_type" {
			var t string
			_ = json.Unmarshal(col.Value, &t)
			return t
		}
	}
	return ""
}

// personal applies [ConsoleOptions.Personal]; without it every payload is
// personal.
func (c *Console) personal(eventType string, payload []byte) bool {
	return c.opts.Personal == nil || c.opts.Personal(eventType, payload)
}

func (c *Console) event(w http.ResponseWriter, r *http.Request) {
	v := c.visitOf(w, r)
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		c.fail(w, r, v, http.StatusBadRequest, errors.New("not an event id: "+r.PathValue("id")))
		return
	}
	dt, err := outboxops.Show(r.Context(), c.db, id)
	if errors.Is(err, outboxops.ErrEventNotFound) {
		c.fail(w, r, v, http.StatusNotFound, errors.New("no event "+id.String()+" in the outbox, nor in the log"))
		return
	}
	if err != nil {
		c.fail(w, r, v, http.StatusInternalServerError, err)
		return
	}
	row, err := parseRow(string(dt.Row))
	if err != nil {
		c.fail(w, r, v, http.StatusInternalServerError, err)
		return
	}
	d := eventData{ID: id, Source: dt.Source, State: string(dt.State), PayloadOK: true}
	if d.State == "" {
		d.State = "unknown: " + dt.StateError
	}
	d.Quarantine = dt.State == outboxops.StateQuarantined
	for _, col := range row {
		val := formatValue(col.Value)
		switch col.Name {
		case "payload":
			// A payload with personal data is shown only to a token holder.
			if !v.authed && c.personal(eventType(row), col.Value) {
				val = "(hidden: it holds personal data, shown only to a holder of the operator token; sign in)"
				d.PayloadOK = false
			}
		case "aggregate_type":
			d.Aggregate.Type = val
		case "aggregate_id":
			d.Aggregate.ID = val
		case "occurred_at":
			d.OccurredAt = val
		case "trace_context":
			var tc struct {
				TraceParent string `json:"traceparent"`
			}
			if json.Unmarshal(col.Value, &tc) == nil && c.opts.Traces != "" {
				if parts := strings.Split(tc.TraceParent, "-"); len(parts) == 4 {
					d.Trace = strings.TrimRight(c.opts.Traces, "/") + "/trace/" + parts[1]
				}
			}
		}
		d.Columns = append(d.Columns, eventColumn{Name: col.Name, Value: val})
	}
	if c.opts.TemporalUI != "" {
		d.Workflow = strings.TrimRight(c.opts.TemporalUI, "/") + "/namespaces/" + url.PathEscape(c.opts.Namespace) + "/workflows/" + id.String()
	}
	// Its lane: what waits behind it in its aggregate.
	if dt.Source == outboxops.SourceLog {
		// Every event of its order, in sequence: the pending list leaves
		// out those a quarantined hold owns, which are what waits here.
		d.LogLane, err = outboxops.LogEvents(r.Context(), c.db, d.Aggregate.Type, d.Aggregate.ID)
	} else {
		d.Lane, err = outboxops.List(r.Context(), c.db, outboxops.ListOptions{
			AggregateType: d.Aggregate.Type, AggregateID: d.Aggregate.ID, Limit: 50})
	}
	if err != nil {
		c.fail(w, r, v, http.StatusInternalServerError, err)
		return
	}
	c.render(w, r, v, http.StatusOK, "event", page{Title: "Event " + id.String(), Data: d})
}
