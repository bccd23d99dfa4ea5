package providersim

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// position orders objects as Stripe lists them: newest first by created,
// ties (same second) broken by creation order.
type position struct {
	created int64
	seq     int64
}

// before reports whether p is listed before q.
func (p position) before(q position) bool {
	return p.created > q.created || (p.created == q.created && p.seq > q.seq)
}

// listJSON is Stripe's list object.
type listJSON struct {
	Object  string `json:"object"`
	Data    any    `json:"data"`
	HasMore bool   `json:"has_more"`
	URL     string `json:"url"`
}

// searchJSON is Stripe's search_result object.
type searchJSON struct {
	Object   string  `json:"object"`
	Data     any     `json:"data"`
	HasMore  bool    `json:"has_more"`
	NextPage *string `json:"next_page"`
	URL      string  `json:"url"`
}

// listQuery is what every Stripe list endpoint reads first: the query with
// its parameters checked, the page size and the created filter.
type listQuery struct {
	q       url.Values
	limit   int
	created createdFilter
}

// parseListQuery checks q against the endpoint's allowed parameters and
// parses limit and created, the way Stripe rejects an unknown or malformed one.
// The cursors are checked for form only: which ids exist is the endpoint's.
func parseListQuery(q url.Values, allowed ...string) (listQuery, *stripeError) {
	if err := checkParams(q, allowed...); err != nil {
		return listQuery{}, err
	}
	if err := checkCursors(q); err != nil {
		return listQuery{}, err
	}
	limit, err := parseLimit(q)
	if err != nil {
		return listQuery{}, err
	}
	created, err := parseCreated(q)
	if err != nil {
		return listQuery{}, err
	}
	return listQuery{q: q, limit: limit, created: created}, nil
}

// checkCursors refuses what Stripe refuses of starting_after and
// ending_before: an empty value (Stripe reads an empty string as unsetting a
// parameter, which a cursor cannot be; a client that sends one has lost its
// cursor and would otherwise silently restart from the first page) and both
// at once (a page cannot run in both directions).
func checkCursors(v url.Values) *stripeError {
	for _, name := range []string{"starting_after", "ending_before"} {
		if vals, ok := v[name]; ok && vals[0] == "" {
			return invalidRequest("", name, fmt.Sprintf("You passed an empty string for '%[1]s'. "+
				"We assume empty values are an attempt to unset a parameter; however '%[1]s' cannot be unset. "+
				"You should remove '%[1]s' from your request or supply a non-empty value.", name))
		}
	}
	if v.Has("starting_after") && v.Has("ending_before") {
		return invalidRequest("", "", "You may only specify one of these parameters: ending_before, starting_after.")
	}
	return nil
}

// parseLimit reads limit: default 10, between 1 and 100, as at Stripe.
func parseLimit(v url.Values) (int, *stripeError) {
	n, present, err := formInt(v, "limit")
	if err != nil {
		return 0, err
	}
	if !present {
		return 10, nil
	}
	if n < 1 || n > 100 {
		return 0, invalidRequest("", "limit", "This value must be greater than or equal to 1 and less than or equal to 100.")
	}
	return int(n), nil
}

// createdFilter is the created=... / created[gt|gte|lt|lte]=... filter.
type createdFilter struct {
	eq, gt, gte, lt, lte *int64
}

func parseCreated(v url.Values) (createdFilter, *stripeError) {
	var f createdFilter
	for name, vals := range v {
		if paramRoot(name) != "created" {
			continue
		}
		var dst **int64
		switch name {
		case "created":
			dst = &f.eq
		case "created[gt]":
			dst = &f.gt
		case "created[gte]":
			dst = &f.gte
		case "created[lt]":
			dst = &f.lt
		case "created[lte]":
			dst = &f.lte
		default:
			return f, invalidRequest("parameter_unknown", name, "Received unknown parameter: "+name)
		}
		n, err := strconv.ParseInt(vals[0], 10, 64)
		if err != nil {
			return f, invalidRequest("parameter_invalid_integer", name, "Invalid integer: "+vals[0])
		}
		*dst = &n
	}
	return f, nil
}

func (f createdFilter) match(c int64) bool {
	return (f.eq == nil || c == *f.eq) &&
		(f.gt == nil || c > *f.gt) && (f.gte == nil || c >= *f.gte) &&
		(f.lt == nil || c < *f.lt) && (f.lte == nil || c <= *f.lte)
}

// page sorts items newest first and cuts the page of at most limit items
// after the cursor after, or just before the cursor before (Stripe's
// starting_after and ending_before; both nil is the first page).
func page[T any](items []T, pos func(T) position, limit int, after, before *position) (out []T, hasMore bool) {
	sorted := append([]T(nil), items...)
	sort.Slice(sorted, func(i, j int) bool { return pos(sorted[i]).before(pos(sorted[j])) })
	switch {
	case before != nil:
		// The items listed before the cursor, the closest page to it.
		end := sort.Search(len(sorted), func(i int) bool { return !pos(sorted[i]).before(*before) })
		start := max(0, end-limit)
		return sorted[start:end], start > 0
	case after != nil:
		start := sort.Search(len(sorted), func(i int) bool { return after.before(pos(sorted[i])) })
		sorted = sorted[start:]
	}
	if len(sorted) > limit {
		return sorted[:limit], true
	}
	return sorted, false
}

// trimExpand turns a list's "data.x" expansions into the per-object "x".
func trimExpand(expand []string) []string {
	out := make([]string, 0, len(expand))
	for _, e := range expand {
		out = append(out, strings.TrimPrefix(e, "data."))
	}
	return out
}

// encodeCursor and decodeCursor make search's opaque next_page tokens. A
// token names a position, not an offset, so objects created between two
// page requests do not shift the pages.
func encodeCursor(c position) string {
	return "page_" + base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d:%d", c.created, c.seq))
}

func decodeCursor(tok string) (position, bool) {
	raw, ok := strings.CutPrefix(tok, "page_")
	if !ok {
		return position{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return position{}, false
	}
	var c position
	if _, err := fmt.Sscanf(string(b), "%d:%d", &c.created, &c.seq); err != nil {
		return position{}, false
	}
	return c, true
}
