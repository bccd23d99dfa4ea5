package embedtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// outflowModule is this repository's root module path (the order app's);
// libraryModule is the library's, outbox/go.mod.
const (
	outflowModule = "github.com/outflow/outflow"
	libraryModule = outflowModule + "/outbox"
)

// foreignModules are modules a service that imports only the library must
// not find in its module graph (`go list -m all`): the order app's own
// module, whose go.mod brings Stripe and the rest, Stripe's SDK, and NATS
// (the JetStream sink is a module of its own, outbox/natspub).
var foreignModules = []string{outflowModule, libraryModule + "/natspub", "github.com/stripe/stripe-go", "github.com/nats-io/"}

// checkModules returns the modules of a service's graph that are
// foreignModules (a path, or a prefix ending in "/" or a major version's
// "/vN"), one message a module. None is a graph of the library alone.
func checkModules(modules []string) []string {
	var problems []string
	for _, m := range modules {
		for _, f := range foreignModules {
			if m == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(m, f)) || strings.HasPrefix(m, f+"/v") {
				problems = append(problems, fmt.Sprintf("the module graph holds %s", m))
			}
		}
	}
	return problems
}

// TestCheckModules: the graph check passes the library's graph and names
// the root module, Stripe and NATS.
func TestCheckModules(t *testing.T) {
	t.Parallel()
	clean := []string{"example.com/invoices", libraryModule, "github.com/jackc/pgx/v5", "go.temporal.io/sdk", outflowModule + "x"}
	require.Empty(t, checkModules(clean))
	dirty := append(slices.Clone(clean), outflowModule, "github.com/stripe/stripe-go/v76", "github.com/nats-io/nats.go", "github.com/nats-io/nkeys", libraryModule+"/natspub")
	require.Equal(t, []string{
		"the module graph holds " + outflowModule,
		"the module graph holds github.com/stripe/stripe-go/v76",
		"the module graph holds github.com/nats-io/nats.go",
		"the module graph holds github.com/nats-io/nkeys",
		"the module graph holds " + libraryModule + "/natspub",
	}, checkModules(dirty))
}

// publicPackages are the packages a service imports to adopt the outbox;
// a service's own packages import nothing else of outflow's.
var publicPackages = []string{
	outflowModule + "/outbox",
	outflowModule + "/outbox/outboxops",
	outflowModule + "/outbox/temporalpub",
	outflowModule + "/outbox/temporalpub/eventsignal",
	outflowModule + "/outbox/outboxtest",
	outflowModule + "/outbox/conformance/sinktest",
	outflowModule + "/outbox/inbox",
}

// orderAppPackages are outflow's order app, built on the outbox: no package
// of a service's build may be one of them or below one of them, whoever
// imports it (a public package that did would drag the order app into
// every service).
var orderAppPackages = []string{
	outflowModule + "/orders",
	outflowModule + "/activities",
	outflowModule + "/workflows",
	outflowModule + "/handoff",
	outflowModule + "/migrations",
	outflowModule + "/starter",
	outflowModule + "/worker",
	outflowModule + "/providersim",
	outflowModule + "/cmd",
	outflowModule + "/internal/routes",
	outflowModule + "/internal/codec",
	outflowModule + "/internal/personal",
	outflowModule + "/testsuite",
}

// listedPackage is the part of `go list -json`'s package that the check
// reads.
type listedPackage struct {
	ImportPath string
	Module     *struct{ Path string }
	Imports    []string
	Error      *struct{ Err string }
}

// decodePackages reads the stream of JSON objects `go list -json` writes.
func decodePackages(r io.Reader) ([]listedPackage, error) {
	var pkgs []listedPackage
	dec := json.NewDecoder(r)
	for {
		var p listedPackage
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// basePath strips go list's test variant suffix ("p [p.test]").
func basePath(importPath string) string {
	p, _, _ := strings.Cut(importPath, " ")
	return p
}

func under(pkg, root string) bool {
	return pkg == root || strings.HasPrefix(pkg, root+"/")
}

func orderApp(pkg string) bool {
	return slices.ContainsFunc(orderAppPackages, func(root string) bool { return under(pkg, root) })
}

// checkDeps returns what is wrong with the build of module, given `go list
// -e -deps -test -json` of its packages: a package of module that imports
// outflow's internal/ packages, its order app or anything else of outflow's
// but publicPackages; an order-app package anywhere in the build, with who
// imports it; a package go list could not load. None is a clean build.
func checkDeps(module string, pkgs []listedPackage) []string {
	var problems []string
	importers := map[string][]string{}
	for _, p := range pkgs {
		path := basePath(p.ImportPath)
		if p.Error != nil {
			problems = append(problems, fmt.Sprintf("%s: %s", p.ImportPath, p.Error.Err))
		}
		own := p.Module != nil && p.Module.Path == module
		for _, imp := range p.Imports {
			imp = basePath(imp)
			importers[imp] = append(importers[imp], path)
			if !own || !under(imp, outflowModule) || slices.Contains(publicPackages, imp) {
				continue
			}
			switch {
			case under(imp, outflowModule+"/internal"):
				problems = append(problems, fmt.Sprintf("%s imports %s: an internal package of outflow; use the public packages (%s)", path, imp, strings.Join(publicPackages, ", ")))
			case orderApp(imp):
				problems = append(problems, fmt.Sprintf("%s imports %s: a package of outflow's order app", path, imp))
			default:
				problems = append(problems, fmt.Sprintf("%s imports %s: not one of outflow's public packages (%s)", path, imp, strings.Join(publicPackages, ", ")))
			}
		}
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		path := basePath(p.ImportPath)
		if seen[path] || !orderApp(path) {
			continue
		}
		seen[path] = true
		by := slices.Compact(slices.Sorted(slices.Values(importers[path])))
		problems = append(problems, fmt.Sprintf("the build links %s, a package of outflow's order app (imported by %s)", path, strings.Join(by, ", ")))
	}
	return problems
}

// TestCheckDeps: the check passes the build of a service that imports the
// public packages, whatever these link (internal/ packages of the outbox's
// own), and fails one that imports an internal or order-app package, or
// links the order app through a public package.
func TestCheckDeps(t *testing.T) {
	t.Parallel()
	const svc = "example.com/invoices"
	mod := func(path string) *struct{ Path string } { return &struct{ Path string }{path} }
	outflow := mod(outflowModule)
	clean := []listedPackage{
		{ImportPath: outflowModule + "/internal/namedsql", Module: outflow},
		{ImportPath: outflowModule + "/outbox", Module: outflow, Imports: []string{"context", outflowModule + "/internal/namedsql"}},
		{ImportPath: outflowModule + "/outbox/temporalpub", Module: outflow, Imports: []string{outflowModule + "/outbox"}},
		{ImportPath: outflowModule + "/outbox/inbox", Module: outflow, Imports: []string{outflowModule + "/internal/namedsql"}},
		{ImportPath: svc, Module: mod(svc), Imports: []string{"context", outflowModule + "/outbox", outflowModule + "/outbox/temporalpub"}},
		{ImportPath: svc + "_test [" + svc + ".test]", Module: mod(svc), Imports: []string{svc + " [" + svc + ".test]", outflowModule + "/outbox/inbox"}},
	}
	require.Empty(t, checkDeps(svc, clean))

	withInternal := append(slices.Clone(clean), listedPackage{
		ImportPath: svc + "/store", Module: mod(svc), Imports: []string{outflowModule + "/internal/namedsql"},
	})
	require.Equal(t, []string{
		svc + "/store imports " + outflowModule + "/internal/namedsql: an internal package of outflow; use the public packages (" + strings.Join(publicPackages, ", ") + ")",
	}, checkDeps(svc, withInternal))

	withOrders := append(slices.Clone(clean),
		listedPackage{ImportPath: svc + "/billing", Module: mod(svc), Imports: []string{outflowModule + "/orders/orderhttp"}},
		listedPackage{ImportPath: outflowModule + "/orders/orderhttp", Module: outflow},
	)
	require.Equal(t, []string{
		svc + "/billing imports " + outflowModule + "/orders/orderhttp: a package of outflow's order app",
		"the build links " + outflowModule + "/orders/orderhttp, a package of outflow's order app (imported by " + svc + "/billing)",
	}, checkDeps(svc, withOrders))

	// temporalpub as it was: it imported the order app's contract for its
	// workflows' input type.
	viaPublic := slices.Clone(clean)
	viaPublic[2].Imports = append(slices.Clone(viaPublic[2].Imports), outflowModule+"/handoff")
	viaPublic = append(viaPublic, listedPackage{ImportPath: outflowModule + "/handoff", Module: outflow})
	require.Equal(t, []string{
		"the build links " + outflowModule + "/handoff, a package of outflow's order app (imported by " + outflowModule + "/outbox/temporalpub)",
	}, checkDeps(svc, viaPublic))

	otherPublic := append(slices.Clone(clean), listedPackage{
		ImportPath: svc + "/faults", Module: mod(svc), Imports: []string{outflowModule + "/failpoints"},
	})
	require.Len(t, checkDeps(svc, otherPublic), 1)
	require.Contains(t, checkDeps(svc, otherPublic)[0], "not one of outflow's public packages")

	broken := append(slices.Clone(clean), listedPackage{ImportPath: svc + "/x", Module: mod(svc), Error: &struct{ Err string }{"use of internal package not allowed"}})
	require.Equal(t, []string{svc + "/x: use of internal package not allowed"}, checkDeps(svc, broken))
}

// TestCheckDepsOnAServiceThatNeedsTheOrderApp: the same check, on go list's
// real output for the invoices service plus a package that imports the
// order app and an internal package, names both.
func TestCheckDepsOnAServiceThatNeedsTheOrderApp(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := writeModule(t, true)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "shortcut"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shortcut", "shortcut.go"), []byte(`// Package shortcut reuses what a service must not.
package shortcut

import (
	_ "github.com/outflow/outflow/internal/cli"
	_ "github.com/outflow/outflow/orders"
)
`), 0o644))
	problems := checkDeps(serviceModule, goList(t, ctx, dir))
	joined := strings.Join(problems, "\n")
	t.Logf("the check found:\n%s", joined)
	for _, want := range []string{
		serviceModule + "/shortcut imports " + outflowModule + "/internal/cli: an internal package of outflow",
		serviceModule + "/shortcut imports " + outflowModule + "/orders: a package of outflow's order app",
		"the build links " + outflowModule + "/orders, a package of outflow's order app (imported by " + serviceModule + "/shortcut)",
		"use of internal package " + outflowModule + "/internal/cli not allowed",
	} {
		require.Contains(t, joined, want)
	}
}
