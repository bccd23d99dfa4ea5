// Package failpoints forwards to [github.com/outflow/outflow/outbox/failpoints],
// where the library's fault injection moved. It stays for one release so
// existing imports keep building; import the new path.
//
// Deprecated: use github.com/outflow/outflow/outbox/failpoints.
package failpoints

import (
	"os"
	"sync"

	"github.com/outflow/outflow/outbox/failpoints"
)

// EnvVar is [failpoints.EnvVar].
const EnvVar = failpoints.EnvVar

// Set is [failpoints.Set].
type Set = failpoints.Set

// ErrInjected is [failpoints.ErrInjected].
var ErrInjected = failpoints.ErrInjected

// Names is [failpoints.Names].
var Names = failpoints.Names

// Parse is [failpoints.Parse].
func Parse(spec string) (*Set, error) { return failpoints.Parse(spec) }

var (
	global     *Set
	globalErr  error
	globalOnce sync.Once
)

// FromEnv parses OUTFLOW_FAILPOINTS once per process. The library has no
// such function (a library reads no environment): a binary calls
// failpoints.Parse(os.Getenv(failpoints.EnvVar)) once at start.
func FromEnv() (*Set, error) {
	globalOnce.Do(func() { global, globalErr = Parse(os.Getenv(EnvVar)) })
	return global, globalErr
}

// The failpoint names, as [failpoints] names them.
const (
	OrdersBeforeCommit           = failpoints.OrdersBeforeCommit
	OrdersAfterCommit            = failpoints.OrdersAfterCommit
	RelayAfterClaim              = failpoints.RelayAfterClaim
	RelayAfterPublish            = failpoints.RelayAfterPublish
	RelayBeforeMarkCommit        = failpoints.RelayBeforeMarkCommit
	ActivityPaymentAfterProvider = failpoints.ActivityPaymentAfterProvider
	ActivityRefundAfterProvider  = failpoints.ActivityRefundAfterProvider
	ActivityEmailAfterProvider   = failpoints.ActivityEmailAfterProvider
	ConsumerAfterCommit          = failpoints.ConsumerAfterCommit
	CleanupMidBatch              = failpoints.CleanupMidBatch
	CDCAfterReceive              = failpoints.CDCAfterReceive
	CDCAfterPublish              = failpoints.CDCAfterPublish
	CDCBeforeConfirm             = failpoints.CDCBeforeConfirm
	InventoryAfterCommit         = failpoints.InventoryAfterCommit
	LogAfterRead                 = failpoints.LogAfterRead
	LogBeforeAdvance             = failpoints.LogBeforeAdvance
	JetStreamAfterAck            = failpoints.JetStreamAfterAck
	JetStreamConsumerAfterCommit = failpoints.JetStreamConsumerAfterCommit
	WebhookAfterCommit           = failpoints.WebhookAfterCommit
)
