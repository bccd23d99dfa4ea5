// Package inbox forwards to [github.com/outflow/outflow/outbox/inbox], where
// the consumer's dedup moved into the library's module. It stays for one
// release so existing imports keep building; import the new path (this one
// brings the example's module, and with it its dependencies, into yours).
//
// Deprecated: use github.com/outflow/outflow/outbox/inbox.
package inbox

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/outbox/inbox"
)

// DuplicatesMetric is [inbox.DuplicatesMetric].
const DuplicatesMetric = inbox.DuplicatesMetric

// ConsumerLabel is [inbox.ConsumerLabel].
const ConsumerLabel = inbox.ConsumerLabel

// DB is [inbox.DB].
type DB = inbox.DB

// Inbox is [inbox.Inbox].
type Inbox = inbox.Inbox

// New is [inbox.New].
func New(reg prometheus.Registerer) (*Inbox, error) { return inbox.New(reg) }
