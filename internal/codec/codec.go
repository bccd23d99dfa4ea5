package codec

import (
	"crypto/cipher"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Metadata of an encrypted payload (docs/privacy.md). The names are those of
// Temporal's encryption samples, so other tools recognise the payloads.
const (
	// EncodingEncrypted is the "encoding" of a payload this codec encrypted.
	EncodingEncrypted = "binary/encrypted"
	// MetadataKeyID names the key that encrypted it: a master key id of
	// OUTFLOW_CODEC_KEYS, or CustomerKeyPrefix and a customer's key id.
	MetadataKeyID = "encryption-key-id"
	// CustomerKeyPrefix marks a customer's data key in MetadataKeyID.
	CustomerKeyPrefix = "customer/"
)

var (
	// ErrUnknownKey: a payload names a key this process does not hold.
	ErrUnknownKey = errors.New("codec: unknown key")
	// ErrErased: a payload was encrypted with a customer's data key that
	// outboxctl forget-customer erased; it is unreadable by design.
	ErrErased = errors.New("codec: customer key erased")
	// ErrNoKeyStore: a payload carries or needs a customer's data key, and
	// this process was given no key store (DATABASE_URL).
	ErrNoKeyStore = errors.New("codec: no customer key store")
)

// Codec is outflow's payload codec ([converter.PayloadCodec]), AES-256-GCM:
// Encode encrypts with the primary master key; Decode decrypts with the key
// each payload names, a master key or a customer's data key, and passes
// through every payload it did not encode (plaintext histories from before
// the codec stay readable). The inner payload (the parent converter's, or
// the zlib codec's output) is marshalled whole, metadata included, and the
// key id is authenticated with it, so no metadata can be swapped unnoticed.
type Codec struct {
	keys      *Keyring
	customers *customerKeys
	// keepErased leaves a payload of an erased customer encrypted instead of
	// failing: the codec server's view (an operator still sees the rest of
	// the history). Workers and clients fail.
	keepErased bool
}

var _ converter.PayloadCodec = (*Codec)(nil)

// Encode implements [converter.PayloadCodec] with the primary master key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	id := c.keys.Primary()
	a, err := c.keys.get(id)
	if err != nil {
		return payloads, taskFailure(err)
	}
	out, err := encodeWith(payloads, id, a)
	return out, taskFailure(err)
}

// Decode implements [converter.PayloadCodec].
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		d, err := c.decodeOne(p)
		if errors.Is(err, ErrErased) && c.keepErased {
			d, err = p, nil
		}
		if err != nil {
			return payloads, taskFailure(err)
		}
		out[i] = d
	}
	return out, nil
}

// taskFailure makes a codec error fail the workflow task, which Temporal
// retries, instead of the workflow execution: a worker started without a
// key, or with the key store unreachable for a moment, must not fail the
// workflows it cannot read; it fails loudly (WorkflowTaskFailed, naming the
// key) until it is given the key. Outside a workflow task it is an ordinary
// error, and errors.Is still finds ErrUnknownKey, ErrErased, ErrNoKeyStore.
// One exception, in [DataConverter.FromPayloads]: a workflow input under an
// erased key ([ErrErasedInput]) fails the workflow, since no key will ever
// come.
func taskFailure(err error) error {
	if err == nil {
		return nil
	}
	return converter.NewWorkflowTaskFailureError(err)
}

func (c *Codec) decodeOne(p *commonpb.Payload) (*commonpb.Payload, error) {
	if p == nil || string(p.GetMetadata()[converter.MetadataEncoding]) != EncodingEncrypted {
		return p, nil
	}
	id := string(p.GetMetadata()[MetadataKeyID])
	if id == "" {
		return nil, fmt.Errorf("codec: an encrypted payload names no key (metadata %q is missing)", MetadataKeyID)
	}
	var (
		a   cipher.AEAD
		err error
	)
	if rest, ok := strings.CutPrefix(id, CustomerKeyPrefix); ok {
		kid, perr := uuid.Parse(rest)
		switch {
		case perr != nil:
			return nil, fmt.Errorf("%w: customer key id %q is not a UUID", ErrUnknownKey, id)
		case c.customers == nil:
			return nil, fmt.Errorf("%w: the payload is encrypted with customer key %s; give this process DATABASE_URL (the customer_keys table) to decrypt it", ErrNoKeyStore, id)
		}
		a, err = c.customers.byID(kid)
	} else {
		a, err = c.keys.get(id)
	}
	if err != nil {
		return nil, err
	}
	plain, err := open(a, p.GetData(), []byte(id))
	if err != nil {
		return nil, fmt.Errorf("codec: the payload encrypted with key %s does not decrypt: %w (a wrong key under that id, or a corrupted payload)", id, err)
	}
	out := &commonpb.Payload{}
	if err := proto.Unmarshal(plain, out); err != nil {
		return nil, fmt.Errorf("codec: the payload encrypted with key %s decrypts to no payload: %w", id, err)
	}
	return out, nil
}

// encodeWith encrypts every payload with a under key id.
func encodeWith(payloads []*commonpb.Payload, id string, a cipher.AEAD) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return payloads, fmt.Errorf("codec: marshal payload: %w", err)
		}
		sealed, err := seal(a, plain, []byte(id))
		if err != nil {
			return payloads, fmt.Errorf("codec: encrypt: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(EncodingEncrypted),
				MetadataKeyID:              []byte(id),
			},
			Data: sealed,
		}
	}
	return out, nil
}

// customerCodec encrypts with one customer's data key (created on first
// use) and decodes like [Codec].
type customerCodec struct {
	c       *Codec
	subject string
}

func (cc customerCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	if cc.c.customers == nil {
		return payloads, taskFailure(fmt.Errorf("%w: a value carrying a customer's personal data must be encrypted with the customer's data key; give this process DATABASE_URL (the customer_keys table)", ErrNoKeyStore))
	}
	id, a, err := cc.c.customers.forSubject(cc.subject)
	if err != nil {
		return payloads, taskFailure(err)
	}
	out, err := encodeWith(payloads, CustomerKeyPrefix+id.String(), a)
	return out, taskFailure(err)
}

func (cc customerCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return cc.c.Decode(payloads)
}
