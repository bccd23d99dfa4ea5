/*
 * outflow's relay protocol as a Promela model, checked with SPIN: every
 * interleaving of relays, crashes, lease expiry, enqueues and the operator's
 * retry, skip and replay, with the claim modelled as PostgreSQL runs it
 * under READ COMMITTED. README.md maps each step to the SQL statement or Go
 * function it stands for, states the guarantees and lists the assumptions.
 *
 * This file is what the sources on outbox_events share: the committed
 * database, the Temporal sink (the inline temporal_start, run inside a
 * publish step: outbox/temporalpub), and the processes Clock (lease
 * expiry), Producer (Enqueue), Temporal (the namespace retention) and
 * Operator (outbox/outboxops/retry.go, skip.go, replay.go, operations.sql).
 * It includes the relay's loop (loop.pml, shared with log.pml) and each
 * source's part: poll.pml (the Relay process: the poll claim, also the CDC
 * sweeper), stream.pml with -DCDC (cdc.pml), pipeline.pml with -DPIPELINE,
 * receiver.pml with -DSIGNAL (signal.pml: the events go by a signal route,
 * and the publish step's outcomes are a signal's).
 *
 * Each atomic block is one step: one SQL statement, one COMMIT, or one
 * outcome of a Publish call. Any other process may run between two steps,
 * which is how READ COMMITTED interleaves the statements of concurrent
 * transactions. The arrays below hold the committed database; a
 * transaction's own writes stay in its process until its COMMIT step, and
 * its row locks are in rowlock[] and lanelock[].
 *
 * Properties: the asserts marked in capitals (safety) and the LTL formula
 * `settle` (liveness, with -DLIVENESS, under weak fairness).
 *
 * Mutants (mutants/*.pml) define one of the macros tested with #ifdef
 * (NO_*, LEASE_SHORTER_THAN_PUBLISH, PRE_FIX_MUTANT here; poll.pml's,
 * stream.pml's, pipeline.pml's and receiver.pml's) and include this file:
 * each #ifdef marks a protective rule.
 */

/* ------------------------------------------------------------------ sizes */

#ifndef RELAYS
#define RELAYS 2          /* relay processes, each with its own owner id */
#endif
#ifndef ORDERS
#define ORDERS 2          /* aggregates ("orders"), one lane each */
#endif
#ifndef EPO
#define EPO 2             /* events per order: aggregate_sequence 1..EPO */
#endif
#ifndef INITIAL
#define INITIAL 1         /* events per order committed before the run; the others are enqueued during it */
#endif
#define NEV (ORDERS*EPO)

/* The liveness run's faults (loop.pml): relay crashes, stalls (a relay
 * gives a live claim back unattempted), sink faults and expiries of a live
 * relay's lease. A crashed relay's lease always expires in the end. The
 * operator's commands: replay, retry or skip. */
#ifndef MAX_FAULTS
#define MAX_FAULTS 2
#endif
#include "loop.pml"

/* The protocol as it stood before the READ COMMITTED replay fix (commit
 * 893e71c): a one-statement claim, a replay without lane lock and fence. */
#ifdef PRE_FIX_MUTANT
#define NO_CLAIM_VERIFY
#define NO_LANE_LOCK
#define NO_REPLAY_FENCE
#endif

/* ----------------------------------------------------------- value names */

/* claimed_by: NOBODY (NULL), a live relay 1..RELAYS, or DEAD: the owner id
 * of a relay process that crashed. Owners are unique per process start
 * (owner.go), so no live relay writes as DEAD. */
#define DEAD   (RELAYS+1)

#ifdef CDC
/* The CDC stream's owner (Owner + "/stream", cdc-protocol): the live
 * session's, and that of a session whose process crashed. */
#define STREAM (RELAYS+2)
#define SDEAD  (RELAYS+3)
#endif

/* claim_until: NONE, LIVE or EXPIRED (loop.pml). */

/* rowlock: FREE, or held FOR UPDATE by relay r's claim transaction. */
#define FREE 0

/* --------------------------------------------- the committed database */

/* outbox_events, one row per event: event e is aggregate_sequence SEQ(e)+1
 * of order ORD(e). */
bool exists[NEV];    /* committed by Enqueue */
bool pub[NEV];       /* published_at IS NOT NULL */
bool quar[NEV];      /* quarantined_at IS NOT NULL */
bool skipped[NEV];   /* skipped_at IS NOT NULL */
bool replay[NEV];    /* replay_requested_at IS NOT NULL */
byte owner[NEV];     /* claimed_by while unpublished (a published row's claimed_by is a record nothing reads: NOBODY) */
byte lease[NEV];     /* claim_until */
byte att[NEV];       /* attempt_count while unpublished and not quarantined (replay and retry reset it: else 0) */
byte rowlock[NEV];   /* row lock of an uncommitted claim transaction */
bool lanelock[ORDERS]; /* the order's outbox_sequences row, locked by a replay (OpsReplayLockLanes) */

/* --------------------------------------------------------------- Temporal */

bool retention;      /* the namespace retention has passed (Temporal process) */
/* Temporal has a workflow with this ID: one was started and the retention
 * has not made Temporal forget it. Over-approximation: once the retention
 * has passed, every run counts as forgotten, even a running or a later one. */
#ifdef SIGNAL
/* On a signal route the only workflow whose ID is the event's is the
 * route's ClosedWorkflow started for it (receiver.pml); the retention does
 * not pass in the signal model. */
#define WF(e) (late[e])
#else
#define WF(e) (started[e] && !retention)
#endif

/* ---------------------------------------------- ghosts, for properties */

bool started[NEV];   /* a run of the event was ever started */
bool delivered[NEV]; /* handed to Temporal since the event last became unpublished */
byte inflight[RELAYS+1]; /* the event relay r's Publish call runs for, or NOEV */

#if defined(SIGNAL) && (defined(CDC) || defined(PIPELINE))
#error "the signal route (-DSIGNAL) is modelled with the classic relay only"
#endif

/* REFUSED, the event the sink refuses for good (loop.pml): never started;
 * mutant REFUSAL_AS_SINK_FAULT claims and gives it back for ever. */
#if defined(REFUSED) && (defined(SIGNAL) || defined(CDC))
#error "REFUSED is modelled with the classic and the pipelined relay"
#endif

#ifdef PIPELINE
/* The pipelined relay (pipeline.pml): relay 1 runs Pipe, its workers and
 * its bookkeeper; its claims live in NSLOT slots (its open set). */
#define PIPE 1
#define NSLOT 2
byte pl_e[NSLOT];    /* the slot's event, NOEV when free */
byte pl_st[NSLOT];   /* PL_*: queued, publishing, outcome booked, outcome written */
byte pl_k[NSLOT];    /* K_*: the booked outcome */
bool pl_rep[NSLOT];  /* the claim's replay column */
bool pl_exp[NSLOT];  /* the claim's local deadline has passed (lease.publishDeadline) */
bool pl_lock;        /* the claim mutex of mutant pipe_guard_mutex (CLAIM_MUTEX) */
byte pl_ce;          /* the claimer's committed claim, not yet queued (NOEV: none) */
bool pl_cexp;        /* its local deadline has passed */
#define PL_FREE    0
#define PL_QUEUED  1
#define PL_PUB     2
#define PL_DONE    3
#define PL_WRITTEN 4
#define SLOT_PUB(c)   ((pl_st[0] == PL_PUB && pl_e[0] == (c)) || (pl_st[1] == PL_PUB && pl_e[1] == (c)))
#define SLOT_PUBORD(o) ((pl_st[0] == PL_PUB && ORD(pl_e[0]) == (o)) || (pl_st[1] == PL_PUB && ORD(pl_e[1]) == (o)))
#else
#define SLOT_PUB(c)   false
#define SLOT_PUBORD(o) false
#endif

/* ---------------------------------------------------------------- helpers */

#define ORD(e)   ((e)/EPO)
#define SEQ(e)   ((e)%EPO)
#define FIRST(o) ((o)*EPO)
#define BIT(e)   (1 << (e))
#define EV(e)    ORD(e), SEQ(e)+1    /* printf: order, sequence */

#if NEV == 2
#define EACH(M)  M(0) M(1)
#define ANY(P)   (P(0) || P(1))
#define ALL(P)   (P(0) && P(1))
#elif NEV == 3
#define EACH(M)  M(0) M(1) M(2)
#define ANY(P)   (P(0) || P(1) || P(2))
#define ALL(P)   (P(0) && P(1) && P(2))
#elif NEV == 4
#define EACH(M)  M(0) M(1) M(2) M(3)
#define ANY(P)   (P(0) || P(1) || P(2) || P(3))
#define ALL(P)   (P(0) && P(1) && P(2) && P(3))
#elif NEV == 6
#define EACH(M)  M(0) M(1) M(2) M(3) M(4) M(5)
#define ANY(P)   (P(0) || P(1) || P(2) || P(3) || P(4) || P(5))
#define ALL(P)   (P(0) && P(1) && P(2) && P(3) && P(4) && P(5))
#else
#error "ORDERS*EPO must be 2, 3, 4 or 6 (EPO 2 or 3)"
#endif

/* outbox_unpublished_predecessors (migrations/00006): an unpublished,
 * unskipped earlier event of the order holds e back. */
#define HOLDS_BACK(p)  (exists[p] && !pub[p] && !skipped[p])
/* the successor-lease probe: a later unpublished event of the order under a
 * live lease */
#define LEASED(q)      (exists[q] && !pub[q] && lease[q] == LIVE)
#if EPO == 2
#define PRED_UNPUBLISHED(e) (SEQ(e) >= 1 && HOLDS_BACK((e)-1))
#define SUCC_LEASED(e)      (SEQ(e) < 1 && LEASED((e)+1))
#define PRED_STARTED(e)     (SEQ(e) < 1 || started[(e)-1] || skipped[(e)-1])
#define SUCC_STARTED(e)     (SEQ(e) < 1 && started[(e)+1])
#elif EPO == 3
#define PRED_UNPUBLISHED(e) ((SEQ(e) >= 1 && HOLDS_BACK((e)-1)) || (SEQ(e) >= 2 && HOLDS_BACK((e)-2)))
#define SUCC_LEASED(e)      ((SEQ(e) < 2 && LEASED((e)+1)) || (SEQ(e) < 1 && LEASED((e)+2)))
#define PRED_STARTED(e)     ((SEQ(e) < 1 || started[(e)-1] || skipped[(e)-1]) && (SEQ(e) < 2 || started[(e)-2] || skipped[(e)-2]))
#define SUCC_STARTED(e)     ((SEQ(e) < 2 && started[(e)+1]) || (SEQ(e) < 1 && started[(e)+2]))
#else
#error "EPO must be 2 or 3"
#endif

/* The poll claim's rules (the lane rule, the successor probe, takeover,
 * CAND): poll.pml. */

/* A plain UPDATE (RelayMark, RelayFail, RelayRelease) waits for a claim
 * transaction's FOR UPDATE row lock; the replay's FOR KEY SHARE does not
 * conflict with it. */
#define UPDATABLE(e)  (rowlock[e] == FREE)

/* RULE the lease outlives the publish: the relay starts a Publish only when
 * PublishTimeout fits in the rest of its lease (lease.go publishDeadline;
 * Config.validate: PublishTimeout <= Lease/2), so a lease does not expire
 * while its holder's Publish call runs. */
#define UNDER_PUBLISH(e) ((owner[e] >= 1 && owner[e] <= RELAYS && inflight[owner[e]] == (e)) || SLOT_PUB(e))
#ifdef LEASE_SHORTER_THAN_PUBLISH
#define MAY_EXPIRE(e) true
#elif defined(CDC)
#define MAY_EXPIRE(e) (!UNDER_PUBLISH(e) && !STREAM_BOUND(e))
#else
#define MAY_EXPIRE(e) (!UNDER_PUBLISH(e))
#endif

/* ------------------------------------------------------- Temporal start */

/* temporalpub.Publish reaching Temporal: ExecuteWorkflow, workflow ID =
 * event ID; a first delivery with REJECT_DUPLICATE, a replay with
 * ALLOW_DUPLICATE_FAILED_ONLY; "already started" is an acknowledgement. With
 * no workflow of this ID (never started, or forgotten after the retention)
 * a new run starts. With one, the first run stays as it was either way (a
 * replay of a failed run gets a second run under the same ID, which the
 * relay cannot tell and needs not). */
inline temporal_start(t, isReplay) {
	/* SKIP IS FINAL: nothing starts an event after an operator skipped it */
	assert(!skipped[t]);
	if
	:: !WF(t) ->
		printf("temporal: a run of %d.%d starts\n", EV(t));
		/* REPLAY HORIZON: a replay never starts a new run of a workflow
		 * Temporal forgot (temporalpub.delivery acknowledges it instead) */
		assert(!(isReplay && started[t]));
		if
		:: !started[t] ->
			/* FIRST STARTS IN ORDER: event k+1's first run starts only after
			 * the first run of every earlier event of the order, or that
			 * event was skipped by an operator; no later event of the
			 * order has started yet */
			assert(PRED_STARTED(t) && !SUCC_STARTED(t));
			started[t] = 1
		:: else ->
			printf("temporal: (not its first run: Temporal forgot the earlier one)\n")
		fi
	:: else ->
		printf("temporal: %d.%d already started (acknowledged)\n", EV(t))
	fi;
	delivered[t] = 1
}

#ifdef CDC
#include "stream.pml"
#endif
#ifdef SIGNAL
#include "receiver.pml"
#endif
#include "poll.pml"

#ifdef PIPELINE
#include "pipeline.pml"
#endif

/* ------------------------------------------------------------------ Clock */

/* C1 Time passes: a lease reaches claim_until. A live relay's lease expires
 * only when the relay stalls (a fault in the liveness run); a crashed
 * relay's always does. */
#ifndef EXPIRE_GROUP
#define EXPIRE_GROUP(c) skip
#define CRASHED(c) (owner[c] == DEAD)
#endif
#define EXPIRE(c) :: lease[c] == LIVE && MAY_EXPIRE(c) && (CRASHED(c) || FAULT_OK) -> \
	if :: !CRASHED(c) -> FAULT :: else fi; lease[c] = EXPIRED; \
	printf("clock: lease of %d.%d expired\n", EV(c)); EXPIRE_GROUP(c); PIPE_EXPIRE(c)

#ifndef PIPELINE
#define PIPE_EXPIRE(c) skip
#endif

proctype Clock() {
end_clock:
	do
	:: atomic {
		if
		EACH(EXPIRE)
		fi
	   }
#ifdef PIPELINE
	:: atomic { PIPE_LOCAL_END }
#endif
	od
}

/* --------------------------------------------------------------- Producer */

/* P1 Enqueue (enqueue.go, EnqueueAggregate): the business transaction
 * upserts the order's outbox_sequences row, which row-locks it until COMMIT
 * (so it waits for a replay holding it), and inserts the event with the next
 * sequence. One step: lock, insert and COMMIT. */
#ifndef SLOT_APPEND
#define SLOT_APPEND(c) skip
#endif
#ifdef ENQUEUE_OFF
#define ENQUEUES false    /* a mutant's configuration: only the events committed before the run */
#else
#define ENQUEUES true
#endif
#define ENQUEUE(c) :: ENQUEUES && !exists[c] && (SEQ(c) == 0 || exists[(c)-1]) && !lanelock[ORD(c)] -> exists[c] = 1; SLOT_APPEND(c); \
	printf("producer: %d.%d enqueued, committed\n", EV(c))

proctype Producer() {
end_producer:
	do
	:: atomic {
		if
		EACH(ENQUEUE)
		fi
	   }
	od
}

/* --------------------------------------------------------------- Temporal */

/* T1 The namespace retention passes (once): Temporal forgets the workflows
 * (see WF), and a replay may now be older than the replay horizon. (Weak
 * fairness makes it pass in the end. That hides no stuck run: the relay
 * keeps every choice it had, with a permanent error as one more.) */
proctype Temporal() {
end_temporal:
	atomic { retention = 1; printf("temporal: the retention has passed\n") }
}

/* --------------------------------------------------------------- Operator */

/* O1 retry (outboxops/retry.go): OpsLockEvent (FOR UPDATE: waits for a claim's row
 * lock), refused when published, skipped or in flight (live lease); then
 * OpsRetry: attempts 0, out of quarantine, owner and lease cleared.
 * Modelled where it changes more than the attempt count: a quarantined
 * event, or one whose expired lease still names a relay (which may be alive
 * and record a late outcome: the cleared owner fences it out). */
#define RETRYABLE(c) (exists[c] && !pub[c] && !skipped[c] && lease[c] != LIVE && rowlock[c] == FREE && \
	(quar[c] || owner[c] != NOBODY))
#define RETRY(c) :: RETRYABLE(c) -> quar[c] = 0; att[c] = 0; owner[c] = NOBODY; lease[c] = NONE; \
	printf("operator: retry %d.%d\n", EV(c))
/* O2 SkipTx (skip.go): OpsLockEvent, refused unless quarantined; OpsSkip. */
#define SKIPPABLE(c) (exists[c] && quar[c] && !skipped[c] && !pub[c] && rowlock[c] == FREE)
#define SKIP(c) :: SKIPPABLE(c) -> skipped[c] = 1; printf("operator: skip %d.%d\n", EV(c))
/* O3 replay (outboxops/replay.go), OpsReplay: the window's published events of one
 * order (occurred_at need not follow the sequence, so any set of them):
 * first is the lowest replayed one, later published ones may join. */
#define IS_PUB(c) pub[c]
#define REPLAY_FIRST(c) :: pub[c] -> o = ORD(c); first = c; S = BIT(c); \
	printf("operator: replay (uncommitted) of %d.%d\n", EV(c))
/* OpsReplayFence waits for the claim transactions holding a fenced row. */
#ifndef FENCE_WAITS
#define FENCE_WAITS(c) (rowlock[c] != FREE)
#endif
#define FENCE_CLEAR(c) (!(F & BIT(c)) || !FENCE_WAITS(c))

proctype Operator() {
	byte o;      /* the replayed order */
	byte first;  /* its lowest replayed event */
	byte S;      /* OpsReplay's uncommitted update: the events replayed */
	byte F;      /* OpsReplayFence: the successors it locks */
	byte i;

end_operator:
	do
	:: atomic { OP_OK && ANY(RETRYABLE) -> if EACH(RETRY) fi; OP }
	:: atomic { OP_OK && ANY(SKIPPABLE) -> if EACH(SKIP) fi; OP }
	:: atomic {
		/* O3 OpsReplay, uncommitted: the chosen events become unpublished,
		 * flagged, available now, attempts 0, owner and lease cleared. */
		OP_OK && ANY(IS_PUB) ->
		if
		EACH(REPLAY_FIRST)
		fi;
		for (i : SEQ(first)+1 .. EPO-1) {
			if
			:: pub[FIRST(o)+i] -> S = S | BIT(FIRST(o)+i);
				printf("operator: replay (uncommitted) of %d.%d\n", o, i+1)
			:: true
			fi
		}
#ifndef NO_LANE_LOCK
		/* RULE OpsReplayLockLanes: the order's outbox_sequences row, FOR
		 * UPDATE until COMMIT. An Enqueue of the order committed before
		 * this, or commits after the replay. */
		lanelock[o] = 1;
#endif
#ifndef NO_REPLAY_FENCE
		/* RULE OpsReplayFence, its snapshot (after the lane lock): the
		 * unpublished successors of the first replayed event, locked FOR
		 * KEY SHARE in O4. */
		for (i : SEQ(first)+1 .. EPO-1) {
			if
			:: exists[FIRST(o)+i] && !pub[FIRST(o)+i] -> F = F | BIT(FIRST(o)+i);
				printf("operator: the replay's fence covers %d.%d\n", o, i+1)
			:: else
			fi
		}
#endif
		i = 0; first = 0;
		OP
	   };
		/* O4 OpsReplayFence's locks wait (no SKIP LOCKED) for every claim
		 * transaction holding one of its rows FOR UPDATE to commit; a claim
		 * reaching one of them later skips it until the replay commits. Then
		 * COMMIT of the replay: its writes become visible, its locks go. */
		atomic {
			ALL(FENCE_CLEAR) ->
			for (i : 0 .. EPO-1) {
				if
				:: S & BIT(FIRST(o)+i) ->
					pub[FIRST(o)+i] = 0; replay[FIRST(o)+i] = 1; att[FIRST(o)+i] = 0;
					owner[FIRST(o)+i] = NOBODY; lease[FIRST(o)+i] = NONE;
					delivered[FIRST(o)+i] = 0
				:: else
				fi
			}
			lanelock[o] = 0;
			printf("operator: replay of order %d commits\n", o);
			o = 0; S = 0; F = 0; i = 0
		}
#ifdef LIVENESS
	:: OP_OK -> ops = MAX_OPS /* the operator may stop acting: weak fairness must not force it */
#endif
	od
}

/* --------------------------------------------------------------- liveness */

/* An event is settled when it is published, skipped or quarantined, or held
 * back by a quarantined predecessor: each of these an operator sees
 * (outboxctl status, list). Under weak fairness, with the faults and the
 * operator bounded, every event ends settled for good. */
#define QBLOCKS(p) (quar[p] && !skipped[p] && !pub[p])
#if EPO == 2
#define QBLOCKED(e) (SEQ(e) >= 1 && QBLOCKS((e)-1))
#else
#define QBLOCKED(e) ((SEQ(e) >= 1 && QBLOCKS((e)-1)) || (SEQ(e) >= 2 && QBLOCKS((e)-2)))
#endif
#ifdef SIGNAL
/* On a signal route a published event is settled once its target's
 * workflow applied it, or its ClosedWorkflow took it (receiver.pml). */
#define SETTLED(e) (exists[e] && ((pub[e] && (applied[e] || late[e])) || skipped[e] || quar[e] || QBLOCKED(e)))
#else
#define SETTLED(e) (exists[e] && (pub[e] || skipped[e] || quar[e] || QBLOCKED(e)))
#endif

ltl settle { <> [] ALL(SETTLED) }

/* ------------------------------------------------------------------- init */

init {
	byte i;
	atomic {
		for (i : 0 .. NEV-1) {
			if
			:: SEQ(i) < INITIAL -> exists[i] = 1; SLOT_APPEND(i)
			:: else
			fi
		}
		for (i : 0 .. RELAYS) {
			inflight[i] = NOEV
		}
#ifdef PIPELINE
		pl_e[0] = NOEV; pl_e[1] = NOEV; pl_ce = NOEV;
		run Pipe(); run Worker(0); run Worker(1); run Books();
		for (i : 2 .. RELAYS) {
			run Relay(i)
		}
#else
		for (i : 1 .. RELAYS) {
			run Relay(i)
		}
#endif
		i = 0;
		run Clock();
		run Producer();
#ifdef SIGNAL
		/* the retention does not pass (receiver.pml); a target per order */
		for (i : 0 .. ORDERS-1) {
			run Target(i)
		}
		i = 0;
#else
		run Temporal();
#endif
		run Operator();
#ifdef CDC
		sinflight = NOEV;
		run Stream();
#endif
#ifdef LIVENESS
		run Idle()
#endif
	}
}
