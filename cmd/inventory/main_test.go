package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/outflow/outflow/internal/dev/devserver"
)

// temporal is the dev server this package's tests share; each test has its
// own database, task queue and saga workflow IDs.
var temporal *devserver.Server

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	srv, err := devserver.New(ctx, devserver.Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	temporal = srv
	code := m.Run()
	_ = srv.Stop()
	os.Exit(code)
}
