package codec

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/outflow/outflow/handoff"
)

// Options configures [NewDataConverter].
type Options struct {
	// Store keeps the customers' data keys (a [PGStore] on DATABASE_URL).
	// Optional: without it a value carrying personal data fails to encode,
	// and a payload encrypted with a customer's key fails to decode, each
	// with an error wrapping ErrNoKeyStore.
	Store KeyStore
	// Subject says which values carry whose personal data. Optional:
	// defaulted to [EventInputSubject] (the workflow input); the worker adds
	// the activities' values (internal/personal).
	Subject SubjectFunc
	// NoCompression turns off zlib compression before encryption. By
	// default a payload of at least CompressMinBytes is compressed when that
	// makes it smaller (converter.NewZlibCodec without AlwaysEncode).
	NoCompression bool
	// CacheTTL is how long unwrapped customer keys are kept. Optional:
	// defaulted to [CacheTTL].
	CacheTTL time.Duration
}

// DataConverter is outflow's data converter: the SDK's default converter
// (JSON), then the SDK's zlib codec where it pays (payloads of at least
// CompressMinBytes), then AES-256-GCM
// ([Codec]), composed with converter.NewCodecDataConverter. Two refinements:
//
//   - A value the Subject function recognises (a customer's personal data)
//     is encrypted with that customer's data key instead of the master key,
//     so erasing the key (outboxctl forget-customer) leaves it unreadable.
//   - A value no type list knows but whose JSON names an email address (a
//     failure message, a memo string) is encrypted with that address's
//     customer key too: the safety net behind the Subject function.
//   - A single scalar value (a string, number or boolean) converted alone
//     with ToPayload stays plaintext, unless it names an email address:
//     that is how the SDK converts memo values (and a workflow's summary),
//     which stay readable by design in every tool (docs/privacy.md).
//     Inputs, results, signals, queries, markers and failures go through
//     ToPayloads or are structs, and are always encrypted.
//
// Decoding reads the key id of each payload, so it needs no Subject, and
// passes through payloads it did not encode.
type DataConverter struct {
	codec   *Codec
	subject SubjectFunc
	// encoders are the codecs that encode (with or without zlib); decoders
	// always hold zlib, which passes through what it did not compress.
	encoders, decoders []converter.PayloadCodec
	plain              converter.DataConverter
	enc, dec           converter.DataConverter
}

var (
	_ converter.DataConverter                         = (*DataConverter)(nil)
	_ converter.DataConverterWithSerializationContext = (*DataConverter)(nil)
	_ converter.PayloadCodecProvider                  = (*DataConverter)(nil)
)

// NewDataConverter returns the data converter of keys.
func NewDataConverter(keys *Keyring, opts Options) *DataConverter {
	c := &Codec{keys: keys}
	if opts.Store != nil {
		c.customers = newCustomerKeys(keys, opts.Store, opts.CacheTTL)
	}
	subject := opts.Subject
	if subject == nil {
		subject = EventInputSubject
	}
	// NewCodecDataConverter applies codecs last to first when encoding:
	// compress, then encrypt (encrypted data does not compress).
	zlib := converter.NewZlibCodec(converter.ZlibCodecOptions{})
	decoders := []converter.PayloadCodec{c, zlib}
	encoders := []converter.PayloadCodec{c, largeOnly{zlib}}
	if opts.NoCompression {
		encoders = encoders[:1]
	}
	plain := converter.GetDefaultDataConverter()
	return &DataConverter{
		codec:    c,
		subject:  subject,
		encoders: encoders,
		decoders: decoders,
		plain:    plain,
		enc:      converter.NewCodecDataConverter(plain, encoders...),
		dec:      converter.NewCodecDataConverter(plain, decoders...),
	}
}

// NoCompression reports whether zlib before encryption is off.
func (d *DataConverter) NoCompression() bool { return len(d.encoders) == 1 }

// Keys are the master keys.
func (d *DataConverter) Keys() *Keyring { return d.codec.keys }

// Codecs are the payload codecs in NewCodecDataConverter's order, for
// converter.NewPayloadCodecHTTPHandler. They decode every payload the
// converter encodes; they encode with the master key.
func (d *DataConverter) Codecs() []converter.PayloadCodec {
	return append([]converter.PayloadCodec(nil), d.decoders...)
}

// DisplayCodecs are [DataConverter.Codecs] for a codec server: a payload
// of an erased customer stays encrypted in the answer instead of failing
// the whole request, so an operator still reads the rest of the history.
func (d *DataConverter) DisplayCodecs() []converter.PayloadCodec {
	display := *d.codec
	display.keepErased = true
	out := d.Codecs()
	out[0] = &display
	return out
}

// encode converts v with the default converter, then encrypts the payload
// with the key of the customer whose personal data it carries (the Subject
// function's answer, else the first email address in the payload: a memo
// string or a failure message that names one), or with the master key.
func (d *DataConverter) encode(v any, plainScalars bool) (*commonpb.Payload, error) {
	subject, ok := d.subject(v)
	return d.encodeFor(v, subject, ok, plainScalars)
}

// encodeFor is encode with the Subject function's answer given.
func (d *DataConverter) encodeFor(v any, subject string, ok, plainScalars bool) (*commonpb.Payload, error) {
	p, err := d.plain.ToPayload(v)
	if err != nil || p == nil {
		return p, err
	}
	if !ok {
		subject, ok = EmailIn(p.GetData())
	}
	if !ok && plainScalars && isScalar(v) {
		return p, nil
	}
	conv := d.enc
	if ok {
		codecs := append([]converter.PayloadCodec(nil), d.encoders...)
		codecs[0] = customerCodec{c: d.codec, subject: subject}
		conv = converter.NewCodecDataConverter(d.plain, codecs...)
	}
	// The payload is converted already: a RawValue passes through the
	// default converter untouched, into the codecs.
	return conv.ToPayload(converter.NewRawValue(p))
}

// ToPayload implements [converter.DataConverter]. A scalar stays plaintext
// (a memo value), unless it names an email address.
func (d *DataConverter) ToPayload(value any) (*commonpb.Payload, error) {
	return d.encode(value, true)
}

// ToPayloads implements [converter.DataConverter]; every value is encrypted.
func (d *DataConverter) ToPayloads(values ...any) (*commonpb.Payloads, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := &commonpb.Payloads{Payloads: make([]*commonpb.Payload, len(values))}
	for i, v := range values {
		p, err := d.encode(v, false)
		if err != nil {
			return nil, err
		}
		out.Payloads[i] = p
	}
	return out, nil
}

// FromPayload implements [converter.DataConverter].
func (d *DataConverter) FromPayload(payload *commonpb.Payload, valuePtr any) error {
	return d.dec.FromPayload(payload, valuePtr)
}

// FromPayloads implements [converter.DataConverter]. A workflow input
// ([handoff.EventInput]) encrypted with an erased customer key fails with an
// ordinary error, which fails the workflow instead of its task: no worker
// will ever read it, and a task retried forever would leave the order
// pending with nothing to see but WorkflowTaskFailed events. Every other
// payload of an erased key fails the task as before (a result decoded in a
// replay must not change the workflow's path).
func (d *DataConverter) FromPayloads(payloads *commonpb.Payloads, valuePtrs ...any) error {
	err := d.dec.FromPayloads(payloads, valuePtrs...)
	if err != nil && errors.Is(err, ErrErased) && isWorkflowInput(valuePtrs) {
		return fmt.Errorf("%w: the workflow's input can never be read again, so the workflow fails instead of retrying its task "+
			"(the customer was forgotten while the workflow still needed the key: settle the order by hand): %s",
			ErrErasedInput, strings.TrimPrefix(err.Error(), ErrErased.Error()+": "))
	}
	return err
}

// ErrErasedInput wraps [ErrErased] for a workflow input that can never be
// read: the workflow fails (docs/privacy.md).
var ErrErasedInput = fmt.Errorf("%w: workflow input", ErrErased)

func isWorkflowInput(valuePtrs []any) bool {
	for _, v := range valuePtrs {
		if _, ok := v.(*handoff.EventInput); ok {
			return true
		}
	}
	return false
}

// ToString implements [converter.DataConverter].
func (d *DataConverter) ToString(payload *commonpb.Payload) string { return d.dec.ToString(payload) }

// ToStrings implements [converter.DataConverter].
func (d *DataConverter) ToStrings(payloads *commonpb.Payloads) []string {
	return d.dec.ToStrings(payloads)
}

// WithSerializationContext implements
// [converter.DataConverterWithSerializationContext]: the keys do not depend
// on where a payload is used.
func (d *DataConverter) WithSerializationContext(converter.SerializationContext) converter.DataConverter {
	return d
}

// Codec implements [converter.PayloadCodecProvider] (the SDK encodes
// headers with it): the master key's codecs.
func (d *DataConverter) Codec() converter.PayloadCodec {
	if p, ok := d.dec.(converter.PayloadCodecProvider); ok {
		return p.Codec()
	}
	return nil
}

// isScalar reports a value the SDK converts alone as a memo value: nil, a
// string, a number or a boolean (or a named type of one).
func isScalar(v any) bool {
	if v == nil {
		return true
	}
	switch reflect.TypeOf(v).Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// emailPattern is an email address as the order API accepts it (net/mail,
// orders/validation.go): a dot-atom local part of atext (letters, digits and
// !#$%&'*+/=?^_`{|}~-) or any non-ASCII letter, mark, number or symbol (RFC
// 6532), then '@' and a domain of two labels or more (letters of any
// script, digits, '-', '_') or a domain literal ([127.0.0.1]). A non-ASCII
// space or punctuation mark ends an address, as "“" or "»" do in a
// sentence, and so does ASCII punctuation after the domain ("ada@x.io's");
// the order API accepts such addresses too, and the net misses them
// (docs/privacy.md).
var emailPattern = regexp.MustCompile(
	"[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-\\x{80}-\\x{10FFFF}]+(?:\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-\\x{80}-\\x{10FFFF}]+)*" +
		`@(?:[A-Za-z0-9_\-\x{80}-\x{10FFFF}]+(?:\.[A-Za-z0-9_\-\x{80}-\x{10FFFF}]+)+|\[[!-Z^-~]*\])`)

// boundary turns a non-ASCII rune that is no letter, mark, number or symbol
// (a space, a quotation mark, a control) into a space, which emailPattern
// never crosses.
func boundary(r rune) rune {
	if r >= 0x80 && !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.S) {
		return ' '
	}
	return r
}

// modulePath is a Go module path and version in a stack trace
// (go.temporal.io/sdk@v1.51.0): a local part with a '/' and a domain that
// starts with a semantic version. The order API would accept it; it is no
// customer's.
var modulePath = regexp.MustCompile(`^[^@]*/[^@]*@v[0-9]+\.[0-9]+\.[0-9]+`)

// EmailIn returns the first email address in data: the safety net behind
// the Subject function, so that a value no type list knows (a failure
// message, a memo string) is still encrypted with the key of the customer
// it names, and forgotten with them. data is JSON (or a plain string): its
// escapes are read first, so "a\u0026b@example.com" is a&b@example.com and
// "line\nada@example.com" is ada@example.com, also when a JSON error body
// is quoted inside a string (escaped twice).
func EmailIn(data []byte) (string, bool) {
	if bytes.IndexByte(data, '@') < 0 {
		return "", false
	}
	text := string(data)
	for range 3 {
		u, changed := unescapeJSON(text)
		if !changed {
			break
		}
		text = u
	}
	for _, m := range emailPattern.FindAllString(strings.Map(boundary, text), -1) {
		if !modulePath.MatchString(m) {
			return m, true
		}
	}
	return "", false
}

// unescapeJSON replaces JSON's string escapes (\uXXXX, surrogate pairs
// included, \n, \", \\ ...) anywhere in s with what they stand for; it
// reports whether it replaced any.
func unescapeJSON(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, false
	}
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch n := s[i+1]; n {
		case '"', '\\', '/':
			b.WriteByte(n)
		case 'n', 'r', 't', 'b', 'f':
			b.WriteByte(' ') // a line end or tab ends an address either way
		case 'u':
			r, width := hexRune(s[i+2:])
			if width == 0 {
				b.WriteByte(c)
				continue
			}
			if utf16.IsSurrogate(r) {
				if len(s) >= i+2+width+6 && s[i+2+width] == '\\' && s[i+3+width] == 'u' {
					if r2, w2 := hexRune(s[i+4+width:]); w2 > 0 {
						r = utf16.DecodeRune(r, r2)
						width += 2 + w2
					}
				}
			}
			b.WriteRune(r)
			i += width
		default:
			b.WriteByte(c)
			continue
		}
		i++
		changed = true
	}
	return b.String(), changed
}

// hexRune reads the four hex digits of a \u escape at the start of s.
func hexRune(s string) (rune, int) {
	if len(s) < 4 {
		return 0, 0
	}
	v, err := strconv.ParseUint(s[:4], 16, 32)
	if err != nil {
		return 0, 0
	}
	return rune(v), 4
}

// CompressMinBytes is the smallest payload zlib is tried on. Below it,
// compression does not pay: measured on outflow's payloads (all under 1 KiB,
// docs/privacy.md), zlib saved 3% of a history's size and cost about 2 ms of
// CPU and 860 KB of allocations per payload (a zlib writer's tables).
const CompressMinBytes = 4096

// largeOnly runs the SDK's zlib codec on payloads of at least
// CompressMinBytes; the zlib codec itself keeps a result only when it is
// smaller.
type largeOnly struct{ zlib converter.PayloadCodec }

func (l largeOnly) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if proto.Size(p) < CompressMinBytes {
			out[i] = p
			continue
		}
		z, err := l.zlib.Encode([]*commonpb.Payload{p})
		if err != nil {
			return payloads, err
		}
		out[i] = z[0]
	}
	return out, nil
}

func (l largeOnly) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return l.zlib.Decode(payloads)
}

// FailureConverter is the failure converter to pair with d: failure
// messages and stack traces are encoded into payloads through d too (the
// SDK's EncodeCommonAttributes), so no history carries them in plain text.
func (d *DataConverter) FailureConverter() converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: d, EncodeCommonAttributes: true})
}
