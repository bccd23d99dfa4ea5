// Package service is the process setup every outflow binary shares
// (starter, worker, orderapi, providersim, outboxctl): the logger, the
// metrics server, the Temporal client options, the task queue and typed
// environment parsing. The binaries configure alike, report a bad setting
// alike (naming the variable and what it wants), and log errors under one
// key, [ErrorKey].
package service
