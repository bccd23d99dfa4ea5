package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/outflow/outflow/outbox/namedsql"
)

// ShardOwners reads which history host owns each shard from the shards
// table: the owner a shard's last acquisition wrote into its ShardInfo
// (field 3 of temporal.server.api.persistence.v1.ShardInfo). It is the
// persisted truth of a failover: a shard moves when the new owner acquires
// it.
func (c *Cluster) ShardOwners(ctx context.Context) (map[int32]string, error) {
	cfg, err := pgx.ParseConfig(c.opts.AdminURL)
	if err != nil {
		return nil, err
	}
	cfg.Database = c.opts.Database
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	shards, err := qShards.All(ctx, conn, namedsql.NoArgs{})
	if err != nil {
		return nil, err
	}
	out := map[int32]string{}
	for _, s := range shards {
		if s.DataEncoding != "Proto3" {
			return nil, fmt.Errorf("cluster: shard %d is encoded as %s, not Proto3", s.ShardID, s.DataEncoding)
		}
		out[s.ShardID] = shardOwner(s.Data)
	}
	return out, nil
}

// shardOwner decodes ShardInfo.owner (field 3, a string).
func shardOwner(b []byte) string {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if num == 3 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return ""
			}
			return string(v)
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return ""
		}
		b = b[n:]
	}
	return ""
}

// ShardsPerNode counts the shards each node owns (index 0 is node 1);
// shards owned by no current node's history address are not counted.
func (c *Cluster) ShardsPerNode(ctx context.Context) ([]int, error) {
	owners, err := c.ShardOwners(ctx)
	if err != nil {
		return nil, err
	}
	counts := make([]int, len(c.nodes))
	for _, owner := range owners {
		for i, n := range c.nodes {
			// The owner is the history host's identity: its address, then
			// "-<sequence>-<uuid>" of the shard controller's run.
			if owner == n.history() || strings.HasPrefix(owner, n.history()+"-") {
				counts[i]++
			}
		}
	}
	return counts, nil
}

// WaitShards waits until every one of the cluster's shards is owned by one
// of the given nodes (1-based) and, when each is set, every given node owns
// at least one. It returns the shards per node.
func (c *Cluster) WaitShards(ctx context.Context, nodes []int, each bool, timeout time.Duration) ([]int, error) {
	deadline := time.Now().Add(timeout)
	var counts []int
	var err error
	for {
		counts, err = c.ShardsPerNode(ctx)
		if err == nil {
			total, ok := 0, true
			for _, i := range nodes {
				total += counts[i-1]
				if each && counts[i-1] == 0 {
					ok = false
				}
			}
			if ok && total == c.opts.HistoryShards {
				return counts, nil
			}
		}
		if time.Now().After(deadline) {
			return counts, fmt.Errorf("cluster: shards per node %v after %s, want all %d on nodes %v (err %v)",
				counts, timeout, c.opts.HistoryShards, nodes, err)
		}
		select {
		case <-ctx.Done():
			return counts, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// others returns every node index but i.
func (c *Cluster) others(i int) []int {
	var out []int
	for j := 1; j <= len(c.nodes); j++ {
		if j != i {
			out = append(out, j)
		}
	}
	return slices.Clip(out)
}
