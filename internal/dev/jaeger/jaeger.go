// Package jaeger runs Jaeger's all-in-one (bin/jaeger, built from the tools
// module) as the trace backend of `make demo` and of the tests that the
// demo's trace links resolve, and reads a trace back from its HTTP API.
//
// The server takes OTLP over HTTP (the binaries' default protocol) and keeps
// the spans in memory; every port is a free one on 127.0.0.1, so a demo and a
// test (or two tests) can run one each. Built from the module proxy, the
// binary has no UI assets: TraceURL's page is Jaeger's placeholder, APIURL
// is the trace itself, as JSON, and [Viewer] shows it as a page.
package jaeger

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// BinEnv names the Jaeger binary for tests (the Makefile exports it as
// bin/jaeger).
const BinEnv = "OUTFLOW_JAEGER"

// Options say where Jaeger runs from.
type Options struct {
	// Bin is the jaeger binary. Mandatory.
	Bin string
	// Dir receives its config (jaeger.yaml) and log (jaeger.log). Mandatory.
	Dir string
	// Ready bounds the wait for its ports. Defaults to 60 seconds.
	Ready time.Duration
}

// Server is a running Jaeger.
type Server struct {
	proc  *proc.Process
	otlp  string
	query string
}

// config is the all-in-one's pipeline cut to what the demo uses: OTLP/HTTP
// in, memory storage, the query API and UI; no internal metrics server
// (its fixed port 8888 would collide with a second Jaeger) and no traces of
// its own (exported to localhost:4317, where nothing listens).
const config = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    traces:
      level: none
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %[1]s
    grpc:
      endpoint: %[2]s
receivers:
  otlp:
    protocols:
      http:
        endpoint: %[3]s
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// Start runs Jaeger on free ports and waits until both its OTLP receiver
// and its query API answer.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Bin == "" || o.Dir == "" {
		return nil, fmt.Errorf("jaeger: Options.Bin and Options.Dir are mandatory")
	}
	if _, err := os.Stat(o.Bin); err != nil {
		return nil, fmt.Errorf("jaeger: %w (make bin/jaeger builds it)", err)
	}
	addrs := make([]string, 3) // query HTTP, query gRPC, OTLP/HTTP
	for i := range addrs {
		p, err := ports.Free()
		if err != nil {
			return nil, err
		}
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(o.Dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, config, addrs[0], addrs[1], addrs[2]), 0o644); err != nil {
		return nil, err
	}
	p, err := proc.Start(proc.Options{Name: "jaeger", Bin: o.Bin, Args: []string{"--config", cfg},
		Env: os.Environ(), LogPath: filepath.Join(o.Dir, "jaeger.log"), Truncate: true})
	if err != nil {
		return nil, err
	}
	s := &Server{proc: p, query: "http://" + addrs[0], otlp: "http://" + addrs[2]}
	ready := o.Ready
	if ready == 0 {
		ready = 60 * time.Second
	}
	for _, a := range []string{addrs[0], addrs[2]} {
		if err := ports.WaitTCP(ctx, a, ready); err != nil {
			s.Stop()
			return nil, fmt.Errorf("jaeger: %w (see %s)", err, p.LogPath())
		}
	}
	return s, nil
}

// OTLPEndpoint is the value of OTEL_EXPORTER_OTLP_ENDPOINT for a binary
// that exports to this server (OTLP over HTTP, the default protocol).
func (s *Server) OTLPEndpoint() string { return s.otlp }

// URL is the query API's and UI's base URL.
func (s *Server) URL() string { return s.query }

// TraceURL is the UI's page of a trace.
func (s *Server) TraceURL(traceID string) string { return TraceURL(s.query, traceID) }

// APIURL is the query API's address of a trace (JSON).
func (s *Server) APIURL(traceID string) string { return APIURL(s.query, traceID) }

// LogPath is the file that receives Jaeger's output.
func (s *Server) LogPath() string { return s.proc.LogPath() }

// Stop ends Jaeger (its spans are in memory: gone with it).
func (s *Server) Stop() { s.proc.Stop(5 * time.Second) }

// TraceURL is the UI's page of a trace on the Jaeger at base.
func TraceURL(base, traceID string) string { return base + "/trace/" + traceID }

// APIURL is the query API's address of a trace on the Jaeger at base.
func APIURL(base, traceID string) string { return base + "/api/traces/" + traceID }

// Span is one span of a trace as Jaeger returns it.
type Span struct {
	Service  string
	Name     string
	SpanID   string
	ParentID string // "" for the trace's root
	Start    time.Time
	Duration time.Duration
	// Attrs are the span's attributes, their values as text.
	Attrs map[string]string
}

var client = &http.Client{Timeout: 10 * time.Second}

// Trace returns the spans Jaeger holds for traceID (none: an error).
func Trace(ctx context.Context, base, traceID string) ([]Span, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, APIURL(base, traceID), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	var body struct {
		Data []struct {
			Spans []struct {
				SpanID        string `json:"spanID"`
				OperationName string `json:"operationName"`
				ProcessID     string `json:"processID"`
				StartTime     int64  `json:"startTime"` // µs since the epoch
				Duration      int64  `json:"duration"`  // µs
				Tags          []struct {
					Key   string `json:"key"`
					Value any    `json:"value"`
				} `json:"tags"`
				References    []struct {
					RefType string `json:"refType"`
					SpanID  string `json:"spanID"`
				} `json:"references"`
			} `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL, err)
	}
	var out []Span
	for _, t := range body.Data {
		for _, sp := range t.Spans {
			s := Span{Service: t.Processes[sp.ProcessID].ServiceName, Name: sp.OperationName, SpanID: sp.SpanID,
				Start: time.UnixMicro(sp.StartTime), Duration: time.Duration(sp.Duration) * time.Microsecond,
				Attrs: make(map[string]string, len(sp.Tags))}
			for _, tag := range sp.Tags {
				s.Attrs[tag.Key] = fmt.Sprint(tag.Value)
			}
			for _, r := range sp.References {
				if r.RefType == "CHILD_OF" {
					s.ParentID = r.SpanID
				}
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("GET %s: no spans", req.URL)
	}
	return out, nil
}
