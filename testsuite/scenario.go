package testsuite

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// PlaceMix places one order of each kind the saga knows: a card that pays, a
// declined card, and a paid order cancelled after its confirmation. It
// retries every request with its idempotency key, so it rides out crashes of
// the order API.
func PlaceMix(ctx context.Context, s *Stack) error {
	api := s.API()
	if _, err := api.Create(ctx, "mix-ok-"+uuid.NewString(), "pm_card_visa"); err != nil {
		return err
	}
	if _, err := api.Create(ctx, "mix-declined-"+uuid.NewString(), "pm_card_chargeDeclined"); err != nil {
		return err
	}
	late, err := api.Create(ctx, "mix-cancel-"+uuid.NewString(), "pm_card_visa")
	if err != nil {
		return err
	}
	if err := WaitStatus(ctx, s, late.OrderID, "confirmed", 2*time.Minute); err != nil {
		return err
	}
	return api.Cancel(ctx, late.OrderID)
}

// WaitStatus waits until the order has the given status.
func WaitStatus(ctx context.Context, s *Stack, orderID, status string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var got string
	for {
		var err error
		got, err = qOrderStatus.Value(ctx, s.Pool, orderIDArgs{ID: orderID})
		if err == nil && got == status {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("order %s is %q after %s, want %q (err %v)", orderID, got, timeout, status, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
