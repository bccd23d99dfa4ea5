/*
 * A signal route (temporalpub.Route.Signal), included by relay.pml with
 * -DSIGNAL (signal.pml): Temporal's side of Publisher.signal
 * (outbox/temporalpub/temporalpub.go) and the workflow it signals, which
 * receives through an eventsignal.Receiver
 * (outbox/temporalpub/eventsignal/eventsignal.go). The relay is poll.pml's
 * Relay, unchanged but for the outcomes of its Publish call (R4) and of a
 * call in flight when it crashes.
 *
 * What differs from a start route, and what this file models:
 *
 *   - A start is idempotent at Temporal: the workflow ID is the event's, so
 *     a second start of the event is "already started", an
 *     acknowledgement. A signal is not: its target is named by the route
 *     (Route.WorkflowID: here one target per order, the order's saga), the
 *     SDK sends each signal with a random request ID, and every delivery
 *     Temporal accepts is one more signal in the target's channel. The ACK
 *     gap (a crash after Temporal accepted, before the mark; a lease that
 *     expired and was taken over; an answer lost; an operator's replay)
 *     puts the same event into the channel twice. The workflow's Receiver
 *     drops a second delivery by event ID (Receiver.accept), also across
 *     continue-as-new (Receiver.State into the next run's input, New).
 *   - Signal-With-Start: a target with no run on record is started by the
 *     signal, which waits in its channel for the first workflow task. The
 *     Receiver is created first thing in the workflow (eventsignal.New
 *     before any other read of the channel), so those signals go through
 *     it like any later one.
 *   - A target that closed refuses the signal (REUSE_POLICY_REJECT_DUPLICATE
 *     with CONFLICT_POLICY_USE_EXISTING: WorkflowExecutionAlreadyStarted,
 *     IsAlreadyStarted). Publisher.signal then starts the route's
 *     ClosedWorkflow for the event (-DCLOSED_WORKFLOW: Publisher.start,
 *     workflow ID = event ID, a second start absorbed), which acts only if
 *     the target had not applied the event (it checks the target's effects,
 *     an inbox), or, without one, returns outbox.Permanent: the relay
 *     quarantines the event at once (R6), for an operator to skip.
 *   - A run ends (it completes, or continues as new) only after it drained
 *     its channel (Receiver.Drain): the signals still buffered when a run
 *     ends go with it, and Temporal accepted them.
 *
 * Temporal's retention does not pass here: the route's documented
 * precondition is that no event older than the retention signals a
 * workflow (behind it Temporal forgets a closed run, and Signal-With-Start
 * would start a new one), and the replay horizon is the start route's code
 * (Publisher.delivery, before the route is chosen), which poll.pml checks.
 *
 * Rules (RULE below), each the #ifdef of a mutant (mutants/sig_*.pml).
 */

/* The target's latest run, as Temporal has it on record. */
#define T_NONE    0   /* no run of its workflow ID yet */
#define T_RUNNING 1   /* running (across continue-as-new: the same workflow ID, a new run) */
#define T_CLOSED  2   /* completed: kept on record (the retention does not pass) */

#ifndef SIGBUF
#define SIGBUF 2      /* signals a run's channel holds unread: a bound of the model */
#endif
#ifndef MAX_CAN
#define MAX_CAN 1     /* continue-as-new per target */
#endif

#define TGT(e) ORD(e)     /* Route.WorkflowID: the order's workflow */

byte tgt[ORDERS];         /* T_*: the target's latest run */
byte cans[ORDERS];        /* continue-as-new so far */
/* The run's signal channel (workflow.GetSignalChannel): the signals
 * Temporal accepted for the current run that its code has not read yet, in
 * arrival order. */
chan sigch[ORDERS] = [SIGBUF] of { byte };
/* The Receiver's set (eventsignal Receiver.seen): the events it handed out,
 * this run and the runs whose State this one was given; a bit per event.
 * Options.Limit is abstracted: the set forgets nothing. */
byte seen[ORDERS];
#ifdef RECEIVER_LATE
bool fresh[ORDERS];       /* mutant: the run's first task has not run yet */
#endif
#ifdef LIVENESS
/* The workflow's own steps (a start of its own, continue-as-new, its end)
 * are over: from here on it only receives. Weak fairness is per process:
 * without this choice every fair run would end with the target closed,
 * since closing is always enabled while it runs. */
bool tkeep[ORDERS];
#define MAY_END(o) (!tkeep[o])
#else
#define MAY_END(o) true
#endif

/* ghosts, for the properties */
bool applied[NEV];        /* the target's code got the event (its effects happened) */
bool late[NEV];           /* the route's ClosedWorkflow for the event exists (workflow ID = event ID) */
bool lateacted[NEV];      /* that ClosedWorkflow acted on the event */

/* RULE the Receiver is created first thing: eventsignal.New before any
 * other code reads the channel. Mutant sig_receiver_late: the run's first
 * workflow task reads the signals buffered before it (Signal-With-Start's,
 * and any that came before the task) past the Receiver. */
#ifdef RECEIVER_LATE
#define SET_FRESH(o) fresh[o] = 1
#define NOT_FRESH(o) (!fresh[o])
#else
#define SET_FRESH(o) skip
#define NOT_FRESH(o) true
#endif

/* ---------------------------------------------------- Temporal's answer */

/* RULE a signal never starts a closed target again: Publisher.signal's
 * REUSE_POLICY_REJECT_DUPLICATE. Without it (mutant
 * sig_signal_restarts_closed) Signal-With-Start starts a closed target
 * anew, from its zero input: a Receiver that remembers nothing. */
#ifdef SIGNAL_RESTARTS_CLOSED
#define SIG_ACCEPTS(t) (len(sigch[TGT(t)]) < SIGBUF)
#define SIG_REFUSED(t) false
#define NEW_RUN(o)     (tgt[o] != T_RUNNING)
#else
#define SIG_ACCEPTS(t) (tgt[TGT(t)] != T_CLOSED && len(sigch[TGT(t)]) < SIGBUF)
#define SIG_REFUSED(t) (tgt[TGT(t)] == T_CLOSED)
#define NEW_RUN(o)     (tgt[o] == T_NONE)
#endif
/* The channel's bound is the model's: with SIGBUF signals unread, the
 * model lets Temporal accept no other (the Publish call has one of its
 * other outcomes, or waits for the workflow to read). Temporal's own limit
 * on a run's signals is far larger; the bound only leaves out the runs
 * with more signals waiting at once. */

/* Temporal accepts the signal of event t (SignalWithStartWorkflow returned
 * nil): with no run on record it starts one (the route's Workflow, its zero
 * input: a Receiver from the zero State) with the signal waiting for its
 * first task; with a running one (CONFLICT_POLICY_USE_EXISTING) it adds the
 * signal to its channel. Either way one more signal, a duplicate or not. */
inline temporal_signal(t) {
	/* SKIP IS FINAL: no signal of an event reaches Temporal after an
	 * operator skipped it */
	assert(!skipped[t]);
	if
	:: NEW_RUN(TGT(t)) ->
		tgt[TGT(t)] = T_RUNNING; seen[TGT(t)] = 0;
		SET_FRESH(TGT(t));
		printf("temporal: Signal-With-Start of %d.%d starts order %d's workflow\n", EV(t), TGT(t))
	:: else ->
		printf("temporal: signal of %d.%d added to order %d's workflow\n", EV(t), TGT(t))
	fi;
	sigch[TGT(t)]!t;
	delivered[t] = 1
}

/* Publisher.start(ClosedWorkflow), after the target refused the signal:
 * ExecuteWorkflow with workflow ID = event ID; a second start is "already
 * started" (absorbed, as a start route's). The workflow runs once: it
 * checks the target's effects (an inbox) and acts only if the target did
 * not apply the event (the re-delivery of an event the target took before
 * it closed is refused too). The target is closed, so nothing changes what
 * it applied afterwards, and the check is as good now as when the workflow
 * runs. */
inline closed_workflow_start(t) {
	/* SKIP IS FINAL (as for a signal) */
	assert(!skipped[t]);
	if
	:: !late[t] ->
		late[t] = 1;
		printf("temporal: %d.%d's ClosedWorkflow starts (workflow ID = event ID)\n", EV(t));
		if
#ifdef NO_CLOSED_INBOX_CHECK
		:: true ->
#else
		/* RULE the ClosedWorkflow checks the target's effects */
		:: !applied[t] ->
#endif
			/* EFFECTS ONCE: the ClosedWorkflow acts on an event the
			 * target never applied, once */
			assert(!applied[t] && !lateacted[t]);
			lateacted[t] = 1;
			printf("workflow: %d.%d's ClosedWorkflow handles it (too late for its target)\n", EV(t))
		:: else ->
			printf("workflow: %d.%d's ClosedWorkflow finds it applied by the target: nothing to do\n", EV(t))
		fi
	:: else ->
		printf("temporal: %d.%d's ClosedWorkflow already started (acknowledged)\n", EV(t))
	fi;
	delivered[t] = 1
}

/* A relay crashed with the Publish call of t in flight: the call reached
 * Temporal before its deadline, or never does (assumption 3 of the relay).
 * Refused by a closed target, the ClosedWorkflow's start that follows in
 * the same call may have been sent too. */
inline signal_in_flight(t) {
	if
	:: SIG_ACCEPTS(t) -> temporal_signal(t)
#ifdef CLOSED_WORKFLOW
	:: SIG_REFUSED(t) ->
		printf("temporal: signal of %d.%d refused: the order's workflow already closed\n", EV(t));
		closed_workflow_start(t)
#endif
	:: true
	fi
}

/* ----------------------------------------------------- the target's code */

#if EPO == 2
#define PRED_APPLIED(e) (SEQ(e) < 1 || applied[(e)-1] || skipped[(e)-1])
#define SUCC_APPLIED(e) (SEQ(e) < 1 && applied[(e)+1])
#else
#define PRED_APPLIED(e) ((SEQ(e) < 1 || applied[(e)-1] || skipped[(e)-1]) && (SEQ(e) < 2 || applied[(e)-2] || skipped[(e)-2]))
#define SUCC_APPLIED(e) ((SEQ(e) < 2 && applied[(e)+1]) || (SEQ(e) < 1 && applied[(e)+2]))
#endif

/* The workflow's code gets event x (Receive returned it): its effects. */
inline wf_apply(x) {
	printf("workflow: applies %d.%d\n", EV(x));
	/* EFFECTS ONCE: the workflow's code gets each event once, across its
	 * runs, and never one its ClosedWorkflow acted on */
	assert(!applied[x] && !lateacted[x]);
	/* APPLIED IN ORDER: every earlier event of the order was applied (or
	 * skipped by an operator) before, and no later one was */
	assert(PRED_APPLIED(x) && !SUCC_APPLIED(x));
	applied[x] = 1
}

/* Receiver.Receive (and ReceiveAsync, Drain): the next signal of the
 * channel; Receiver.accept drops an event it handed out before and
 * remembers a new one. */
inline wf_receive(o, x) {
	sigch[o]?x;
#ifdef NO_DEDUP
	seen[o] = seen[o] | BIT(x);
	wf_apply(x)
#else
	/* RULE the Receiver drops a second delivery of an event ID */
	if
	:: seen[o] & BIT(x) ->
		printf("workflow: the receiver drops %d.%d (a duplicate)\n", EV(x))
	:: else ->
		seen[o] = seen[o] | BIT(x);
		wf_apply(x)
	fi
#endif
}

/* Receiver.Drain: every buffered signal, received as above. */
inline wf_drain(o, x) {
	do
	:: len(sigch[o]) > 0 -> wf_receive(o, x)
	:: else -> break
	od
}

/* The run ends (completes, or continues as new): the signals still in its
 * channel go with it. */
inline wf_run_ends(o, x) {
	do
	:: len(sigch[o]) > 0 ->
		sigch[o]?x;
		printf("workflow: %d.%d, still in the channel, goes with the run\n", EV(x));
		/* NO SIGNAL LEFT BEHIND: a run never ends with a signal of an event
		 * its Receiver did not hand out: Temporal accepted it, so Publish
		 * returned nil and the relay marks the event published (unless it
		 * crashes first), and nothing hands it out any more */
		assert(seen[o] & BIT(x))
	:: else -> break
	od
}

/* The target of order o's signals (Route.WorkflowID: the order's saga):
 * its workflow ID across its runs, and each run's code, which receives the
 * events through an eventsignal.Receiver. The workflow's own logic is
 * abstracted: it may continue as new or complete at any time. */
proctype Target(byte o) {
	byte x;

end_target:
	do
	/* W0 a start of its own (the saga started by its order's start route,
	 * say), before any signal */
	:: atomic {
		tgt[o] == T_NONE && MAY_END(o) ->
		tgt[o] = T_RUNNING; SET_FRESH(o);
		printf("workflow: order %d's workflow started by a start of its own\n", o)
	   }
#ifdef RECEIVER_LATE
	/* mutant: the first task takes what is buffered, past the Receiver */
	:: atomic {
		tgt[o] == T_RUNNING && fresh[o] ->
		do
		:: len(sigch[o]) > 0 -> sigch[o]?x; wf_apply(x)
		:: else -> break
		od;
		fresh[o] = 0; x = 0
	   }
#endif
	/* W1 Receiver.Receive: the next signal */
	:: atomic {
		tgt[o] == T_RUNNING && NOT_FRESH(o) && len(sigch[o]) > 0 ->
		wf_receive(o, x); x = 0
	   }
	/* W2 continue-as-new: Drain, then NewContinueAsNewError with
	 * Receiver.State in the next run's input, which passes it to New. One
	 * step: Temporal fails a workflow task that closes the run while
	 * signals came in during it (UnhandledCommand), and the task runs
	 * again with them. */
	:: atomic {
		tgt[o] == T_RUNNING && NOT_FRESH(o) && MAY_END(o) && cans[o] < MAX_CAN ->
#ifndef NO_DRAIN_BEFORE_CONTINUE
		/* RULE Drain before continue-as-new */
		wf_drain(o, x);
#endif
		printf("workflow: order %d's workflow continues as new\n", o);
		wf_run_ends(o, x);
		cans[o]++;
		/* RULE the Receiver's State travels into the next run */
#ifdef NO_STATE_CARRY
		seen[o] = 0;
#endif
		SET_FRESH(o);
		x = 0
	   }
	/* W3 the run completes, and the workflow ID with it: Drain first */
	:: atomic {
		tgt[o] == T_RUNNING && NOT_FRESH(o) && MAY_END(o) ->
#ifndef NO_DRAIN_BEFORE_CLOSE
		/* RULE Drain before the run completes */
		wf_drain(o, x);
#endif
		printf("workflow: order %d's workflow completes (closed)\n", o);
		wf_run_ends(o, x);
		tgt[o] = T_CLOSED;
		x = 0
	   }
#ifdef LIVENESS
	:: MAY_END(o) -> tkeep[o] = 1 /* it may run for good: weak fairness must not make it end */
#endif
	od
}
