/*
 * The CDC relay source's stream (outbox/cdc_stream.go, cdc_lanes.go,
 * cdc_bookkeeping.go, cdc.sql), as the fix of issue 21 defines it: the
 * stream leases what it publishes under its own owner (Owner + "/stream"),
 * verifies the lease in a fresh snapshot, admits an event into its lane
 * only behind predecessors it holds itself, and marks fenced by its owner.
 * Included by relay.pml when CDC is defined (cdc.pml): the sweeper is
 * poll.pml's Relay, the operator, the clock, the producer and Temporal are
 * relay.pml's. README.md maps each step (S1..S9) to the code.
 *
 * Rules a mutant removes (mutants/cdc_*.pml), each marked RULE below:
 *   CDC_NO_LEASE            the stream as it stood before the fix: no lease,
 *                           no verify, an unfenced mark, recent = every id
 *                           it tried to mark (defect 1)
 *   CDC_RECENT_AS_OWN       recent counts as the stream's own: in the
 *                           verify, and after a failed mark (defect 2)
 *   CDC_UNFENCED_MARK       CDCMark checks published_at IS NULL only
 *                           (defect 3)
 *   CDC_NO_VERIFY           no CDCLeaseVerify: admission on CDCSort's view
 *   CDC_NO_HELD_CHECK       admission trusts the verify (no held check)
 *   CDC_LEASE_NO_KEY_UPDATE CDCLease locks FOR NO KEY UPDATE: the replay's
 *                           fence does not wait for it
 *   CDC_NO_PUBLISH_DEADLINE a worker publishes a lane's head whatever its
 *                           lease (expired, taken over, cleared)
 *   CDC_LOCAL_CAP_HELD_ONLY the worker's local deadline is capped by held
 *                           blockers only, not by one marked since the
 *                           verify (wt-cdc fc03ab9)
 *   CDC_LANE_OWN_DEADLINE   each stream lease keeps its own deadline (the
 *                           protocol of cdc-protocol.md as first written)
 */

#ifdef CDC_NO_LEASE
#define CDC_UNFENCED_MARK
#define CDC_RECENT_AS_OWN
#endif

/* ------------------------------------------------------------ the stream */

/* The slot: every committed event, in commit order (Enqueue commits one
 * event per transaction). A session receives from its start position on. */
byte slog[NEV];
byte nlog;
byte spos;      /* the next position the session receives */
byte sstart;    /* where the session started: the slot's confirmed position then */

/* The session's view of each event (its lanes, held, recent, the sorter's
 * batch and the lease transaction). */
#define S_NONE   0  /* not received in this session */
#define S_RECV   1  /* received, waiting for the sorter */
#define S_CAND   2  /* a candidate of CDCSort's batch, waiting for CDCLease */
#define S_LEASE  3  /* leased by the uncommitted lease transaction, kept by CDCLeaseVerify */
#define S_BACK   4  /* leased, then given back by CDCLeaseVerify (uncommitted) */
#define S_LANE   5  /* in its lane, held: not published yet */
#define S_ACKED  6  /* published and acknowledged, held until its mark */
#define S_RECENT 7  /* marked by this session (recent) */
#define S_FAILED 8  /* its publish failed (transient): waiting for failLoop */
#define S_FAILP  9  /* its publish failed (permanent): waiting for failLoop */
#define S_GONE   10 /* settled and left to the sweeper, or done */
#define S_SINKF  11 /* its publish failed for the sink's fault: waiting for RelaySinkRelease */
byte sst[NEV];
byte sinflight; /* the event the stream's Publish call runs for, or NOEV */
byte vblk;      /* the blockers of the lease transaction's kept events, as its verify saw them */
byte vbnd;      /* those of them under the stream's live lease then: they bound the kept events' deadline */
bool stx;       /* the lease transaction is uncommitted */
#ifdef CDC_LANE_OWN_DEADLINE
byte lb[NEV];   /* the lease statement a stream lease came from: one deadline per statement */
byte nb;
#endif

/* The sweeper's claim (RelayClaim's @min_age_ms, @handed_off) takes an
 * event older than Grace, a retry, a replay or a hand-off. Grace is
 * abstracted: any event may be older than Grace at any moment (a slow
 * stream), so the sweeper may take any, hand-offs included. GRACE_UNREACHED,
 * for the mutants' shortest stories only: the stream is never that late,
 * and the sweeper takes only replays, retries (attempt_count > 0) and
 * expired leases (Grace < Lease: a lease expires after Grace). */
#ifdef GRACE_UNREACHED
#define SWEEPER_TAKES(e) (replay[e] || att[e] > 0 || owner[e] != NOBODY)
#endif

#define SLOT_APPEND(c) slog[nlog] = c; nlog++

#define HELD(p)     (sst[p] == S_LANE || sst[p] == S_ACKED)
#define IS_RECV(c)  (sst[c] == S_RECV)  /* in the sorter's batch */
#define IS_CAND(c)  (sst[c] == S_CAND)
/* CDCSort's first filter: a blocker the stream holds, a candidate earlier
 * in this batch, or recent */
#define SORT_OWN(p) (HELD(p) || sst[p] == S_CAND || sst[p] == S_RECENT)
/* CDCLeaseVerify: a predecessor under a live lease of the stream's owner
 * (this transaction's own leases included) */
#ifdef CDC_RECENT_AS_OWN
#define VERIFY_OWN(p) ((owner[p] == STREAM && lease[p] == LIVE) || sst[p] == S_LEASE || sst[p] == S_RECENT)
#else
#define VERIFY_OWN(p) ((owner[p] == STREAM && lease[p] == LIVE) || sst[p] == S_LEASE)
#endif

#define SHOLDER(c)  (owner[c] == STREAM || owner[c] == SDEAD)
/* A lease nobody alive acts on before it expires: a crashed relay's or
 * stream's, or one the live stream left (its mark failed or changed no
 * row): the clock always lets it expire, also in the liveness run. */
#define CRASHED(c)  (owner[c] == DEAD || owner[c] == SDEAD || (owner[c] == STREAM && (sst[c] == S_GONE || sst[c] == S_RECENT)))

/* RULE a lane shares its deadline: a stream lease ends no later than the
 * leases the stream holds on the event's predecessors (CDCLeaseVerify sets
 * claim_until = least(now() + lease, their claim_until)), so a later event
 * of the lane expires no later than an earlier one, and the publish of a
 * lane's head (which ends before its own deadline) ends before every
 * earlier event of its lane could be taken over. In the model: a stream
 * lease expires only after the later ones of its lane, and not while its
 * own publish runs. */
#ifndef CDC_LANE_OWN_DEADLINE
#if EPO == 2
#define LATER_LIVE(c) (SEQ(c) < 1 && lease[(c)+1] == LIVE && owner[(c)+1] == owner[c])
#else
#define LATER_LIVE(c) ((SEQ(c) < 2 && lease[(c)+1] == LIVE && owner[(c)+1] == owner[c]) || \
                       (SEQ(c) < 1 && lease[(c)+2] == LIVE && owner[(c)+2] == owner[c]))
#endif
#ifdef CDC_LOCAL_CAP_HELD_ONLY
/* the worker's local deadline capped only by held blockers: an event
 * admitted behind a blocker marked since the verify (recent) keeps its own
 * local deadline, later than its capped claim_until, which can then pass
 * during its publish */
byte ucap;
#define STREAM_BOUND(c) ((sinflight == (c) && !(ucap & BIT(c))) || (SHOLDER(c) && LATER_LIVE(c)))
#else
#define STREAM_BOUND(c) (sinflight == (c) || (SHOLDER(c) && LATER_LIVE(c)))
#endif
#define EXPIRE_GROUP(c) skip
#else
/* The protocol as first written: each lease statement's own deadline (its
 * events, of any aggregate, share now() + lease), and a publish starts when
 * PublishTimeout fits before its event's deadline. */
byte xg;
#define STREAM_BOUND(c) (sinflight != NOEV && SHOLDER(c) && (sinflight == (c) || \
	(owner[sinflight] == owner[c] && lb[sinflight] == lb[c])))
#define EXPIRE_GROUP(c) d_step { \
	for (xg : 0 .. NEV-1) { \
		if \
		:: xg != (c) && lease[xg] == LIVE && owner[xg] == owner[c] && lb[xg] == lb[c] -> lease[xg] = EXPIRED \
		:: else \
		fi \
	}; \
	xg = 0 }
#endif

/* RULE CDCLease locks FOR UPDATE, which OpsReplayFence's FOR KEY SHARE
 * waits for; FOR NO KEY UPDATE would not make it wait. */
#ifdef CDC_LEASE_NO_KEY_UPDATE
#define FENCE_WAITS(c) (rowlock[c] != FREE && rowlock[c] != STREAM)
#endif

/* RULE the stream publishes only under its live lease, with PublishTimeout
 * to spare (lease.publishDeadline) */
#if defined(CDC_NO_LEASE) || defined(CDC_NO_PUBLISH_DEADLINE)
#define LEASE_OK(e) true
#else
#define LEASE_OK(e) (owner[e] == STREAM && lease[e] == LIVE)
#endif

/* RULE CDCMark is fenced: claimed_by = the stream's owner */
#ifdef CDC_UNFENCED_MARK
#define MARK_WHERE(e) (!pub[e])
#else
#define MARK_WHERE(e) (owner[e] == STREAM && !pub[e])
#endif

/* RULE recent is only what CDCMark returned: a failed mark, or one that
 * changed no row, never enters it */
#ifdef CDC_RECENT_AS_OWN
#define MARK_MISSED S_RECENT
#else
#define MARK_MISSED S_GONE
#endif

/* CDCTakeFailed takes from the stream's own lease, or an expired one
 * (claim_until < now(): not a NULL one, which an operator's retry leaves);
 * before the fix, from any row not under a live lease */
#ifdef CDC_NO_LEASE
#define TAKE_WHERE(e) (lease[e] != LIVE && !pub[e] && !quar[e] && !skipped[e])
#else
#define TAKE_WHERE(e) ((owner[e] == STREAM || lease[e] == EXPIRED) && !pub[e] && !quar[e] && !skipped[e])
#endif

/* LANE ADMISSION: an event enters its lane with a live lease only behind
 * predecessors the stream is responsible for: every unpublished, unskipped
 * earlier event of its order is under the stream's live lease. So an event
 * committed after a replay of its predecessor waits for that replay, as on
 * the polling relay. (Not asserted without a lease, CDC_NO_LEASE: there
 * the stream's only notion of its own is held and recent, the rule
 * itself.) */
#ifdef CDC_NO_LEASE
#define ADMISSION_OK(p) true
#else
#define ADMISSION_OK(p) (lease[e] != LIVE || !HOLDS_BACK(p) || (owner[p] == STREAM && lease[p] == LIVE))
#endif
#define LANE_ADMISSION(e) \
	for (j : FIRST(ORD(e)) .. e) { \
		assert(j == e || ADMISSION_OK(j)) \
	}

/* The lane's head: held, not yet published, no earlier event of its lane
 * waiting (acknowledged ones are popped). */
#if EPO == 2
#define LANE_PRED(c) (SEQ(c) >= 1 && sst[(c)-1] == S_LANE)
#else
#define LANE_PRED(c) ((SEQ(c) >= 1 && sst[(c)-1] == S_LANE) || (SEQ(c) >= 2 && sst[(c)-2] == S_LANE))
#endif
#define IS_HEAD(c)   (sst[c] == S_LANE && !LANE_PRED(c))
#define PICK_HEAD(c) :: IS_HEAD(c) -> e = c
/* The mark loop marks in acknowledgement order: per lane, in sequence. */
#if EPO == 2
#define ACK_PRED(c) (SEQ(c) >= 1 && sst[(c)-1] == S_ACKED)
#else
#define ACK_PRED(c) ((SEQ(c) >= 1 && sst[(c)-1] == S_ACKED) || (SEQ(c) >= 2 && sst[(c)-2] == S_ACKED))
#endif
#define MARKABLE(c)  (sst[c] == S_ACKED && !ACK_PRED(c) && UPDATABLE(c))
#define PICK_MARK(c) :: MARKABLE(c) -> e = c
#define FAILREC(c)   ((sst[c] == S_FAILED || sst[c] == S_FAILP) && UPDATABLE(c))
#define PICK_FAIL(c) :: FAILREC(c) -> e = c
#define SINKREL(c)   (sst[c] == S_SINKF && UPDATABLE(c))
#define PICK_SINKREL(c) :: SINKREL(c) -> e = c

/* CDCRelease of a broken lane's waiting events (the lane of e's order),
 * fenced: claimed_by = the stream's owner AND published_at IS NULL; no
 * attempt to give back. Without a lease (CDC_NO_LEASE) they are only
 * handed to the sweeper. */
inline break_lane(e) {
	for (j : FIRST(ORD(e)) .. FIRST(ORD(e)) + EPO - 1) {
		if
		:: sst[j] == S_LANE ->
			if
			:: owner[j] == STREAM && !pub[j] -> owner[j] = NOBODY; lease[j] = NONE
			:: else
			fi;
			sst[j] = S_GONE;
			printf("stream: lane broken: %d.%d released to the sweeper\n", EV(j))
		:: else
		fi
	}
	j = 0
}

proctype Stream() {
	byte e = NOEV;
	byte j, k, q;
	byte gb;      /* the verify statement's give-backs, applied after it */
	bool ok;

end_stream:
	do
	/* S1 receive (cdc_stream.go receive): the next committed events from
	 * the slot, in commit order; the sorter takes every one received since
	 * its last turn. (The receiver runs on its own, but what it received is
	 * seen by nobody until the sort: the model receives a batch in the
	 * sorter's step, one or more events.)
	 * S2 sortLoop: CDCSort over the batch (read-only: done, sweeper or
	 * stream, and the blockers), then the first filter under the lanes'
	 * mutex: a 'stream' event whose blockers are all held, earlier
	 * candidates of this batch, or recent is a candidate; anything else is
	 * settled, or handed to the sweeper. */
	:: atomic {
		!stx && !ANY(IS_CAND) && spos < nlog ->
		do
		:: spos < nlog ->
			sst[slog[spos]] = S_RECV;
			printf("stream: receives %d.%d from the slot\n", EV(slog[spos]));
			spos++
		:: ANY(IS_RECV) -> break
		od;
		d_step {
		for (k : 0 .. NEV-1) {
			if
			:: k < nlog && sst[slog[k]] == S_RECV ->
				e = slog[k];
				if
				:: pub[e] || skipped[e] ->
					sst[e] = S_GONE;
					printf("stream: CDCSort %d.%d: done\n", EV(e))
				:: else ->
					if
					:: quar[e] || att[e] > 0 || lease[e] == LIVE || replay[e] ->
						sst[e] = S_GONE;
						printf("stream: CDCSort %d.%d: sweeper\n", EV(e))
					:: else ->
						ok = 1;
						for (j : FIRST(ORD(e)) .. e) {
							if
							:: j < e && HOLDS_BACK(j) && !SORT_OWN(j) -> ok = 0
							:: else
							fi
						}
						if
						:: ok ->
#ifdef CDC_NO_VERIFY
							/* admission on CDCSort's blockers */
							for (j : FIRST(ORD(e)) .. e) {
								if
								:: j < e && HOLDS_BACK(j) -> vblk = vblk | BIT(j)
								:: else
								fi
							}
#endif
#ifdef CDC_NO_LEASE
							/* dispatch: into the lane at once */
							sst[e] = S_LANE;
							printf("stream: CDCSort %d.%d: stream, its blockers are the stream's: into its lane\n", EV(e));
							/* LANE ADMISSION (see its definition) */
							LANE_ADMISSION(e)
#else
							sst[e] = S_CAND;
							printf("stream: CDCSort %d.%d: stream, a candidate\n", EV(e))
#endif
						:: else ->
							sst[e] = S_GONE;
							printf("stream: CDCSort %d.%d: a predecessor is not the stream's: handed to the sweeper\n", EV(e))
						fi
					fi
				fi
			:: else
			fi
		}
		e = NOEV; j = 0; k = 0; ok = 0;
#ifdef CDC_NO_LEASE
		vblk = 0
#endif
		}
	   }

#ifndef CDC_NO_LEASE
	/* S3 CDCLease (FOR UPDATE SKIP LOCKED: the conditions are the row's own
	 * columns, re-checked on the locked row), then CDCLeaseVerify in a fresh
	 * snapshot, repeated until it gives back nothing; uncommitted. */
	:: atomic {
		!stx && ANY(IS_CAND) ->
		d_step {
		for (k : 0 .. NEV-1) {
			if
			:: k < nlog && sst[slog[k]] == S_CAND ->
				e = slog[k];
				if
				:: !pub[e] && !quar[e] && !skipped[e] && att[e] == 0 && !replay[e] && lease[e] != LIVE && rowlock[e] == FREE ->
					rowlock[e] = STREAM; sst[e] = S_LEASE; stx = 1;
					printf("stream: CDCLease locks and leases %d.%d (uncommitted)\n", EV(e))
				:: else ->
					sst[e] = S_GONE;
					printf("stream: CDCLease skips %d.%d: to the sweeper\n", EV(e))
				fi
			:: else
			fi
		}
#ifndef CDC_NO_VERIFY
		/* RULE CDCLeaseVerify: give back a just-leased event with an
		 * unpublished, unskipped predecessor not under the stream's live
		 * lease. Each statement sees the previous one's give-backs. */
		do
		:: gb = 0;
		   for (e : 0 .. NEV-1) {
			if
			:: sst[e] == S_LEASE ->
				for (j : FIRST(ORD(e)) .. e) {
					if
					:: j < e && HOLDS_BACK(j) && !VERIFY_OWN(j) -> gb = gb | BIT(e)
					:: else
					fi
				}
			:: else
			fi
		   }
		   for (e : 0 .. NEV-1) {
			if
			:: gb & BIT(e) -> sst[e] = S_BACK;
				printf("stream: CDCLeaseVerify gives %d.%d back (uncommitted)\n", EV(e))
			:: else
			fi
		   }
		   /* repeated until it gives back nothing (a single statement gives
		    * back as much: a predecessor given back has a blocker that is
		    * also its successor's; the model checks the protocol as
		    * written) */
		   if
		   :: gb == 0 -> break
		   :: else
		   fi
		od;
		/* the blockers it returns for the events it keeps */
		for (e : 0 .. NEV-1) {
			if
			:: sst[e] == S_LEASE ->
				for (j : FIRST(ORD(e)) .. e) {
					if
					:: j < e && HOLDS_BACK(j) -> vblk = vblk | BIT(j)
					:: else
					fi
				}
			:: else
			fi
		}
#endif
		/* the lane's shared deadline: the predecessors under the stream's
		 * live lease bound a kept event's claim_until */
		for (e : 0 .. NEV-1) {
			if
			:: sst[e] == S_LEASE ->
				for (j : FIRST(ORD(e)) .. e) {
					if
					:: j < e && HOLDS_BACK(j) && ((owner[j] == STREAM && lease[j] == LIVE) || sst[j] == S_LEASE) -> vbnd = vbnd | BIT(j)
					:: else
					fi
				}
			:: else
			fi
		}
		e = NOEV; j = 0; k = 0; gb = 0
		}
	   }

	/* S4 COMMIT of the lease transaction; then admission, under the lanes'
	 * mutex: a kept event enters its lane only if every blocker of the
	 * verify's view is held or recent; otherwise CDCRelease, to the
	 * sweeper. */
	:: atomic {
		stx ->
		d_step {
		for (k : 0 .. NEV-1) {
			if
			:: k < nlog && sst[slog[k]] == S_BACK ->
				e = slog[k];
				owner[e] = NOBODY; lease[e] = NONE; rowlock[e] = FREE; sst[e] = S_GONE;
				printf("stream: %d.%d given back, committed: to the sweeper\n", EV(e))
			:: k < nlog && sst[slog[k]] == S_LEASE ->
				e = slog[k];
				owner[e] = STREAM; lease[e] = LIVE; rowlock[e] = FREE;
#ifdef CDC_LANE_OWN_DEADLINE
				lb[e] = nb;
#else
				/* its deadline is its held predecessors' (the lane's shared
				 * deadline): already past if one of their leases expired
				 * since the verify */
				for (j : FIRST(ORD(e)) .. e) {
					if
					:: j < e && (vbnd & BIT(j)) && !pub[j] && !(owner[j] == STREAM && lease[j] == LIVE) -> lease[e] = EXPIRED
					:: else
					fi
				}
#endif
				ok = 1;
#ifndef CDC_NO_HELD_CHECK
				/* RULE admission: every blocker held or recent */
				for (j : FIRST(ORD(e)) .. e) {
					if
					:: j < e && (vblk & BIT(j)) && !HELD(j) && sst[j] != S_RECENT -> ok = 0
					:: else
					fi
				}
#endif
				if
				:: ok -> sst[e] = S_LANE;
					printf("stream: lease of %d.%d commits; into its lane\n", EV(e));
#ifdef CDC_LOCAL_CAP_HELD_ONLY
					for (j : FIRST(ORD(e)) .. e) {
						if
						:: j < e && (vbnd & BIT(j)) && sst[j] == S_RECENT -> ucap = ucap | BIT(e)
						:: else
						fi
					}
#endif
					/* LANE ADMISSION (see its definition) */
					LANE_ADMISSION(e);
					/* ONE LEASE HOLDER PER ORDER: when an event enters the
					 * stream's lane under its live lease, no other holder
					 * has a live lease on an event of the order (a crashed
					 * one's counts until it expires) */
					for (q : FIRST(ORD(e)) .. FIRST(ORD(e)) + EPO - 1) {
						assert(q == e || lease[e] != LIVE || lease[q] != LIVE || owner[q] == STREAM)
					}
				:: else -> owner[e] = NOBODY; lease[e] = NONE; sst[e] = S_GONE;
					printf("stream: lease of %d.%d commits; a blocker is not held: CDCRelease, to the sweeper\n", EV(e))
				fi
			:: else
			fi
		}
#ifdef CDC_LANE_OWN_DEADLINE
		nb = (nb + 1) % NEV;
#endif
		vblk = 0; vbnd = 0; stx = 0; e = NOEV; j = 0; k = 0; q = 0; ok = 0
		}
	   }
#endif

	/* S5 work: a worker takes a lane's head and publishes it if
	 * PublishTimeout fits in its lease (publishDeadline); otherwise the
	 * lane breaks and its waiting events go back to the sweeper. One worker
	 * (MaxInFlight 1). */
	:: atomic {
		sinflight == NOEV && ANY(IS_HEAD) ->
		if
		EACH(PICK_HEAD)
		fi;
		if
		:: LEASE_OK(e) ->
			printf("stream: Publish %d.%d starts\n", EV(e));
			d_step {
				/* ONE EVENT IN FLIGHT PER ORDER (as in the relay) */
				for (j : 1 .. RELAYS) {
					assert(inflight[j] == NOEV || ORD(inflight[j]) != ORD(e))
				}
				j = 0;
				sinflight = e
			}
#ifndef CDC_NO_LEASE
		:: !LEASE_OK(e) || FAULT_OK ->
			if
			:: LEASE_OK(e) -> FAULT
			:: else
			fi;
			printf("stream: %d.%d: too little lease left to publish\n", EV(e));
			break_lane(e)
#endif
		fi;
		e = NOEV
	   }

	/* S6 the Publish call returns (publishOne -> publishAcked): failed
	 * (unreachable, permanent, or the answer lost after a start) or
	 * acknowledged. The lane pops on an acknowledgement and breaks on a
	 * failure: its waiting events go back to the sweeper. */
	:: atomic {
		sinflight != NOEV ->
		e = sinflight; sinflight = NOEV;
		if
		:: FAULT_OK -> FAULT;
			/* Temporal unreachable, Unavailable, throttled, ... (the sink's
			 * fault, fault.go), nothing started. A fault in the liveness
			 * run: the sink answers in the end. No attempt is counted:
			 * RelaySinkRelease gives the lease back (S10). */
			printf("stream: Publish %d.%d failed (unreachable: the sink's fault)\n", EV(e));
			sst[e] = S_SINKF
		:: true ->
			/* the event's own transient error (one that is no service
			 * error): failLoop counts an attempt */
			printf("stream: Publish %d.%d failed (the event's own, transient)\n", EV(e));
			sst[e] = S_FAILED
		:: !WF(e) ->
			printf("stream: Publish %d.%d failed (permanent)\n", EV(e));
			sst[e] = S_FAILP
		:: temporal_start(e, 0);
			printf("stream: %d.%d acknowledged\n", EV(e));
			sst[e] = S_ACKED
		:: FAULT_OK -> FAULT; temporal_start(e, 0);
			/* the start went through and its answer was lost: a
			 * DeadlineExceeded or Unavailable, the sink's fault too */
			printf("stream: ... but the answer to %d.%d was lost (the sink's fault)\n", EV(e));
			sst[e] = S_SINKF
		fi;
		if
		:: sst[e] != S_ACKED -> break_lane(e)
		:: else
		fi;
		e = NOEV
	   }

	/* S7 markLoop -> CDCMark, in acknowledgement order; recent gets what it
	 * returns. Or the statement fails: the event leaves held, not into
	 * recent. */
	:: atomic {
		ANY(MARKABLE) ->
		if
		EACH(PICK_MARK)
		fi;
		if
		:: MARK_WHERE(e) ->
			printf("stream: CDCMark %d.%d published\n", EV(e));
			/* NOTHING LOST (as in the relay's mark) */
			assert(delivered[e]);
#ifndef CDC_UNFENCED_MARK
			/* FENCED MARK (as in the relay's mark; not asserted in the
			 * mutants that remove the fence it restates) */
			assert(owner[e] == STREAM);
#endif
			pub[e] = 1; lease[e] = NONE; replay[e] = 0; owner[e] = NOBODY; att[e] = 0;
			sst[e] = S_RECENT
		:: else ->
			printf("stream: CDCMark %d.%d: 0 rows (fenced)\n", EV(e));
			sst[e] = MARK_MISSED
		fi;
		e = NOEV
	   }
	:: atomic {
		ANY(MARKABLE) && FAULT_OK -> FAULT;
		if
		EACH(PICK_MARK)
		fi;
		printf("stream: CDCMark %d.%d failed (error)\n", EV(e));
		sst[e] = MARK_MISSED;
		e = NOEV
	   }

	/* S10 the worker's RelaySinkRelease (cdc_stream.go, releaseSinkFaults
	 * with the stream's owner): the lease is given back, fenced by
	 * claimed_by = the stream's owner AND published_at IS NULL, and no
	 * attempt is counted (the stream's lease counted none); the event goes
	 * to the sweeper. Or the statement fails: the lease stays until it
	 * expires, and the event goes to the sweeper all the same. */
	:: atomic {
		ANY(SINKREL) ->
		if
		EACH(PICK_SINKREL)
		fi;
		if
#ifndef CDC_UNFENCED_SINK_RELEASE
		:: owner[e] == STREAM && !pub[e] ->
#else
		:: !pub[e] ->
			/* the attempt the taker counted is given back */
			if
			:: owner[e] != STREAM && att[e] > 0 -> att[e]--
			:: else
			fi;
#endif
			owner[e] = NOBODY; lease[e] = NONE;
			printf("stream: RelaySinkRelease %d.%d (no attempt counted)\n", EV(e))
		:: else ->
			printf("stream: RelaySinkRelease %d.%d: 0 rows (fenced)\n", EV(e))
		:: FAULT_OK -> FAULT;
			printf("stream: RelaySinkRelease %d.%d failed (error): the lease expires\n", EV(e))
		fi;
		sst[e] = S_GONE;
		e = NOEV
	   }

	/* S8 failLoop: CDCTakeFailed (the sweeper's owner, an attempt counted)
	 * and RelayFail (backoff, or quarantine when permanent or out of
	 * attempts), merged: the row is under a live lease in between. */
	:: atomic {
		ANY(FAILREC) ->
		if
		EACH(PICK_FAIL)
		fi;
		if
		:: TAKE_WHERE(e) ->
			att[e]++;
			if
			:: sst[e] == S_FAILP || att[e] >= MAX_ATTEMPTS -> quar[e] = 1; att[e] = 0
			:: else
			fi;
			owner[e] = NOBODY; lease[e] = NONE;
			printf("stream: CDCTakeFailed and RelayFail %d.%d (quarantined: %d)\n", EV(e), quar[e])
		:: else ->
			printf("stream: CDCTakeFailed %d.%d: not taken\n", EV(e))
		fi;
		sst[e] = S_GONE;
		e = NOEV
	   }

	/* S9 the stream's process crashes (or its session dies): its
	 * uncommitted lease transaction rolls back, a Publish call in flight
	 * reached Temporal before its deadline or never does, its leases stay
	 * until they expire. A standby (or the restarted process: a new owner)
	 * takes the slot and streams from the confirmed position, which is at
	 * most the first event the dead session had not settled. */
	:: atomic {
		FAULT_OK -> FAULT;
		printf("stream: CRASH; a standby takes the slot\n");
		d_step {
			for (k : 0 .. NEV-1) {
				if
				:: rowlock[k] == STREAM -> rowlock[k] = FREE
				:: else
				fi
			}
			stx = 0; vblk = 0; vbnd = 0; k = 0;
#ifdef CDC_LOCAL_CAP_HELD_ONLY
			ucap = 0;
#endif
		}
		if
		:: sinflight != NOEV ->
			e = sinflight;
			if
			:: temporal_start(e, 0)
			:: true
			fi;
			sinflight = NOEV; e = NOEV
		:: else
		fi;
		d_step {
			for (k : 0 .. NEV-1) {
				if
				:: owner[k] == STREAM -> owner[k] = SDEAD
				:: else
				fi
			}
			k = sstart;
			do
			:: k < spos && (sst[slog[k]] == S_GONE || sst[slog[k]] == S_RECENT) -> k++
			:: else -> break
			od;
			for (j : 0 .. NEV-1) {
				sst[j] = S_NONE
			}
			j = 0
		}
		spos = sstart;
		do
		:: spos < k -> spos++
		:: break
		od;
		sstart = spos; k = 0;
		printf("stream: the new session streams from position %d\n", spos)
	   }
	od
}
