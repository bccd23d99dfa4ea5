// Package orderhttp is the order service's HTTP API (docs/reference.md) on the
// standard library's ServeMux:
//
//	POST /orders              create an order (optional Idempotency-Key)   201
//	POST /orders/{id}/cancel  cancel an order                              202
//	GET  /orders/{id}         the order, its status and its events         200
//	GET  /healthz             the database answers                         200
//	GET  /metrics             Prometheus text format                       200
//
// Errors are JSON {"error": {"code", "message", "field"}} with a 4xx status
// (5xx when the server fails). A request is rejected before any database
// access when its body is too large, is not strict JSON of the expected
// shape, or fails validation, so a rejected request writes nothing.
//
// When a token is configured, the /orders routes and /metrics require
// "Authorization: Bearer <token>" (a scraper sends it too: the metrics
// tell how busy the service is and which routes fail); /healthz stays open
// for probes and reveals nothing.
package orderhttp
