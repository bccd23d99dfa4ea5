/*
 * The relay's loop, shared by every source's model: relay.pml (poll, cdc,
 * the pipeline, a signal route) and log.pml include this file, as every
 * source's relay shares outbox/relay.go, publish.go and fault.go's loop
 * (attempts, quarantine, the faults the sink answers) and finds, records
 * and gives back its lanes' events its own way. Before including it, a
 * model defines MAX_FAULTS's default (LIVENESS).
 */

#define MAX_ATTEMPTS 2    /* OUTFLOW_MAX_ATTEMPTS (Config.MaxAttempts): attempts before quarantine */
#define NOEV 255          /* no event */

/* Bounds. The safety run bounds only the operator (MAX_OPS commands);
 * crashes, stalls and lease expiries are unbounded. The liveness run also
 * bounds the faults, so that weak fairness can make progress: at most
 * MAX_FAULTS crashes, stalls and sink faults, together (each model says
 * which it has). */
#ifdef LIVENESS
#define FAULT_OK   (faults < MAX_FAULTS)
#define FAULT      faults++
#else
#define FAULT_OK   true
#define FAULT      skip
#endif
#ifndef MAX_OPS
#define MAX_OPS 1
#endif
#define OP_OK      (ops < MAX_OPS)
#define OP         ops++

/* An owner: NOBODY (NULL), else a relay's (each model numbers its own). A
 * lease (claim_until): NULL, >= now() (live) or < now() (expired). */
#define NOBODY  0
#define NONE    0
#define LIVE    1
#define EXPIRED 2

byte ops;            /* operator commands so far */
#ifdef LIVENESS
byte faults;         /* faults so far */
#endif

/* REFUSED: the event the sink refuses for good, whoever publishes it and
 * however often (a payload over the sink's size limit; a publish that
 * always runs out of time while the sink answers the others). It is never
 * published. RULE the refusal is the event's own fault (temporalpub's
 * tooLarge, fault.go's errOverdue): its attempts count, and it is
 * quarantined (at once when permanent). Unlike the sink's faults it is not
 * bounded by MAX_FAULTS: it is the event's answer, every time. Mutant
 * REFUSAL_AS_SINK_FAULT (refusal_as_sink_fault, log_refusal_as_sink_fault)
 * takes it for the sink's fault: no attempt counted, no quarantine. */
#ifdef REFUSED
#define REFUSES(e) ((e) == REFUSED)
#else
#define REFUSES(e) false
#endif
/* an outcome of the event's own for e (the mutant takes none for REFUSED) */
#ifdef REFUSAL_AS_SINK_FAULT
#define OWN_ERR(e) !REFUSES(e)
#else
#define OWN_ERR(e) true
#endif

#ifdef LIVENESS
/* When every other process is blocked for good (a stuck lane, or the
 * end), time still passes. Without this step such a run would end in a
 * deadlock, and pan's search for fair acceptance cycles (-a -f) does not
 * report a run that ends; with it, the run goes on with nothing settling. */
proctype Idle() {
end_idle:
	do
	:: timeout
	od
}
#endif
