package codec_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
)

// The codec server's handler speaks the protocol the SDK's remote codec
// (and the CLI and the Web UI) speak, behind a bearer token, with CORS for
// the UI's origin only (a page of another origin is refused).
func TestHTTPHandler(t *testing.T) {
	t.Parallel()
	store := codec.NewMemoryStore()
	dc := codec.NewDataConverter(keys(t, k1), codec.Options{Store: store, Subject: personal.Subject})
	srv := httptest.NewServer(codec.NewHTTPHandler(dc.DisplayCodecs(), codec.ServerOptions{Token: "s3cret", CORSOrigin: "http://ui.example"}))
	t.Cleanup(srv.Close)

	ps, err := dc.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)

	remote := func(token string) converter.DataConverter {
		return converter.NewRemoteDataConverter(converter.GetDefaultDataConverter(), converter.RemoteDataConverterOptions{
			Endpoint: srv.URL + "/default",
			ModifyRequest: func(r *http.Request) error {
				r.Header.Set("Authorization", "Bearer "+token)
				return nil
			},
		})
	}
	var in handoff.EventInput
	require.NoError(t, remote("s3cret").FromPayloads(ps, &in))
	require.Contains(t, string(in.Payload), "ada@example.com")
	err = remote("wrong").FromPayloads(ps, &in)
	require.Error(t, err)
	require.Contains(t, err.Error(), "Unauthorized")

	// /encode encrypts with the master key; the local converter reads it.
	enc, err := remote("s3cret").ToPayloads(map[string]string{"hello": "world"})
	require.NoError(t, err)
	require.Equal(t, "k1", keyID(enc.Payloads[0]))
	var m map[string]string
	require.NoError(t, dc.FromPayloads(enc, &m))
	require.Equal(t, "world", m["hello"])

	// An erased customer's payload comes back still encrypted; the request
	// does not fail.
	store.Erase("ada@example.com")
	fresh := codec.NewDataConverter(keys(t, k1), codec.Options{Store: store})
	srv2 := httptest.NewServer(codec.NewHTTPHandler(fresh.DisplayCodecs(), codec.ServerOptions{}))
	t.Cleanup(srv2.Close)
	out, err := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: srv2.URL}).Decode(ps.Payloads)
	require.NoError(t, err)
	require.Equal(t, codec.EncodingEncrypted, string(out[0].Metadata[converter.MetadataEncoding]))

	// CORS: the UI's origin gets its headers and a preflight needs no token.
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
	req.Header.Set("Origin", "http://ui.example")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNoContent, res.StatusCode)
	require.Equal(t, "http://ui.example", res.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, res.Header.Get("Access-Control-Allow-Headers"), "Authorization")
	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/decode", strings.NewReader(`{"payloads":[]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Authorization", "Bearer s3cret")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode, "a page of another origin is refused, token or not")
	require.Empty(t, res.Header.Get("Access-Control-Allow-Origin"), "no CORS for another origin")
}
