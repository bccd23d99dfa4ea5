package orders

import (
	"embed"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/namedsql"
)

// sqlFiles are the package's statements: queries.sql (the commands and the
// read model), shipping.sql (the shipping address) and step.sql (the
// projection's steps, [ApplyStepTx]). Every statement that touches the orders
// table is in one of them.
//
//go:embed *.sql
var sqlFiles embed.FS

// The package's statements, bound to their Go types when the package is
// initialised (outbox/namedsql): a placeholder without its argument field
// panics at start, and the package's test has the database check every
// statement's columns against its row type.
var (
	queries = namedsql.MustLoadAll(sqlFiles)

	qInsertOrder                    = namedsql.Bind[insertOrderArgs, Status](queries, "InsertOrder")
	qInsertOrderWithShippingAddress = namedsql.Bind[insertOrderShippingArgs, Status](queries, "InsertOrderWithShippingAddress")
	qLockOrderForCancel             = namedsql.Bind[orderIDArgs, cancelLock](queries, "LockOrderForCancel")
	qMarkOrderCancelled             = namedsql.Bind[markCancelledArgs, namedsql.NoRows](queries, "MarkOrderCancelled")
	qGetOrder                       = namedsql.Bind[orderIDArgs, Order](queries, "GetOrder")
	qGetIdempotencyKey              = namedsql.Bind[keyArgs, storedKey](queries, "GetIdempotencyKey")
	qInsertIdempotencyKey           = namedsql.Bind[insertKeyArgs, string](queries, "InsertIdempotencyKey")
	qSetCreatedSequence             = namedsql.Bind[createdSequenceArgs, namedsql.NoRows](queries, "SetCreatedSequence")
	qSettleSkipped                  = namedsql.Bind[settleSkippedArgs, namedsql.NoRows](queries, "SettleSkipped")
	qGetOrderState                  = namedsql.Bind[orderIDArgs, OrderState](queries, "GetOrderState")
	qStepLockOrder                  = namedsql.Bind[orderIDArgs, stepOrder](queries, "StepLockOrder")
	qStepApply                      = namedsql.Bind[stepApplyArgs, namedsql.NoRows](queries, "StepApply")
	qWebhookOrder                   = namedsql.Bind[webhookOrderArgs, webhookOrderRow](queries, "WebhookOrder")
	qStepMark                       = namedsql.Bind[stepMarkArgs, namedsql.NoRows](queries, "StepMark")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qInsertOrder.Info(), qInsertOrderWithShippingAddress.Info(), qLockOrderForCancel.Info(),
	qMarkOrderCancelled.Info(), qGetOrder.Info(), qGetIdempotencyKey.Info(), qInsertIdempotencyKey.Info(),
	qSetCreatedSequence.Info(), qSettleSkipped.Info(), qGetOrderState.Info(), qStepLockOrder.Info(),
	qStepApply.Info(), qWebhookOrder.Info(), qStepMark.Info(),
}

type orderIDArgs struct {
	ID uuid.UUID `db:"id"`
}

type insertOrderArgs struct {
	ID             uuid.UUID `db:"id"`
	CustomerEmail  string    `db:"customer_email"`
	Currency       string    `db:"currency"`
	PaymentMethod  string    `db:"payment_method"`
	Amount         int64     `db:"amount"`
	Items          []byte    `db:"items"`
	CreatedEventID uuid.UUID `db:"created_event_id"`
}

type insertOrderShippingArgs struct {
	ID              uuid.UUID `db:"id"`
	CustomerEmail   string    `db:"customer_email"`
	Currency        string    `db:"currency"`
	PaymentMethod   string    `db:"payment_method"`
	Amount          int64     `db:"amount"`
	Items           []byte    `db:"items"`
	CreatedEventID  uuid.UUID `db:"created_event_id"`
	ShippingAddress []byte    `db:"shipping_address"`
}

type markCancelledArgs struct {
	ID                  uuid.UUID `db:"id"`
	CancelEventID       uuid.UUID `db:"cancel_event_id"`
	CancelEventSequence int64     `db:"cancel_event_sequence"`
}

type keyArgs struct {
	Key string `db:"key"`
}

type insertKeyArgs struct {
	Key                string    `db:"key"`
	RequestFingerprint []byte    `db:"request_fingerprint"`
	ResponseStatus     int       `db:"response_status"`
	ResponseBody       []byte    `db:"response_body"`
	OrderID            uuid.UUID `db:"order_id"`
}

type createdSequenceArgs struct {
	ID              uuid.UUID `db:"id"`
	CreatedSequence int64     `db:"created_sequence"`
}

type settleSkippedArgs struct {
	ID       uuid.UUID `db:"id"`
	Sequence int64     `db:"sequence"`
}

type stepApplyArgs struct {
	ID              uuid.UUID `db:"id"`
	Status          Status    `db:"status"`
	PaymentIntentID *string   `db:"payment_intent_id"`
	RefundID        *string   `db:"refund_id"`
	FinalSequence   int64     `db:"final_sequence"`
}

type stepMarkArgs struct {
	ID           uuid.UUID `db:"id"`
	Disputed     bool      `db:"disputed"`
	RefundFailed bool      `db:"refund_failed"`
	DisputeID    *string   `db:"dispute_id"`
}

type webhookOrderArgs struct {
	OrderID         *uuid.UUID `db:"order_id"` // nil: the metadata named none
	PaymentIntentID string     `db:"payment_intent_id"`
}

type webhookOrderRow struct {
	ID             uuid.UUID `db:"id"`
	CreatedEventID uuid.UUID `db:"created_event_id"`
}

// SQL returns the text of the statement called name in the package's .sql
// files (e.g. InsertOrder), exactly as this package sends it, with its
// @name placeholders. It exists for the benchmarks, whose order-only
// transaction must run the same insert as [CreateOrderTx] to measure what
// the outbox adds (they bind it with pgx.StrictNamedArgs); applications have
// no use for it. It panics on an unknown name.
func SQL(name string) string { return queries.Get(name) }
