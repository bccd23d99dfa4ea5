package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// result is one row of the summary.
type result struct {
	orderID   string
	scenario  scenario
	observed  observed
	mismatch  string
	workflows []workflowLink
	// beforeWebhook is the order's status when the demo settled its
	// payment at the provider (webhook scenarios).
	beforeWebhook string
	// traceID is the order's trace (the demo's span of the order, the
	// parent of its requests' spans): "" when tracing is off.
	traceID  string
	traceURL string
}

// workflowLink names one workflow of an order and where to see it.
type workflowLink struct {
	eventType  string
	workflowID string
	url        string
}

// printTable writes the summary and returns whether every order matched.
func printTable(w io.Writer, results []result) bool {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ORDER\tSCENARIO\tEXPECTED\tACTUAL\tCHARGES\tREFUNDS\tEMAILS\tSTOCK\tWEBHOOKS\tOK")
	all := true
	for _, r := range results {
		ok := "yes"
		if r.mismatch != "" {
			ok, all = "NO", false
		}
		emails := strings.Join(r.observed.emails, ",")
		if emails == "" {
			emails = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n",
			shortID(r.orderID), r.scenario.name, r.scenario.expect, r.observed.status,
			r.observed.charges, r.observed.refunds, emails, r.observed.stock, webhookCell(r), ok)
	}
	tw.Flush()
	fmt.Fprintln(w, "STOCK: the order's reservation in the inventory (none: it holds nothing for the order).")
	fmt.Fprintln(w, "WEBHOOKS: the provider's signed webhook deliveries about the order's payment / the events the order API recorded from them (a duplicate records none).")
	fmt.Fprintln(w)
	for _, r := range results {
		if r.mismatch != "" {
			fmt.Fprintf(w, "MISMATCH %s (%s): %s\n", r.orderID, r.scenario.name, r.mismatch)
		}
	}
	fmt.Fprintln(w, "Workflow histories in the Temporal UI, and each order's trace in Jaeger:")
	for _, r := range results {
		for _, l := range r.workflows {
			target := l.url
			if target == "" {
				target = "workflow id " + l.workflowID
			}
			fmt.Fprintf(w, "  %s %-15s %s\n", r.orderID, l.eventType, target)
		}
		if r.traceURL != "" {
			fmt.Fprintf(w, "  %s trace: %s\n", r.orderID, r.traceURL)
		}
	}
	return all
}

// webhookCell is the WEBHOOKS column: deliveries/recorded, and the status
// the order had when its payment was settled, for the webhook scenarios.
func webhookCell(r result) string {
	cell := fmt.Sprintf("%d/%d", r.observed.webhooks, r.observed.recorded)
	if r.scenario.expect.pendingUntilWebhook {
		cell += " (" + r.observed.beforeWebhook + " before)"
	}
	return cell
}

// shortID keeps the random tail of a UUIDv7: its head is a timestamp, the
// same for every order the demo places.
func shortID(id string) string {
	if len(id) > 8 {
		return "…" + id[len(id)-8:]
	}
	return id
}
