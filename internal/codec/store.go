package codec

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed *.sql
var sqlFiles embed.FS

// The package's statements (store.sql, keycheck.sql), bound to their Go
// types when the package is initialised; the package's test has the
// database check their columns.
var (
	queries = namedsql.MustLoadAll(sqlFiles)

	qKeyBySubject                  = namedsql.Bind[subjectArgs, keyBySubjectRow](queries, "KeyBySubject")
	qInsertKey                     = namedsql.Bind[insertKeyArgs, time.Time](queries, "InsertKey")
	qKeyByID                       = namedsql.Bind[keyIDArgs, keyByIDRow](queries, "KeyByID")
	qErasureOfKey                  = namedsql.Bind[keyIDArgs, time.Time](queries, "ErasureOfKey")
	qDeleteKey                     = namedsql.Bind[subjectArgs, deletedKeyRow](queries, "DeleteKey")
	qRecordErasure                 = namedsql.Bind[recordErasureArgs, recordedErasureRow](queries, "RecordErasure")
	qErasuresOfSubject             = namedsql.Bind[subjectArgs, earlierErasureRow](queries, "ErasuresOfSubject")
	qCustomerKeyTableExists        = namedsql.Bind[namedsql.NoArgs, bool](queries, "CustomerKeyTableExists")
	qSampleKeyOfMasterKey          = namedsql.Bind[wrappingKeyArgs, sampleKeyRow](queries, "SampleKeyOfMasterKey")
	qCustomerKeysOfOtherMasterKeys = namedsql.Bind[configuredArgs, otherMasterKeysRow](queries, "CustomerKeysOfOtherMasterKeys")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qKeyBySubject.Info(), qInsertKey.Info(), qKeyByID.Info(), qErasureOfKey.Info(), qDeleteKey.Info(),
	qRecordErasure.Info(), qErasuresOfSubject.Info(), qCustomerKeyTableExists.Info(),
	qSampleKeyOfMasterKey.Info(), qCustomerKeysOfOtherMasterKeys.Info(),
}

type subjectArgs struct {
	SubjectHash []byte `db:"subject_hash"`
}

type keyIDArgs struct {
	KeyID uuid.UUID `db:"key_id"`
}

type wrappingKeyArgs struct {
	WrappingKeyID string `db:"wrapping_key_id"`
}

type configuredArgs struct {
	Configured []string `db:"configured"`
}

type insertKeyArgs struct {
	KeyID         uuid.UUID `db:"key_id"`
	SubjectHash   []byte    `db:"subject_hash"`
	WrappedDEK    []byte    `db:"wrapped_dek"`
	WrappingKeyID string    `db:"wrapping_key_id"`
}

type recordErasureArgs struct {
	SubjectHash  []byte     `db:"subject_hash"`
	KeyID        *uuid.UUID `db:"key_id"`
	KeyCreatedAt *time.Time `db:"key_created_at"`
	ErasedBy     string     `db:"erased_by"`
	Reason       string     `db:"reason"`
}

type keyBySubjectRow struct {
	KeyID         uuid.UUID `db:"key_id"`
	WrappedDEK    []byte    `db:"wrapped_dek"`
	WrappingKeyID string    `db:"wrapping_key_id"`
	CreatedAt     time.Time `db:"created_at"`
}

type keyByIDRow struct {
	SubjectHash   []byte    `db:"subject_hash"`
	WrappedDEK    []byte    `db:"wrapped_dek"`
	WrappingKeyID string    `db:"wrapping_key_id"`
	CreatedAt     time.Time `db:"created_at"`
}

type sampleKeyRow struct {
	KeyID      uuid.UUID `db:"key_id"`
	WrappedDEK []byte    `db:"wrapped_dek"`
}

type deletedKeyRow struct {
	KeyID     uuid.UUID `db:"key_id"`
	CreatedAt time.Time `db:"created_at"`
}

type recordedErasureRow struct {
	ID       int64     `db:"id"`
	ErasedAt time.Time `db:"erased_at"`
}

type earlierErasureRow struct {
	KeyID    *uuid.UUID `db:"key_id"`
	ErasedAt time.Time  `db:"erased_at"`
	ErasedBy string     `db:"erased_by"`
}

type otherMasterKeysRow struct {
	Others string `db:"others"`
	Count  int64  `db:"count"`
}

// KeyRecord is one customer's data key as stored: wrapped by a master key.
type KeyRecord struct {
	ID            uuid.UUID `json:"key_id"`
	SubjectHash   []byte    `json:"subject_hash"`
	Wrapped       []byte    `json:"wrapped_dek"`
	WrappingKeyID string    `json:"wrapping_key_id"`
	CreatedAt     time.Time `json:"created_at"`
}

// ErrNoKey is a [KeyStore]'s answer for a key it does not hold.
var ErrNoKey = errors.New("codec: no such customer key")

// KeyStore keeps the customers' wrapped data keys. [PGStore] is the real
// one (the customer_keys table); [MemoryStore] serves tests.
type KeyStore interface {
	// ForSubject returns the key of the subject hash, storing the record
	// create makes when there is none; when two callers race, both get the
	// one that was stored first.
	ForSubject(ctx context.Context, subjectHash []byte, create func() (KeyRecord, error)) (KeyRecord, error)
	// Get returns the key with this id, or an error wrapping ErrNoKey.
	Get(ctx context.Context, id uuid.UUID) (KeyRecord, error)
	// ErasedAt says when the key with this id was erased, if it was.
	ErasedAt(ctx context.Context, id uuid.UUID) (time.Time, bool, error)
}

// DB is what PGStore needs of a pool (or a transaction).
type DB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// PGStore is the customer_keys table.
type PGStore struct{ db DB }

// NewPGStore returns the store of db's customer_keys table.
func NewPGStore(db DB) *PGStore { return &PGStore{db: db} }

var _ KeyStore = (*PGStore)(nil)

// ForSubject implements [KeyStore].
func (s *PGStore) ForSubject(ctx context.Context, subjectHash []byte, create func() (KeyRecord, error)) (KeyRecord, error) {
	for range 3 {
		rec, err := s.bySubject(ctx, subjectHash)
		if err == nil || !errors.Is(err, ErrNoKey) {
			return rec, err
		}
		rec, err = create()
		if err != nil {
			return KeyRecord{}, err
		}
		rec.CreatedAt, err = qInsertKey.Value(ctx, s.db, insertKeyArgs{
			KeyID: rec.ID, SubjectHash: subjectHash, WrappedDEK: rec.Wrapped, WrappingKeyID: rec.WrappingKeyID,
		})
		if err == nil {
			rec.SubjectHash = subjectHash
			return rec, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return KeyRecord{}, fmt.Errorf("codec: store a customer key: %w", err)
		}
		// Another encoder stored the subject's key first: read it.
	}
	return KeyRecord{}, errors.New("codec: a customer key kept disappearing while it was being created (a concurrent forget-customer?)")
}

func (s *PGStore) bySubject(ctx context.Context, subjectHash []byte) (KeyRecord, error) {
	r, err := qKeyBySubject.One(ctx, s.db, subjectArgs{SubjectHash: subjectHash})
	rec := KeyRecord{ID: r.KeyID, SubjectHash: subjectHash, Wrapped: r.WrappedDEK, WrappingKeyID: r.WrappingKeyID, CreatedAt: r.CreatedAt}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return KeyRecord{}, ErrNoKey
	case err != nil:
		return KeyRecord{}, fmt.Errorf("codec: read a customer key: %w", err)
	}
	return rec, nil
}

// Get implements [KeyStore].
func (s *PGStore) Get(ctx context.Context, id uuid.UUID) (KeyRecord, error) {
	r, err := qKeyByID.One(ctx, s.db, keyIDArgs{KeyID: id})
	rec := KeyRecord{ID: id, SubjectHash: r.SubjectHash, Wrapped: r.WrappedDEK, WrappingKeyID: r.WrappingKeyID, CreatedAt: r.CreatedAt}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return KeyRecord{}, fmt.Errorf("%w: %s", ErrNoKey, id)
	case err != nil:
		return KeyRecord{}, fmt.Errorf("codec: read customer key %s: %w", id, err)
	}
	return rec, nil
}

// ErasedAt implements [KeyStore].
func (s *PGStore) ErasedAt(ctx context.Context, id uuid.UUID) (time.Time, bool, error) {
	at, err := qErasureOfKey.Value(ctx, s.db, keyIDArgs{KeyID: id})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("codec: read the erasure of customer key %s: %w", id, err)
	}
	return at, true, nil
}

// MemoryStore is a [KeyStore] in memory, for tests and replays of recorded
// histories. Erase stands for outboxctl forget-customer.
type MemoryStore struct {
	mu     sync.Mutex
	recs   map[uuid.UUID]KeyRecord
	erased map[uuid.UUID]time.Time
}

// NewMemoryStore returns an empty store holding recs.
func NewMemoryStore(recs ...KeyRecord) *MemoryStore {
	s := &MemoryStore{recs: map[uuid.UUID]KeyRecord{}, erased: map[uuid.UUID]time.Time{}}
	for _, r := range recs {
		s.recs[r.ID] = r
	}
	return s
}

var _ KeyStore = (*MemoryStore)(nil)

// ForSubject implements [KeyStore].
func (s *MemoryStore) ForSubject(_ context.Context, subjectHash []byte, create func() (KeyRecord, error)) (KeyRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		if string(r.SubjectHash) == string(subjectHash) {
			return r, nil
		}
	}
	rec, err := create()
	if err != nil {
		return KeyRecord{}, err
	}
	rec.SubjectHash, rec.CreatedAt = subjectHash, time.Now()
	s.recs[rec.ID] = rec
	return rec, nil
}

// Get implements [KeyStore].
func (s *MemoryStore) Get(_ context.Context, id uuid.UUID) (KeyRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.recs[id]; ok {
		return r, nil
	}
	return KeyRecord{}, fmt.Errorf("%w: %s", ErrNoKey, id)
}

// ErasedAt implements [KeyStore].
func (s *MemoryStore) ErasedAt(_ context.Context, id uuid.UUID) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.erased[id]
	return at, ok, nil
}

// Erase deletes the subject's key, as outboxctl forget-customer does.
func (s *MemoryStore) Erase(subject string) bool {
	h := SubjectHash(subject)
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, r := range s.recs {
		if string(r.SubjectHash) == string(h) {
			delete(s.recs, id)
			s.erased[id] = time.Now()
			return true
		}
	}
	return false
}

// Records returns every key the store holds.
func (s *MemoryStore) Records() []KeyRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]KeyRecord, 0, len(s.recs))
	for _, r := range s.recs {
		out = append(out, r)
	}
	return out
}

// CacheTTL is how long a process keeps a customer's unwrapped data key for
// decoding: a key forgotten with outboxctl forget-customer is gone from
// every running process at most this long after. Encoding never trusts the
// cache: it asks the key store every time (forSubject).
const CacheTTL = time.Minute

// storeTimeout bounds one key store round trip inside Encode or Decode,
// which have no context of their own.
const storeTimeout = 10 * time.Second

// customerKeys unwraps customers' data keys with the master keys and caches
// the unwrapped keys by id for CacheTTL.
type customerKeys struct {
	keys  *Keyring
	store KeyStore
	ttl   time.Duration
	now   func() time.Time

	mu      sync.Mutex
	byKeyID map[uuid.UUID]cachedKey
}

type cachedKey struct {
	id   uuid.UUID
	aead cipher.AEAD
	at   time.Time
}

func newCustomerKeys(keys *Keyring, store KeyStore, ttl time.Duration) *customerKeys {
	if ttl <= 0 {
		ttl = CacheTTL
	}
	return &customerKeys{keys: keys, store: store, ttl: ttl, now: time.Now, byKeyID: map[uuid.UUID]cachedKey{}}
}

func (ck *customerKeys) cached(id uuid.UUID) (cipher.AEAD, bool) {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	c, ok := ck.byKeyID[id]
	if ok && ck.now().Sub(c.at) < ck.ttl {
		return c.aead, true
	}
	return nil, false
}

func (ck *customerKeys) remember(c cachedKey) {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	if len(ck.byKeyID) > 100_000 { // a bound, not a policy: start over
		ck.byKeyID = map[uuid.UUID]cachedKey{}
	}
	ck.byKeyID[c.id] = c
}

// forSubject returns the subject's key, creating it on first use. It asks
// the store every time, never the cache: once forget-customer has committed,
// no process encrypts with the erased key (a new order of the customer gets
// a new key, which every process can read), and an encoder racing the
// erasure waits for it (PGStore reads the key FOR KEY SHARE). The cache only
// saves unwrapping the key again.
func (ck *customerKeys) forSubject(subject string) (uuid.UUID, cipher.AEAD, error) {
	h := SubjectHash(subject)
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var rec KeyRecord
	err := retry(ctx, func() (err error) {
		rec, err = ck.store.ForSubject(ctx, h, ck.newRecord)
		return err
	})
	if err != nil {
		return uuid.Nil, nil, err
	}
	if a, ok := ck.cached(rec.ID); ok {
		return rec.ID, a, nil
	}
	a, err := ck.unwrap(rec)
	if err != nil {
		return uuid.Nil, nil, err
	}
	ck.remember(cachedKey{id: rec.ID, aead: a, at: ck.now()})
	return rec.ID, a, nil
}

// byID returns the key a payload names.
func (ck *customerKeys) byID(id uuid.UUID) (cipher.AEAD, error) {
	if a, ok := ck.cached(id); ok {
		return a, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var rec KeyRecord
	err := retry(ctx, func() (err error) {
		rec, err = ck.store.Get(ctx, id)
		return err
	})
	if errors.Is(err, ErrNoKey) {
		at, erased, eerr := ck.store.ErasedAt(ctx, id)
		switch {
		case eerr != nil:
			return nil, fmt.Errorf("%w: customer key %s%s is not in the key store (%v)", ErrUnknownKey, CustomerKeyPrefix, id, eerr)
		case erased:
			return nil, fmt.Errorf("%w: customer key %s%s was erased on %s (outboxctl forget-customer); the payload is unreadable by design",
				ErrErased, CustomerKeyPrefix, id, at.UTC().Format(time.RFC3339))
		}
		return nil, fmt.Errorf("%w: customer key %s%s is not in the key store of this DATABASE_URL", ErrUnknownKey, CustomerKeyPrefix, id)
	}
	if err != nil {
		return nil, err
	}
	a, err := ck.unwrap(rec)
	if err != nil {
		return nil, err
	}
	ck.remember(cachedKey{id: rec.ID, aead: a, at: ck.now()})
	return a, nil
}

// retry runs f up to three times while it fails for another reason than a
// missing key (a dropped connection, a failover): the SDK asks codecs to
// retry transient failures themselves, within the task's timeout.
func retry(ctx context.Context, f func() error) error {
	var err error
	for attempt := range 3 {
		if err = f(); err == nil || errors.Is(err, ErrNoKey) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	return err
}

// dekAAD binds a wrapped data key to its id.
func dekAAD(id uuid.UUID) []byte { return []byte("outflow-dek:" + id.String()) }

// newRecord makes a fresh data key wrapped by the primary master key.
func (ck *customerKeys) newRecord() (KeyRecord, error) {
	dek := make([]byte, KeySize)
	if _, err := rand.Read(dek); err != nil {
		return KeyRecord{}, err
	}
	id := uuid.New()
	wid := ck.keys.Primary()
	w, err := ck.keys.get(wid)
	if err != nil {
		return KeyRecord{}, err
	}
	wrapped, err := seal(w, dek, dekAAD(id))
	if err != nil {
		return KeyRecord{}, err
	}
	return KeyRecord{ID: id, Wrapped: wrapped, WrappingKeyID: wid}, nil
}

func (ck *customerKeys) unwrap(rec KeyRecord) (cipher.AEAD, error) {
	w, err := ck.keys.get(rec.WrappingKeyID)
	if err != nil {
		return nil, fmt.Errorf("customer key %s%s is wrapped by master key %q: %w", CustomerKeyPrefix, rec.ID, rec.WrappingKeyID, err)
	}
	dek, err := open(w, rec.Wrapped, dekAAD(rec.ID))
	if err != nil {
		return nil, fmt.Errorf("codec: customer key %s%s does not unwrap with master key %q: %w", CustomerKeyPrefix, rec.ID, rec.WrappingKeyID, err)
	}
	return newAEAD(dek)
}
