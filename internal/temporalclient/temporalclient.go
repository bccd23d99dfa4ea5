// Package temporalclient is the Temporal client setup of the binaries that
// talk to Temporal (starter, worker, outboxctl, codecserver, the benchmarks
// and dev tools): the client options the SDK's way, the payload codec's data
// converter, and the client's and codec's variables for -h. It is apart from
// package service so that a binary that talks to no Temporal (orderapi,
// providersim, healthcheck) links no go.temporal.io package; an architecture
// test (internal/architecture) keeps it so.
package temporalclient

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	otelinterceptor "go.temporal.io/sdk/contrib/opentelemetry"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/telemetry"
	"github.com/outflow/outflow/outbox/cmdkit"
)

// Option adds to what [ClientOptions] loads.
type Option func(*temporalSettings)

type temporalSettings struct {
	codec  codec.Options
	getenv func(string) string
	// lookup is what envconfig reads; nil: the process environment.
	lookup envconfig.EnvLookup
}

// WithCustomerKeys gives the payload codec the customer key store of db (the
// customer_keys table on DATABASE_URL), so the client encrypts a customer's
// personal data with the customer's own key and decrypts it again. Every
// binary with a database passes it; without it such a payload fails to
// encode or decode, naming the key (codec.ErrNoKeyStore).
func WithCustomerKeys(db codec.DB) Option {
	return func(s *temporalSettings) { s.codec.Store = codec.NewPGStore(db) }
}

// WithPersonalData says which values carry a customer's personal data,
// beyond the workflow input (codec.EventInputSubject, the default): the
// worker passes personal.Subject, which knows the activities' values.
func WithPersonalData(subject codec.SubjectFunc) Option {
	return func(s *temporalSettings) { s.codec.Subject = subject }
}

// WithGetenv reads the codec's variables through getenv (tests).
func WithGetenv(getenv func(string) string) Option {
	return func(s *temporalSettings) { s.getenv = getenv }
}

// WithEnviron reads every variable, the TEMPORAL_* ones and the codec's,
// from environ (KEY=VALUE, as os.Environ) instead of the process
// environment: for tests that run a binary's code in-process.
func WithEnviron(environ []string) Option {
	return func(s *temporalSettings) {
		l := environLookup(environ)
		s.lookup = l
		s.getenv = func(k string) string { v, _ := l.LookupEnv(k); return v }
	}
}

// environLookup is envconfig.EnvLookup over a fixed environment.
type environLookup []string

func (e environLookup) Environ() []string { return e }

func (e environLookup) LookupEnv(key string) (string, bool) {
	for i := len(e) - 1; i >= 0; i-- { // the last one wins, as in os/exec
		if k, v, ok := strings.Cut(e[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// ClientOptions loads the Temporal client options the SDK's way
// (go.temporal.io/sdk/contrib/envconfig): the default profile of the config
// file, overridden by TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TEMPORAL_TLS_* and the other TEMPORAL_* variables, so
// one binary runs against a dev server, a cluster or Temporal Cloud. An
// unset address means localhost:7233, an unset namespace "default"; an
// address that is not host:port (or a gRPC target with a scheme) is a
// configuration error (cli.ConfigError), refused before anything dials.
//
// With OUTFLOW_CODEC_KEYS (or OUTFLOW_CODEC_KEYS_FILE) set, every payload
// the client writes is encrypted and every one it reads decrypted
// ([CodecDataConverter]), and failure messages and stack traces are
// encoded into payloads too (the SDK's EncodeCommonAttributes), so no
// history carries them in plain text. This is the one place every binary
// gets its client, so the worker, the relay and every client share the
// converter.
func ClientOptions(opts ...Option) (client.Options, error) {
	var s temporalSettings
	for _, opt := range opts {
		opt(&s)
	}
	o, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{EnvLookup: s.lookup})
	if err != nil {
		return client.Options{}, cli.Config(fmt.Errorf("loading the Temporal client options from TEMPORAL_* and the config file (TEMPORAL_CONFIG_FILE): %w", err))
	}
	if o.HostPort == "" {
		o.HostPort = client.DefaultHostPort
	}
	if err := cmdkit.CheckHostPort(o.HostPort); err != nil {
		return client.Options{}, cli.Config(fmt.Errorf("TEMPORAL_ADDRESS=%q (or the address of the Temporal config file's profile; e.g. %s): %w", o.HostPort, client.DefaultHostPort, err))
	}
	if o.Namespace == "" {
		o.Namespace = client.DefaultNamespace
	}
	dc, err := CodecDataConverter(opts...)
	if err != nil {
		return client.Options{}, cli.Config(err)
	}
	if dc != nil {
		o.DataConverter = dc
		o.FailureConverter = dc.FailureConverter()
	}
	if telemetry.Enabled() {
		// Tracing is on (telemetry.Setup): a workflow start or signal
		// carries the caller's span in Temporal's headers, and a worker
		// made from this client continues it in its workflow and activity
		// spans (the interceptor is also a worker interceptor).
		ti, err := otelinterceptor.NewTracingInterceptor(otelinterceptor.TracerOptions{})
		if err != nil {
			return client.Options{}, fmt.Errorf("the Temporal tracing interceptor: %w", err)
		}
		o.Interceptors = append(o.Interceptors, ti)
	}
	return o, nil
}

// CodecDataConverter is the payload codec's data converter of
// OUTFLOW_CODEC_KEYS (or the file OUTFLOW_CODEC_KEYS_FILE names), or nil
// when neither is set: no encryption.
func CodecDataConverter(opts ...Option) (*codec.DataConverter, error) {
	s := temporalSettings{getenv: os.Getenv}
	for _, opt := range opts {
		opt(&s)
	}
	keys, err := codec.LoadKeys(s.getenv)
	if err != nil || keys == nil {
		return nil, err
	}
	switch v := s.getenv(codec.CompressEnv); v {
	case "", "1", "true", "on":
	case "0", "false", "off":
		s.codec.NoCompression = true
	default:
		return nil, fmt.Errorf("%s=%q: want true (the default: zlib where it makes a payload smaller) or false", codec.CompressEnv, v)
	}
	return codec.NewDataConverter(keys, s.codec), nil
}

// CodecSummary describes the payload codec of o for a start-up log line, by
// key ids only: "off", or which key encrypts and which decrypt.
func CodecSummary(o client.Options) string {
	if dc, ok := o.DataConverter.(*codec.DataConverter); ok {
		z := "zlib from 4 KiB"
		if dc.NoCompression() {
			z = "no compression"
		}
		return "AES-256-GCM, " + z + ", " + dc.Keys().String()
	}
	return "off"
}

// CheckCustomerKeys refuses to let a process start whose payload codec (o's
// data converter) cannot unwrap the customer keys db holds
// (codec.CheckCustomerKeys: another deployment's database, or a new master
// key that dropped the old one); nil when encryption is off. Every binary
// that passes [WithCustomerKeys] calls it before it starts work.
func CheckCustomerKeys(ctx context.Context, o client.Options, db codec.DB) error {
	dc, ok := o.DataConverter.(*codec.DataConverter)
	if !ok {
		return nil
	}
	return codec.CheckCustomerKeys(ctx, db, dc.Keys())
}

// Vars are the Temporal client's variables ([ClientOptions], loaded with
// go.temporal.io/sdk/contrib/envconfig), as a binary's -h lists them.
func Vars() []cli.Var {
	return []cli.Var{
		{Name: "TEMPORAL_ADDRESS", Default: client.DefaultHostPort, Meaning: "the Temporal frontend, host:port"},
		{Name: "TEMPORAL_NAMESPACE", Default: client.DefaultNamespace, Meaning: "the Temporal namespace"},
		{Name: "TEMPORAL_API_KEY", Meaning: "API key (Temporal Cloud); turns TLS on"},
		{Name: "TEMPORAL_TLS, TEMPORAL_TLS_*", Meaning: "TLS: client cert and key, server CA and name (paths or data)"},
		{Name: "TEMPORAL_GRPC_META_*", Meaning: "gRPC headers sent with every call"},
		{Name: "TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE", Meaning: "the SDK's config file and profile, which the variables above override"},
	}
}

// CodecVars are the payload codec's variables ([CodecDataConverter]).
func CodecVars() []cli.Var {
	return []cli.Var{
		{Name: codec.KeysEnv, Default: "no encryption", Meaning: "payload encryption keys: comma-separated KEY_ID:BASE64_32_BYTES, the first encrypts, all decrypt"},
		{Name: codec.KeysFileEnv, Meaning: "a file holding those keys instead, one a line"},
		{Name: codec.CompressEnv, Default: "true", Meaning: "false turns zlib before encryption off"},
	}
}
