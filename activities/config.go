package activities

import (
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"
)

// Config configures the provider clients. [ConfigFromEnv] reads it from the
// environment variables of docs/reference.md.
type Config struct {
	// StripeAPIKey is the payment provider's secret key (STRIPE_API_KEY).
	// Optional with StripeAPIBase: defaulted to a placeholder the simulator
	// accepts.
	StripeAPIKey string
	// StripeAPIBase is the payment API's root (STRIPE_API_BASE). Optional:
	// defaulted to the real Stripe API when StripeAPIKey is set.
	StripeAPIBase string
	// EmailAPIKey is the email provider's key (EMAIL_API_KEY). Optional with
	// EmailAPIBase: defaulted to a placeholder the simulator accepts.
	EmailAPIKey string
	// EmailAPIBase is the email API's root (EMAIL_API_BASE). Optional:
	// defaulted to https://api.resend.com when EmailAPIKey is set.
	EmailAPIBase string
	// EmailFrom is the sender (EMAIL_FROM). Optional: defaulted to
	// [DefaultEmailFrom].
	EmailFrom string
	// InventoryURL is the inventory service's API root (INVENTORY_URL, read
	// by the worker's main). Optional: unset, the saga has no stock step.
	InventoryURL string
	// InventoryAnswerTimeout is how long the saga waits for the inventory's
	// answer signal (INVENTORY_ANSWER_TIMEOUT). Optional: defaulted to
	// [DefaultInventoryAnswerTimeout].
	InventoryAnswerTimeout time.Duration
	// AuthenticationTimeout is how long the saga waits for a customer to
	// complete 3-D Secure (a charge that answered requires_action) before
	// it cancels the PaymentIntent and fails the order
	// (PAYMENT_AUTHENTICATION_TIMEOUT, read by the worker's main). Optional:
	// defaulted to [DefaultAuthenticationTimeout].
	AuthenticationTimeout time.Duration
	// HTTPTimeout bounds one provider request. A request that times out is
	// an unknown outcome, reconciled by the workflow. Optional: defaulted
	// to 20 seconds.
	HTTPTimeout time.Duration
	// Transport carries the provider and inventory requests. Defaults to
	// nil: http.DefaultTransport. The worker sets otelhttp's while tracing
	// is on, so each Stripe, email and inventory call is a span of its
	// activity's.
	Transport http.RoundTripper
}

// simulatorKey is sent when only STRIPE_API_BASE is set: the simulator wants
// a bearer token but no particular one.
const simulatorKey = "sk_test_outflow_simulator"

// simulatorEmailKey is sent when only EMAIL_API_BASE is set.
const simulatorEmailKey = "re_outflow_simulator"

// ConfigFromEnv reads STRIPE_API_KEY, STRIPE_API_BASE, EMAIL_API_KEY,
// EMAIL_API_BASE and EMAIL_FROM.
func ConfigFromEnv() Config {
	return Config{
		StripeAPIKey:  os.Getenv("STRIPE_API_KEY"),
		StripeAPIBase: os.Getenv("STRIPE_API_BASE"),
		EmailAPIKey:   os.Getenv("EMAIL_API_KEY"),
		EmailAPIBase:  os.Getenv("EMAIL_API_BASE"),
		EmailFrom:     os.Getenv("EMAIL_FROM"),
	}
}

func (c *Config) setDefaults() {
	if c.StripeAPIKey == "" && c.StripeAPIBase != "" {
		c.StripeAPIKey = simulatorKey
	}
	if c.EmailAPIKey == "" && c.EmailAPIBase != "" {
		c.EmailAPIKey = simulatorEmailKey
	}
	if c.EmailAPIBase == "" && c.EmailAPIKey != "" {
		c.EmailAPIBase = "https://api.resend.com"
	}
	if c.HTTPTimeout <= 0 {
		c.HTTPTimeout = 20 * time.Second
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.StripeAPIKey == "" && c.StripeAPIBase == "" {
		errs = append(errs, errors.New("no payment provider: set STRIPE_API_BASE to the simulator's URL "+
			"(start it with `go run ./cmd/providersim`, default http://127.0.0.1:12111) or STRIPE_API_KEY for the real Stripe API"))
	}
	if c.EmailAPIBase == "" {
		errs = append(errs, errors.New("no email provider: set EMAIL_API_BASE to the simulator's URL "+
			"(`go run ./cmd/providersim`) or EMAIL_API_KEY for Resend"))
	}
	return errors.Join(errs...)
}

// NewStripe returns a stripe-go client for cfg with the SDK's own network
// retries off: Temporal owns retries, so each activity attempt is exactly one
// provider request and a lost answer belongs to one attempt.
func NewStripe(cfg Config) *client.API {
	cfg.setDefaults()
	bc := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Timeout: cfg.HTTPTimeout, Transport: cfg.Transport},
		MaxNetworkRetries: stripe.Int64(0),
		// Declines are normal business; the activities report errors.
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if cfg.StripeAPIBase != "" {
		bc.URL = stripe.String(cfg.StripeAPIBase)
	}
	b := stripe.GetBackendWithConfig(stripe.APIBackend, bc)
	return client.New(cfg.StripeAPIKey, &stripe.Backends{API: b, Connect: b, Uploads: b})
}

// NewFromEnv builds the provider clients from the environment and returns
// Activities with them. The caller sets DB, Temporal, Metrics and
// Failpoints. It refuses to start without a payment and an email provider,
// saying how to get one.
func NewFromEnv() (*Activities, error) {
	return New(ConfigFromEnv())
}

// New builds Activities with provider clients from cfg.
func New(cfg Config) (*Activities, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var inv *InventoryClient
	if cfg.InventoryURL != "" {
		inv = &InventoryClient{BaseURL: cfg.InventoryURL, HTTP: &http.Client{Timeout: cfg.HTTPTimeout, Transport: cfg.Transport}}
	}
	return &Activities{
		Inventory:              inv,
		InventoryAnswerTimeout: cfg.InventoryAnswerTimeout,
		AuthenticationTimeout:  cfg.AuthenticationTimeout,
		Stripe:                 NewStripe(cfg),
		Email: &EmailClient{
			BaseURL: cfg.EmailAPIBase,
			APIKey:  cfg.EmailAPIKey,
			From:    cfg.EmailFrom,
			HTTP:    &http.Client{Timeout: cfg.HTTPTimeout, Transport: cfg.Transport},
		},
	}, nil
}
