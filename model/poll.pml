/*
 * The poll source's part of the relay (outbox/relay.go, claim.go, mark.go,
 * release.go, quarantine.go and relay.sql), included by relay.pml: the
 * claim's rules and the Relay process, which claims an event of
 * outbox_events (RelayClaim, RelayClaimVerify), publishes it by the loop's
 * rules (loop.pml) to the Temporal sink (relay.pml's temporal_start, or a
 * signal route's, receiver.pml) and records the outcome: the fenced mark,
 * RelayFail (attempts, quarantine), RelayRelease. The classic relay, the
 * CDC source's sweeper, and the pipelined relay's peers (pipeline.pml's
 * claim is this one's). Steps R1..R7; README.md has the rest.
 *
 * Rules a mutant removes, each marked RULE below: NO_LANE_RULE,
 * NO_SUCCESSOR_PROBE, NO_TAKEOVER, NO_CLAIM_VERIFY, NO_OWNER_FENCE,
 * MARK_BEFORE_PUBLISH, REFUSAL_AS_SINK_FAULT (loop.pml's rule).
 */

/* RULE the lane rule, in RelayClaim and RelayClaimVerify */
#ifdef NO_LANE_RULE
#define LANE_BLOCKED(e) false
#else
#define LANE_BLOCKED(e) PRED_UNPUBLISHED(e)
#endif
/* RULE a replayed event waits for its successors' live leases (RelayClaim
 * and RelayClaimVerify) */
#ifdef NO_SUCCESSOR_PROBE
#define PROBE_BLOCKED(e) false
#else
#define PROBE_BLOCKED(e) (replay[e] && SUCC_LEASED(e))
#endif
/* RULE an expired lease may be taken over: claim_until IS NULL OR
 * claim_until < now() */
#ifdef NO_TAKEOVER
#define LEASE_FREE(e) (lease[e] == NONE)
#else
#define LEASE_FREE(e) (lease[e] != LIVE)
#endif

/* RelayClaim's conditions on the candidate row's own columns, which
 * EvalPlanQual re-checks on the newest version of a locked row (available_at
 * is abstracted: a backoff is a delay, and full jitter may draw 0). */
#define OWN_OK(e)   (exists[e] && !pub[e] && !quar[e] && !skipped[e] && LEASE_FREE(e))
/* A candidate of RelayClaim, as the statement's snapshot sees it: its own
 * columns and the subqueries. */
#define CAND(e)     (OWN_OK(e) && !LANE_BLOCKED(e) && !PROBE_BLOCKED(e) && SWEEPER_TAKES(e))

/* A CDC relay's sweeper may take any event (Grace is abstracted); a
 * polling relay takes any. */
#ifndef SWEEPER_TAKES
#define SWEEPER_TAKES(e) true
#endif

/* ------------------------------------------------------------------ Relay */

/* A crash of relay r at any step, and its restart (a new process, a new
 * owner id): its uncommitted claim transaction rolls back, a Publish call in
 * flight reached Temporal before its deadline or never does, and its
 * committed leases stay until they expire. */
inline crash(r) {
	printf("relay %d: CRASH and restart\n", r);
	if
	:: e != NOEV && rowlock[e] == r -> rowlock[e] = FREE
	:: else
	fi;
	if
	:: inflight[r] != NOEV ->
#ifdef SIGNAL
		signal_in_flight(e);
#else
		if
		:: !(rep && retention && !WF(e)) -> temporal_start(e, rep)
		:: true
		fi;
#endif
		inflight[r] = NOEV
	:: else
	fi;
	d_step {
		for (i : 0 .. NEV-1) {
			if
			:: owner[i] == r -> owner[i] = DEAD
			:: else
			fi
		}
		e = NOEV; rep = 0; tx = 0; perm = 0; i = 0
	}
}
#define OR_CRASH :: atomic { FAULT_OK -> FAULT; crash(r) }; goto idle

/* What the claim transaction did to its locked row, uncommitted. */
#define TX_CLAIM      1  /* claimed: claimed_by = me, claim_until, attempt_count+1 */
#define TX_QUARANTINE 2  /* abandoned (lease expired with the attempts used up): quarantined */
#define TX_GIVEBACK   3  /* claimed, then given back by RelayClaimVerify */

#define PICK(c) :: CAND(c) -> e = c

proctype Relay(byte r) {
	byte e = NOEV;   /* the event of this claim (BatchSize 1) */
	byte tx;         /* TX_*: the claim transaction's uncommitted write */
	bool rep;        /* the claim's "replay" column: an operator's replay */
	bool perm;       /* the publish error is permanent */
	byte i;

idle:
end_idle:
	/* R1 RelayClaim (claim.go claimOn: BEGIN; RelayClaim), the statement's
	 * snapshot: its candidates, judged with the subqueries (predecessors,
	 * successors' leases) as of now. The relay waits (NOTIFY, poll) until
	 * there is one. The model picks the candidate the statement will lock
	 * (ORDER BY available_at, occurred_at, LIMIT BatchSize = 1): any, since
	 * any order is possible. If the row is locked when the statement reaches
	 * it, SKIP LOCKED moves on to the next candidate: the run where the model
	 * picked that one. */
	atomic {
		ANY(CAND) ->
		if
		EACH(PICK)
		fi;
		printf("relay %d: RelayClaim snapshot picks %d.%d\n", r, EV(e))
	};

	/* R2 RelayClaim, later in the same statement: FOR UPDATE OF e SKIP
	 * LOCKED. A row another transaction locks is skipped; a row changed since
	 * the snapshot is re-checked by EvalPlanQual on its own columns only
	 * (OWN_OK), not the subqueries. The CTE then quarantines the row if
	 * abandoned or claims it. Then RelayClaimVerify, a new statement with a
	 * new snapshot taken while the row lock is held: a just-claimed event
	 * with an unpublished, unskipped predecessor, or a replayed one whose
	 * successor is now under a live lease, is given back. Uncommitted. */
	if
	:: atomic {
		if
		:: rowlock[e] == FREE && OWN_OK(e)
		:: else ->
			printf("relay %d: RelayClaim skips %d.%d (locked, or changed: EvalPlanQual)\n", r, EV(e));
			e = NOEV; goto idle /* COMMIT of an empty claim */
		fi;
		rowlock[e] = r;
		rep = replay[e];
		if
		:: owner[e] != NOBODY && att[e] >= MAX_ATTEMPTS -> tx = TX_QUARANTINE
#ifndef NO_CLAIM_VERIFY
		/* RULE RelayClaimVerify */
		:: else -> tx = ((LANE_BLOCKED(e) || PROBE_BLOCKED(e)) -> TX_GIVEBACK : TX_CLAIM)
#else
		:: else -> tx = TX_CLAIM
#endif
		fi;
		if
		:: tx == TX_CLAIM -> printf("relay %d: RelayClaim locks and claims %d.%d (uncommitted)\n", r, EV(e))
		:: tx == TX_QUARANTINE -> printf("relay %d: RelayClaim locks %d.%d, abandoned: quarantines it (uncommitted)\n", r, EV(e))
		:: tx == TX_GIVEBACK -> printf("relay %d: RelayClaim claims %d.%d, RelayClaimVerify gives it back (uncommitted)\n", r, EV(e))
		fi
	   }
	OR_CRASH
	fi;

	/* R3 COMMIT of the claim: its writes become visible, its row lock goes.
	 * Then process (relay.go): publishDeadline (lease.go) starts a publish
	 * only with PublishTimeout to spare in the lease; a relay that stalled
	 * until too little was left (or is shutting down) goes to R7 instead. */
	if
	:: atomic {
		if
		:: tx == TX_CLAIM ->
			printf("relay %d: claim of %d.%d commits (lease)\n", r, EV(e));
			d_step {
				/* ONE LIVE LEASE PER ORDER: no other event of the order is
				 * under a live lease when this one gets its lease */
				for (i : 0 .. EPO-1) {
					assert(FIRST(ORD(e)) + i == e || lease[FIRST(ORD(e)) + i] != LIVE)
				}
				i = 0;
				owner[e] = r; lease[e] = LIVE; att[e]++; rowlock[e] = FREE; tx = 0
			}
		:: tx == TX_QUARANTINE ->
			quar[e] = 1; owner[e] = NOBODY; lease[e] = NONE; att[e] = 0; rowlock[e] = FREE;
			printf("relay %d: abandoned %d.%d quarantined, committed\n", r, EV(e));
			e = NOEV; tx = 0; rep = 0; goto idle
		:: tx == TX_GIVEBACK ->
			owner[e] = NOBODY; lease[e] = NONE; rowlock[e] = FREE;
			printf("relay %d: %d.%d given back by RelayClaimVerify, committed\n", r, EV(e));
			e = NOEV; tx = 0; rep = 0; goto idle
		fi;
#ifdef MARK_BEFORE_PUBLISH
		goto markfirst
#else
		if
		:: printf("relay %d: Publish %d.%d starts (replay: %d)\n", r, EV(e), rep);
		   d_step {
			/* ONE EVENT IN FLIGHT PER ORDER: no Publish call of another
			 * event (or of this one) of the order runs */
			for (i : 1 .. RELAYS) {
				assert(inflight[i] == NOEV || ORD(inflight[i]) != ORD(e))
			}
#ifdef CDC
			assert(sinflight == NOEV || ORD(sinflight) != ORD(e));
#endif
			assert(!SLOT_PUBORD(ORD(e)));
			i = 0;
			inflight[r] = e
		   }
		:: FAULT_OK -> FAULT; goto stalled
		fi
#endif
	   }
	OR_CRASH
	fi;

	/* R4 publishOne -> temporalpub.Publish: the call returns. */
publishing:
	if
	:: atomic {
		inflight[r] = NOEV;
		if
		:: FAULT_OK -> FAULT;
			/* Temporal unreachable (Unavailable, DeadlineExceeded, ...:
			 * the sink's fault, fault.go), nothing started. A fault in the
			 * liveness run: the sink answers in the end. R6' (release.go:
			 * releaseSinkFaults, RelaySinkRelease) gives the claim back
			 * with its attempt, fenced by claimed_by: in the model that is
			 * R7's effect (the backoff and last_error are abstracted), so
			 * it goes there and shares R7's states. */
			printf("relay %d: Publish %d.%d failed (unreachable: the sink's fault)\n", r, EV(e));
			goto stalled
		:: OWN_ERR(e) ->
			/* the event's own transient error (one that is no service
			 * error, e.g. a payload the data converter cannot encode; a
			 * publish that ran out of time while the sink acknowledged
			 * others), nothing started: its attempts count */
			printf("relay %d: Publish %d.%d failed (the event's own, transient)\n", r, EV(e));
			perm = 0; goto failed
		:: !WF(e) && OWN_ERR(e) ->
			/* no route or an invalid payload, and no workflow of this ID
			 * (permanentUnlessStarted): a permanent error */
			printf("relay %d: Publish %d.%d failed (permanent)\n", r, EV(e));
			perm = 1; goto failed
		/* temporalpub.delivery: a replay of an event older than the replay
		 * horizon (at most the retention) is acknowledged without a start.
		 * Once the retention has passed, a replayed event may be that old;
		 * one whose workflow Temporal forgot certainly is. */
		:: rep && retention ->
			printf("relay %d: replay of %d.%d older than the horizon: acknowledged without a start\n", r, EV(e));
			delivered[e] = 1; goto acked
#ifdef SIGNAL
		/* a signal route: temporalpub Publisher.signal, Signal-With-Start
		 * (receiver.pml). Accepted: the signal is in the target's run (a
		 * new run if there was none). */
		:: SIG_ACCEPTS(e) ->
			temporal_signal(e); goto acked
		:: SIG_ACCEPTS(e) && FAULT_OK -> FAULT;
			/* accepted, but the answer lost: the sink's fault */
			temporal_signal(e);
			printf("relay %d: ... but the answer to %d.%d was lost (the sink's fault)\n", r, EV(e));
			goto stalled
		/* refused: the target closed (IsAlreadyStarted under
		 * REJECT_DUPLICATE). RULE the refusal is the event's, and final:
		 * the ClosedWorkflow's start, or outbox.Permanent */
		:: SIG_REFUSED(e) ->
			printf("temporal: signal of %d.%d refused: the order's workflow already closed\n", EV(e));
#if defined(CLOSED_AS_DELIVERED)
			/* mutant: the refusal taken for an acknowledgement, as start
			 * takes "already started" */
			printf("relay %d: %d.%d acknowledged (the refusal taken for a duplicate)\n", r, EV(e));
			goto acked
#elif defined(CLOSED_AS_SINK_FAULT)
			/* mutant: the refusal taken for the sink's fault (no attempt
			 * counted: RelaySinkRelease, R7's step) */
			printf("relay %d: %d.%d given back (the refusal taken for the sink's fault)\n", r, EV(e));
			goto stalled
#elif defined(CLOSED_WORKFLOW)
			/* Publisher.signal -> Publisher.start(ClosedWorkflow) */
			closed_workflow_start(e); goto acked
		:: SIG_REFUSED(e) && FAULT_OK -> FAULT;
			/* refused; the ClosedWorkflow's start then reached Temporal
			 * with its answer lost, or never did: the sink's fault */
			printf("temporal: signal of %d.%d refused: the order's workflow already closed\n", EV(e));
			if
			:: closed_workflow_start(e)
			:: true
			fi;
			printf("relay %d: ... the start of %d.%d's ClosedWorkflow unanswered (the sink's fault)\n", r, EV(e));
			goto stalled
#else
			/* outbox.Permanent: RelayFail quarantines it at once */
			printf("relay %d: Publish %d.%d failed (permanent: its workflow already closed)\n", r, EV(e));
			perm = 1; goto failed
#endif
#else
		:: !(rep && retention && !WF(e)) && !REFUSES(e) ->
			temporal_start(e, rep); goto acked
#ifdef REFUSAL_AS_SINK_FAULT
		:: REFUSES(e) ->
			/* mutant: the refusal taken for the sink's fault (no attempt
			 * counted: RelaySinkRelease, R7's step) */
			printf("relay %d: Publish %d.%d refused for good, taken for the sink's fault\n", r, EV(e));
			goto stalled
#endif
		:: !(rep && retention && !WF(e)) && !REFUSES(e) && FAULT_OK -> FAULT;
			/* started, but the answer lost (DeadlineExceeded, a cut
			 * connection): the sink's fault too */
			temporal_start(e, rep);
			printf("relay %d: ... but the answer to %d.%d was lost (the sink's fault)\n", r, EV(e));
			goto stalled
#endif
		fi
	   }
	OR_CRASH
	fi;

acked:
	/* R5 flushAcks -> mark (mark.go): RelayMark in its own transaction, WHERE
	 * claimed_by = owner AND published_at IS NULL. If the lease expired and
	 * was taken over meanwhile, it changes nothing. */
	if
	:: atomic {
		UPDATABLE(e) ->
#ifdef NO_OWNER_FENCE
		if
		:: !pub[e] ->
#else
		/* RULE the owner fence */
		if
		:: owner[e] == r && !pub[e] ->
#endif
			printf("relay %d: RelayMark %d.%d published\n", r, EV(e));
			/* FENCED MARK: the mark comes from the relay the row names as
			 * its claimant (no other relay took it over, no operator
			 * cleared it) */
			assert(owner[e] == r);
			/* NOTHING LOST: the event reached Temporal since it last became
			 * unpublished */
			assert(delivered[e]);
			pub[e] = 1; lease[e] = NONE; replay[e] = 0; owner[e] = NOBODY; att[e] = 0
		:: else ->
			printf("relay %d: RelayMark %d.%d: 0 rows (fenced)\n", r, EV(e))
		fi;
		e = NOEV; rep = 0; goto idle
	   }
	OR_CRASH
	fi;

failed:
	/* R6 flushFailures -> recordFailures (quarantine.go): RelayFail, fenced
	 * likewise: quarantined when permanent or the attempts are used up,
	 * otherwise a backoff (available_at later: abstracted). */
	if
	:: atomic {
		UPDATABLE(e) ->
		if
		:: owner[e] == r && !pub[e] ->
			if
			:: perm || att[e] >= MAX_ATTEMPTS -> quar[e] = 1; att[e] = 0
			:: else
			fi;
			owner[e] = NOBODY; lease[e] = NONE;
			printf("relay %d: RelayFail %d.%d (quarantined: %d)\n", r, EV(e), quar[e])
		:: else ->
			printf("relay %d: RelayFail %d.%d: 0 rows (fenced)\n", r, EV(e))
		fi;
		e = NOEV; rep = 0; perm = 0; goto idle
	   }
	OR_CRASH
	fi;

stalled:
	/* R7 process: a claim never attempted goes back, RelayRelease
	 * (release.go), fenced by claimed_by: lease cleared, attempt returned.
	 * Also R6', the sink's fault after R4 (RelaySinkRelease), whose effect
	 * on the model's state is the same.
	 * Meanwhile the lease may have expired and been taken over. */
	if
	:: atomic {
		UPDATABLE(e) ->
		if
		:: owner[e] == r && !pub[e] ->
			owner[e] = NOBODY; lease[e] = NONE;
			if
			:: att[e] > 0 -> att[e]--
			:: else
			fi;
			printf("relay %d: RelayRelease %d.%d\n", r, EV(e))
		:: else ->
			printf("relay %d: RelayRelease %d.%d: 0 rows (fenced)\n", r, EV(e))
		fi;
		e = NOEV; rep = 0; goto idle
	   }
	OR_CRASH
	fi;

#ifdef MARK_BEFORE_PUBLISH
markfirst:
	/* mutant: RelayMark right after the claim, then the publish */
	if
	:: atomic {
		UPDATABLE(e) ->
		if
		:: owner[e] == r && !pub[e] ->
			printf("relay %d: RelayMark %d.%d published, before its publish\n", r, EV(e));
			/* NOTHING LOST (as in R5) */
			assert(delivered[e]);
			pub[e] = 1; lease[e] = NONE; replay[e] = 0; owner[e] = NOBODY; att[e] = 0
		:: else
		fi;
		inflight[r] = e
	   }
	OR_CRASH
	fi;
	goto publishing
#endif
}
