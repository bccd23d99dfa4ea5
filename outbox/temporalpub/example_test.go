package temporalpub_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// A service's routes: InvoiceIssued starts InvoiceWorkflow on the task
// queue "invoices" with the search attribute InvoiceId (registered on the
// namespace beforehand); InvoiceVoided starts VoidInvoiceWorkflow on
// Config.TaskQueue with no search attribute, which any namespace accepts.
func ExampleRoutes() {
	invoiceID := sdktemporal.NewSearchAttributeKeyKeyword("InvoiceId")
	routes := temporalpub.Routes{
		"InvoiceIssued": {
			Workflow:  "InvoiceWorkflow",
			TaskQueue: "invoices",
			SearchAttributes: func(e outbox.Event) sdktemporal.SearchAttributes {
				return sdktemporal.NewSearchAttributes(invoiceID.ValueSet(e.AggregateID))
			},
		},
		"InvoiceVoided": {Workflow: "VoidInvoiceWorkflow"},
	}

	ev, err := outbox.NewEvent("invoice", "inv-1", "InvoiceIssued", 1, map[string]any{"amount_cents": 12500})
	if err != nil {
		log.Fatal(err)
	}
	route := routes[ev.Type]
	id, _ := route.SearchAttributes(ev).GetKeyword(invoiceID)
	fmt.Println(route.Workflow, route.TaskQueue, "InvoiceId="+id)
	// Output:
	// InvoiceWorkflow invoices InvoiceId=inv-1
}

// The relay over a service's outbox, publishing to Temporal: one workflow per
// event, its ID the event's. The namespace is the client's, from the options
// it was dialled with. (It needs a Temporal server, so it is compiled, not
// run; package embedtest runs the same relay end to end.)
func ExampleNew() {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	opts := client.Options{HostPort: os.Getenv("TEMPORAL_ADDRESS"), Namespace: os.Getenv("TEMPORAL_NAMESPACE")}
	c, err := client.Dial(opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	pub, err := temporalpub.New(c, opts, temporalpub.Config{
		Routes:     temporalpub.Routes{"InvoiceIssued": {Workflow: "InvoiceWorkflow", TaskQueue: "invoices"}},
		Registerer: prometheus.DefaultRegisterer,
	})
	if err != nil {
		log.Fatal(err)
	}
	relay, err := outbox.NewRelay(db, pub, outbox.RelayConfig{Registerer: prometheus.DefaultRegisterer})
	if err != nil {
		log.Fatal(err)
	}
	if err := relay.Run(ctx); err != nil { // until ctx ends
		log.Fatal(err)
	}
}
