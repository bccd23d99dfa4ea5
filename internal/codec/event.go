package codec

import (
	"encoding/json"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
)

// EncodeEventPayload encrypts an outbox event's JSON payload as it leaves
// for a sink other than Temporal (the JetStream stream): with the key of
// the customer whose customer_email it holds (an OrderCreated, of any
// schema version), else with that of the first address it names, else
// with the master key, exactly as the relay's workflow input
// ([EventInputSubject]). Forgetting the customer leaves it unreadable like
// their histories. The result is a payload of this codec (encoding
// binary/encrypted, the key id in its metadata); [DataConverter.DecodeEventPayload]
// reverses it.
func (d *DataConverter) EncodeEventPayload(payload []byte) (*commonpb.Payload, error) {
	subject, ok := payloadSubject(payload)
	p, err := d.encodeFor(json.RawMessage(payload), subject, ok, false)
	if err != nil {
		return nil, fmt.Errorf("codec: encrypt event payload: %w", err)
	}
	return p, nil
}

// DecodeEventPayload returns the JSON payload [DataConverter.EncodeEventPayload]
// encrypted. Errors wrap ErrUnknownKey, ErrErased or ErrNoKeyStore as
// decoding a history's payload would.
func (d *DataConverter) DecodeEventPayload(p *commonpb.Payload) ([]byte, error) {
	var raw json.RawMessage
	if err := d.FromPayload(p, &raw); err != nil {
		return nil, fmt.Errorf("codec: decrypt event payload: %w", err)
	}
	return raw, nil
}
