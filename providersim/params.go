package providersim

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Form decoding for Stripe requests. stripe-go encodes nested parameters the
// Rails way: metadata[order_id]=..., expand[0]=latest_charge,
// created[gte]=..., payment_method_types[0]=card.

// paramRoot is the top-level name of a form key: "metadata" for
// "metadata[order_id]".
func paramRoot(key string) string {
	if i := strings.IndexByte(key, '['); i > 0 {
		return key[:i]
	}
	return key
}

// checkParams rejects parameters outside allowed, as Stripe does, so a typo
// in an activity fails against the simulator as it would against Stripe.
func checkParams(v url.Values, allowed ...string) *stripeError {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, paramRoot(k)) {
			return invalidRequest("parameter_unknown", k, fmt.Sprintf(
				"Received unknown parameter: %s. The provider simulator accepts only: %s.", k, strings.Join(allowed, ", ")))
		}
	}
	return nil
}

// formInt parses an integer parameter; present is false when it was not sent.
func formInt(v url.Values, name string) (n int64, present bool, err *stripeError) {
	s, ok := v[name]
	if !ok {
		return 0, false, nil
	}
	n, perr := strconv.ParseInt(strings.TrimSpace(s[0]), 10, 64)
	if perr != nil {
		return 0, true, invalidRequest("parameter_invalid_integer", name, "Invalid integer: "+s[0])
	}
	return n, true, nil
}

// formBool parses a boolean parameter the way Stripe does ("true"/"false").
func formBool(v url.Values, name string) (b bool, err *stripeError) {
	s := v.Get(name)
	switch s {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, invalidRequest("", name, "Invalid boolean: "+s)
}

// formList collects name[0], name[1], ... (or name[]) in index order.
func formList(v url.Values, name string) []string {
	type item struct {
		idx int
		val string
	}
	var items []item
	for k, vals := range v {
		rest, ok := strings.CutPrefix(k, name+"[")
		if !ok || !strings.HasSuffix(rest, "]") {
			continue
		}
		idx, err := strconv.Atoi(strings.TrimSuffix(rest, "]"))
		if err != nil {
			idx = -1 // name[] keeps the order of its values
		}
		for _, val := range vals {
			items = append(items, item{idx, val})
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].idx < items[j].idx })
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.val)
	}
	return out
}

var metadataKey = regexp.MustCompile(`^metadata\[(.+)\]$`)

// formMetadata collects metadata[key]=value with Stripe's limits: 50 keys,
// keys up to 40 characters, values up to 500. An empty value unsets a key.
func formMetadata(v url.Values) (map[string]string, *stripeError) {
	md := map[string]string{}
	for k, vals := range v {
		m := metadataKey.FindStringSubmatch(k)
		if m == nil {
			if k == "metadata" && vals[0] == "" {
				continue
			}
			if paramRoot(k) == "metadata" {
				return nil, invalidRequest("parameter_invalid_empty", k, "Invalid metadata: "+k)
			}
			continue
		}
		key, val := m[1], vals[0]
		switch {
		case len(key) > 40:
			return nil, invalidRequest("", k, "Metadata keys can have up to 40 characters.")
		case len(val) > 500:
			return nil, invalidRequest("", k, "Metadata values can have up to 500 characters.")
		case val == "":
			continue
		}
		md[key] = val
	}
	if len(md) > 50 {
		return nil, invalidRequest("", "metadata", "Metadata can have up to 50 keys.")
	}
	return md, nil
}

// formExpand returns the expand[] list checked against what an endpoint can
// expand.
func formExpand(v url.Values, expandable ...string) ([]string, *stripeError) {
	list := formList(v, "expand")
	for _, e := range list {
		if !slices.Contains(expandable, e) {
			return nil, invalidRequest("", "expand", fmt.Sprintf("This property cannot be expanded (%s).", e))
		}
	}
	return list, nil
}

// fingerprint is the canonical form of a request's parameters, which the
// idempotency layer compares: Stripe compares parameters, not bytes, so the
// order in which a client encodes them does not matter.
func fingerprint(v url.Values) string {
	return v.Encode() // sorted by key
}
