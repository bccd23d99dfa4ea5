package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/outbox/promreg"
)

// slotState is the cdc slot's state as the relay reads it (CDCSlot;
// outboxops.Slot is the operator's view of the same statement).
type slotState struct {
	Active            bool   `db:"active"`
	ActivePID         int32  `db:"active_pid"`
	ConfirmedFlushLSN string `db:"confirmed_flush_lsn"`
	LagBytes          int64  `db:"lag_bytes"`
	RetainedBytes     int64  `db:"retained_bytes"`
	WALStatus         string `db:"wal_status"`
	// MaxSlotWALKeepSizeBytes is -1 when unlimited.
	MaxSlotWALKeepSizeBytes int64 `db:"max_slot_wal_keep_size_bytes"`
}

// cdcMetrics are the CDC source's gauges, named in docs/reference.md.
type cdcMetrics struct {
	lagBytes    prometheus.Gauge
	lagSeconds  prometheus.Gauge
	retained    prometheus.Gauge
	maxKeepSize prometheus.Gauge
	active      prometheus.Gauge
}

func newCDCMetrics(reg prometheus.Registerer) (*cdcMetrics, error) {
	m := &cdcMetrics{
		lagBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_cdc_slot_lag_bytes",
			Help: "WAL between the server's current position and the CDC slot's confirmed position (sampled periodically).",
		}),
		lagSeconds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_cdc_slot_lag_seconds",
			Help: "Age of the oldest commit the streaming CDC relay received but has not yet confirmed; 0 when caught up or not streaming (sampled periodically).",
		}),
		retained: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_cdc_wal_retained_bytes",
			Help: "WAL the CDC slot keeps from being recycled (current position minus restart_lsn; sampled periodically).",
		}),
		maxKeepSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_cdc_max_slot_wal_keep_size_bytes",
			Help: "The server's max_slot_wal_keep_size in bytes, -1 when unlimited: beyond it the slot is lost.",
		}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_cdc_slot_active",
			Help: "1 while a session streams the CDC slot (pg_replication_slots.active), 0 while none does and the slot only retains WAL (sampled periodically).",
		}),
	}
	if err := promreg.RegisterAll(reg, &m.lagBytes, &m.lagSeconds, &m.retained, &m.maxKeepSize, &m.active); err != nil {
		return nil, fmt.Errorf("outbox: register CDC metrics: %w", err)
	}
	return m, nil
}

func (c *cdcRelay) slotGaugeLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.GaugeInterval)
	defer t.Stop()
	for {
		if err := c.refreshSlotGauges(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("outbox cdc: refreshing slot gauges failed", "owner", c.cfg.Owner, "slot", c.cfg.Slot, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *cdcRelay) refreshSlotGauges(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, ok, err := slotStatus(ctx, c.pool, c.cfg.Slot)
	if err != nil || !ok {
		return err
	}
	c.cdcMetrics.lagBytes.Set(float64(st.LagBytes))
	c.cdcMetrics.retained.Set(float64(st.RetainedBytes))
	c.cdcMetrics.maxKeepSize.Set(float64(st.MaxSlotWALKeepSizeBytes))
	if st.Active {
		c.cdcMetrics.active.Set(1)
	} else {
		c.cdcMetrics.active.Set(0)
	}
	lag := 0.0
	if wm := c.mark.Load(); wm != nil {
		if at, ok := wm.oldestUnsettled(); ok {
			lag = max(time.Since(at).Seconds(), 0)
		}
	}
	c.cdcMetrics.lagSeconds.Set(lag)
	return nil
}
