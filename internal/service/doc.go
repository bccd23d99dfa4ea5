// Package service is the process setup every outflow binary shares
// (starter, worker, orderapi, providersim, outboxctl): the logger, the
// metrics setting, the task queue and typed environment parsing. It links no
// Temporal package: the Temporal client and payload codec setup are
// internal/temporalclient's, which only the binaries that talk to Temporal
// import. The binaries configure alike, report a bad setting
// alike (naming the variable and what it wants), and log errors under one
// key, [ErrorKey].
package service
