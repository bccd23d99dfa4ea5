// Command healthcheck is the container healthcheck of outflow's image: it
// GETs one URL and exits 0 when the answer is 2xx within the timeout, 1
// otherwise (with one plain line on stderr saying why). The image is
// distroless (no shell, no curl), so docker-compose.yml's healthchecks run
// this binary:
//
//	healthcheck http://127.0.0.1:9090/healthz
//
// Flags: -timeout (default 3s); -h/--help prints this usage and exits 0;
// --version prints the module version and VCS revision. It reads no
// environment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/outbox/cmdkit"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	version := fs.Bool("version", false, "print the module version and VCS revision, then exit")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: healthcheck [--timeout 3s] URL\n\nGETs URL; exits 0 on a 2xx answer, 1 otherwise.\n\nenvironment: none (the URL is its argument)\n\nflags:")
		cmdkit.PrintFlags(fs.Output(), fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		return 2
	}
	if *version {
		fmt.Fprint(stdout, cli.Version("healthcheck"))
		return 0
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "healthcheck: want exactly one URL, e.g. healthcheck http://127.0.0.1:9090/healthz")
		return 2
	}
	if err := check(fs.Arg(0), *timeout); err != nil {
		fmt.Fprintln(stderr, "healthcheck:", err)
		return 1
	}
	return 0
}

// check GETs target and wants a 2xx answer within timeout.
func check(target string, timeout time.Duration) error {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", target)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("GET %s: %s: %s", target, resp.Status, body)
	}
	return nil
}
