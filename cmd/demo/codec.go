package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// demoCodec is the payload encryption of the demo: a master key, the codec
// server and where the Web UI finds it.
type demoCodec struct {
	keys    string // OUTFLOW_CODEC_KEYS
	how     string
	keyID   string
	addr    string // CODECSERVER_ADDR
	proc    *proc.Process
	keyFile string
	// own: the demo's own key in .data/codec.keys (made by the demo), not
	// one the operator supplied.
	own bool
}

// endpoint is the codec server's URL, for the CLI and the Web UI.
func (c *demoCodec) endpoint() string { return "http://" + c.addr }

// demoCodecKeys returns OUTFLOW_CODEC_KEYS if set, else the demo's own key,
// generated on the first run into dataDir/codec.keys (mode 0600) and reused
// after: the dev server keeps its histories in dataDir/temporal.db across
// runs, and a new key would leave the older ones (and any workflow still
// running) unreadable.
func demoCodecKeys(dataDir string) (*demoCodec, error) {
	c := &demoCodec{keyFile: filepath.Join(dataDir, "codec.keys")}
	if file := os.Getenv(codec.KeysFileEnv); file != "" {
		c.keyFile = file
	} else if spec := os.Getenv(codec.KeysEnv); spec != "" {
		c.keys, c.how, c.keyFile = spec, codec.KeysEnv+" from the environment", ""
	}
	if c.keys == "" {
		b, err := os.ReadFile(c.keyFile)
		switch {
		case err == nil:
			c.keys, c.how = strings.TrimSpace(string(b)), "the demo key in "+c.keyFile
			c.own = c.keyFile == filepath.Join(dataDir, "codec.keys")
		case errors.Is(err, os.ErrNotExist) && c.keyFile == filepath.Join(dataDir, "codec.keys"):
			c.own = true
			c.keys = codec.NewKeySpec("demo-" + time.Now().UTC().Format("20060102"))
			if err := os.WriteFile(c.keyFile, []byte(c.keys+"\n"), 0o600); err != nil {
				return nil, err
			}
			c.how = "a new demo key, kept in " + c.keyFile
		default:
			return nil, err
		}
	}
	k, err := codec.ParseKeys(c.keys)
	if err != nil {
		return nil, fmt.Errorf("payload codec keys (%s): %w", c.how, err)
	}
	c.keyID = k.Primary()
	return c, nil
}

// codecServerAddr is CODECSERVER_ADDR, else 127.0.0.1:8081 when free, else a
// free port.
func codecServerAddr() (string, error) {
	if a := os.Getenv("CODECSERVER_ADDR"); a != "" {
		return a, nil
	}
	if ports.IsFree(8081) {
		return "127.0.0.1:8081", nil
	}
	p, err := ports.Free()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}

// startCodecServer runs bin/codecserver for the Web UI at uiURL. It has no
// bearer token unless CODECSERVER_TOKEN is set: the Web UI can only forward
// the user's own SSO access token, never a static one. Without one it is
// still closed to web pages: it listens on the loopback interface, answers
// only its own loopback names as Host (DNS rebinding), only
// application/json, and of browser pages only the UI's origin
// (docs/privacy.md, "Without a token").
func startCodecServer(ctx context.Context, dataDir, bin string, c *demoCodec, databaseURL, uiURL string) error {
	env := []string{
		codec.KeysEnv + "=" + c.keys, codec.KeysFileEnv + "=",
		"CODECSERVER_ADDR=" + c.addr,
		"CODECSERVER_CORS_ORIGIN=" + uiURL,
		"DATABASE_URL=" + databaseURL,
	}
	p, err := startChild(dataDir, "codecserver", bin, nil, env)
	if err != nil {
		return err
	}
	c.proc = p
	if err := waitLog(ctx, p, "listening", 30*time.Second); err != nil {
		p.Stop(5 * time.Second)
		return fmt.Errorf("codec server: %w", err)
	}
	return nil
}

// printCodecHowTo tells how to see one history raw (what Temporal stores)
// and decoded (through the codec server), on the CLI and in the Web UI.
func printCodecHowTo(w io.Writer, c *demoCodec, tmp *temporalServer, cli, databaseURL string, results []result) {
	var wid, orderID string
	for _, r := range results {
		for _, l := range r.workflows {
			if wid == "" && l.workflowID != "" {
				wid, orderID = l.workflowID, r.orderID
			}
		}
	}
	if wid == "" {
		wid = "<workflow id>"
	}
	token := ""
	if os.Getenv("CODECSERVER_TOKEN") != "" {
		token = ` --codec-auth "Bearer $CODECSERVER_TOKEN"`
	}
	fmt.Fprintf(w, "Payloads are encrypted (AES-256-GCM, key %s: %s); the customers' email, address and order lines are under each customer's own key.\n", c.keyID, c.how)
	fmt.Fprintf(w, "  raw, as Temporal stores it:   %s workflow show --address %s --namespace %s -w %s -o json\n", cli, tmp.address, tmp.namespace, wid)
	fmt.Fprintf(w, "  decoded by the codec server:  %s workflow show --address %s --namespace %s -w %s -o json --codec-endpoint %s%s\n",
		cli, tmp.address, tmp.namespace, wid, c.endpoint(), token)
	if tmp.uiURL != "" && tmp.proc != nil {
		fmt.Fprintf(w, "  Web UI (decodes through %s): %s/namespaces/%s/workflows/%s\n", c.endpoint(), tmp.uiURL, tmp.namespace, wid)
		fmt.Fprintf(w, "    to see it raw, clear the codec endpoint in the UI's codec (Data Encoder) settings at the top right, or use the raw CLI command above\n")
	} else {
		fmt.Fprintf(w, "  Web UI: set the codec endpoint %s in its \"Data Encoder\" settings (and CODECSERVER_CORS_ORIGIN to its address)\n", c.endpoint())
	}
	if orderID != "" {
		fmt.Fprintf(w, "  forget a customer: DATABASE_URL=%s TEMPORAL_ADDRESS=%s TEMPORAL_NAMESPACE=%s bin/outboxctl forget-customer customer1@example.com --reason \"demo\"\n",
			databaseURL, tmp.address, tmp.namespace)
		fmt.Fprintf(w, "    (refused, naming them, while a workflow of theirs still needs the key; then their personal data is unreadable in every history: order %s's input stays ciphertext even through the codec server)\n", orderID)
	}
}
