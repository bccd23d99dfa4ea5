package cli

import "github.com/outflow/outflow/outbox/cmdkit"

// version is the release a build is of, set by the Makefile's builds with
// -ldflags "-X github.com/outflow/outflow/internal/cli.version=v0.1.0" (git
// describe); empty, the module version from the build information stands
// (a `go install ...@v0.1.0` has it, a build in a checkout says "(devel)").
var version string

// Version is what --version prints (cmdkit.Version, with the release the
// Makefile stamped): the binary, its module and version, the VCS revision
// it was built from and the Go version, one a line.
func Version(name string) string { return cmdkit.Version(name, version) }
