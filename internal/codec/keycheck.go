package codec

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/namedsql"
)

// ErrKeysMismatch: the configured master keys cannot unwrap the customer
// keys of the database; every customer's payload would fail.
var ErrKeysMismatch = errors.New("codec: the master keys cannot unwrap this database's customer keys")

// CheckCustomerKeys verifies, before a process starts work, that keys can
// unwrap the customer keys db holds: every master key id that wrapped one
// must be configured, and one customer key of each configured id must
// unwrap with it (so a different key under the same id, such as another
// clone's demo key, is caught too). A rotation passes: the old key stays
// in OUTFLOW_CODEC_KEYS after the new one, and unwraps its own. Without
// the check such a process would start and fail every customer's payload
// one publish or task at a time. It reads one customer key per configured
// id and scans the table once for other ids.
func CheckCustomerKeys(ctx context.Context, db DB, keys *Keyring) error {
	exists, err := qCustomerKeyTableExists.Value(ctx, db, namedsql.NoArgs{})
	if err != nil {
		return fmt.Errorf("codec: check the customer keys: %w", err)
	}
	if !exists {
		return nil
	}
	var problems []string
	for _, id := range keys.ids {
		sample, err := qSampleKeyOfMasterKey.One(ctx, db, wrappingKeyArgs{WrappingKeyID: id})
		rec := KeyRecord{ID: sample.KeyID, Wrapped: sample.WrappedDEK, WrappingKeyID: id}
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue
		case err != nil:
			return fmt.Errorf("codec: check the customer keys of master key %q: %w", id, err)
		}
		if _, err := open(keys.aead[id], rec.Wrapped, dekAAD(rec.ID)); err != nil {
			problems = append(problems, fmt.Sprintf("master key %q of %s is not the key of that id that wrapped this database's customer keys "+
				"(customer key %s%s does not unwrap with it)", id, KeysEnv, CustomerKeyPrefix, rec.ID))
		}
	}
	other, err := qCustomerKeysOfOtherMasterKeys.One(ctx, db, configuredArgs{Configured: keys.ids})
	others, n := other.Others, other.Count
	if err != nil {
		return fmt.Errorf("codec: check the customer keys: %w", err)
	}
	if n > 0 {
		problems = append(problems, fmt.Sprintf("%d customer keys are wrapped by master key %s, which %s does not hold", n, others, KeysEnv))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s. Give this process the master keys this database was made with "+
		"(after a rotation the old key stays listed after the new one: %s=NEW_ID:...,OLD_ID:...), "+
		"or point DATABASE_URL at the database made with these keys", ErrKeysMismatch, strings.Join(problems, "; "), KeysEnv)
}
