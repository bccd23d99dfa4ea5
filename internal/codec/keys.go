package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Environment variables of the master keys (docs/reference.md).
const (
	// KeysEnv holds the master keys: comma-separated KEY_ID:BASE64_32_BYTES,
	// the first one encrypts, all decrypt. Unset (and KeysFileEnv unset):
	// no encryption.
	KeysEnv = "OUTFLOW_CODEC_KEYS"
	// KeysFileEnv names a file holding the same list (commas or newlines,
	// '#' starts a comment), for keys mounted as a secret file.
	KeysFileEnv = "OUTFLOW_CODEC_KEYS_FILE"
	// CompressEnv turns zlib before encryption off with "false" (default
	// true: a payload is compressed when that makes it smaller).
	CompressEnv = "OUTFLOW_CODEC_COMPRESS"
)

// KeySize is the size of every key: AES-256.
const KeySize = 32

// keyIDPattern is what a master key id may look like: it is written in
// every payload's metadata and in logs, so it is short and plain.
var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Keyring is the master keys of OUTFLOW_CODEC_KEYS, in order: the first
// (Primary) encrypts, every one decrypts. It never prints key material.
type Keyring struct {
	ids  []string
	aead map[string]cipher.AEAD
}

// ParseKeys parses KEY_ID:BASE64_32_BYTES entries separated by commas or
// newlines; blank entries and '#' comments are ignored. Errors name the
// entry by position and key id, never its key.
func ParseKeys(spec string) (*Keyring, error) {
	k := &Keyring{aead: map[string]cipher.AEAD{}}
	var entries []string
	for _, line := range strings.Split(spec, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		entries = append(entries, strings.Split(line, ",")...)
	}
	n := 0
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		n++
		id, b64, ok := strings.Cut(e, ":")
		id = strings.TrimSpace(id)
		if !ok || !keyIDPattern.MatchString(id) {
			return nil, fmt.Errorf("entry %d: want KEY_ID:BASE64_32_BYTES with a key id of letters, digits, '.', '_' or '-' (at most 64)", n)
		}
		raw, err := decodeBase64(strings.TrimSpace(b64))
		if err != nil || len(raw) != KeySize {
			return nil, fmt.Errorf("entry %d (key id %q): the key is not %d bytes of base64 (make one with: openssl rand -base64 32)", n, id, KeySize)
		}
		if _, dup := k.aead[id]; dup {
			return nil, fmt.Errorf("entry %d: key id %q appears twice", n, id)
		}
		a, err := newAEAD(raw)
		if err != nil {
			return nil, fmt.Errorf("entry %d (key id %q): %w", n, id, err)
		}
		k.ids = append(k.ids, id)
		k.aead[id] = a
	}
	if len(k.ids) == 0 {
		return nil, errors.New("no key: want at least one KEY_ID:BASE64_32_BYTES")
	}
	return k, nil
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// LoadKeys reads the master keys from KeysEnv or the file KeysFileEnv
// names, through getenv. It returns nil, nil when neither is set: no
// encryption.
func LoadKeys(getenv func(string) string) (*Keyring, error) {
	spec, file := getenv(KeysEnv), getenv(KeysFileEnv)
	switch {
	case spec != "" && file != "":
		return nil, fmt.Errorf("%s and %s are both set: set one", KeysEnv, KeysFileEnv)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", KeysFileEnv, err)
		}
		k, err := ParseKeys(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", KeysFileEnv, file, err)
		}
		return k, nil
	case spec != "":
		k, err := ParseKeys(spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", KeysEnv, err)
		}
		return k, nil
	}
	return nil, nil
}

// NewKeySpec returns a fresh KEY_ID:BASE64 entry (for the demo and tests).
func NewKeySpec(id string) string {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on a supported platform
	}
	return id + ":" + base64.StdEncoding.EncodeToString(b)
}

// Primary is the id of the key that encrypts.
func (k *Keyring) Primary() string { return k.ids[0] }

// IDs are the ids of every key, the primary first.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }

// String names the keys by id only.
func (k *Keyring) String() string {
	return fmt.Sprintf("encrypting with %s; decrypting %s", k.ids[0], strings.Join(k.ids, ", "))
}

// GoString keeps %#v from printing the keys.
func (k *Keyring) GoString() string { return "codec.Keyring{" + k.String() + "}" }

func (k *Keyring) get(id string) (cipher.AEAD, error) {
	if a, ok := k.aead[id]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("%w: %q is not among the configured keys (%s holds %s); add it to decrypt",
		ErrUnknownKey, id, KeysEnv, strings.Join(k.ids, ", "))
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal returns nonce || AES-GCM(plain), authenticating aad.
func seal(a cipher.AEAD, plain, aad []byte) ([]byte, error) {
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return a.Seal(nonce, nonce, plain, aad), nil
}

// open reverses seal.
func open(a cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < a.NonceSize()+a.Overhead() {
		return nil, errors.New("ciphertext too short")
	}
	n := a.NonceSize()
	return a.Open(nil, sealed[:n], sealed[n:], aad)
}
