package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/ctl"
)

// waitPoll is how often --wait asks again.
const waitPoll = 2 * time.Second

// runForgetCustomer erases one customer's data key (docs/privacy.md): every
// payload of that customer in any Temporal history becomes unreadable, the
// rest stays readable, and an audit row records who asked and why. It
// refuses (or with --wait, waits) while a workflow of the customer's orders
// still needs the key: one that runs, or one that will start (its event is
// not published yet). Temporal, not the order's status, says which: an order
// is projected cancelled or payment_failed before its last email, whose
// workflow reads the customer's data after that.
func runForgetCustomer(ctx context.Context, env *ctl.Env, args []string) error {
	fs := ctl.NewFlagSet(env, "forget-customer", "forget-customer EMAIL --reason TEXT [--actor NAME] [--wait DURATION | --force] [--yes]\n\n"+
		"Order app only: erases the data key of one of the order service's customers (tables orders, customer_keys).")
	reason := fs.String("reason", "", "why this customer is forgotten (mandatory; recorded in customer_key_erasures)")
	actor := fs.String("actor", env.Actor, "who decided it (recorded in customer_key_erasures)")
	wait := fs.Duration("wait", 0, "wait up to this long for the customer's workflows to finish (default: refuse at once, naming them)")
	force := fs.Bool("force", false, "forget even while workflows of the customer still need the key: they fail (docs/privacy.md), and their orders are settled by hand")
	yes := ctl.YesFlag(fs)
	pos, err := ctl.Parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || !strings.Contains(pos[0], "@") {
		return ctl.Usagef(fs, "want exactly one EMAIL, the address the customer ordered with, got %d arguments", len(pos))
	}
	if *force && *wait > 0 {
		return ctl.Usagef(fs, "--force and --wait exclude each other: --wait waits for the workflows, --force does not")
	}
	email := codec.NormalizeEmail(pos[0])
	if err := ctl.AuditArgs(fs, *reason, *actor, "it is the audit (e.g. --reason \"GDPR art. 17 request, ticket PRIV-7\")"); err != nil {
		return err
	}
	pool, err := ctl.OpenDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	missing, err := missingTables(ctx, pool, "orders", "customer_keys", "customer_key_erasures")
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("nothing was forgotten: forget-customer erases the data key of a customer of the order app, and this database has no order app (no table %s); "+
			"point --database-url (DATABASE_URL) at the order app's database", strings.Join(missing, ", "))
	}
	fmt.Fprintf(env.Stdout, "plan: erase the data key of the customer (subject %s), by %s: %q; every payload of theirs in any Temporal history becomes unreadable (refused while their workflows still need it, unless --force)\n",
		hex.EncodeToString(codec.SubjectHash(email))[:16], *actor, *reason)
	if ok, err := ctl.Proceed(env, *yes, ctl.Change{Question: "Forget this customer? [y/N] ", Done: "forgotten", Todo: "forget this customer"}); !ok {
		return err
	}
	g := &keyGuard{env: env, email: email, force: *force}
	defer g.close()
	deadline := time.Now().Add(*wait)
	var e codec.Erasure
	for {
		g.orders, g.needing = 0, nil
		e, err = codec.ForgetWith(ctx, pool, codec.ForgetOptions{Email: email, Actor: *actor, Reason: *reason,
			Check: func(ctx context.Context, tx pgx.Tx) error {
				if err := g.check(ctx, tx); err != nil {
					return err
				}
				if len(g.needing) > 0 && !*force {
					return errStillNeeded
				}
				return nil
			}})
		if !errors.Is(err, errStillNeeded) {
			break
		}
		if !time.Now().Before(deadline) {
			return g.refusal(*wait)
		}
		env.Logger.Info("outboxctl: waiting for the customer's workflows", "workflows", len(g.needing), "first", g.needing[0].String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(waitPoll):
		}
	}
	if err != nil {
		return err
	}
	subject := hex.EncodeToString(codec.SubjectHash(email))[:16]
	if e.KeyID == nil {
		env.Logger.Info("outboxctl: customer forget recorded, no key to erase", "subject", subject, "actor", *actor, "reason", *reason, "audit_id", e.ID)
		fmt.Fprintf(env.Stdout, "no customer key to erase: nothing of this customer is encrypted under a key of its own")
		if len(e.Earlier) > 0 {
			fmt.Fprintf(env.Stdout, " (forgotten before, on %s by %s)", e.Earlier[0].ErasedAt.UTC().Format("2006-01-02 15:04:05Z"), e.Earlier[0].ErasedBy)
		}
		fmt.Fprintf(env.Stdout, "; the request is recorded (audit id %d)\n", e.ID)
	} else {
		key := codec.CustomerKeyPrefix + e.KeyID.String()
		env.Logger.Info("outboxctl: customer forgotten", "key_id", key, "subject", subject, "actor", *actor, "reason", *reason, "audit_id", e.ID)
		fmt.Fprintf(env.Stdout, "forgot customer key %s (made %s): every payload encrypted with it, in every Temporal history, is unreadable from now on; "+
			"no process encrypts with it any more (a new order of the customer gets a new key), and running workers, relays and codec servers that cached it for decoding drop it within %s (audit id %d, by %s: %q)\n",
			key, e.KeyCreatedAt.UTC().Format("2006-01-02 15:04:05Z"), codec.CacheTTL, e.ID, *actor, *reason)
	}
	if len(g.needing) > 0 {
		env.Logger.Warn("outboxctl: customer forgotten with --force while workflows still needed the key", "workflows", len(g.needing), "audit_id", e.ID)
		fmt.Fprintf(env.Stdout, "--force: %d workflows still needed the key and will fail when they next read the customer's data; settle their orders by hand (docs/privacy.md):\n", len(g.needing))
		for _, w := range g.needing {
			fmt.Fprintf(env.Stdout, "  %s\n", w)
		}
	}
	if g.orders > 0 {
		fmt.Fprintf(env.Stdout, "note: PostgreSQL still holds the customer's %d orders (the system of record, with the address); erasing or anonymising them is the order service's decision (retention law), not this key's\n", g.orders)
	}
	return nil
}

// errStillNeeded rolls an erasure back while workflows need the key.
var errStillNeeded = errors.New("workflows still need the customer key")

// keyGuard finds the workflows of a customer's orders that still need the
// customer's key.
type keyGuard struct {
	env   *ctl.Env
	email string
	// force: a workflow Temporal cannot be asked about counts as running,
	// instead of stopping the erasure.
	force    bool
	temporal client.Client
	dialErr  error
	orders   int
	needing  []neededBy
}

// neededBy is one workflow that still needs the key.
type neededBy struct {
	orderID, eventType string
	workflowID         uuid.UUID
	// started is false for an event not yet published: its workflow will start.
	started bool
	// unknown is why Temporal could not say (--force only).
	unknown error
}

func (n neededBy) String() string {
	if n.unknown != nil {
		return fmt.Sprintf("order %s: %s workflow %s may be running (%v)", n.orderID, n.eventType, n.workflowID, n.unknown)
	}
	if n.started {
		return fmt.Sprintf("order %s: %s workflow %s is running", n.orderID, n.eventType, n.workflowID)
	}
	return fmt.Sprintf("order %s: %s event %s is not published yet (its workflow %s will start)", n.orderID, n.eventType, n.workflowID, n.workflowID)
}

// check runs inside the erasure's transaction: it locks the customer's
// orders, and lists each of their events whose workflow runs (Temporal
// says) or has not started (the event is unpublished, also when an operator
// skipped or quarantined it: such an event may still be retried).
func (g *keyGuard) check(ctx context.Context, tx pgx.Tx) error {
	ids, err := qCustomerOrders.All(ctx, tx, customerOrdersArgs{Email: g.email})
	if err != nil {
		return fmt.Errorf("read the customer's orders: %w", err)
	}
	g.orders = len(ids)
	for _, id := range ids {
		events, err := outbox.AggregateEvents(ctx, tx, "order", id)
		if err != nil {
			return err
		}
		for _, ev := range events {
			n := neededBy{orderID: id, eventType: ev.Type, workflowID: ev.ID}
			if ev.PublishedAt == nil {
				g.needing = append(g.needing, n)
				continue
			}
			running, err := g.running(ctx, ev.ID.String())
			if err != nil && g.force {
				n.unknown, running = err, true
			} else if err != nil {
				return err
			}
			if running {
				n.started = true
				g.needing = append(g.needing, n)
			}
		}
	}
	return nil
}

// running asks Temporal whether the workflow (ID = event id) still runs; a
// workflow Temporal no longer knows (past the namespace's retention) does not.
func (g *keyGuard) running(ctx context.Context, workflowID string) (bool, error) {
	if g.dialErr != nil {
		return false, g.dialErr
	}
	if g.temporal == nil {
		o, err := g.env.TemporalOptions()
		if err != nil {
			return false, err
		}
		o.Logger = tlog.NewStructuredLogger(g.env.Logger)
		dctx, cancel := context.WithTimeout(ctx, ctl.DialPatience)
		c, err := ctl.DialTemporal(dctx, o)
		cancel()
		if err != nil && g.force {
			g.dialErr = fmt.Errorf("no answer from Temporal (%s): %w", o.HostPort, err)
			return false, g.dialErr
		}
		if err != nil {
			return false, fmt.Errorf("nothing was forgotten: the customer's orders have workflows, and Temporal (%s) must say whether they still run: %w "+
				"(set TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE as for the worker, or --force)", o.HostPort, err)
		}
		g.temporal = c
	}
	d, err := g.temporal.DescribeWorkflow(ctx, workflowID, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("nothing was forgotten: asking Temporal about workflow %s: %w", workflowID, err)
	}
	return d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// refusal says which workflows still need the key.
func (g *keyGuard) refusal(waited time.Duration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "nothing was forgotten: %d workflows of the customer's %d orders still need the key to read their own data (a charge, a refund or a last email could not finish)", len(g.needing), g.orders)
	if waited > 0 {
		fmt.Fprintf(&b, " after waiting %s", waited)
	}
	b.WriteString(":")
	for _, w := range g.needing {
		b.WriteString("\n  " + w.String())
	}
	b.WriteString("\nrun it again once they have finished (--wait DURATION waits for them), or with --force (they fail; docs/privacy.md)")
	return errors.New(b.String())
}

func (g *keyGuard) close() {
	if g.temporal != nil {
		g.temporal.Close()
	}
}
