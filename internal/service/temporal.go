package service

import (
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/outflow/outflow/handoff"
)

// TaskQueueEnv names the workflows' task queue.
const TaskQueueEnv = "OUTFLOW_TASK_QUEUE"

// TaskQueue is the task queue the worker polls and the relay starts
// workflows on: OUTFLOW_TASK_QUEUE, default handoff.DefaultTaskQueue.
func TaskQueue(env *Env) string { return env.String(TaskQueueEnv, handoff.DefaultTaskQueue) }

// TemporalClientOptions loads the Temporal client options the SDK's way
// (go.temporal.io/sdk/contrib/envconfig): the default profile of the config
// file, overridden by TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TEMPORAL_TLS_* and the other TEMPORAL_* variables, so
// one binary runs against a dev server, a cluster or Temporal Cloud. An
// unset address means localhost:7233, an unset namespace "default".
func TemporalClientOptions() (client.Options, error) {
	opts, err := envconfig.LoadDefaultClientOptions()
	if err != nil {
		return client.Options{}, fmt.Errorf("loading the Temporal client options from TEMPORAL_* and the config file (TEMPORAL_CONFIG_FILE): %w", err)
	}
	if opts.HostPort == "" {
		opts.HostPort = client.DefaultHostPort
	}
	if opts.Namespace == "" {
		opts.Namespace = client.DefaultNamespace
	}
	return opts, nil
}
