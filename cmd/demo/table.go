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
	fmt.Fprintln(tw, "ORDER\tSCENARIO\tEXPECTED\tACTUAL\tCHARGES\tREFUNDS\tEMAILS\tOK")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n",
			shortID(r.orderID), r.scenario.name, r.scenario.expect, r.observed.status,
			r.observed.charges, r.observed.refunds, emails, ok)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range results {
		if r.mismatch != "" {
			fmt.Fprintf(w, "MISMATCH %s (%s): %s\n", r.orderID, r.scenario.name, r.mismatch)
		}
	}
	fmt.Fprintln(w, "Workflow histories in the Temporal UI:")
	for _, r := range results {
		for _, l := range r.workflows {
			target := l.url
			if target == "" {
				target = "workflow id " + l.workflowID
			}
			fmt.Fprintf(w, "  %s %-15s %s\n", r.orderID, l.eventType, target)
		}
	}
	return all
}

// shortID keeps the random tail of a UUIDv7: its head is a timestamp, the
// same for every order the demo places.
func shortID(id string) string {
	if len(id) > 8 {
		return "…" + id[len(id)-8:]
	}
	return id
}
