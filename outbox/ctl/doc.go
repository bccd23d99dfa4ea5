// Package ctl is outboxctl, the outbox's operator CLI, as a command table a
// binary runs: migrate, status, list, show, retry, skip, replay, serve (the
// outbox's web page, [Console]), source, cleanup, help and version, over
// the outbox alone (any service's database). The library's binary is
// outbox/cmd/outboxctl; outflow's own (cmd/outboxctl at the repository's
// root) adds its order app's commands and hooks to [Commands] through
// [App].
//
// Every command that changes data prints its plan, then acts with --yes,
// asks at a terminal, and otherwise is a dry run that changes nothing
// (exit 0); every write is logged with who ran it. A connection string is
// shown with its password masked (cmdkit.Redact).
//
// The package reads nothing of the process: main hands it its streams and
// environment ([Process]).
package ctl
