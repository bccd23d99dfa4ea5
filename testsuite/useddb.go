package testsuite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/namedsql"
)

// A used database is what every deployment but the first meets: orders,
// published events, inbox rows and customer keys that an earlier run left,
// perhaps under another master key. The helpers here make one with the real
// binaries, so a suite can start from it instead of from an empty database.

// LeaveEarlierRun runs the stack's order API, relay and worker once with the
// master keys keys (OUTFLOW_CODEC_KEYS), places a paid and a declined order
// for buyer@example.com (the customer every [OrderClient] order is for), waits
// for both to settle and stops the three processes: the database then holds
// what such a run leaves, the customer's key wrapped by keys' primary. The
// stack's CodecKeys are unchanged.
func (s *Stack) LeaveEarlierRun(ctx context.Context, keys string) error {
	own := s.CodecKeys
	s.CodecKeys = keys
	defer func() { s.CodecKeys = own }()
	names := []string{"orderapi-earlier", "starter-earlier", "worker-earlier"}
	for _, name := range names {
		s.Start(name, "")
	}
	defer func() {
		for _, name := range names {
			s.Proc(name).Stop(10 * time.Second)
		}
	}()
	api := s.API()
	want := map[string]string{"pm_card_visa": "confirmed", "pm_card_chargeDeclined": "payment_failed"}
	for pm, status := range want {
		o, err := api.Create(ctx, "earlier-run-"+uuid.NewString(), pm)
		if err != nil {
			return err
		}
		if err := WaitStatus(ctx, s, o.OrderID, status, 2*time.Minute); err != nil {
			return fmt.Errorf("the earlier run: %w", err)
		}
	}
	n, err := qCustomerKeys.Value(ctx, s.Pool, namedsql.NoArgs{})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("the earlier run left no customer key (is OUTFLOW_CODEC_KEYS %q empty?)", keys)
	}
	return nil
}

// StartRefused runs the named process and waits, up to timeout, for it to
// exit with a non-zero status before it logs that it is ready. It returns
// the process's log, or an error saying what it did instead.
func (s *Stack) StartRefused(ctx context.Context, name string, timeout time.Duration) (string, error) {
	kind := kindOf(name)
	logPath := filepath.Join(s.Env.Dir, fmt.Sprintf("%s-%s.log", strings.ReplaceAll(s.T.Name(), "/", "_"), name))
	p, err := startProcess(name, s.binary(kind), logPath, s.processEnv(""))
	if err != nil {
		return "", err
	}
	defer p.Stop(10 * time.Second)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = p.WaitLog(wctx, readyMarker[kind])
	switch {
	case err == nil:
		return "", fmt.Errorf("%s started (logged %q) where it must refuse to:\n%s", name, readyMarker[kind], p.LogTail(20))
	case !p.Exited():
		return "", fmt.Errorf("%s neither started nor exited within %s:\n%s", name, timeout, p.LogTail(20))
	}
	status, _ := p.Status()
	if status.Exited() && status.ExitStatus() == 0 {
		return "", fmt.Errorf("%s exited with status 0:\n%s", name, p.LogTail(20))
	}
	return p.LogTail(40), nil
}
