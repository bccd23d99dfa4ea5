package codec_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/orders"
)

func keys(t *testing.T, spec string) *codec.Keyring {
	t.Helper()
	k, err := codec.ParseKeys(spec)
	require.NoError(t, err)
	return k
}

var (
	k1 = codec.NewKeySpec("k1")
	k2 = codec.NewKeySpec("k2")
)

// orderInput is an OrderCreated workflow input with every kind of personal
// data: the address, the shipping address and an order line.
func orderInput(t *testing.T, email string) handoff.EventInput {
	t.Helper()
	version, payload := orders.EncodeOrderCreated(orders.OrderCreated{
		OrderID: "order-1", CustomerEmail: email, Currency: "usd", PaymentMethod: "pm_card_visa", Amount: 2500,
		Items:           []orders.Item{{SKU: "SKU-SECRET-1", Quantity: 2, UnitAmount: 1250}},
		ShippingAddress: &orders.ShippingAddress{Name: "Ada Lovelace", Line1: "12 Secret Lane", City: "London", PostalCode: "N1 9GU", Country: "GB"},
	})
	b, err := json.Marshal(payload)
	require.NoError(t, err)
	return handoff.EventInput{EventID: "event-1", EventType: orders.EventOrderCreated, AggregateType: orders.AggregateType,
		AggregateID: "order-1", Sequence: 1, SchemaVersion: version, Payload: b}
}

func keyID(p *commonpb.Payload) string { return string(p.GetMetadata()[codec.MetadataKeyID]) }

// contains reports whether the marshalled payload shows s anywhere.
func contains(t *testing.T, p *commonpb.Payload, s string) bool {
	t.Helper()
	return bytes.Contains([]byte(p.String()), []byte(s)) || bytes.Contains(p.GetData(), []byte(s))
}

func TestRoundTripAndWhatIsEncryptedWithWhichKey(t *testing.T) {
	t.Parallel()
	store := codec.NewMemoryStore()
	dc := codec.NewDataConverter(keys(t, k1), codec.Options{Store: store, Subject: personal.Subject})

	in := orderInput(t, "ada@example.com")
	ps, err := dc.ToPayloads(in)
	require.NoError(t, err)
	p := ps.Payloads[0]
	require.Equal(t, codec.EncodingEncrypted, string(p.Metadata[converter.MetadataEncoding]))
	require.True(t, strings.HasPrefix(keyID(p), codec.CustomerKeyPrefix), "personal data is under the customer's key, got %q", keyID(p))
	for _, secret := range []string{"ada@example.com", "12 Secret Lane", "SKU-SECRET-1", "order-1"} {
		require.False(t, contains(t, p, secret), "%q in the encrypted payload", secret)
	}
	var back handoff.EventInput
	require.NoError(t, dc.FromPayloads(ps, &back))
	require.Equal(t, in, back)

	// The same customer's email input shares the key; a charge (no
	// personal data) is under the master key.
	email, err := dc.ToPayloads(activities.SendEmailInput{To: "ADA@example.com ", OrderID: "order-1"})
	require.NoError(t, err)
	require.Equal(t, keyID(p), keyID(email.Payloads[0]), "one key per customer, whatever the address's case")
	charge, err := dc.ToPayloads(activities.ChargeInput{OrderID: "order-1", Amount: 2500})
	require.NoError(t, err)
	require.Equal(t, "k1", keyID(charge.Payloads[0]))
	require.Len(t, store.Records(), 1)

	// Scalars: alone through ToPayload (memo values) they stay plaintext;
	// through ToPayloads (inputs, results) they are encrypted.
	memo, err := dc.ToPayload("GB")
	require.NoError(t, err)
	require.Equal(t, "json/plain", string(memo.Metadata[converter.MetadataEncoding]))
	arg, err := dc.ToPayloads("GB")
	require.NoError(t, err)
	require.Equal(t, "k1", keyID(arg.Payloads[0]))
	// A struct alone through ToPayload (an encoded failure's message) is
	// encrypted.
	single, err := dc.ToPayload(activities.ChargeInput{OrderID: "order-1"})
	require.NoError(t, err)
	require.Equal(t, "k1", keyID(single))
}

// Payloads written before the codec (plain JSON) keep decoding.
func TestPlaintextPassesThrough(t *testing.T) {
	t.Parallel()
	plain, err := converter.GetDefaultDataConverter().ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)
	dc := codec.NewDataConverter(keys(t, k1), codec.Options{})
	var back handoff.EventInput
	require.NoError(t, dc.FromPayloads(plain, &back))
	require.Equal(t, "order-1", back.AggregateID)
}

// Rotation: the newest key encrypts, every configured key decrypts; a
// payload whose key was dropped fails loudly, naming its key id.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	store := codec.NewMemoryStore()
	old := codec.NewDataConverter(keys(t, k1), codec.Options{Store: store})
	before, err := old.ToPayloads(activities.ChargeInput{OrderID: "before"})
	require.NoError(t, err)
	beforePersonal, err := old.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)

	rotated := codec.NewDataConverter(keys(t, k2+","+k1), codec.Options{Store: store})
	after, err := rotated.ToPayloads(activities.ChargeInput{OrderID: "after"})
	require.NoError(t, err)
	require.Equal(t, "k2", keyID(after.Payloads[0]), "the first key encrypts")
	var c activities.ChargeInput
	require.NoError(t, rotated.FromPayloads(before, &c), "an older key still decrypts")
	require.Equal(t, "before", c.OrderID)
	var in handoff.EventInput
	require.NoError(t, rotated.FromPayloads(beforePersonal, &in), "a customer key wrapped by the older master key still unwraps")
	// A new customer's key is wrapped by the new master key.
	_, err = rotated.ToPayloads(orderInput(t, "grace@example.com"))
	require.NoError(t, err)
	wrappers := map[string]int{}
	for _, r := range store.Records() {
		wrappers[r.WrappingKeyID]++
	}
	require.Equal(t, map[string]int{"k1": 1, "k2": 1}, wrappers)

	retired := codec.NewDataConverter(keys(t, k2), codec.Options{Store: store})
	require.NoError(t, retired.FromPayloads(after, &c))
	err = retired.FromPayloads(before, &c)
	require.ErrorIs(t, err, codec.ErrUnknownKey)
	require.Contains(t, err.Error(), `"k1"`, "the error names the missing key id")
	err = retired.FromPayloads(beforePersonal, &in)
	require.ErrorIs(t, err, codec.ErrUnknownKey)
	require.Contains(t, err.Error(), `"k1"`)

	// Same id, another key: authentication fails, loudly.
	impostor := codec.NewDataConverter(keys(t, codec.NewKeySpec("k1")), codec.Options{})
	err = impostor.FromPayloads(before, &c)
	require.Error(t, err)
	require.Contains(t, err.Error(), "k1")
}

// Erasure: forgetting one customer makes their payloads unreadable and
// leaves everyone else's, and the master key's, readable. A new payload of
// the same address gets a new key.
func TestErasure(t *testing.T) {
	t.Parallel()
	store := codec.NewMemoryStore()
	dc := codec.NewDataConverter(keys(t, k1), codec.Options{Store: store, Subject: personal.Subject})
	ada, err := dc.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)
	adaMail, err := dc.ToPayloads(activities.SendEmailInput{To: "ada@example.com"})
	require.NoError(t, err)
	grace, err := dc.ToPayloads(orderInput(t, "grace@example.com"))
	require.NoError(t, err)
	charge, err := dc.ToPayloads(activities.ChargeInput{OrderID: "order-1"})
	require.NoError(t, err)

	require.True(t, store.Erase("Ada@Example.com"))
	fresh := codec.NewDataConverter(keys(t, k1), codec.Options{Store: store}) // a process without the cached key
	var in handoff.EventInput
	err = fresh.FromPayloads(ada, &in)
	require.ErrorIs(t, err, codec.ErrErased)
	require.Contains(t, err.Error(), keyID(ada.Payloads[0]))
	var mail activities.SendEmailInput
	require.ErrorIs(t, fresh.FromPayloads(adaMail, &mail), codec.ErrErased)
	require.NoError(t, fresh.FromPayloads(grace, &in))
	require.Equal(t, "order-1", in.AggregateID)
	var c activities.ChargeInput
	require.NoError(t, fresh.FromPayloads(charge, &c))

	again, err := fresh.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)
	require.NotEqual(t, keyID(ada.Payloads[0]), keyID(again.Payloads[0]))

	// The codec server's view keeps the erased payload encrypted instead of
	// failing the request.
	display := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), fresh.DisplayCodecs()...)
	var raw json.RawMessage
	err = display.FromPayloads(ada, &raw)
	require.Error(t, err, "still encrypted: the JSON converter cannot read it")
	require.NotErrorIs(t, err, codec.ErrErased)
}

// A process without a key store refuses personal data instead of
// encrypting it under the master key alone.
func TestPersonalDataNeedsTheKeyStore(t *testing.T) {
	t.Parallel()
	dc := codec.NewDataConverter(keys(t, k1), codec.Options{})
	_, err := dc.ToPayloads(orderInput(t, "ada@example.com"))
	require.ErrorIs(t, err, codec.ErrNoKeyStore)
	withStore := codec.NewDataConverter(keys(t, k1), codec.Options{Store: codec.NewMemoryStore()})
	ps, err := withStore.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)
	var in handoff.EventInput
	err = dc.FromPayloads(ps, &in)
	require.ErrorIs(t, err, codec.ErrNoKeyStore)
	require.Contains(t, err.Error(), keyID(ps.Payloads[0]))
}

// Compression is tried on payloads of CompressMinBytes and more, where it
// pays; smaller ones (all of outflow's today) are only encrypted.
func TestCompressionBeforeEncryption(t *testing.T) {
	t.Parallel()
	big := activities.SendEmailInput{To: "ada@example.com", OrderID: strings.Repeat("order-line ", 600)}
	small := activities.SendEmailInput{To: "ada@example.com", OrderID: strings.Repeat("order-line ", 200)}
	store := codec.NewMemoryStore()
	on := codec.NewDataConverter(keys(t, k1), codec.Options{Store: store, Subject: personal.Subject})
	off := codec.NewDataConverter(keys(t, k1), codec.Options{Store: store, Subject: personal.Subject, NoCompression: true})
	a, err := on.ToPayloads(big)
	require.NoError(t, err)
	b, err := off.ToPayloads(big)
	require.NoError(t, err)
	require.Less(t, len(a.Payloads[0].Data), len(b.Payloads[0].Data)/3)
	var back activities.SendEmailInput
	require.NoError(t, off.FromPayloads(a, &back), "decoding needs no setting: the payload says it is compressed")
	require.Equal(t, big, back)

	c, err := on.ToPayloads(small)
	require.NoError(t, err)
	d, err := off.ToPayloads(small)
	require.NoError(t, err)
	require.Equal(t, len(d.Payloads[0].Data), len(c.Payloads[0].Data), "under CompressMinBytes zlib is not tried")
}

func TestKeysNeverPrinted(t *testing.T) {
	t.Parallel()
	spec := codec.NewKeySpec("k1")
	_, secret, _ := strings.Cut(spec, ":")
	k := keys(t, spec+","+k2)
	require.Equal(t, "encrypting with k1; decrypting k1, k2", k.String())
	for _, bad := range []string{
		"k1:" + secret[:20],         // short
		"k 1:" + secret,             // bad id
		spec + "," + spec,           // duplicate
		"k1" + secret,               // no colon
		"k1:" + secret + "," + "k2", // second entry bad
	} {
		_, err := codec.ParseKeys(bad)
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), secret[:8], "an error must never show a key")
	}
	got, err := codec.LoadKeys(func(string) string { return "" })
	require.NoError(t, err)
	require.Nil(t, got, "unset: no encryption")
	_, err = codec.LoadKeys(func(n string) string { return map[string]string{codec.KeysEnv: spec, codec.KeysFileEnv: "/x"}[n] })
	require.Error(t, err)
}

func TestMemoryStoreRecordsSurviveAReload(t *testing.T) {
	t.Parallel()
	store := codec.NewMemoryStore()
	dc := codec.NewDataConverter(keys(t, k1), codec.Options{Store: store})
	ps, err := dc.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)
	b, err := json.Marshal(store.Records())
	require.NoError(t, err)
	var recs []codec.KeyRecord
	require.NoError(t, json.Unmarshal(b, &recs))
	reloaded := codec.NewDataConverter(keys(t, k1), codec.Options{Store: codec.NewMemoryStore(recs...), CacheTTL: time.Second})
	var in handoff.EventInput
	require.NoError(t, reloaded.FromPayloads(ps, &in))
}

// The safety net: a value no type list knows that names an address (a
// failure message, a memo string) is under that customer's key, and is
// forgotten with them; a Go module path in a stack trace is no address.
func TestAddressesOutsideKnownTypesAreTheCustomers(t *testing.T) {
	t.Parallel()
	store := codec.NewMemoryStore()
	dc := codec.NewDataConverter(keys(t, k1), codec.Options{Store: store, Subject: personal.Subject})
	known, err := dc.ToPayloads(activities.SendEmailInput{To: "ada@example.com"})
	require.NoError(t, err)

	memo, err := dc.ToPayload(`email to "Ada@Example.com" rejected`)
	require.NoError(t, err)
	require.Equal(t, keyID(known.Payloads[0]), keyID(memo), "a memo string naming an address is not plaintext")
	failure := dc.FailureConverter().
		ErrorToFailure(temporal.NewNonRetryableApplicationError(`email k to "ada@example.com" rejected`, "EmailRejected", nil))
	require.Equal(t, "Encoded failure", failure.Message)
	require.Equal(t, keyID(known.Payloads[0]), keyID(failure.EncodedAttributes))

	trace, err := dc.ToPayloads("panic at /root/go/pkg/mod/go.temporal.io/sdk@v1.51.0/internal/internal_task_handlers.go:986")
	require.NoError(t, err)
	require.Equal(t, "k1", keyID(trace.Payloads[0]))
	plain, err := dc.ToPayload("confirmed")
	require.NoError(t, err)
	require.Equal(t, "json/plain", string(plain.Metadata[converter.MetadataEncoding]))

	for in, want := range map[string]string{
		`{"to":"a.b+c@mail.example.co.uk"}`: "a.b+c@mail.example.co.uk",
		"go.temporal.io/sdk@v1.51.0/x.go":   "",
		"worker 21431@vm@":                  "",
		"no address":                        "",
	} {
		got, ok := codec.EmailIn([]byte(in))
		require.Equal(t, want, got, in)
		require.Equal(t, want != "", ok, in)
	}
	require.Len(t, store.Records(), 1)
}
