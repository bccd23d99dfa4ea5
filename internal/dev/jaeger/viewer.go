package jaeger

import (
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

//go:embed viewer.html
var viewerFS embed.FS

var viewerPage = template.Must(template.ParseFS(viewerFS, "viewer.html"))

// traceIDPattern is a trace id as Jaeger's API takes it.
var traceIDPattern = regexp.MustCompile(`^[0-9a-f]{16,32}$`)

// Viewer serves the traces of the Jaeger at base as pages, at
// /trace/{id}: every span in its place in the tree, with its service, its
// start and duration on the trace's time line and its attributes. The
// Jaeger built from the module proxy has no UI of its own; this is what
// the demo's trace links open.
func Viewer(base string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /trace/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !traceIDPattern.MatchString(id) {
			http.Error(w, "a trace id is 16 or 32 hexadecimal digits, lower case", http.StatusBadRequest)
			return
		}
		spans, err := Trace(r.Context(), base, id)
		if err != nil {
			http.Error(w, fmt.Sprintf("trace %s: %v", id, err), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		if err := viewerPage.Execute(w, layout(id, spans)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return mux
}

// row is one span on the page.
type row struct {
	Span
	Depth       int
	Offset      time.Duration // from the trace's start
	Left, Width float64       // of the time line, in percent
	AttrList    []string      // "key=value", sorted
}

// page is what viewer.html renders.
type page struct {
	TraceID  string
	Rows     []row
	Services []string
	Total    time.Duration
	Indent   func(int) string
}

// layout orders spans depth first, each parent before its children and
// siblings by start, and places them on the trace's time line. A span
// whose parent is not in the trace is a root.
func layout(id string, spans []Span) page {
	start, end := spans[0].Start, spans[0].Start.Add(spans[0].Duration)
	byID := map[string]bool{}
	services := map[string]bool{}
	for _, s := range spans {
		byID[s.SpanID] = true
		services[s.Service] = true
		if s.Start.Before(start) {
			start = s.Start
		}
		if e := s.Start.Add(s.Duration); e.After(end) {
			end = e
		}
	}
	children := map[string][]Span{}
	for _, s := range spans {
		parent := s.ParentID
		if !byID[parent] {
			parent = ""
		}
		children[parent] = append(children[parent], s)
	}
	total := max(end.Sub(start), time.Microsecond)
	p := page{TraceID: id, Total: total, Indent: func(d int) string { return strings.Repeat("\u00a0\u00a0", d) }}
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		kids := children[parent]
		slices.SortFunc(kids, func(a, b Span) int { return cmp.Or(a.Start.Compare(b.Start), strings.Compare(a.Name, b.Name)) })
		for _, s := range kids {
			r := row{Span: s, Depth: depth, Offset: s.Start.Sub(start)}
			r.Left = 100 * float64(r.Offset) / float64(total)
			r.Width = max(100*float64(s.Duration)/float64(total), 0.3)
			for k, v := range s.Attrs {
				if showAttr(k) {
					r.AttrList = append(r.AttrList, k+"="+v)
				}
			}
			slices.Sort(r.AttrList)
			p.Rows = append(p.Rows, r)
			walk(s.SpanID, depth+1)
		}
	}
	walk("", 0)
	for s := range services {
		p.Services = append(p.Services, s)
	}
	slices.Sort(p.Services)
	return p
}

// showAttr keeps the attributes that say what a span was (outflow's, the
// HTTP request's route and answer, the messaging system's, an error) and
// leaves out the instrumentation's bookkeeping (body sizes, URL parts).
func showAttr(k string) bool {
	switch k {
	case "http.route", "http.request.method", "http.response.status_code", "error":
		return true
	}
	for _, prefix := range []string{"outflow.", "messaging.", "temporal"} {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
