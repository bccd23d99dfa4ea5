// Package natscodec puts the payload codec of Temporal's histories
// (internal/codec, OUTFLOW_CODEC_KEYS) on the JetStream sink: the starter
// encrypts each event's payload on its way to the stream
// (natspub.Config.Encoder) and a consumer decrypts it
// (natsconsumer.Config.Decoder), so that the stream holds no personal data
// in plain text (docs/jetstream.md, docs/privacy.md).
//
// The message body is the encrypted payload's data (nonce, sealed inner
// payload, tag); the headers Outflow-Payload-Encoding and
// Outflow-Payload-Key-Id carry its metadata (binary/encrypted, and the
// master key's or customer/<uuid>). Put back together they are a payload
// of Temporal's codec protocol: a consumer in another language can decode
// it through the codec server.
package natscodec

import (
	"errors"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/outbox/natspub"
)

// Codec is natspub's PayloadEncoder and PayloadDecoder over a payload
// codec's data converter.
type Codec struct{ dc *codec.DataConverter }

var (
	_ natspub.PayloadEncoder = Codec{}
	_ natspub.PayloadDecoder = Codec{}
)

// New returns the codec of dc, the data converter of
// temporalclient.CodecDataConverter (with the customer key store).
func New(dc *codec.DataConverter) Codec { return Codec{dc: dc} }

// EncodePayload implements [natspub.PayloadEncoder].
func (c Codec) EncodePayload(payload []byte) (natspub.EncodedPayload, error) {
	p, err := c.dc.EncodeEventPayload(payload)
	if err != nil {
		return natspub.EncodedPayload{}, err
	}
	md := p.GetMetadata()
	return natspub.EncodedPayload{
		Data:     p.GetData(),
		Encoding: string(md[converter.MetadataEncoding]),
		KeyID:    string(md[codec.MetadataKeyID]),
	}, nil
}

// DecodePayload implements [natspub.PayloadDecoder]. It refuses an encoding
// other than the codec's; a payload of a customer key that forget-customer
// erased is natspub.ErrPayloadErased.
func (c Codec) DecodePayload(e natspub.EncodedPayload) ([]byte, error) {
	if e.Encoding != codec.EncodingEncrypted {
		return nil, fmt.Errorf("natscodec: payload encoding %q is not this codec's (%s)", e.Encoding, codec.EncodingEncrypted)
	}
	out, err := c.dc.DecodeEventPayload(&commonpb.Payload{
		Metadata: map[string][]byte{
			converter.MetadataEncoding: []byte(e.Encoding),
			codec.MetadataKeyID:        []byte(e.KeyID),
		},
		Data: e.Data,
	})
	if errors.Is(err, codec.ErrErased) {
		return nil, fmt.Errorf("%w: %w", natspub.ErrPayloadErased, err)
	}
	return out, err
}
