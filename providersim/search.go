package providersim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Stripe's search query language (https://docs.stripe.com/search), the part
// PaymentIntents need:
//
//	metadata['event_id']:'e-1' AND status:'succeeded'
//	-status:'succeeded' OR amount>=5000
//	metadata["order_id"]:null
//
// Clauses are field, operator, value, optionally negated with a leading '-';
// up to 10 of them, joined by AND, OR (case-insensitive; not both in one
// query, as at Stripe) or whitespace (AND). Fields: amount and created
// (numbers: ':' or '=' for equality, '<', '<=', '>', '>='), currency,
// customer, status and metadata['key'] (strings: ':' exact and
// case-insensitive, '~' substring of at least 3 characters). The value null
// matches a field that is absent.

// searchClause is one parsed clause.
type searchClause struct {
	negate bool
	field  string // amount, created, currency, customer, status, metadata
	key    string // metadata key
	op     string // : = ~ < <= > >=
	value  string
	null   bool
	num    int64
}

// searchQuery is a parsed query.
type searchQuery struct {
	clauses []searchClause
	or      bool
}

const maxSearchClauses = 10

var numericSearchFields = map[string]bool{"amount": true, "created": true}
var stringSearchFields = map[string]bool{"currency": true, "customer": true, "status": true, "metadata": true}

func parseSearchQuery(src string) (searchQuery, error) {
	p := &queryParser{src: src}
	var q searchQuery
	conj := ""
	for {
		p.skipSpace()
		if p.eof() {
			break
		}
		if len(q.clauses) > 0 {
			if w := p.peekWord(); strings.EqualFold(w, "AND") || strings.EqualFold(w, "OR") {
				w = strings.ToUpper(w)
				if conj != "" && conj != w {
					return q, errors.New("a query cannot combine AND and OR")
				}
				conj = w
				p.pos += len(w)
				p.skipSpace()
				if p.eof() {
					return q, fmt.Errorf("the query ends after %s", w)
				}
			} else if conj == "OR" {
				return q, errors.New("a query cannot combine AND (whitespace) and OR")
			} else {
				conj = "AND"
			}
		}
		c, err := p.clause()
		if err != nil {
			return q, err
		}
		q.clauses = append(q.clauses, c)
		if len(q.clauses) > maxSearchClauses {
			return q, fmt.Errorf("a query can have at most %d clauses", maxSearchClauses)
		}
	}
	if len(q.clauses) == 0 {
		return q, errors.New("the query is empty")
	}
	q.or = conj == "OR"
	return q, nil
}

type queryParser struct {
	src string
	pos int
}

func (p *queryParser) eof() bool { return p.pos >= len(p.src) }

func (p *queryParser) skipSpace() {
	for !p.eof() && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n') {
		p.pos++
	}
}

// peekWord returns the run of letters at the cursor if a space follows it.
func (p *queryParser) peekWord() string {
	end := p.pos
	for end < len(p.src) && (p.src[end] >= 'a' && p.src[end] <= 'z' || p.src[end] >= 'A' && p.src[end] <= 'Z') {
		end++
	}
	if end == len(p.src) || p.src[end] != ' ' {
		return ""
	}
	return p.src[p.pos:end]
}

func (p *queryParser) clause() (searchClause, error) {
	var c searchClause
	if p.src[p.pos] == '-' {
		c.negate = true
		p.pos++
	}
	start := p.pos
	for !p.eof() && (p.src[p.pos] >= 'a' && p.src[p.pos] <= 'z' || p.src[p.pos] == '_') {
		p.pos++
	}
	c.field = p.src[start:p.pos]
	if !numericSearchFields[c.field] && !stringSearchFields[c.field] {
		return c, fmt.Errorf("%q is not a supported search field for payment_intents (supported: amount, created, currency, customer, metadata['key'], status)", p.src[start:min(p.pos+1, len(p.src))])
	}
	if c.field == "metadata" {
		if p.eof() || p.src[p.pos] != '[' {
			return c, errors.New("metadata must be followed by a quoted key, as in metadata['order_id']")
		}
		p.pos++
		key, err := p.quoted()
		if err != nil {
			return c, fmt.Errorf("metadata key: %w", err)
		}
		if p.eof() || p.src[p.pos] != ']' {
			return c, errors.New("missing ] after the metadata key")
		}
		p.pos++
		c.key = key
	}
	for _, op := range []string{">=", "<=", ":", "~", ">", "<", "="} {
		if strings.HasPrefix(p.src[p.pos:], op) {
			c.op = op
			p.pos += len(op)
			break
		}
	}
	if c.op == "" {
		return c, fmt.Errorf("expected an operator (: ~ < <= > >= =) after %s", c.field)
	}
	if p.eof() {
		return c, fmt.Errorf("missing value after %s%s", c.field, c.op)
	}
	var err error
	if q := p.src[p.pos]; q == '\'' || q == '"' {
		if c.value, err = p.quoted(); err != nil {
			return c, err
		}
	} else {
		start := p.pos
		for !p.eof() && p.src[p.pos] != ' ' {
			p.pos++
		}
		c.value = p.src[start:p.pos]
		c.null = c.value == "null"
	}
	return c, c.check()
}

// quoted reads a '...' or "..." string with backslash escapes.
func (p *queryParser) quoted() (string, error) {
	if p.eof() || (p.src[p.pos] != '\'' && p.src[p.pos] != '"') {
		return "", errors.New("expected a quoted string")
	}
	q := p.src[p.pos]
	p.pos++
	var b strings.Builder
	for !p.eof() {
		ch := p.src[p.pos]
		p.pos++
		switch {
		case ch == '\\' && !p.eof():
			b.WriteByte(p.src[p.pos])
			p.pos++
		case ch == q:
			return b.String(), nil
		default:
			b.WriteByte(ch)
		}
	}
	return "", errors.New("unterminated quoted string")
}

func (c *searchClause) check() error {
	numeric := numericSearchFields[c.field]
	switch {
	case c.null:
		if c.op != ":" {
			return fmt.Errorf("null can only be used with ':' (%s%snull)", c.field, c.op)
		}
	case numeric:
		if c.op == "~" {
			return fmt.Errorf("'~' applies to string fields, not %s", c.field)
		}
		n, err := strconv.ParseInt(c.value, 10, 64)
		if err != nil {
			return fmt.Errorf("%s takes an integer, not %q", c.field, c.value)
		}
		c.num = n
	default:
		if c.op != ":" && c.op != "~" {
			return fmt.Errorf("%s is a string field: use ':' or '~', not %q", c.field, c.op)
		}
		if c.op == "~" && len(c.value) < 3 {
			return fmt.Errorf("a substring search (~) needs at least 3 characters, got %q", c.value)
		}
	}
	return nil
}

func (q searchQuery) match(pi *paymentIntent) bool {
	for _, c := range q.clauses {
		m := c.match(pi)
		if q.or && m {
			return true
		}
		if !q.or && !m {
			return false
		}
	}
	return !q.or
}

func (c searchClause) match(pi *paymentIntent) bool {
	return c.matchValue(pi) != c.negate
}

func (c searchClause) matchValue(pi *paymentIntent) bool {
	if numericSearchFields[c.field] {
		n := pi.amount
		if c.field == "created" {
			n = pi.pos.created
		}
		switch c.op {
		case ">":
			return n > c.num
		case ">=":
			return n >= c.num
		case "<":
			return n < c.num
		case "<=":
			return n <= c.num
		}
		return n == c.num
	}
	var v string
	present := true
	switch c.field {
	case "currency":
		v = pi.currency
	case "customer":
		v, present = pi.customer, pi.customer != ""
	case "status":
		v = pi.status
	case "metadata":
		v, present = pi.metadata[c.key]
	}
	if c.null {
		return !present
	}
	if !present {
		return false
	}
	if c.op == "~" {
		return strings.Contains(strings.ToLower(v), strings.ToLower(c.value))
	}
	return strings.EqualFold(v, c.value)
}
