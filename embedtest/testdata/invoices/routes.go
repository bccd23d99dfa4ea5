package invoices

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// TaskQueue is the task queue of this service's workflows.
const TaskQueue = "invoices"

// InvoiceIDKey is the Keyword search attribute InvoiceId, registered once
// on the namespace: `temporal operator search-attribute create --name
// InvoiceId --type Keyword`.
var InvoiceIDKey = temporal.NewSearchAttributeKeyKeyword("InvoiceId")

// Routes tells the relay which workflow each event type starts, on which
// task queue, with which search attributes, and which payloads no workflow
// could process (those are quarantined at once instead of retried).
func Routes() temporalpub.Routes {
	return temporalpub.Routes{
		EventIssued: {
			Workflow:  "InvoiceWorkflow",
			TaskQueue: TaskQueue,
			Validate:  validateIssued,
			SearchAttributes: func(e outbox.Event) temporal.SearchAttributes {
				return temporal.NewSearchAttributes(InvoiceIDKey.ValueSet(e.AggregateID))
			},
		},
	}
}

func validateIssued(schemaVersion int, payload []byte) error {
	if schemaVersion != 1 {
		return fmt.Errorf("InvoiceIssued v%d is unknown; this build reads v1", schemaVersion)
	}
	var p Issued
	if err := json.Unmarshal(payload, &p); err != nil {
		return err
	}
	if p.InvoiceID == "" || p.AmountCents <= 0 {
		return errors.New("an InvoiceIssued needs invoice_id and a positive amount_cents")
	}
	return nil
}
