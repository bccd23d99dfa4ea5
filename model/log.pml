/*
 * The log relay source (OUTFLOW_RELAY_SOURCE=log, issue 27) as a Promela
 * model, checked with SPIN: the outbox as an append-only log read by a
 * per-partition cursor. README.md ("The log source") maps each step to the
 * protocol the Go code implements, states the properties and lists what
 * the model abstracts away. The relay's loop (attempts, the bounds, the
 * refusal rule) is loop.pml, shared with relay.pml; this file is the log
 * source's part.
 *
 * Actors, one proctype each: Producer (the enqueue transactions, which take
 * their xid before the order's lane lock, and one unrelated transaction that
 * holds the horizon back), Reader (a relay process: lease, read, publish,
 * the fenced advance, and with RELEASES the partition given back while it
 * lives, as a relay over its share or shutting down does), Holds (the owner's hold worker), Clock (lease
 * expiry), Operator (retry, skip, replay on holds).
 *
 * Each atomic block is one step: one transaction, or one Publish call with
 * its outcome. Events are rows that are inserted and never updated; what the
 * relay writes is the partition's cursor row and the holds.
 *
 * Rules a mutant removes (mutants/log_*.pml), each marked RULE below:
 *   LOG_GATE_OWN_XID          the gate is the row's own xid, not
 *                             greatest(last_gate, xid)
 *   LOG_NO_EPOCH_CHECK        the advance ignores the cursor's epoch
 *   LOG_RELEASE_UNARMED       a hold is released without arming the epoch
 *   LOG_REPLAY_UNARMED        a replay inserts its hold without arming it
 *   LOG_ADVANCE_BEFORE_PUBLISH the cursor advances over a batch before it
 *                             is published
 *   LOG_NO_HORIZON            the reader ignores the snapshot's xmin
 *   LOG_NO_WINDOW_SHRINK      a crash loop never shrinks the window, so the
 *                             event that kills the relay is never isolated
 *   LOG_HEAD_OF_SKIPPED       the hold worker hands a skipped head's
 *                             payload as a publish, not its tombstone, so
 *                             the skip's hold or a replay over the skip
 *                             publishes it
 *   REFUSAL_AS_SINK_FAULT     loop.pml's rule, here: an event the sink
 *                             refuses for good (REFUSED) makes no hold, the
 *                             batch stops there, the partition stalls
 * With RETENTION (the Retention proctype: retention dropping a range of
 * positions, RetainLog):
 *   LOG_RETIRE_BY_POS         a range is dropped once behind the cursor by
 *                             position, not by key (gate, pos)
 *   LOG_RETIRE_UNSEALED       a range is dropped without waiting for the
 *                             writers that took a position in it to end
 *   LOG_RETIRE_HELD           a range is dropped while a hold owns an event
 *                             in it
 *   LOG_REPLAY_FIRST_ONLY     a replay is refused only when its first event
 *                             is in a retiring range, not when a later one
 *                             it delivers is
 * With SWITCH (a database switching from outbox_events to the log, and a
 * producer writing to outbox_events again: order 0 has events 1 and 2 in
 * outbox_events, 1 quarantined unless QUAR0=0, its log events come after,
 * and a producer on poll may write one more to outbox_events at any time:
 * a transaction that read the recorded source (outbox_source) before an
 * operator changed it and commits after, or after a switch back; the
 * relays follow the recorded source by stopping one source's relay and
 * starting the other's, which is a reader's crash and restart here;
 * the Sweeper is the poll relay beside the log's reader, Switch the drain
 * that starts the reader; the operator retries or skips the quarantined
 * event):
 *   SWITCH_DRAIN_COUNTS_BEHIND the drain waits for an event behind a
 *                             quarantined one of its order (issue 37's
 *                             defect 2: the switch never ends)
 *   SWITCH_LOG_IGNORES_POLL   the log's reader publishes an event whose
 *                             order has an earlier one unpublished in
 *                             outbox_events
 *   SWITCH_POLL_IGNORES_LOG   the poll relay publishes an event whose order
 *                             has an earlier one unpublished in the log
 *                             (defect 7: a switch back reorders an order)
 */

/* ------------------------------------------------------------------ sizes */

#ifndef READERS
#define READERS 2         /* relay processes, each with its own owner id */
#endif
#ifndef EVENTS
#define EVENTS 3          /* enqueue transactions, one event each */
#endif
#ifndef ORDERS
#define ORDERS 2          /* order 1 gets the last event, order 0 the others */
#endif
#ifndef UNRELATED
#define UNRELATED 1       /* an unrelated transaction that takes an xid and stays open a while */
#endif
#ifndef RELEASES
#define RELEASES 0        /* graceful releases by a live reader, all readers together */
#endif
#define WMAX 2            /* the read window (OUTFLOW_BATCH_SIZE), halved per crash at one position */

#if ORDERS == 1
#define ORD(e) 0
#elif ORDERS == 2
#define ORD(e) ((e) / (EVENTS-1))
#else
#error "ORDERS must be 1 or 2"
#endif
#define BIT(o) (1 << (o))

/* The shared loop (loop.pml): MAX_ATTEMPTS (a hold's attempts before
 * quarantine), the bounds, the refusal rule. The liveness run's faults:
 * crashes, stalls and sink faults. */
#ifndef MAX_FAULTS
#define MAX_FAULTS 1
#endif
#include "loop.pml"

/* cowner: NOBODY, a live reader 1..READERS, or DEAD (a crashed process's
 * owner id: owners are unique per process start). */
#define DEAD   (READERS+1)
#define LIVE_OWNER(w) ((w) >= 1 && (w) <= READERS)
/* the cursor's lease (claimed until >= now(): LIVE, or not): loop.pml's */

/* ------------------------------------------------------- the transactions */

/* An enqueue transaction: not begun, its xid taken (the business writes
 * came first), its lane locked and its event inserted (uncommitted),
 * committed. */
#define T_NONE   0
#define T_XID    1
#define T_LOCKED 2
#define T_DONE   3
byte tst[EVENTS];
byte txid[EVENTS];
/* The event row's key (gate, pos) as one number: gate*8 + pos (pos < 8),
 * so that comparing keys is comparing (gate, pos) lexicographically. */
byte key[EVENTS];
byte seq[EVENTS];        /* aggregate_sequence, taken under the lane lock */
#define GATE(e) (key[e] / 8)
byte lastgate[ORDERS];   /* outbox_sequences.last_gate */
byte lastseq[ORDERS];    /* outbox_sequences.last_sequence */
bool lanelock[ORDERS];   /* the order's outbox_sequences row, locked until COMMIT */
byte nextxid = 1;        /* the next xid PostgreSQL assigns */
byte nextpos = 1;        /* the position sequence (nextval, not transactional) */
byte uxid;               /* the unrelated transaction's xid */
byte ust;                /* T_NONE, T_XID (open), T_DONE */
/* pg_snapshot_xmin(pg_current_snapshot()): the oldest xid still running,
 * or the next xid if none; kept up to date by every xid and COMMIT step. */
byte xmin = 1;

/* --------------------------------------------------------- the cursor row */

byte cur;                /* the cursor: the key of the last event passed (0: before every event) */
byte cowner;             /* the lease holder */
byte clease;             /* the lease */
byte epoch;              /* bumped by every change of the holds that a reader must see before it advances */
byte tries;              /* batches begun at this cursor position and not finished (0..2) */

/* ------------------------------------------------------------------ holds */

/* One hold per order at most: it owns the order's events from hfrom up to
 * the cursor; the readers skip the order while it exists. */
bool held[ORDERS];
byte hfrom[ORDERS];      /* the key of the next event the hold must publish (or later) */
byte hatt[ORDERS];       /* attempts of its head */
bool hquar[ORDERS];      /* quarantined: waits for the operator */
byte hrep[ORDERS];       /* a replay's hold: the cursor when it was made (its events up to it are redeliveries); 0: a failure's hold */

/* ------------------------------------------------------------------ ghosts */

bool pub[EVENTS];        /* published since committed or since last replayed */
bool firstpub[EVENTS];   /* ever published */
bool skipped[EVENTS];    /* skipped by an operator */
byte rels;               /* releases so far (RELEASES) */

/* ----------------------------------------------------- the switch (SWITCH) */

#ifdef SWITCH
#ifndef QUAR0
#define QUAR0 1
#endif
/* outbox_events' events, all of order 0: p0 and p1 (sequences 1 and 2)
 * written before the switch, p2 by a producer on poll later (its sequence
 * taken under the order's lane lock, as the log's are). */
#define NPOLL 3
byte pseq[NPOLL];
bool pw[NPOLL];          /* committed */
bool ppub[NPOLL];        /* published (marked) */
bool pquar[NPOLL];       /* quarantined */
bool pskip[NPOLL];       /* skipped by an operator */
bool switched;           /* the drain ended: the log's reader runs */
#define SWITCHED switched
/* outbox_events' event j is unpublished and of order o before sequence s
 * (outbox_unpublished_predecessors) */
#define PUNPUB(j, o, s) (pw[j] && (o) == 0 && pseq[j] < (s) && !ppub[j] && !pskip[j])
#define POLL_BEFORE(o, s) (PUNPUB(0, o, s) || PUNPUB(1, o, s) || PUNPUB(2, o, s))
/* only p0 is ever quarantined */
#define PQUAR_BEFORE(o, s) (PUNPUB(0, o, s) && pquar[0])
/* a log event the relays of outbox_events see unpublished
 * (outbox_unpublished_log_predecessors): committed, after the cursor or
 * owned by its order's hold (a skipped one until its tombstone is out) */
#define LOG_UNPUB(e) (tst[e] == T_DONE && (key[e] > cur || (held[ORD(e)] && key[e] >= hfrom[ORD(e)])))
#define LBEFORE(e, s) (ORD(e) == 0 && seq[e] < (s) && LOG_UNPUB(e))
#if EVENTS == 2
#define LOG_BEFORE(s) (LBEFORE(0, s) || LBEFORE(1, s))
#else
#define LOG_BEFORE(s) (LBEFORE(0, s) || LBEFORE(1, s) || LBEFORE(2, s))
#endif
#ifdef SWITCH_LOG_IGNORES_POLL
#define WAITS(o, s) false
#else
/* RULE the log's lane goes on in outbox_events: LogBatch's and
 * LogHoldNext's waits */
#define WAITS(o, s) POLL_BEFORE(o, s)
#endif
#else
#define SWITCHED true
#define WAITS(o, s) false
#endif

/* The hold worker's state is global so that a crash of its owner's process
 * resets it (it is a goroutine of that process). */
byte hw_tok;             /* the owner it works for */
byte hw_o;               /* the hold it works on */
byte hw_e;               /* the event it publishes */
byte hw_st;              /* HW_* */
#define HW_IDLE    0
#define HW_CLAIMED 1     /* the attempt is counted */
#define HW_OK      2     /* published: to record */
#define HW_FAIL    3     /* its own transient error: to record */
#define HW_PERM    4     /* its own permanent error: to record */
#define HW_SINK    5     /* the sink's fault: the attempt to give back */

/* ----------------------------------------------------------------- helpers */

/* RULE the horizon: a reader reads only rows whose gate is below its
 * snapshot's xmin. */
#ifdef LOG_NO_HORIZON
#define BELOW_HORIZON(e) true
#else
#define BELOW_HORIZON(e) (GATE(e) < xmin)
#endif
/* A row the read statement returns after key k: committed (visible), after
 * k, below the horizon. */
#define VIS_AFTER(e, k) (tst[e] == T_DONE && key[e] > (k) && BELOW_HORIZON(e))
#if EVENTS == 2
#define ANY_VIS (VIS_AFTER(0, cur) || VIS_AFTER(1, cur))
#elif EVENTS == 3
#define ANY_VIS (VIS_AFTER(0, cur) || VIS_AFTER(1, cur) || VIS_AFTER(2, cur))
#else
#error "EVENTS must be 2 or 3"
#endif

/* Covered: an event the cursor may pass. Published, skipped, or owned by
 * its order's hold. */
#define COVERED(e) (pub[e] || skipped[e] || (held[ORD(e)] && key[e] >= hfrom[ORD(e)]))

/* The window: WMAX at a fresh position, halved per batch begun there that
 * never finished (its relay died); a batch of one that died isolates its
 * event. */
#ifdef LOG_NO_WINDOW_SHRINK
#define WINDOW(t) WMAX
#define ISOLATE   false
#else
#define WINDOW(t) ((t) == 0 -> WMAX : 1)
#define ISOLATE   (tries >= 2)
#endif

/* the first committed event of order o with lo <= key <= cur: a hold's
 * head (a skipped one's tombstone is handed in its place: Holds' H1) */
inline head(o, lo, res) {
	res = NOEV;
	for (hi : 0 .. EVENTS-1) {
		if
		:: tst[hi] == T_DONE && ORD(hi) == o && key[hi] >= lo && key[hi] <= cur &&
		   (res == NOEV || key[hi] < key[res]) -> res = hi
		:: else
		fi
	}
	hi = 0
}

inline recompute_xmin() {
	xmin = nextxid;
	for (xi : 0 .. EVENTS-1) {
		if
		:: (tst[xi] == T_XID || tst[xi] == T_LOCKED) && txid[xi] < xmin -> xmin = txid[xi]
		:: else
		fi
	}
	if
	:: ust == T_XID && uxid < xmin -> xmin = uxid
	:: else
	fi;
	xi = 0
}

/* -------------------------------------------------------------- retention */

#ifdef RETENTION
/* One range partition of outbox_log: the positions from RANGE_LO below
 * RANGE_END (with the defaults 1 and 2, the first event's position only;
 * with RANGE_LO 2 and RANGE_END 3, the second's: a range after the one a
 * replay starts in). */
#ifndef RANGE_LO
#define RANGE_LO 1
#endif
#ifndef RANGE_END
#define RANGE_END 2
#endif
#define POS(e) (key[e] % 8)
#define IN_RANGE(e) (tst[e] >= T_LOCKED && POS(e) >= RANGE_LO && POS(e) < RANGE_END)
bool sealed;             /* T2: the sequence passed the range */
byte sxmax;              /* the xmax of the seal's snapshot */
bool retiring;           /* T3: the range passed the rule */
bool dropped;            /* T4: detached and dropped */
#ifdef LOG_REPLAY_FIRST_ONLY
#define REPLAYABLE(e) !(retiring && IN_RANGE(e))
#else
/* RULE a replay delivers nothing of a retiring range: it is refused when
 * its first event lies below the end of a retiring range (LogOpReplay). Its
 * order's later events have later positions, so any of them may lie in that
 * range, whose rows may be gone already. */
#define REPLAYABLE(e) !(retiring && POS(e) < RANGE_END)
#endif
#else
#define REPLAYABLE(e) true
#endif

/* A publish reaching the sink. */
inline publish(t) {
#ifdef RETENTION
	/* NOTHING DROPPED UNREAD: nothing publishes an event of a dropped range */
	assert(!(dropped && IN_RANGE(t)));
#endif
	/* SKIP IS FINAL: nothing publishes an event after an operator skipped
	 * it */
	assert(!skipped[t]);
	if
	:: !firstpub[t] ->
		/* FIRST PUBLISHES IN ORDER: the first publish of an event comes
		 * after the first publish of every earlier event of its order, or
		 * that event was skipped by an operator */
		for (pi : 0 .. EVENTS-1) {
			assert(!(tst[pi] >= T_LOCKED && ORD(pi) == ORD(t) && seq[pi] < seq[t]) || firstpub[pi] || skipped[pi])
		}
		pi = 0;
#ifdef SWITCH
		/* FIRST PUBLISHES IN ORDER, across both tables: every earlier
		 * event of its order in outbox_events is published or skipped */
		for (pi : 0 .. NPOLL-1) {
			assert(!PUNPUB(pi, ORD(t), seq[t]))
		}
		pi = 0;
#endif
		firstpub[t] = 1
	:: else
	fi;
	pub[t] = 1
}

/* --------------------------------------------------------------- Producer */

/* P1 the business transaction's first write: it gets its xid.
 * P2 Enqueue: the upsert of the order's outbox_sequences row (row lock until
 *    COMMIT) stamps gate = greatest(last_gate, pg_current_xact_id()) and the
 *    next sequence, and the event row is inserted with that gate and
 *    nextval() as pos.
 * P3 COMMIT.
 * U1, U2: the unrelated transaction's xid, its COMMIT. */
#define P_XID(t) :: tst[t] == T_NONE -> tst[t] = T_XID; txid[t] = nextxid; nextxid++; recompute_xmin(); \
	printf("producer: tx %d (order %d) takes xid %d\n", t, ORD(t), txid[t])
#ifdef LOG_GATE_OWN_XID
#define STAMP(t) g = txid[t]
#else
/* RULE the lane gate: greatest(last_gate, own xid) */
#define STAMP(t) g = (lastgate[ORD(t)] > txid[t] -> lastgate[ORD(t)] : txid[t])
#endif
#define P_LOCK(t) :: tst[t] == T_XID && !lanelock[ORD(t)] -> lanelock[ORD(t)] = 1; STAMP(t); lastgate[ORD(t)] = g; \
	lastseq[ORD(t)]++; seq[t] = lastseq[ORD(t)]; key[t] = g*8 + nextpos; nextpos++; tst[t] = T_LOCKED; \
	printf("producer: tx %d locks order %d: sequence %d, gate %d, pos %d (uncommitted)\n", t, ORD(t), seq[t], g, key[t] % 8); g = 0
#define P_COMMIT(t) :: tst[t] == T_LOCKED -> commit(t)

inline commit(t) {
	/* NO EVENT BEHIND THE CURSOR: a row that becomes visible lands after
	 * the cursor, where a reader will read it */
	assert(key[t] > cur);
	tst[t] = T_DONE; lanelock[ORD(t)] = 0; recompute_xmin();
	printf("producer: tx %d commits: event %d.%d (key %d.%d)\n", t, ORD(t), seq[t], GATE(t), key[t] % 8)
}

#if EVENTS == 2
#define EACHT(M) M(0) M(1)
#else
#define EACHT(M) M(0) M(1) M(2)
#endif

proctype Producer() {
	byte g, xi;
end_producer:
	do
	:: atomic {
		if
		EACHT(P_XID)
		EACHT(P_LOCK)
		EACHT(P_COMMIT)
#ifdef SWITCH
		:: !pw[2] && !lanelock[ORD(0)] ->
			/* a producer on poll: its transaction (sequence under the
			 * lane lock, COMMIT) writes to outbox_events, one step */
			lastseq[0]++; pseq[2] = lastseq[0]; pw[2] = 1;
			printf("producer: a producer on poll commits %d.%d to outbox_events\n", 0, pseq[2])
#endif
#if UNRELATED
		:: ust == T_NONE -> ust = T_XID; uxid = nextxid; nextxid++; recompute_xmin();
			printf("producer: unrelated tx takes xid %d (open)\n", uxid)
		:: ust == T_XID -> ust = T_DONE; recompute_xmin();
			printf("producer: unrelated tx commits\n")
#endif
		fi
	   }
	od
}

/* ------------------------------------------------------------------ Reader */

/* A crash of reader r at any step, and its restart as a new owner: its
 * committed writes stay (the cursor's lease until it expires, tries), its
 * hold worker dies with it. */
inline crash(w) {
	printf("reader %d: CRASH and restart\n", w);
	if
	:: cowner == w -> cowner = DEAD
	:: else
	fi;
	if
	:: hw_tok == w -> hw_st = HW_IDLE; hw_tok = NOBODY; hw_o = 0; hw_e = NOEV
	:: else
	fi
}
#define RESET d_step { b0 = NOEV; b1 = NOEV; ve = 0; vh = 0; failed = 0; f0 = NOEV; f1 = NOEV; iso = 0; n = 0; np = 0; k = 0; hi = 0; vw = 0; wfail = 0 }
#define OR_CRASH :: atomic { FAULT_OK -> FAULT; crash(r); RESET }; goto idle

/* R3 one event of the batch: skipped if its order is held in the view or
 * failed earlier in this batch, else published under the live lease. */
#define OWNS (cowner == r && clease == LIVE)
#ifdef POISON
#define KILLS(e) ((e) == POISON)
#else
#define KILLS(e) false
#endif
/* REFUSED, the event the sink refuses for good (loop.pml's rule): never
 * published; its order goes to a hold, quarantined (at once for a
 * permanent refusal, after MAX_ATTEMPTS for an overdue publish: the model
 * lets the hold worker take either). */
#ifdef REFUSAL_AS_SINK_FAULT
/* mutant: the refusal taken for the sink's fault, as a throttle or a
 * timeout was before issue 37: the batch stops there, no hold */
#define REFUSE_ONE(x, idx) \
	printf("reader %d: %d.%d refused for good, taken for the sink's fault: the batch stops\n", r, ORD(x), seq[x]); goto advance
#else
#define REFUSE_ONE(x, idx) \
	printf("reader %d: %d.%d refused for good (its own fault): its order goes to a hold\n", r, ORD(x), seq[x]); \
	failed = failed | BIT(ORD(x)); \
	if :: ORD(x) == 0 -> f0 = x :: else -> f1 = x fi; np = idx + 1
#endif
#define PUBLISH_ONE(x, idx) \
	if \
	:: (vh | failed) & BIT(ORD(x)) -> np = idx + 1 \
	:: atomic { !((vh | failed) & BIT(ORD(x))) && (vw & BIT(idx)) -> \
		printf("reader %d: %d.%d waits for outbox_events: its order goes to a hold that waits\n", r, ORD(x), seq[x]); \
		failed = failed | BIT(ORD(x)); wfail = wfail | BIT(ORD(x)); \
		if :: ORD(x) == 0 -> f0 = x :: else -> f1 = x fi; np = idx + 1 } \
	:: else -> \
		if \
		:: atomic { OWNS && !KILLS(x) && !REFUSES(x) -> \
			printf("reader %d: publishes %d.%d\n", r, ORD(x), seq[x]); publish(x); np = idx + 1 } \
		:: atomic { OWNS && !KILLS(x) && !REFUSES(x) -> \
			printf("reader %d: %d.%d fails (its own error): its order goes to a hold\n", r, ORD(x), seq[x]); \
			failed = failed | BIT(ORD(x)); \
			if :: ORD(x) == 0 -> f0 = x :: else -> f1 = x fi; np = idx + 1 } \
		:: atomic { OWNS && FAULT_OK && !KILLS(x) -> FAULT; \
			printf("reader %d: %d.%d: the sink's fault, the batch stops\n", r, ORD(x), seq[x]); goto advance } \
		:: atomic { OWNS && REFUSES(x) -> REFUSE_ONE(x, idx) } \
		:: atomic { OWNS && KILLS(x) -> \
			printf("reader %d: publishing %d.%d kills the process\n", r, ORD(x), seq[x]); crash(r); RESET; goto idle } \
		:: atomic { !OWNS -> printf("reader %d: lost the lease\n", r); RESET; goto idle } \
		OR_CRASH \
		fi \
	fi

proctype Reader(byte r) {
	byte b0, b1;         /* the batch, in (gate, pos) order */
	byte ve;             /* the epoch of the view */
	byte vh;             /* the view of the holds: held orders */
	byte failed;         /* orders whose event failed in this batch */
	byte f0, f1;         /* the failed event of order 0, 1 */
	bool iso;            /* the batch isolates b0 */
	byte n;              /* the window */
	byte np;             /* batch entries done (the prefix) */
	byte vw;             /* the batch entries (bits) that wait for outbox_events (LogBatch's waits) */
	byte wfail;          /* orders (bits) that went to a hold that waits */
	byte k, hi, pi;
#ifdef LOG_ADVANCE_BEFORE_PUBLISH
	bool late;           /* mutant: the publishes after the advance */
#endif

idle:
end_idle:
	/* R1 take the partition: its lease is not live (never taken, expired,
	 * its holder dead or stalled). */
	atomic { clease != LIVE && SWITCHED -> cowner = r; clease = LIVE;
		printf("reader %d: takes the partition (cursor %d.%d, tries %d)\n", r, cur / 8, cur % 8, tries) };

read:
	/* R2 one transaction: the cursor row (epoch, tries), the holds, and
	 * the batch: (gate, pos) > cursor AND gate < xmin, ORDER BY gate, pos,
	 * LIMIT the window; tries + 1 recorded first, fenced by the owner. */
end_read:
	if
	:: atomic { OWNS && ANY_VIS ->
		d_step {
			ve = epoch;
#if ORDERS == 2
			vh = held[0] + 2*held[1];
#else
			vh = held[0];
#endif
			n = WINDOW(tries);
			iso = ISOLATE;
			if
			:: !iso -> tries = (tries < 2 -> tries + 1 : 2)
			:: else
			fi;
			b0 = NOEV; b1 = NOEV;
			for (k : 0 .. EVENTS-1) {
				if
				:: VIS_AFTER(k, cur) && (b0 == NOEV || key[k] < key[b0]) -> b0 = k
				:: else
				fi
			}
			for (k : 0 .. EVENTS-1) {
				if
				:: n > 1 && !iso && VIS_AFTER(k, key[b0]) && (b1 == NOEV || key[k] < key[b1]) -> b1 = k
				:: else
				fi
			}
			vw = 0;
			if
			:: WAITS(ORD(b0), seq[b0]) -> vw = 1
			:: else
			fi;
			if
			:: b1 != NOEV && WAITS(ORD(b1), seq[b1]) -> vw = vw | 2
			:: else
			fi;
			k = 0; np = 0; failed = 0
		}
		if
		:: iso -> printf("reader %d: a batch of one died here: isolates %d.%d\n", r, ORD(b0), seq[b0])
		:: else -> printf("reader %d: reads with epoch %d, holds on orders (bits) %d, window %d: %d.%d\n", r, ve, vh, n, ORD(b0), seq[b0]);
			if
			:: b1 != NOEV -> printf("reader %d: ... and %d.%d\n", r, ORD(b1), seq[b1])
			:: else
			fi
		fi
	   }
	:: atomic { !OWNS -> RESET; goto idle }
#if RELEASES > 0
	:: atomic { rels < RELEASES && OWNS ->
		/* G1 the release (LogRelease), between batches: the batch in
		 * flight advanced first, the hold worker stopped (a step it left
		 * half done is lost, its attempt counted, as in a crash), then
		 * the lease given back, fenced by the owner. The reader lives on
		 * and may take the partition again (R1) under the same owner. */
		rels++;
		if
		:: hw_tok == r -> hw_st = HW_IDLE; hw_tok = NOBODY; hw_o = 0; hw_e = NOEV
		:: else
		fi;
		cowner = NOBODY; clease = NONE;
		printf("reader %d: gives the partition back (cursor %d.%d)\n", r, cur / 8, cur % 8);
		RESET }; goto idle
#endif
	OR_CRASH
	fi;
	if
	:: iso ->
		/* the isolated event fails as if by its own error, quarantined */
		if
		:: vh & BIT(ORD(b0)) -> skip
		:: else -> failed = BIT(ORD(b0)); if :: ORD(b0) == 0 -> f0 = b0 :: else -> f1 = b0 fi
		fi;
		np = 1; goto advance
	:: else
	fi;
#ifdef LOG_ADVANCE_BEFORE_PUBLISH
	/* mutant: the advance first, the publishes after */
	np = (b1 == NOEV -> 1 : 2);
	goto advance;
publish_late:
#endif

	PUBLISH_ONE(b0, 0);
	if
	:: b1 != NOEV -> PUBLISH_ONE(b1, 1)
	:: else
	fi;

advance:
	/* R4 the advance, one transaction fenced by the owner and the epoch:
	 * the holds of the failed orders inserted, the cursor set to the last
	 * event of the longest prefix done (published, held, failed into a
	 * hold), tries back to 0. Off the latency path in the code (after the
	 * publishes), which the model's order of steps is. */
	if
	:: atomic { cowner == r && (
#ifndef LOG_NO_EPOCH_CHECK
		/* RULE the epoch check */
		epoch == ve
#else
		true
#endif
		) ->
		d_step {
			if
			:: failed & 1 -> held[0] = 1; hfrom[0] = key[f0]; hatt[0] = (iso -> MAX_ATTEMPTS : ((wfail & 1) -> 0 : 1)); hquar[0] = iso; hrep[0] = 0
			:: else
			fi;
#if ORDERS == 2
			if
			:: failed & 2 -> held[1] = 1; hfrom[1] = key[f1]; hatt[1] = (iso -> MAX_ATTEMPTS : ((wfail & 2) -> 0 : 1)); hquar[1] = iso; hrep[1] = 0
			:: else
			fi;
#endif
			if
			:: np >= 1 -> k = (np >= 2 -> key[b1] : key[b0]);
				/* NO ADVANCE PAST AN UNPUBLISHED EVENT: every event the
				 * cursor passes is published, skipped or its order's hold
				 * owns it */
				for (hi : 0 .. EVENTS-1) {
					assert(!(tst[hi] == T_DONE && key[hi] > cur && key[hi] <= k) || COVERED(hi))
				}
				cur = k
			:: else
			fi;
			tries = 0
		}
		printf("reader %d: advances to %d.%d (holds inserted for %d)\n", r, cur / 8, cur % 8, failed);
#ifdef LOG_ADVANCE_BEFORE_PUBLISH
		if
		:: np > 0 && !iso && !late -> late = 1; np = 0; failed = 0; goto publish_late
		:: else -> late = 0
		fi;
#endif
		RESET
	   }
	:: atomic { cowner == r && epoch != ve ->
		/* fenced by the epoch: the holds changed since the view; the
		 * batch is read again (tries back: nobody died) */
		tries = 0;
		printf("reader %d: advance refused: epoch %d, the view's %d\n", r, epoch, ve);
		RESET
	   }
	:: atomic { cowner != r -> printf("reader %d: advance fenced (no longer the owner)\n", r); RESET; goto idle }
	OR_CRASH
	fi;
	goto read
}

/* ------------------------------------------------------------------- Holds */

/* The hold worker of the partition's owner: it publishes a hold's events
 * in order, each attempt counted before its publish, with quarantine after
 * MAX_ATTEMPTS, and releases a hold that caught up with the cursor. */
/* A hold whose head waits for an earlier event of its order in
 * outbox_events (LogHoldNext's waits) is not worked: LogHoldWait makes it
 * due again later, with no attempt, and the worker turns to the others. */
#define INRANGE(e, o) (tst[e] == T_DONE && ORD(e) == (o) && key[e] >= hfrom[o] && key[e] <= cur)
#define EARLIER(a, b, o) (INRANGE(a, o) && key[a] < key[b])
#if EVENTS == 2
#define ISHEAD(e, o) (INRANGE(e, o) && !EARLIER(0, e, o) && !EARLIER(1, e, o))
#define HEAD_WAITS(o) ((ISHEAD(0, o) && WAITS(o, seq[0])) || (ISHEAD(1, o) && WAITS(o, seq[1])))
#else
#define ISHEAD(e, o) (INRANGE(e, o) && !EARLIER(0, e, o) && !EARLIER(1, e, o) && !EARLIER(2, e, o))
#define HEAD_WAITS(o) ((ISHEAD(0, o) && WAITS(o, seq[0])) || (ISHEAD(1, o) && WAITS(o, seq[1])) || (ISHEAD(2, o) && WAITS(o, seq[2])))
#endif
#define HOLD_OK(o) (held[o] && !hquar[o] && !HEAD_WAITS(o))
#if ORDERS == 2
#define HOLD_TODO (HOLD_OK(0) || HOLD_OK(1))
#else
#define HOLD_TODO HOLD_OK(0)
#endif
/* RULE a skipped head is handed as its tombstone (LogHoldNext's skipped,
 * Event.Skipped, SkipPublisher; no payload), never as its payload: by the
 * skip's own hold, and again by a replay's over the skip. */
#ifdef LOG_HEAD_OF_SKIPPED
#define TOMBSTONE(x) false
#else
#define TOMBSTONE(x) skipped[x]
#endif
proctype Holds() {
	byte o, x, hi, pi;
end_holds:
	do
	:: atomic {
		/* H1 a hold's head: its attempt counted, fenced by the owner (the
		 * hold worker belongs to the current owner's process); a head
		 * that used up its attempts (its publishes kept dying) is
		 * quarantined instead */
		hw_st == HW_IDLE && clease == LIVE && LIVE_OWNER(cowner) && HOLD_TODO ->
		if
		:: HOLD_OK(0) -> o = 0
#if ORDERS == 2
		:: HOLD_OK(1) -> o = 1
#endif
		fi;
		head(o, hfrom[o], x);
		/* (HOLD_OK: the head does not wait for outbox_events) */
		assert(x == NOEV || !WAITS(o, seq[x]));
		if
		:: x != NOEV && TOMBSTONE(x) ->
			/* H1-H3 for a skipped head as one step: its tombstone handed
			 * (no publish of the event: SKIP IS FINAL does not apply; a
			 * crash before the record only hands it again, and a failed
			 * tombstone is retried, never quarantined) and the hold moved
			 * past it */
			hfrom[o] = key[x] + 1; hatt[o] = 0;
			printf("holds: hands the tombstone of %d.%d and moves past it\n", o, seq[x])
		:: x != NOEV && !TOMBSTONE(x) && hatt[o] >= MAX_ATTEMPTS ->
			hquar[o] = 1;
			printf("holds: %d.%d used its attempts: quarantined\n", o, seq[x])
		:: x != NOEV && !TOMBSTONE(x) && hatt[o] < MAX_ATTEMPTS ->
			hatt[o]++; hw_tok = cowner; hw_o = o; hw_e = x; hw_st = HW_CLAIMED;
			printf("holds: %d.%d, attempt %d (owner %d)\n", o, seq[x], hatt[o], hw_tok)
		:: x == NOEV ->
			/* H4 the release, one transaction fenced by the owner: the
			 * cursor row locked, nothing of the order left between the
			 * hold and the cursor, the hold deleted and the epoch armed */
			printf("holds: the hold of order %d caught up: released\n", o);
			for (hi : 0 .. EVENTS-1) {
				/* NO ADVANCE PAST AN UNPUBLISHED EVENT: the released hold
				 * leaves nothing unpublished behind the cursor */
				assert(!(tst[hi] == T_DONE && ORD(hi) == o && key[hi] <= cur) || pub[hi] || skipped[hi])
			}
			hi = 0;
			held[o] = 0; hfrom[o] = 0; hatt[o] = 0; hrep[o] = 0;
#ifndef LOG_RELEASE_UNARMED
			/* RULE arming: the release bumps the epoch */
			epoch++
#endif
		fi;
		o = 0; x = 0
	   }
	:: atomic {
		/* H2 the publish, under the owner's live lease */
		hw_st == HW_CLAIMED && cowner == hw_tok && clease == LIVE ->
		if
		:: !KILLS(hw_e) && !REFUSES(hw_e) -> printf("holds: publishes %d.%d\n", hw_o, seq[hw_e]); publish(hw_e); hw_st = HW_OK
		:: !KILLS(hw_e) && OWN_ERR(hw_e) -> printf("holds: %d.%d fails (transient)\n", hw_o, seq[hw_e]); hw_st = HW_FAIL
		:: !KILLS(hw_e) && OWN_ERR(hw_e) -> printf("holds: %d.%d fails (permanent)\n", hw_o, seq[hw_e]); hw_st = HW_PERM
		:: !KILLS(hw_e) && FAULT_OK -> FAULT; printf("holds: %d.%d: the sink's fault\n", hw_o, seq[hw_e]); hw_st = HW_SINK
#ifdef REFUSAL_AS_SINK_FAULT
		:: REFUSES(hw_e) -> printf("holds: %d.%d refused for good, taken for the sink's fault\n", hw_o, seq[hw_e]); hw_st = HW_SINK
#endif
		:: KILLS(hw_e) -> printf("holds: publishing %d.%d kills the process\n", hw_o, seq[hw_e]); crash(hw_tok)
		fi
	   }
	:: atomic {
		/* the owner lost the lease: the worker stops */
		hw_st == HW_CLAIMED && !(cowner == hw_tok && clease == LIVE) ->
		printf("holds: owner %d lost the lease\n", hw_tok);
		hw_st = HW_IDLE; hw_tok = NOBODY; hw_o = 0; hw_e = NOEV
	   }
	:: atomic {
		/* H3 the outcome, fenced by the owner */
		hw_st >= HW_OK ->
		if
		:: cowner == hw_tok ->
			if
			:: hw_st == HW_OK -> hfrom[hw_o] = key[hw_e] + 1; hatt[hw_o] = 0
			:: hw_st == HW_FAIL && hatt[hw_o] >= MAX_ATTEMPTS -> hquar[hw_o] = 1
			:: hw_st == HW_PERM -> hquar[hw_o] = 1
			:: hw_st == HW_SINK -> hatt[hw_o]--
			:: else
			fi;
			printf("holds: outcome of %d.%d recorded (quarantined: %d)\n", hw_o, seq[hw_e], hquar[hw_o])
		:: else -> printf("holds: outcome of %d.%d fenced\n", hw_o, seq[hw_e])
		fi;
		hw_st = HW_IDLE; hw_tok = NOBODY; hw_o = 0; hw_e = NOEV
	   }
	od
}

/* ------------------------------------------------------------------- Clock */

/* C1 the cursor's lease expires: always when its holder died, otherwise a
 * fault (a stall). Publishes are single steps here: the lease rule
 * (a publish starts only with PublishTimeout to spare) keeps a lease from
 * expiring during one. */
proctype Clock() {
end_clock:
	do
	:: atomic { clease == LIVE && (cowner == DEAD || FAULT_OK) ->
		if :: cowner != DEAD -> FAULT :: else fi;
		clease = EXPIRED;
		if
		:: cowner == DEAD -> printf("clock: the lease of the dead owner expired\n")
		:: else -> printf("clock: the lease of reader %d expired (a stall)\n", cowner)
		fi }
	od
}

/* ---------------------------------------------------------------- Operator */

/* O1 retry a quarantined hold; O2 skip its head: recorded skipped, the
 * hold staying at it so that its worker hands the tombstone in the
 * event's place before moving past it, or, when the head is a replay's
 * redelivery of an event delivered before (at or behind the cursor the
 * replay saw), only that redelivery is given up: the event stays
 * delivered, no skip is recorded (LogOpSkip), the hold moves past it; O3 replay a published event: a hold from it (unless the order has
 * one), its published events from there owed again, the epoch armed. */
#define RETRY(o) :: held[o] && hquar[o] -> hquar[o] = 0; hatt[o] = 0; printf("operator: retry the hold of order %d\n", o)
#define SKIP(o) :: held[o] && hquar[o] -> head(o, hfrom[o], x); \
	if \
	:: x != NOEV && key[x] <= hrep[o] -> pub[x] = 1; hfrom[o] = key[x] + 1; \
		printf("operator: skip the redelivery of %d.%d (delivered before the replay)\n", o, seq[x]) \
	:: x != NOEV && key[x] > hrep[o] -> skipped[x] = 1; printf("operator: skip %d.%d\n", o, seq[x]) \
	:: else \
	fi; \
	hquar[o] = 0; hatt[o] = 0; x = 0
#define CAN_REPLAY(e) (tst[e] == T_DONE && firstpub[e] && pub[e] && !held[ORD(e)] && REPLAYABLE(e))
#define REPLAY(e) :: CAN_REPLAY(e) -> \
	held[ORD(e)] = 1; hfrom[ORD(e)] = (key[e] <= cur -> key[e] : cur + 1); hatt[ORD(e)] = 0; hquar[ORD(e)] = 0; hrep[ORD(e)] = cur; \
	for (hi : 0 .. EVENTS-1) { if :: ORD(hi) == ORD(e) && tst[hi] == T_DONE && key[hi] >= key[e] -> pub[hi] = 0 :: else fi }; \
	hi = 0; REPLAY_ARM; printf("operator: replay from %d.%d\n", ORD(e), seq[e])
#ifdef LOG_REPLAY_UNARMED
#define REPLAY_ARM skip
#else
/* RULE a replay's hold arms the epoch too */
#define REPLAY_ARM epoch++
#endif
#define CAN_RETRY(o) (held[o] && hquar[o])

proctype Operator() {
	byte x, hi;
end_operator:
	do
	:: atomic { OP_OK && (CAN_RETRY(0)
#if ORDERS == 2
		|| CAN_RETRY(1)
#endif
		) -> OP;
		if
		RETRY(0)
		SKIP(0)
#if ORDERS == 2
		RETRY(1)
		SKIP(1)
#endif
		fi }
	:: atomic { OP_OK && (CAN_REPLAY(0) || CAN_REPLAY(1)
#if EVENTS == 3
		|| CAN_REPLAY(2)
#endif
		) ->
		if
		EACHT(REPLAY)
		fi; OP }
#ifdef SWITCH
	:: atomic { OP_OK && pw[0] && pquar[0] && !ppub[0] && !pskip[0] -> OP;
		if
		:: pquar[0] = 0; printf("operator: retry %d.%d (outbox_events)\n", 0, pseq[0])
		:: pskip[0] = 1; printf("operator: skip %d.%d (outbox_events)\n", 0, pseq[0])
		fi }
#endif
#ifdef LIVENESS
	:: OP_OK -> ops = MAX_OPS
#endif
	od
}

/* --------------------------------------------------------------- Retention */

#ifdef RETENTION
/* T2 seal: once nextval has passed the range, the xmax of a snapshot taken
 *    after (LogPassed, then LogSeal: two statements) is recorded; every
 *    transaction that took a position in the range took its xid before.
 * T3 retire, one transaction under the cursor rows' share locks (no cursor
 *    moves, no replay makes a hold meanwhile): sealed, the writers ended
 *    (sxmax <= xmin), and every committed row of the range is at or behind
 *    the cursor in key order and owned by no hold.
 * T4 drop (DETACH ... CONCURRENTLY, DROP): the rows are gone. */
#ifdef LOG_RETIRE_BY_POS
#define BEHIND(e) (POS(e) <= cur % 8)
#else
/* RULE behind the cursor in key order (gate, pos) */
#define BEHIND(e) (key[e] <= cur)
#endif
#ifdef LOG_RETIRE_UNSEALED
#define WRITERS_DONE true
#else
/* RULE sealed: every writer that took a position in the range ended */
#define WRITERS_DONE (sxmax <= xmin)
#endif
#ifdef LOG_RETIRE_HELD
#define UNHELD(e) true
#else
/* RULE no hold owns an event of the range */
#define UNHELD(e) !(held[ORD(e)] && key[e] >= hfrom[ORD(e)])
#endif
/* the rule's view of one row: only committed rows are visible to it */
#define LETGO(e) (!(tst[e] == T_DONE && POS(e) >= RANGE_LO && POS(e) < RANGE_END) || (BEHIND(e) && UNHELD(e)))
#if EVENTS == 2
#define LETGO_ALL (LETGO(0) && LETGO(1))
#else
#define LETGO_ALL (LETGO(0) && LETGO(1) && LETGO(2))
#endif

proctype Retention() {
	byte e;
end_retention:
	do
	:: atomic { !sealed && nextpos >= RANGE_END -> sealed = 1; sxmax = nextxid;
		printf("retention: the range is sealed (xmax %d)\n", sxmax) }
	:: atomic { sealed && !retiring && WRITERS_DONE && LETGO_ALL -> retiring = 1;
		printf("retention: the range is retiring\n") }
	:: atomic { retiring && !dropped ->
		for (e : 0 .. EVENTS-1) {
			/* NOTHING DROPPED UNREAD: every event of a dropped range is
			 * committed, passed by the cursor, and owned by no hold */
			assert(!IN_RANGE(e) || (tst[e] == T_DONE && key[e] <= cur && !(held[ORD(e)] && key[e] >= hfrom[ORD(e)])))
		}
		e = 0; dropped = 1;
		printf("retention: the range is dropped\n") }
	od
}
#endif

/* ------------------------------------------------------- Sweeper, Switch */

#ifdef SWITCH
/* The poll relay of outbox_events (the log source's sweeper; in the other
 * direction a poll starter's main relay: the same rule), one step per
 * event: its claim (the lane rule), publish and mark. RelayClaim sees what
 * a committed statement sees; an event it finds published stays so. */
#ifdef SWITCH_POLL_IGNORES_LOG
#define POLL_LOG_CLEAR(s) true
#else
/* RULE the lane goes on in the log: outbox_unpublished_log_predecessors */
#define POLL_LOG_CLEAR(s) !LOG_BEFORE(s)
#endif
#define POLL_READY(i) (pw[i] && !ppub[i] && !pskip[i] && !pquar[i] && !POLL_BEFORE(0, pseq[i]) && POLL_LOG_CLEAR(pseq[i]))

inline ppublish(i) {
	/* FIRST PUBLISHES IN ORDER, across both tables: every earlier event of
	 * its order, in the log and in outbox_events, is published or skipped */
	for (pi : 0 .. EVENTS-1) {
		assert(!(tst[pi] >= T_LOCKED && ORD(pi) == 0 && seq[pi] < pseq[i]) || firstpub[pi] || skipped[pi])
	}
	for (pi : 0 .. NPOLL-1) {
		assert(!PUNPUB(pi, 0, pseq[i]))
	}
	pi = 0;
	ppub[i] = 1;
	printf("relay (poll): publishes %d.%d from outbox_events\n", 0, pseq[i])
}

proctype Sweeper() {
	byte pi;
end_sweeper:
	do
	:: atomic { POLL_READY(0) -> ppublish(0) }
	:: atomic { POLL_READY(1) -> ppublish(1) }
	:: atomic { POLL_READY(2) -> ppublish(2) }
	od
}

/* The switch's drain (LogSwitchLeft): the log's reader starts once
 * outbox_events holds no event the poll relay can publish: not one behind
 * a quarantined event of its order (it waits for an operator), nor one
 * behind an unpublished event of the log (the reader publishes that). */
#ifdef SWITCH_DRAIN_COUNTS_BEHIND
#define BEHIND_QUAR(i) false
#else
/* RULE the drain does not wait behind a quarantine */
#define BEHIND_QUAR(i) PQUAR_BEFORE(0, pseq[i])
#endif
#define PLEFT(i) (pw[i] && !ppub[i] && !pskip[i] && !pquar[i] && !BEHIND_QUAR(i) && !LOG_BEFORE(pseq[i]))

proctype Switch() {
	atomic { !(PLEFT(0) || PLEFT(1) || PLEFT(2)) -> switched = 1;
		printf("relay (switch): outbox_events drained: the log's reader starts\n") }
}
#endif

/* ---------------------------------------------------------------- liveness */

/* Settled: published, skipped, or in a quarantined hold (an operator sees
 * it). Under weak fairness, with the faults and the operator bounded, every
 * event ends settled for good; the event that kills whoever publishes it
 * (POISON) and the one the sink refuses for good (REFUSED) included, and
 * every other order of the partition with them. */
#ifdef SWITCH
/* With SWITCH, an event behind a quarantined one of its order, in either
 * table, waits for an operator too; so does outbox_events' event of
 * order 0 behind a quarantined hold of the log. */
#define LQ(e, s) (tst[e] == T_DONE && ORD(e) == 0 && seq[e] < (s) && held[0] && hquar[0] && key[e] >= hfrom[0])
#if EVENTS == 2
#define LOGQ_BEFORE(s) (LQ(0, s) || LQ(1, s))
#else
#define LOGQ_BEFORE(s) (LQ(0, s) || LQ(1, s) || LQ(2, s))
#endif
#define SETTLED(e) (tst[e] == T_DONE && (pub[e] || skipped[e] || (held[ORD(e)] && hquar[ORD(e)] && key[e] >= hfrom[ORD(e)]) || \
	PQUAR_BEFORE(ORD(e), seq[e])))
#define PSETTLED(i) (ppub[i] || pskip[i] || PQUAR_BEFORE(0, pseq[i]))
#define PSETTLED_ALL ((PSETTLED(0) || pquar[0]) && PSETTLED(1) && (!pw[2] || PSETTLED(2) || LOGQ_BEFORE(pseq[2])))
#else
#define SETTLED(e) (tst[e] == T_DONE && (pub[e] || skipped[e] || (held[ORD(e)] && hquar[ORD(e)] && key[e] >= hfrom[ORD(e)])))
#define PSETTLED_ALL true
#endif
#if EVENTS == 2
ltl settle { <> [] (SETTLED(0) && SETTLED(1) && PSETTLED_ALL) }
#else
ltl settle { <> [] (SETTLED(0) && SETTLED(1) && SETTLED(2) && PSETTLED_ALL) }
#endif

init {
	byte i;
	atomic {
		for (i : 1 .. READERS) {
			run Reader(i)
		}
		i = 0;
		hw_e = NOEV;
		run Holds();
		run Clock();
		run Producer();
		run Operator();
#ifdef RETENTION
		run Retention();
#endif
#ifdef SWITCH
		pw[0] = 1; pseq[0] = 1; pquar[0] = QUAR0;
		pw[1] = 1; pseq[1] = 2;
		lastseq[0] = 2;
		run Sweeper();
		run Switch();
#endif
#ifdef LIVENESS
		run Idle()
#endif
	}
}
