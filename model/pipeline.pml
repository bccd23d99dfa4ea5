/*
 * The pipelined relay (outbox/pipeline.go, relay.go Run), included by
 * relay.pml with -DPIPELINE: relay 1 (owner PIPE) runs as four processes
 * that share its owner id and its fate: the claimer Pipe, two workers
 * (MaxInFlight 2) and the bookkeeper Books. A claim takes one event
 * (BatchSize 1) while room is left (a free slot: the open set of
 * pipeline.go, here NSLOT claims not yet settled), queues it for a worker,
 * and claims again at once: while an earlier publish of the same owner is
 * in flight, and while an earlier outcome waits to be written. The
 * bookkeeper writes each booked outcome later, fenced by claimed_by = PIPE
 * (RelayMark, RelayFail, RelaySinkRelease, RelayRelease), and then removes
 * the event from the open set. The other relays are poll.pml's Relay.
 *
 * So one owner holds claims of several claims at once, and an outcome of an
 * earlier claim can be written after a later claim of the same owner: also
 * after the same owner claimed the same event again, its lease having
 * expired while its outcome waited (the database was slow). The guard
 * (pipeline.claim): an event still in the open set is not queued again; its
 * pending outcome, written under the same owner, settles the new claim.
 *
 * The guard is not enough (README: what the model found). The protocol
 * modelled here adds a rule (RULE the held exclusion): the claim excludes
 * the events this relay holds (RelayClaim's @held, the open set read
 * before the claim), so the relay never claims again what it still holds,
 * and the guard never fires. Mutant pipe_guard_only is the code without it
 * (the guard alone); pipe_guard_mutex adds a claim mutex between the
 * claimer and the bookkeeper (CLAIM_MUTEX), which closes the guard's races
 * but not the replay in between; pipe_no_guard removes both.
 *
 * Outcome kinds, as books.add classifies them (fault.go classify).
 */
#define K_ACK  1  /* acknowledged: RelayMark */
#define K_FAIL 2  /* the event's own error, transient (an unknown error): RelayFail, attempts, backoff */
#define K_PERM 3  /* the event's own error, permanent (ErrPermanent): RelayFail, quarantined */
#define K_SINK 4  /* the sink's fault (unreachable, Unavailable, DeadlineExceeded, a lost answer): RelaySinkRelease */
#define K_SKIP 5  /* never attempted (shutdown, breaker open, lease too short): RelayRelease */

#define ROOM        (pl_st[0] == PL_FREE || pl_st[1] == PL_FREE)
#define SLOTS_BUSY  (pl_st[0] != PL_FREE || pl_st[1] != PL_FREE)
#define OPEN(c)     ((pl_st[0] != PL_FREE && pl_e[0] == (c)) || (pl_st[1] != PL_FREE && pl_e[1] == (c)))

/* RULE the held exclusion: RelayClaim skips the events in the open set as
 * the claimer read it before the claim (only the claimer adds to it). */
#ifdef NO_HELD_EXCLUSION
#define HELD_OK(c) true
#else
#define HELD_OK(c) (!OPEN(c))
#endif
#define PIPE_CAND(c) (CAND(c) && HELD_OK(c))
#define PIPE_PICK(c) :: PIPE_CAND(c) -> e = c

/* Not the protocol (mutant pipe_guard_mutex): a mutex held by the claimer
 * from its claim to its look-up in the open set, and by the bookkeeper
 * from a write to the removal from the open set. */
#ifdef CLAIM_MUTEX
#define CLAIM_LOCK    pl_lock = 1
#define CLAIM_UNLOCK  pl_lock = 0
#define BOOKS_MAY     (!pl_lock)
#else
#define CLAIM_LOCK    skip
#define CLAIM_UNLOCK  skip
#define BOOKS_MAY     true
#endif

/* The local deadline of a queued claim passes with its lease: when the
 * Clock expires the lease (PIPE_EXPIRE), or at any time once the row is no
 * longer this claim under a live lease (time passes for the relay's clock
 * whatever the row says). */
#define PIPE_EXPIRE(c) d_step { \
	if :: pl_ce == (c) -> pl_cexp = 1 :: else fi; \
	if :: pl_st[0] == PL_QUEUED && pl_e[0] == (c) -> pl_exp[0] = 1 :: else fi; \
	if :: pl_st[1] == PL_QUEUED && pl_e[1] == (c) -> pl_exp[1] = 1 :: else fi }
#define LOCAL_END(k) :: pl_st[k] == PL_QUEUED && !pl_exp[k] && !(owner[pl_e[k]] == PIPE && lease[pl_e[k]] == LIVE) -> \
	pl_exp[k] = 1; printf("relay 1: the local deadline of %d.%d's claim passed\n", EV(pl_e[k]))
#define PIPE_LOCAL_END if LOCAL_END(0) LOCAL_END(1) \
	:: pl_ce != NOEV && !pl_cexp && !(owner[pl_ce] == PIPE && lease[pl_ce] == LIVE) -> pl_cexp = 1 fi

/* A crash of the relay process: the claimer's uncommitted claim rolls back,
 * each publish in flight reached Temporal before its deadline or never
 * does, the open set and the booked outcomes are lost, the leases stay
 * until they expire (owner DEAD); the restarted process is a new owner. */
inline pcrash() {
	printf("relay 1: CRASH and restart (claimer, workers and bookkeeper)\n");
	if
	:: e != NOEV && rowlock[e] == PIPE -> rowlock[e] = FREE
	:: else
	fi;
	for (i : 0 .. NSLOT-1) {
		if
		:: pl_st[i] == PL_PUB && !(pl_rep[i] && retention && !WF(pl_e[i])) ->
			if
			:: temporal_start(pl_e[i], pl_rep[i])
			:: true
			fi
		:: else
		fi
	}
	d_step {
		for (i : 0 .. NEV-1) {
			if
			:: owner[i] == PIPE -> owner[i] = DEAD
			:: else
			fi
		}
		for (i : 0 .. NSLOT-1) {
			pl_e[i] = NOEV; pl_st[i] = PL_FREE; pl_k[i] = 0; pl_rep[i] = 0; pl_exp[i] = 0
		}
		pl_lock = 0; pl_ce = NOEV; pl_cexp = 0;
		e = NOEV; rep = 0; tx = 0; i = 0
	}
}
#define OR_PCRASH :: atomic { FAULT_OK -> FAULT; pcrash() }; goto idle

/* The claimer (Run's loop and pipeline.claim). */
proctype Pipe() {
	byte e = NOEV;   /* the event of this claim */
	byte tx;         /* TX_*: the claim transaction's uncommitted write */
	bool rep;
	byte i;

idle:
end_idle:
	if
	/* PR1 RelayClaim's snapshot, when there is room (pipeline.room): also
	 * while the workers publish and outcomes wait to be written. */
	:: atomic {
		ROOM && ANY(PIPE_CAND) ->
		CLAIM_LOCK;
		if
		EACH(PIPE_PICK)
		fi;
		printf("relay 1: RelayClaim snapshot picks %d.%d (open: %d %d)\n", EV(e), pl_e[0], pl_e[1])
	   }
	/* a crash while the claimer waits, its workers and bookkeeper busy */
	:: atomic { SLOTS_BUSY && FAULT_OK -> FAULT; pcrash() }; goto idle
	fi;

	/* PR2 RelayClaim's row lock, EvalPlanQual, abandoned or claim, and
	 * RelayClaimVerify: as R2. */
	if
	:: atomic {
		if
		:: rowlock[e] == FREE && OWN_OK(e)
		:: else ->
			printf("relay 1: RelayClaim skips %d.%d (locked, or changed: EvalPlanQual)\n", EV(e));
			e = NOEV; CLAIM_UNLOCK; goto idle
		fi;
		rowlock[e] = PIPE;
		rep = replay[e];
		if
		:: owner[e] != NOBODY && att[e] >= MAX_ATTEMPTS -> tx = TX_QUARANTINE
		:: else -> tx = ((LANE_BLOCKED(e) || PROBE_BLOCKED(e)) -> TX_GIVEBACK : TX_CLAIM)
		fi;
		if
		:: tx == TX_CLAIM -> printf("relay 1: RelayClaim locks and claims %d.%d (uncommitted)\n", EV(e))
		:: tx == TX_QUARANTINE -> printf("relay 1: RelayClaim locks %d.%d, abandoned: quarantines it (uncommitted)\n", EV(e))
		:: tx == TX_GIVEBACK -> printf("relay 1: RelayClaim claims %d.%d, RelayClaimVerify gives it back (uncommitted)\n", EV(e))
		fi
	   }
	OR_PCRASH
	fi;

	/* PR3 COMMIT of the claim (claimN returns). */
	if
	:: atomic {
		if
		:: tx == TX_CLAIM ->
			printf("relay 1: claim of %d.%d commits (lease)\n", EV(e));
			d_step {
				/* ONE LIVE LEASE PER ORDER (as at R3) */
				for (i : 0 .. EPO-1) {
					assert(FIRST(ORD(e)) + i == e || lease[FIRST(ORD(e)) + i] != LIVE)
				}
				i = 0;
				owner[e] = PIPE; lease[e] = LIVE; att[e]++; rowlock[e] = FREE; tx = 0;
				pl_ce = e
			}
		:: tx == TX_QUARANTINE ->
			quar[e] = 1; owner[e] = NOBODY; lease[e] = NONE; att[e] = 0; rowlock[e] = FREE;
			printf("relay 1: abandoned %d.%d quarantined, committed\n", EV(e));
			e = NOEV; tx = 0; rep = 0; CLAIM_UNLOCK; goto idle
		:: tx == TX_GIVEBACK ->
			owner[e] = NOBODY; lease[e] = NONE; rowlock[e] = FREE;
			printf("relay 1: %d.%d given back by RelayClaimVerify, committed\n", EV(e));
			e = NOEV; tx = 0; rep = 0; CLAIM_UNLOCK; goto idle
		fi
	   }
	OR_PCRASH
	fi;

	/* PR4 pipeline.claim after claimN: the look-up in the open set (the
	 * guard), then the queueing. */
	if
	:: atomic {
#ifndef NO_OPEN_GUARD
		/* RULE the guard: an event this relay still holds is not queued
		 * again; its pending outcome settles the new claim */
		if
		:: OPEN(e) ->
			printf("relay 1: %d.%d claimed again while its outcome is still to be written: not queued\n", EV(e));
#ifndef NO_ORPHAN_CHECK
			/* NO ORPHANED CLAIM: an event claimed again and not queued
			 * still has its earlier outcome to be written, which settles
			 * the new claim; or that outcome has settled it already (the
			 * row is no longer this owner's claim) */
			assert(!((pl_st[0] == PL_WRITTEN && pl_e[0] == e) || (pl_st[1] == PL_WRITTEN && pl_e[1] == e)) ||
				owner[e] != PIPE || pub[e]);
#endif
			e = NOEV; rep = 0; pl_ce = NOEV; pl_cexp = 0; CLAIM_UNLOCK; goto idle
		:: else
		fi;
#endif
		if
		:: pl_st[0] == PL_FREE -> i = 0
		:: else -> i = 1
		fi;
		pl_e[i] = e; pl_st[i] = PL_QUEUED; pl_rep[i] = rep; pl_exp[i] = pl_cexp; pl_k[i] = 0;
		pl_ce = NOEV; pl_cexp = 0;
		printf("relay 1: %d.%d queued (slot %d)\n", EV(e), i);
		e = NOEV; rep = 0; i = 0; CLAIM_UNLOCK; goto idle
	   }
	OR_PCRASH
	fi
}

/* A worker (pipeline.go attempt): publishes a queued claim within its
 * lease, or returns it unattempted, and books the outcome. */
proctype Worker(byte k) {
	byte i;
end_worker:
	do
	:: atomic {
		/* PW1 the publish starts while the claim's local deadline leaves
		 * PublishTimeout (publishDeadline, which reads only the lease the
		 * claim returned, not the row), or the claim is returned
		 * unattempted: shutdown, the breaker open, too little lease left. */
		pl_st[k] == PL_QUEUED ->
		if
		:: !pl_exp[k] ->
			printf("relay 1: Publish %d.%d starts (worker %d, replay: %d)\n", EV(pl_e[k]), k, pl_rep[k]);
			/* ONE EVENT IN FLIGHT PER ORDER (as at R3), across the other
			 * relays and this relay's other worker */
			assert(!(pl_st[1-k] == PL_PUB && ORD(pl_e[1-k]) == ORD(pl_e[k])));
			d_step {
				for (i : 2 .. RELAYS) {
					assert(inflight[i] == NOEV || ORD(inflight[i]) != ORD(pl_e[k]))
				}
				i = 0
			}
			pl_st[k] = PL_PUB
		:: pl_exp[k] || FAULT_OK ->
			if :: !pl_exp[k] -> FAULT :: else fi;
			printf("relay 1: %d.%d returned unattempted (worker %d)\n", EV(pl_e[k]), k);
			pl_k[k] = K_SKIP; pl_st[k] = PL_DONE
		fi
	   }
	:: atomic {
		/* PW2 the Publish call returns (R4), and the outcome is booked. */
		pl_st[k] == PL_PUB ->
		if
		:: FAULT_OK -> FAULT;
			printf("relay 1: Publish %d.%d failed: the sink's fault (unreachable)\n", EV(pl_e[k]));
			pl_k[k] = K_SINK
		:: OWN_ERR(pl_e[k]) ->
			printf("relay 1: Publish %d.%d failed: an error of its own\n", EV(pl_e[k]));
			pl_k[k] = K_FAIL
		:: !WF(pl_e[k]) && OWN_ERR(pl_e[k]) ->
			printf("relay 1: Publish %d.%d failed (permanent)\n", EV(pl_e[k]));
			pl_k[k] = K_PERM
#ifdef REFUSAL_AS_SINK_FAULT
		:: REFUSES(pl_e[k]) ->
			/* mutant: the refusal taken for the sink's fault */
			printf("relay 1: Publish %d.%d refused for good, taken for the sink's fault\n", EV(pl_e[k]));
			pl_k[k] = K_SINK
#endif
		:: pl_rep[k] && retention ->
			printf("relay 1: replay of %d.%d older than the horizon: acknowledged without a start\n", EV(pl_e[k]));
			delivered[pl_e[k]] = 1; pl_k[k] = K_ACK
		:: !(pl_rep[k] && retention && !WF(pl_e[k])) && !REFUSES(pl_e[k]) ->
			temporal_start(pl_e[k], pl_rep[k]); pl_k[k] = K_ACK
		:: !(pl_rep[k] && retention && !WF(pl_e[k])) && !REFUSES(pl_e[k]) && FAULT_OK -> FAULT;
			temporal_start(pl_e[k], pl_rep[k]);
			printf("relay 1: ... but the answer to %d.%d was lost (DeadlineExceeded: the sink's fault)\n", EV(pl_e[k]));
			pl_k[k] = K_SINK
		fi;
		pl_st[k] = PL_DONE
	   }
	od
}

/* The bookkeeper (keepBooks, books.flush): writes a booked outcome, fenced
 * by claimed_by = PIPE, then removes the event from the open set. */
#ifdef NO_SINK_FENCE
#define SINK_FENCED(c) true
#else
/* RULE RelaySinkRelease is fenced by claimed_by = @owner */
#define SINK_FENCED(c) (owner[c] == PIPE)
#endif
/* keepBooks removes the event from the open set after the flush wrote it:
 * a later step, unless the claim mutex makes the two one (CLAIM_MUTEX) */
#ifdef CLAIM_MUTEX
#define REMOVE(k) pl_st[k] = PL_FREE; pl_e[k] = NOEV; pl_k[k] = 0; pl_rep[k] = 0; pl_exp[k] = 0
#else
#define REMOVE(k) pl_st[k] = PL_WRITTEN
#endif
#define WRITE(k) :: BOOKS_MAY && pl_st[k] == PL_DONE && UPDATABLE(pl_e[k]) -> b = pl_e[k]; \
	if \
	:: pl_k[k] == K_ACK -> \
		if \
		:: owner[b] == PIPE && !pub[b] -> \
			printf("relay 1: RelayMark %d.%d published\n", EV(b)); \
			/* FENCED MARK */ assert(owner[b] == PIPE); \
			/* NOTHING LOST */ assert(delivered[b]); \
			pub[b] = 1; lease[b] = NONE; replay[b] = 0; owner[b] = NOBODY; att[b] = 0 \
		:: else -> printf("relay 1: RelayMark %d.%d: 0 rows (fenced)\n", EV(b)) \
		fi \
	:: pl_k[k] == K_FAIL || pl_k[k] == K_PERM -> \
		if \
		:: owner[b] == PIPE && !pub[b] -> \
			if \
			:: pl_k[k] == K_PERM || att[b] >= MAX_ATTEMPTS -> quar[b] = 1; att[b] = 0 \
			:: else \
			fi; \
			owner[b] = NOBODY; lease[b] = NONE; \
			printf("relay 1: RelayFail %d.%d (quarantined: %d)\n", EV(b), quar[b]) \
		:: else -> printf("relay 1: RelayFail %d.%d: 0 rows (fenced)\n", EV(b)) \
		fi \
	:: pl_k[k] == K_SINK || pl_k[k] == K_SKIP -> \
		if \
		:: (pl_k[k] == K_SKIP && owner[b] == PIPE || pl_k[k] == K_SINK && SINK_FENCED(b)) && !pub[b] -> \
			owner[b] = NOBODY; lease[b] = NONE; \
			if :: att[b] > 0 -> att[b]-- :: else fi; \
			if :: pl_k[k] == K_SINK -> printf("relay 1: RelaySinkRelease %d.%d: attempt given back\n", EV(b)) \
			   :: else -> printf("relay 1: RelayRelease %d.%d: attempt given back\n", EV(b)) fi \
		:: else -> printf("relay 1: release of %d.%d: 0 rows (fenced)\n", EV(b)) \
		fi \
	fi; \
	b = NOEV; REMOVE(k)
#define DROP(k) :: pl_st[k] == PL_WRITTEN -> \
	printf("relay 1: %d.%d leaves the open set\n", EV(pl_e[k])); \
	pl_st[k] = PL_FREE; pl_e[k] = NOEV; pl_k[k] = 0; pl_rep[k] = 0; pl_exp[k] = 0

proctype Books() {
	byte b = NOEV;
end_books:
	do
	/* SPIN reports WRITE's asserts at this line; the mark's fence makes
	 * its fenced-mark assert hold, so the one that can fail is
	 * NOTHING LOST */
	:: atomic { if WRITE(0) WRITE(1) fi }
#ifndef CLAIM_MUTEX
	:: atomic { if DROP(0) DROP(1) fi }
#endif
	od
}
