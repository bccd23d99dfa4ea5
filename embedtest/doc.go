// Package embedtest proves that a service outside this repository can adopt
// the outbox with outflow's public packages alone, as docs/embedding.md
// tells it to. Its test copies testdata/invoices (the guide's service,
// module example.com/invoices) into a temporary directory with a replace
// directive onto this checkout's library module (outbox/go.mod), checks
// with `go list -deps` that the service's build needs no internal/ and no
// order-app package, and with `go list -m all` that its module graph holds
// neither outflow's root module nor stripe-go nor NATS, and runs the
// service's own tests (`go vet`, `go test`) against a database holding
// nothing but what the service migrates, and a Temporal namespace without
// the order app's OrderId search attribute; then it checks from outside what
// they left: one workflow run, one inbox row, the event published.
//
// TestInstallFromOutside runs the install lines of the operator binary and
// the relay, `go install github.com/outflow/outflow/outbox/cmd/outboxctl@v0.1.0`
// and `.../outbox/cmd/starter@v0.1.0`, from
// outside any module against a file-based module proxy holding this
// checkout's library.
//
// testdata/invoices is the tested version of the guide: its code and the
// guide's are the same.
package embedtest
