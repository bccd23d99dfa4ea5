package main

import (
	"os"
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
)

// temporal is the dev server this package's tests share; each test has its
// own database, task queue and saga workflow IDs.
var temporal *devserver.Server

func TestMain(m *testing.M) { os.Exit(devserver.RunTests(m, devserver.Options{}, &temporal)) }
