-- The order app's schema (outflow_orders_schema_version): what the payment
-- provider said of an order after its saga (issue 25). Both facts come from a
-- Stripe webhook (PaymentWebhookReceived, aggregate 'payment', a stream of its
-- own), applied by the projection steps 'disputed' and 'refund_failed'
-- (orders.ApplyStepTx), which change no status and no sequence.

-- +goose Up

-- disputed_at: when the projection learnt of the order's first dispute
-- (charge.dispute.created); dispute_id the provider's dispute (dp_...).
-- refund_failed_at: when it learnt that the order's refund failed after the
-- provider had accepted it (charge.refund.updated, status failed): the
-- order may say cancelled, but the money was not returned, a compensation
-- failure for an operator. All nullable: old rows and old binaries are
-- untouched (nothing is rewritten).
ALTER TABLE orders
    ADD COLUMN disputed_at      timestamptz,
    ADD COLUMN dispute_id       text,
    ADD COLUMN refund_failed_at timestamptz;

-- +goose Down
ALTER TABLE orders
    DROP COLUMN refund_failed_at,
    DROP COLUMN dispute_id,
    DROP COLUMN disputed_at;
