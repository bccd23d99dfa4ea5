package codec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Erasure is what [Forget] did.
type Erasure struct {
	// ID is the audit row (customer_key_erasures.id).
	ID int64
	// KeyID is the erased key; nil when the customer had none (nothing of
	// theirs was encrypted, or an earlier request erased it already).
	KeyID *uuid.UUID
	// KeyCreatedAt is when the key was made: the first history it reads.
	KeyCreatedAt *time.Time
	ErasedAt     time.Time
	// Earlier are the earlier requests for the same address, newest first.
	Earlier []EarlierErasure
}

// EarlierErasure is an earlier audit row of the same address.
type EarlierErasure struct {
	KeyID    *uuid.UUID
	ErasedAt time.Time
	ErasedBy string
}

// Beginner is what [Forget] needs of a pool.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// ForgetOptions is what [ForgetWith] erases, why, and what must hold first.
type ForgetOptions struct {
	// Email is the customer's address. Mandatory.
	Email string
	// Actor is who decided it, and Reason why: the audit. Mandatory.
	Actor, Reason string
	// Check runs in the erasure's transaction after the key's row is
	// deleted (and locked until the commit: every encoder of the customer
	// waits) and before the audit row; an error rolls the erasure back and
	// is returned as it is. outboxctl forget-customer checks there that no
	// workflow of the customer still needs the key. Optional.
	Check func(ctx context.Context, tx pgx.Tx) error
}

// Forget is [ForgetWith] without a check.
func Forget(ctx context.Context, db Beginner, email, actor, reason string) (Erasure, error) {
	return ForgetWith(ctx, db, ForgetOptions{Email: email, Actor: actor, Reason: reason})
}

// ForgetWith erases the customer's data key and records who asked and why,
// in one transaction: every payload encrypted with the key (in any Temporal
// history, for as long as the namespace keeps it) is unreadable from then
// on, and everything else stays readable. From the commit on no process
// encrypts with the key (encoders read the store at every encode, and wait
// for the erasure while it runs): a later payload of the same address (a
// new order) gets a new key. A process that holds the key in its cache for
// decoding drops it within [CacheTTL].
func ForgetWith(ctx context.Context, db Beginner, o ForgetOptions) (Erasure, error) {
	email, actor, reason := o.Email, strings.TrimSpace(o.Actor), strings.TrimSpace(o.Reason)
	if strings.TrimSpace(email) == "" {
		return Erasure{}, errors.New("codec: forget: no email address")
	}
	if reason == "" || actor == "" {
		return Erasure{}, errors.New("codec: forget: the reason and the actor are mandatory (they are the audit)")
	}
	h := SubjectHash(email)
	var e Erasure
	var checkErr error
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		earlier, err := qErasuresOfSubject.All(ctx, tx, subjectArgs{SubjectHash: h})
		if err != nil {
			return err
		}
		e.Earlier = make([]EarlierErasure, len(earlier))
		for i, x := range earlier {
			e.Earlier[i] = EarlierErasure(x)
		}
		deleted, err := qDeleteKey.One(ctx, tx, subjectArgs{SubjectHash: h})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			e.KeyID, e.KeyCreatedAt = &deleted.KeyID, &deleted.CreatedAt
		}
		if o.Check != nil {
			if checkErr = o.Check(ctx, tx); checkErr != nil {
				return checkErr
			}
		}
		recorded, err := qRecordErasure.One(ctx, tx, recordErasureArgs{
			SubjectHash: h, KeyID: e.KeyID, KeyCreatedAt: e.KeyCreatedAt, ErasedBy: actor, Reason: reason,
		})
		e.ID, e.ErasedAt = recorded.ID, recorded.ErasedAt
		return err
	})
	switch {
	case checkErr != nil:
		return Erasure{}, checkErr
	case err != nil:
		return Erasure{}, fmt.Errorf("codec: forget a customer: %w", err)
	}
	return e, nil
}
