package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/outflow/outflow/outbox/ctl"
)

// demoConsole is the outbox's web page (`outboxctl serve`) of the demo.
type demoConsole struct {
	addr  string
	token string
}

// url is the console's address.
func (c demoConsole) url() string { return "http://" + c.addr }

// startConsole runs bin/outboxctl serve on the demo's database, near port
// 8099, with a token made for this run (its actions need it; without it the
// page is read-only), linking the Temporal UI and Jaeger where they run.
func startConsole(ctx context.Context, dataDir, bin, databaseURL, temporalUI, traces string) (demoConsole, func(), error) {
	addr, err := preferredAddr(8099)
	if err != nil {
		return demoConsole{}, nil, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return demoConsole{}, nil, err
	}
	c := demoConsole{addr: addr, token: hex.EncodeToString(tok)}
	args := []string{"serve"}
	if temporalUI != "" {
		args = append(args, "--temporal-ui", temporalUI)
	}
	if traces != "" {
		args = append(args, "--traces", traces)
	}
	p, err := startChild(dataDir, "console", bin, args, []string{
		"DATABASE_URL=" + databaseURL, ctl.ConsoleAddrVar + "=" + addr, ctl.ConsoleTokenVar + "=" + c.token,
	})
	if err != nil {
		return demoConsole{}, nil, err
	}
	stop := func() { p.Stop(5 * time.Second) }
	if err := waitLog(ctx, p, "outbox console on", 30*time.Second); err != nil {
		stop()
		return demoConsole{}, nil, fmt.Errorf("outbox console: %w", err)
	}
	return c, stop, nil
}
