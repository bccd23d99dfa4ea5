package testsuite

import (
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
)

// TestCodecKeys is the OUTFLOW_CODEC_KEYS every stack's processes run with
// (a fixed key, for tests only): the failpoint matrix, the soak and every
// other suite run with encrypted histories, as production does.
const TestCodecKeys = "testsuite-1:b3V0Zmxvdy10ZXN0c3VpdGUta2V5LW5vdC1zZWNyZXQ="

// codecClient dials the environment's test client with the codec of
// TestCodecKeys (master keys only: the environment's stacks each have a
// database of their own; [Stack.DataConverter] decodes a customer's data).
func codecClient(addr string) (client.Client, error) {
	dc, err := testDataConverter(nil)
	if err != nil {
		return nil, err
	}
	return client.Dial(client.Options{HostPort: addr, Logger: devserver.QuietLogger(), DataConverter: dc,
		FailureConverter: dc.FailureConverter()})
}

func testDataConverter(store codec.KeyStore) (*codec.DataConverter, error) {
	keys, err := codec.ParseKeys(TestCodecKeys)
	if err != nil {
		return nil, err
	}
	return codec.NewDataConverter(keys, codec.Options{Store: store, Subject: personal.Subject}), nil
}

// DataConverter is the codec of this stack's processes, with its database's
// customer keys: it decodes every payload they wrote (that is still
// readable). It holds no cache of another instance: a fresh one sees an
// erasure at once.
func (s *Stack) DataConverter() *codec.DataConverter {
	keys, err := codec.ParseKeys(s.CodecKeys)
	if err != nil {
		s.T.Fatalf("testsuite: OUTFLOW_CODEC_KEYS of the stack: %v", err)
	}
	return codec.NewDataConverter(keys, codec.Options{Store: codec.NewPGStore(s.Pool), Subject: personal.Subject})
}
