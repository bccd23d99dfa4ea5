package temporalpub

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// retentionRefresh is how long a namespace retention read from Temporal is
// trusted before it is read again: an operator may change it at any time,
// and a shortened retention must reach the relay before a replay relies on
// the old one.
const retentionRefresh = 5 * time.Minute

// retention caches the namespace's workflow execution retention: how long
// Temporal keeps a closed workflow, and so how long a duplicate start is
// refused.
type retention struct {
	client    client.Client
	namespace string
	now       func() time.Time

	mu      sync.Mutex
	value   time.Duration
	readAt  time.Time
	lastErr error
}

// get returns the retention, reading it from Temporal when the cached value
// is older than [retentionRefresh]. When Temporal cannot be asked it returns
// the last value read (a stale value errs the same way a fresh one would
// only if an operator shortened the retention meanwhile) or, if none was
// ever read, an error.
func (r *retention) get(ctx context.Context) (time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.value > 0 && r.now().Sub(r.readAt) < retentionRefresh {
		return r.value, nil
	}
	if r.client == nil {
		return 0, fmt.Errorf("temporalpub: no Temporal client to read namespace %q's retention", r.namespace)
	}
	d, err := NamespaceRetention(ctx, r.client, r.namespace)
	if err != nil {
		r.lastErr = err
		if r.value > 0 {
			return r.value, nil
		}
		return 0, err
	}
	r.value, r.readAt, r.lastErr = d, r.now(), nil
	return d, nil
}

// NamespaceRetention asks Temporal how long namespace keeps closed
// workflows (DescribeNamespace's workflow execution retention TTL).
func NamespaceRetention(ctx context.Context, c client.Client, namespace string) (time.Duration, error) {
	resp, err := c.WorkflowService().DescribeNamespace(ctx, describeNamespace(namespace))
	if err != nil {
		return 0, fmt.Errorf("temporalpub: describing namespace %q to read its retention: %w", namespace, err)
	}
	ttl := resp.GetConfig().GetWorkflowExecutionRetentionTtl()
	if ttl == nil || ttl.AsDuration() <= 0 {
		return 0, fmt.Errorf("temporalpub: namespace %q reports no workflow execution retention", namespace)
	}
	return ttl.AsDuration(), nil
}

func describeNamespace(namespace string) *workflowservice.DescribeNamespaceRequest {
	return &workflowservice.DescribeNamespaceRequest{Namespace: namespace}
}
