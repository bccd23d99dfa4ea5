package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// module is this repository's module path.
const module = "github.com/outflow/outflow"

// publicPackages are the outflow packages the inventory service may import:
// those any team adopting the outbox may (docs/embedding.md), failpoints,
// and cmdkit, the helpers of a service's own main.
var publicPackages = []string{
	module + "/outbox",
	module + "/outbox/outboxops",
	module + "/outbox/temporalpub",
	module + "/outbox/temporalpub/eventsignal",
	module + "/outbox/inbox",
	module + "/outbox/failpoints",
	module + "/outbox/cmdkit",
}

// ownPackages are the service's own: the binary, which is the whole service.
var ownPackages = []string{module + "/cmd/inventory"}

// orderAppPackages are the order app's: the service's build links none of
// them, whoever imports it.
var orderAppPackages = []string{
	module + "/orders", module + "/activities", module + "/workflows", module + "/handoff",
	module + "/migrations", module + "/starter", module + "/worker", module + "/providersim",
	module + "/testsuite", module + "/internal/routes", module + "/internal/codec", module + "/internal/personal",
}

// listedPackage is the part of `go list -json`'s output the check reads.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Error      *struct{ Err string }
}

func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

func in(pkg string, roots []string) bool {
	return slices.ContainsFunc(roots, func(r string) bool { return under(pkg, r) })
}

// checkDeps returns what is wrong with the build go list described: an own
// package importing an outflow package that is neither public nor own
// (internal/ above all), an order-app package anywhere in the build, a
// package go list could not load. None is a clean build.
func checkDeps(pkgs []listedPackage) []string {
	var problems []string
	importers := map[string][]string{}
	for _, p := range pkgs {
		if p.Error != nil {
			problems = append(problems, fmt.Sprintf("%s: %s", p.ImportPath, p.Error.Err))
		}
		for _, imp := range p.Imports {
			importers[imp] = append(importers[imp], p.ImportPath)
			if !in(p.ImportPath, ownPackages) || !under(imp, module) || slices.Contains(publicPackages, imp) || in(imp, ownPackages) {
				continue
			}
			kind := "not one of outflow's public packages"
			if under(imp, module+"/internal") {
				kind = "an internal package of outflow"
			}
			problems = append(problems, fmt.Sprintf("%s imports %s: %s; the inventory service uses only %s",
				p.ImportPath, imp, kind, strings.Join(publicPackages, ", ")))
		}
	}
	for _, p := range pkgs {
		if in(p.ImportPath, orderAppPackages) {
			problems = append(problems, fmt.Sprintf("the build links %s, a package of outflow's order app (imported by %s)",
				p.ImportPath, strings.Join(slices.Sorted(slices.Values(importers[p.ImportPath])), ", ")))
		}
	}
	return problems
}

func goList(t *testing.T, pkgs ...string) []listedPackage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", append([]string{"list", "-e", "-deps", "-json=ImportPath,Imports,Error"}, pkgs...)...).Output()
	require.NoError(t, err)
	var listed []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return listed
		}
		require.NoError(t, err)
		listed = append(listed, p)
	}
}

// TestImportsOnlyPublicPackages: the binary's build (go list -deps of
// cmd/inventory) has its own packages import only outflow's public
// packages, and links nothing of the order app.
func TestImportsOnlyPublicPackages(t *testing.T) {
	t.Parallel()
	pkgs := goList(t, module+"/cmd/inventory")
	paths := make([]string, len(pkgs))
	for i, p := range pkgs {
		paths[i] = p.ImportPath
	}
	require.Contains(t, paths, module+"/cmd/inventory", "go list listed the service's build")
	require.Contains(t, paths, module+"/outbox")
	require.Contains(t, paths, module+"/outbox/inbox")
	require.Empty(t, checkDeps(pkgs))
}

// TestCheckDepsFindsForbiddenImports: the check itself fails a build whose
// own package imports an internal or an order-app package, or that links
// the order app through another package.
func TestCheckDepsFindsForbiddenImports(t *testing.T) {
	t.Parallel()
	clean := []listedPackage{
		{ImportPath: module + "/internal/namedsql"},
		{ImportPath: module + "/outbox", Imports: []string{"context", module + "/internal/namedsql"}},
		{ImportPath: module + "/outbox/inbox"},
		{ImportPath: module + "/cmd/inventory", Imports: []string{module + "/outbox", module + "/outbox/inbox", module + "/outbox/failpoints"}},
	}
	require.Empty(t, checkDeps(clean), "an internal package linked through a public one is the public one's business")

	internal := slices.Clone(clean)
	internal[3].Imports = append(slices.Clone(internal[3].Imports), module+"/internal/cli")
	got := checkDeps(internal)
	require.Len(t, got, 1)
	require.Contains(t, got[0], module+"/cmd/inventory imports "+module+"/internal/cli: an internal package of outflow")

	other := slices.Clone(clean)
	other[3].Imports = append(slices.Clone(other[3].Imports), module+"/outbox/outboxtest")
	got = checkDeps(other)
	require.Len(t, got, 1)
	require.Contains(t, got[0], "not one of outflow's public packages")

	orders := append(slices.Clone(clean), listedPackage{ImportPath: module + "/handoff"})
	orders[1].Imports = append(slices.Clone(orders[1].Imports), module+"/handoff")
	require.Equal(t, []string{"the build links " + module + "/handoff, a package of outflow's order app (imported by " + module + "/outbox)"}, checkDeps(orders))
}
