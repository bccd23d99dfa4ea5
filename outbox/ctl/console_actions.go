package ctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/outboxops"
)

// actionData is an action's confirm page (the plan, and the form that
// acts) or its result.
type actionData struct {
	Action string
	// Plan is the plan as the CLI prints it.
	Plan string
	// Fields are the form's values, sent again with confirm=yes.
	Fields []formField
	// CanAct is false when the plan is that there is nothing to do.
	CanAct bool
	// Done is the result, once acted.
	Done string
	Back string
}

type formField struct{ Name, Value string }

// planFunc makes an action's plan from its form: the confirm page's data
// and the function that acts once confirmed. An error is refused with its
// status ([refuse]; 409 by default).
type planFunc func(ctx context.Context, r *http.Request, v visit) (actionData, func() (string, error), error)

// refusal is a plan's error with the status it is answered with.
type refusal struct {
	status int
	err    error
}

func (e refusal) Error() string { return e.err.Error() }
func (e refusal) Unwrap() error { return e.err }

// refuse answers err with status (400 for a form that cannot be read).
func refuse(status int, err error) error { return refusal{status: status, err: err} }

// action is the handler of one action: every action is a POST from a
// token holder with the session's CSRF token (checkAction); it renders the
// plan for confirmation or, when the form says confirm=yes, acts and
// renders what it did.
func (c *Console) action(plan planFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := c.visitOf(w, r)
		if !c.checkAction(w, r, v) {
			return
		}
		d, do, err := plan(r.Context(), r, v)
		if err == nil && r.PostForm.Get("confirm") == "yes" {
			d.Done, err = do()
		}
		if err != nil {
			status := http.StatusConflict
			if rf := (refusal{}); errors.As(err, &rf) {
				status = rf.status
			}
			c.fail(w, r, v, status, err)
			return
		}
		title := "Confirm: "
		if d.Done != "" {
			title = "Done: "
		}
		c.render(w, r, v, http.StatusOK, "confirm", page{Title: title + d.Action, Data: d})
	}
}

func formEventID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(strings.TrimSpace(r.PostForm.Get("event_id")))
	if err != nil {
		return uuid.Nil, refuse(http.StatusBadRequest, fmt.Errorf("event_id %q is not an event id", r.PostForm.Get("event_id")))
	}
	return id, nil
}

// retryPlan retries one event: the plan is the retry rehearsed, as
// `outboxctl retry EVENT_ID` prints it.
func (c *Console) retryPlan(ctx context.Context, r *http.Request, v visit) (actionData, func() (string, error), error) {
	id, err := formEventID(r)
	if err != nil {
		return actionData{}, nil, err
	}
	var ch outboxops.Change
	if err := rehearse(ctx, c.db, func(tx pgx.Tx) (err error) {
		ch, err = outboxops.Retry(ctx, tx, id)
		return err
	}); err != nil {
		return actionData{}, nil, err
	}
	var plan bytes.Buffer
	writeRetryPlan(&plan, id, ch)
	d := actionData{Action: "retry " + id.String(), Plan: plan.String(), CanAct: true, Back: "/events/" + id.String(),
		Fields: []formField{{"event_id", id.String()}}}
	return d, func() (string, error) {
		ch, err := outboxops.Retry(ctx, c.db, id)
		if err != nil {
			return "", err
		}
		c.env.Logger.Info("outboxctl: event retried", "event_id", id, "actor", v.actor(), "previous_state", ch.Before.State,
			"previous_attempts", ch.Before.Attempts, "last_error", ch.Before.LastError)
		if ch.Log != nil {
			return fmt.Sprintf("retried the log hold of %s/%s (stuck on %s), by %s; its hold worker publishes it again", ch.Log.AggregateType, ch.Log.AggregateID, id, v.actor()), nil
		}
		return fmt.Sprintf("retried %s: %s -> %s, attempts %d -> %d, by %s; relays were woken", id, ch.Before.State, ch.After.State, ch.Before.Attempts, ch.After.Attempts, v.actor()), nil
	}, nil
}

// retryQuarantinedPlan retries every quarantined event a filter selects
// (aggregate_type, error, since), audited with the reason.
func (c *Console) retryQuarantinedPlan(ctx context.Context, r *http.Request, v visit) (actionData, func() (string, error), error) {
	f := outboxops.RetryFilter{AggregateType: strings.TrimSpace(r.PostForm.Get("aggregate_type")), ErrorContains: strings.TrimSpace(r.PostForm.Get("error"))}
	since := strings.TrimSpace(r.PostForm.Get("since"))
	if since != "" {
		t, err := formTime(since, time.Now())
		if err != nil {
			return actionData{}, nil, refuse(http.StatusBadRequest, fmt.Errorf("since: %w", err))
		}
		f.Since = t
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	plan, err := outboxops.PlanRetryQuarantined(ctx, c.db, f)
	if err != nil {
		return actionData{}, nil, refuse(http.StatusInternalServerError, err)
	}
	var text bytes.Buffer
	total, err := writeRetryQuarantinedPlan(&text, plan, f)
	if err != nil {
		return actionData{}, nil, refuse(http.StatusInternalServerError, err)
	}
	d := actionData{Action: "retry quarantined events", Plan: text.String(), CanAct: total > 0, Back: "/events?state=quarantined",
		Fields: []formField{{"aggregate_type", f.AggregateType}, {"error", f.ErrorContains}, {"since", since}, {"reason", reason}}}
	return d, func() (string, error) {
		res, err := outboxops.RetryQuarantined(ctx, c.db, outboxops.RetryQuarantinedOptions{RetryFilter: f, Actor: v.actor(), Reason: reason})
		c.env.Logger.Info("outboxctl: quarantined events retried", "events", res.Retried, "log_holds", len(res.LogHolds), "audit_id", res.AuditID,
			"actor", v.actor(), "reason", reason, "error", err)
		if err != nil {
			return "", fmt.Errorf("%w (the batches before the error are retried; retry again for the rest)", err)
		}
		return fmt.Sprintf("retried %d quarantined events and %d log holds (audit id %d, by %s); relays were woken", res.Retried, len(res.LogHolds), res.AuditID, v.actor()), nil
	}, nil
}

// skipPlan gives up a quarantined event; the reason is mandatory, and the
// skip records console/<identity> as skipped_by.
func (c *Console) skipPlan(ctx context.Context, r *http.Request, v visit) (actionData, func() (string, error), error) {
	id, err := formEventID(r)
	if err != nil {
		return actionData{}, nil, err
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if reason == "" {
		return actionData{}, nil, refuse(http.StatusBadRequest, errors.New("a reason is mandatory: a skip loses a business event, so say why (it is recorded in skip_reason)"))
	}
	var (
		ch      outboxops.Change
		settled string
	)
	do := skipFunc(ctx, c.env, id, reason, v.actor(), &ch, &settled)
	if err := rehearse(ctx, c.db, do); err != nil {
		return actionData{}, nil, err
	}
	var plan bytes.Buffer
	writeSkipPlan(&plan, id, ch, v.actor(), reason, settled)
	d := actionData{Action: "skip " + id.String(), Plan: plan.String(), CanAct: true, Back: "/events/" + id.String(),
		Fields: []formField{{"event_id", id.String()}, {"reason", reason}}}
	return d, func() (string, error) {
		if err := pgx.BeginFunc(ctx, c.db, do); err != nil {
			return "", err
		}
		c.env.Logger.Info("outboxctl: event skipped", "event_id", id, "actor", v.actor(), "reason", reason,
			"aggregate_type", ch.Before.AggregateType, "aggregate_id", ch.Before.AggregateID, "aggregate_sequence", ch.Before.Sequence,
			"settled", settled)
		out := fmt.Sprintf("skipped %s by %s: %q; it will never be published, and its aggregate's later events flow again", id, v.actor(), reason)
		if settled != "" {
			out += "\n" + settled
		}
		return out, nil
	}, nil
}

// replayPlan delivers the published events of a window again (from, to),
// of an aggregate type or one aggregate (aggregate_type, aggregate).
func (c *Console) replayPlan(ctx context.Context, r *http.Request, v visit) (actionData, func() (string, error), error) {
	now := time.Now()
	from, to := strings.TrimSpace(r.PostForm.Get("from")), strings.TrimSpace(r.PostForm.Get("to"))
	opts := outboxops.ReplayOptions{AggregateType: strings.TrimSpace(r.PostForm.Get("aggregate_type")), AggregateID: strings.TrimSpace(r.PostForm.Get("aggregate")), To: now}
	var err error
	if opts.From, err = formTime(from, now); err != nil {
		return actionData{}, nil, refuse(http.StatusBadRequest, fmt.Errorf("from (mandatory): %w", err))
	}
	if to != "" {
		if opts.To, err = formTime(to, now); err != nil {
			return actionData{}, nil, refuse(http.StatusBadRequest, fmt.Errorf("to: %w", err))
		}
	}
	if !opts.To.After(opts.From) {
		return actionData{}, nil, refuse(http.StatusBadRequest, errors.New("to must be after from"))
	}
	if opts.AggregateID != "" && opts.AggregateType == "" {
		types, err := aggregateTypes(ctx, c.db, opts.AggregateID)
		if err != nil || len(types) != 1 {
			return actionData{}, nil, refuse(http.StatusBadRequest, fmt.Errorf("aggregate %q: say its aggregate type (types with that id: %v; %v)", opts.AggregateID, types, err))
		}
		opts.AggregateType = types[0]
	}
	plan, err := outboxops.PlanReplay(ctx, c.db, opts)
	if err != nil {
		return actionData{}, nil, err
	}
	var text bytes.Buffer
	total := writeReplayPlan(&text, plan, opts)
	// The window is sent again as RFC 3339, so the confirmation acts on the
	// window the plan shows, not one that moved with the clock.
	d := actionData{Action: "replay", Plan: text.String(), CanAct: total > 0, Back: "/",
		Fields: []formField{{"from", opts.From.Format(time.RFC3339Nano)}, {"to", opts.To.Format(time.RFC3339Nano)},
			{"aggregate_type", opts.AggregateType}, {"aggregate", opts.AggregateID}}}
	return d, func() (string, error) {
		n, err := outboxops.Replay(ctx, c.db, opts)
		c.env.Logger.Info("outboxctl: events replayed", "events", n, "actor", v.actor(), "from", opts.From, "to", opts.To,
			"aggregate_type", opts.AggregateType, "aggregate_id", opts.AggregateID, "error", err)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("replayed %d events, by %s; the relays publish them again", n, v.actor()), nil
	}, nil
}

// formTime reads a TIME of a form: RFC 3339, or a duration before now.
func formTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q: want %s", s, timeForms)
}
