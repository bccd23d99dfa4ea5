package relaycmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	// Named so: the package's tests call their dev server temporal.
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// RoutesEnv gives the starter its routes without Go wiring, for a team that
// runs the relay over its own outbox: comma-separated entries
//
//	EVENT_TYPE=WORKFLOW_TYPE
//	EVENT_TYPE=WORKFLOW_TYPE@TASK_QUEUE
//
// either optionally followed by [SEARCH_ATTRIBUTE=PAYLOAD_FIELD], e.g.
// "InvoiceIssued=InvoiceWorkflow@billing[InvoiceId=invoice_id],InvoiceVoided=VoidInvoiceWorkflow".
// An entry without a task queue starts on OUTFLOW_TASK_QUEUE. A start
// carries no search attribute unless its entry asks for one: then the
// Keyword attribute SEARCH_ATTRIBUTE is set to the top-level field
// PAYLOAD_FIELD of the event's JSON payload (a string, or a number as
// written), and an event whose payload lacks it is quarantined at once, as
// any payload that fails validation. With it set, the starter starts only
// these routes; unset, the binary's default routes ([Defaults.Routes]),
// and without any it stops at start asking for one.
const RoutesEnv = "OUTFLOW_ROUTES"

// RoutesFileEnv names a file holding the routes instead, for routes kept
// in a configuration file or mounted from a ConfigMap: the entries of
// [RoutesEnv], one per line (or comma-separated), blank lines ignored and
// '#' starting a comment. Setting both is an error.
const RoutesFileEnv = "OUTFLOW_ROUTES_FILE"

// RoutesSyntax is what every OUTFLOW_ROUTES error ends with.
const RoutesSyntax = RoutesEnv + ": write comma-separated EVENT_TYPE=WORKFLOW_TYPE or EVENT_TYPE=WORKFLOW_TYPE@TASK_QUEUE, " +
	"each optionally followed by [SEARCH_ATTRIBUTE=PAYLOAD_FIELD], e.g. InvoiceIssued=InvoiceWorkflow@billing[InvoiceId=invoice_id],InvoiceVoided=VoidInvoiceWorkflow" +
	" (in " + RoutesFileEnv + ": the same entries, one per line, '#' starts a comment)"

// routesFromEnv returns the routes the starter publishes and where they
// come from: OUTFLOW_ROUTES or the file OUTFLOW_ROUTES_FILE when one is
// set, def's otherwise. A malformed value or file, both set, or neither
// without def, is recorded in env, every problem of it.
func routesFromEnv(env *env, def func() (temporalpub.Routes, string)) (temporalpub.Routes, string) {
	spec, file := env.String(RoutesEnv, ""), env.String(RoutesFileEnv, "")
	switch {
	case strings.TrimSpace(spec) != "" && file != "":
		env.Fail(fmt.Errorf("%s and %s are both set: set one", RoutesEnv, RoutesFileEnv))
		return nil, ""
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			env.Fail(fmt.Errorf("%s: %w", RoutesFileEnv, err))
			return nil, ""
		}
		r, err := ParseRoutesFile(file, string(b))
		if err != nil {
			env.Fail(err)
			return nil, ""
		}
		return r, RoutesFileEnv + "=" + file
	case strings.TrimSpace(spec) == "" && def != nil:
		return def()
	case strings.TrimSpace(spec) == "":
		env.Fail(fmt.Errorf("%s is unset: set it (or %s) to the routes, e.g. InvoiceIssued=InvoiceWorkflow@billing", RoutesEnv, RoutesFileEnv))
		return nil, ""
	}
	r, err := ParseRoutes(spec)
	if err != nil {
		env.Fail(err)
		return nil, ""
	}
	return r, RoutesEnv + "=" + spec
}

// routeEntry is one entry of the routes and where it was written, for the
// errors.
type routeEntry struct {
	text  string
	where string // e.g. `OUTFLOW_ROUTES entry 2` or `OUTFLOW_ROUTES_FILE routes.txt line 4`
}

// ParseRoutes parses the value of OUTFLOW_ROUTES (see [RoutesEnv]). The
// error names every malformed entry, each with what to write instead.
func ParseRoutes(spec string) (temporalpub.Routes, error) {
	var entries []routeEntry
	for i, raw := range strings.Split(spec, ",") {
		entries = append(entries, routeEntry{text: strings.TrimSpace(raw), where: fmt.Sprintf("%s entry %d", RoutesEnv, i+1)})
	}
	return parseRouteEntries(entries, "remove the extra comma")
}

// ParseRoutesFile parses the content of the file OUTFLOW_ROUTES_FILE
// names (see [RoutesFileEnv]); errors name the file and line.
func ParseRoutesFile(name, content string) (temporalpub.Routes, error) {
	var entries []routeEntry
	for i, line := range strings.Split(content, "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		for _, raw := range strings.Split(line, ",") {
			entries = append(entries, routeEntry{text: strings.TrimSpace(raw), where: fmt.Sprintf("%s %s line %d", RoutesFileEnv, name, i+1)})
		}
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s %s holds no route: write one EVENT_TYPE=WORKFLOW_TYPE[@TASK_QUEUE] per line, or unset %s", RoutesFileEnv, name, RoutesFileEnv)
	}
	return parseRouteEntries(entries, "remove the extra comma")
}

// parseRouteEntries parses entries, rejecting a second route of one event
// type; the error names every malformed entry.
func parseRouteEntries(entries []routeEntry, emptyFix string) (temporalpub.Routes, error) {
	out := temporalpub.Routes{}
	first := map[string]string{}
	var errs []error
	for _, e := range entries {
		entry := e.text
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s %q: %s", e.where, entry, fmt.Sprintf(format, args...)))
		}
		if entry == "" {
			fail("is empty: %s", emptyFix)
			continue
		}
		r, eventType, problem := parseRoute(entry)
		if problem != "" {
			fail("%s", problem)
			continue
		}
		if at, dup := first[eventType]; dup {
			fail("routes event type %s a second time (%s routes it already): keep one of them", eventType, at)
			continue
		}
		first[eventType] = e.where
		out[eventType] = r
	}
	if len(errs) > 0 {
		return nil, errors.Join(append(errs, errors.New(RoutesSyntax))...)
	}
	return out, nil
}

// parseRoute parses one entry, or says what is wrong with it and what to
// write instead.
func parseRoute(entry string) (r temporalpub.Route, eventType, problem string) {
	if strings.ContainsAny(entry, " \t\r\n") {
		return r, "", "names may not contain spaces"
	}
	eventType, rest, ok := strings.Cut(entry, "=")
	switch {
	case !ok:
		return r, "", fmt.Sprintf("no workflow type: write %s=WORKFLOW_TYPE", entry)
	case eventType == "":
		return r, "", fmt.Sprintf("no event type before \"=\": write EVENT_TYPE=%s", rest)
	case strings.ContainsAny(eventType, "@[]"):
		return r, "", fmt.Sprintf("the event type %q contains \"@\", \"[\" or \"]\": the event type comes first, then =WORKFLOW_TYPE", eventType)
	}
	var attribute, field string
	if open := strings.IndexByte(rest, '['); open >= 0 {
		if !strings.HasSuffix(rest, "]") {
			return r, "", fmt.Sprintf("%q does not end the entry with \"]\": write [SEARCH_ATTRIBUTE=PAYLOAD_FIELD] last", rest[open:])
		}
		inner := rest[open+1 : len(rest)-1]
		attribute, field, ok = strings.Cut(inner, "=")
		if !ok || attribute == "" || field == "" || strings.ContainsAny(inner, "[]") || strings.Contains(field, "=") {
			return r, "", fmt.Sprintf("[%s] is not one SEARCH_ATTRIBUTE=PAYLOAD_FIELD: write e.g. [InvoiceId=invoice_id] (the Keyword search attribute, then the payload's top-level field)", inner)
		}
		rest = rest[:open]
	} else if strings.Contains(rest, "]") {
		return r, "", "a \"]\" without its \"[\": write [SEARCH_ATTRIBUTE=PAYLOAD_FIELD] after the workflow type (and task queue)"
	}
	workflow, queue, hasQueue := strings.Cut(rest, "@")
	switch {
	case workflow == "":
		return r, "", fmt.Sprintf("no workflow type after \"=\": write %s=WORKFLOW_TYPE", eventType)
	case strings.Contains(workflow, "="):
		return r, "", fmt.Sprintf("the workflow type %q contains \"=\": one entry routes one event type; separate entries with commas", workflow)
	case hasQueue && queue == "":
		return r, "", fmt.Sprintf("\"@\" names no task queue: write %s=%s@TASK_QUEUE, or %s=%s for OUTFLOW_TASK_QUEUE", eventType, workflow, eventType, workflow)
	case strings.ContainsAny(queue, "@="):
		return r, "", fmt.Sprintf("the task queue %q contains \"@\" or \"=\": write %s=%s@TASK_QUEUE with one task queue", queue, eventType, workflow)
	}
	r = temporalpub.Route{Workflow: workflow, TaskQueue: queue}
	if attribute != "" {
		k := payloadKeyword{key: sdktemporal.NewSearchAttributeKeyKeyword(attribute), field: field}
		r.Validate = k.validate
		r.SearchAttributes = k.searchAttributes
	}
	return r, eventType, ""
}

// payloadKeyword is a route's search attribute from OUTFLOW_ROUTES: the
// Keyword attribute key, set to the top-level field of the event's JSON
// payload.
type payloadKeyword struct {
	key   sdktemporal.SearchAttributeKeyKeyword
	field string
}

// validate rejects a payload without the field, so that the event is
// quarantined at once instead of started without its attribute.
func (k payloadKeyword) validate(_ int, payload []byte) error {
	_, err := k.value(payload)
	return err
}

// searchAttributes is the route's SearchAttributes: called only for a
// payload validate accepted.
func (k payloadKeyword) searchAttributes(e outbox.Event) sdktemporal.SearchAttributes {
	v, err := k.value(e.Payload)
	if err != nil {
		return sdktemporal.SearchAttributes{}
	}
	return sdktemporal.NewSearchAttributes(k.key.ValueSet(v))
}

// value is the field's value: a string as it is, a number as written.
func (k payloadKeyword) value(payload []byte) (string, error) {
	fix := fmt.Sprintf("%s sets search attribute %s from it; fix the producer or %s, then `outboxctl retry`", RoutesEnv, k.key.GetName(), RoutesEnv)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(payload, &fields); err != nil || fields == nil {
		return "", fmt.Errorf("the payload is not a JSON object with a field %q (%s)", k.field, fix)
	}
	raw, ok := fields[k.field]
	if !ok {
		keys := make([]string, 0, len(fields))
		for name := range fields {
			keys = append(keys, name)
		}
		slices.Sort(keys)
		return "", fmt.Errorf("the payload has no field %q, only %q (%s)", k.field, keys, fix)
	}
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("the payload's field %q: %w", k.field, err)
		}
		return s, nil
	case len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'):
		return string(raw), nil
	}
	return "", fmt.Errorf("the payload's field %q is %s, not a string or a number (%s)", k.field, raw, fix)
}
