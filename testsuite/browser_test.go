package testsuite

import (
	"bytes"
	"context"
	"flag"
	"image"
	"image/color/palette"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// screenshots, when set, writes the browser tests' screenshots into
// docs/img (go test -run 'TestConsoleInBrowser|TestTheDemosTraceLinkResolves'
// ./testsuite -screenshots), else into each test's temporary directory.
var screenshots = flag.Bool("screenshots", false, "write the browser tests' screenshots to docs/img")

// chromiumEnv names the Chromium the browser tests drive (default
// /usr/bin/chromium, Debian's package).
const chromiumEnv = "OUTFLOW_CHROMIUM"

// browser returns an allocator of headless Chromium tabs (chromedp.NewContext
// opens one), 1024×700, ended with the test.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	chromium := "/usr/bin/chromium"
	if p := os.Getenv(chromiumEnv); p != "" {
		chromium = p
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Chromium at %s (Debian: apt-get install chromium; or set %s): %v", chromium, chromiumEnv, err)
	}
	alloc, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.WindowSize(1024, 700))...)
	t.Cleanup(cancel)
	return alloc
}

// waitText waits until the page's body contains text.
func waitText(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var body string
	for time.Now().Before(deadline) {
		b, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		if body = b; err == nil && strings.Contains(body, text) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the page never said %q; it says:\n%s", text, body)
}

// shot takes a screenshot of the viewport, into docs/img with -screenshots,
// else into the test's temporary directory.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	save(t, name, png)
}

// fullShot is shot of the whole page, however long.
func fullShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	require.NoError(t, err)
	save(t, name, png)
}

// save writes a screenshot, re-encoded with the web-safe palette (a
// page of text loses nothing a reader sees, and the file a fifth of its
// size).
func save(t *testing.T, name string, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	p := image.NewPaletted(img.Bounds(), palette.WebSafe)
	draw.Draw(p, p.Bounds(), img, img.Bounds().Min, draw.Src)
	var buf bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, p))
	dir := t.TempDir()
	if *screenshots {
		dir = filepath.Join("..", "docs", "img")
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644))
}
