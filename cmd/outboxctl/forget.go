package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/outflow/outflow/internal/codec"
)

// customerOrdersSQL counts the customer's orders in PostgreSQL, the system
// of record, and those whose workflows may still run: a workflow that can
// no longer read its own input cannot finish a charge or a refund.
const customerOrdersSQL = `
SELECT count(*),
       count(*) FILTER (WHERE status NOT IN ('confirmed', 'payment_failed', 'cancelled')
                           OR (cancel_event_id IS NOT NULL AND status <> 'cancelled'))
FROM orders
WHERE lower(btrim(customer_email)) = $1`

// runForgetCustomer erases one customer's data key (docs/privacy.md): every
// payload of that customer in any Temporal history becomes unreadable, the
// rest stays readable, and an audit row records who asked and why.
func runForgetCustomer(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "forget-customer", "forget-customer EMAIL --reason TEXT [--actor NAME] [--force]")
	reason := fs.String("reason", "", "why this customer is forgotten (mandatory; recorded in customer_key_erasures)")
	actor := fs.String("actor", env.actor, "who decided it (recorded in customer_key_erasures)")
	force := fs.Bool("force", false, "forget even while some of the customer's orders are not settled (their workflows will fail to read their input)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || !strings.Contains(pos[0], "@") {
		return usagef(fs, "want exactly one EMAIL, the address the customer ordered with, got %d arguments", len(pos))
	}
	email := codec.NormalizeEmail(pos[0])
	if err := auditArgs(fs, *reason, *actor, "it is the audit (e.g. --reason \"GDPR art. 17 request, ticket PRIV-7\")"); err != nil {
		return err
	}
	pool, err := openDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	var orders, unsettled int
	if err := pool.QueryRow(ctx, customerOrdersSQL, email).Scan(&orders, &unsettled); err != nil {
		return err
	}
	if unsettled > 0 && !*force {
		return fmt.Errorf("nothing was forgotten: %d of the customer's %d orders are not settled yet, and their workflows need the key to read their own input (a charge or a refund could not finish); run it again once they are confirmed, failed or cancelled, or with --force", unsettled, orders)
	}
	e, err := codec.Forget(ctx, pool, email, *actor, *reason)
	if err != nil {
		return err
	}
	subject := hex.EncodeToString(codec.SubjectHash(email))[:16]
	if e.KeyID == nil {
		env.logger.Info("outboxctl: customer forget recorded, no key to erase", "subject", subject, "actor", *actor, "reason", *reason, "audit_id", e.ID)
		fmt.Fprintf(env.stdout, "no customer key to erase: nothing of this customer is encrypted under a key of its own")
		if len(e.Earlier) > 0 {
			fmt.Fprintf(env.stdout, " (forgotten before, on %s by %s)", e.Earlier[0].ErasedAt.UTC().Format("2006-01-02 15:04:05Z"), e.Earlier[0].ErasedBy)
		}
		fmt.Fprintf(env.stdout, "; the request is recorded (audit id %d)\n", e.ID)
	} else {
		key := codec.CustomerKeyPrefix + e.KeyID.String()
		env.logger.Info("outboxctl: customer forgotten", "key_id", key, "subject", subject, "actor", *actor, "reason", *reason, "audit_id", e.ID)
		fmt.Fprintf(env.stdout, "forgot customer key %s (made %s): every payload encrypted with it, in every Temporal history, is unreadable from now on; "+
			"no process encrypts with it any more (a new order of the customer gets a new key), and running workers, relays and codec servers that cached it for decoding drop it within %s (audit id %d, by %s: %q)\n",
			key, e.KeyCreatedAt.UTC().Format("2006-01-02 15:04:05Z"), codec.CacheTTL, e.ID, *actor, *reason)
	}
	if orders > 0 {
		fmt.Fprintf(env.stdout, "note: PostgreSQL still holds the customer's %d orders (the system of record, with the address); erasing or anonymising them is the order service's decision (retention law), not this key's\n", orders)
	}
	return nil
}
