// Package doccheck holds tests only: the repository's Markdown stays
// short enough to read, and names no file that does not exist.
package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

// The budgets: a README read in a few minutes, and all Markdown together
// (README, guides, model notes, changelog) at most 150 KiB. Figures and
// analyses of past runs live in git history, not in the files.
const (
	readmeBudget = 12 * 1024
	totalBudget  = 150 * 1024
)

// TestReadmeIsShort: README.md is at most 12 KiB.
func TestReadmeIsShort(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	require.LessOrEqual(t, len(b), readmeBudget,
		"README.md is %d bytes, over its budget of %d: move detail to a page under docs/ and link it", len(b), readmeBudget)
}

// TestMarkdownIsShort: all tracked Markdown together is at most 150 KiB.
func TestMarkdownIsShort(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	total := 0
	var sizes []string
	for _, f := range markdownFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		total += len(b)
		sizes = append(sizes, fmt.Sprintf("%7d %s", len(b), f))
	}
	require.LessOrEqual(t, total, totalBudget,
		"the Markdown is %d bytes, over its budget of %d: cut repetition and history (git keeps it):\n%s",
		total, totalBudget, strings.Join(sizes, "\n"))
}

// TestMarkdownNamesExistingFiles: every relative link of a tracked
// Markdown file ([text](path), <img src="path">) and every backticked
// repository path (`outbox/enqueue.go`, `docs/operations.md`) names a file
// or directory that exists. A backticked span counts as a repository path
// when it has a slash and its first segment is a top-level entry of the
// repository or of the file's own directory; `internal/routes.OrderIDKey`
// (a package and one of its names) counts as its package's directory.
func TestMarkdownNamesExistingFiles(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	var broken []string
	for _, f := range markdownFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		broken = append(broken, brokenNames(root, f, b)...)
	}
	require.Empty(t, broken, "Markdown names files that do not exist (fix the name, or the file moved):\n%s", strings.Join(broken, "\n"))
}

// TestReadmeSnippetsAreTheTestedService: every Go block of README.md is a
// piece of embedtest/testdata/invoices, word for word, so the quick start
// compiles against today's API: TestServiceOutsideTheRepository builds and
// runs that service.
func TestReadmeSnippetsAreTheTestedService(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	var sources []string
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "embedtest", "testdata", "invoices"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".go" {
			return err
		}
		b, err := os.ReadFile(path)
		sources = append(sources, string(b))
		return err
	}))
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	blocks := goBlocks(readme)
	require.NotEmpty(t, blocks, "README.md shows no Go")
	for _, block := range blocks {
		found := false
		for _, src := range sources {
			found = found || strings.Contains(src, block)
		}
		require.True(t, found, "README.md shows Go that is not in embedtest/testdata/invoices (copy it from there, or change both):\n%s", block)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := checkout.Root()
	require.NoError(t, err)
	return root
}

// markdownFiles lists the tracked Markdown files, relative to root (every
// .md file outside hidden directories and bin/ when root is no git
// checkout).
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	if out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--", "*.md").Output(); err == nil {
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, filepath.FromSlash(f))
			}
		}
	} else {
		require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "bin") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(name, ".md") {
				rel, err := filepath.Rel(root, path)
				files = append(files, rel)
				return err
			}
			return nil
		}))
	}
	require.NotEmpty(t, files, "no Markdown found under %s", root)
	sort.Strings(files)
	return files
}

var (
	linkRE = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)|<img[^>]*\ssrc="([^"]+)"`)
	codeRE = regexp.MustCompile("`([^`\n]+)`")
	pathRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-]*(/[A-Za-z0-9_.\-]+)+/?$`)
)

// brokenNames returns "file:line: name" for each link or backticked path of
// md (file f, relative to root) that names nothing. Fenced code blocks are
// not read: they show commands and output, not references.
func brokenNames(root, f string, md []byte) []string {
	dir := filepath.Dir(filepath.Join(root, f))
	exists := func(base, p string) bool {
		_, err := os.Stat(filepath.Join(base, filepath.FromSlash(p)))
		return err == nil
	}
	var broken []string
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	fenced := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		// A link inside a code span is code (`Bind[Args, Row](queries, ...)`).
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, "``"), -1) {
			target := m[1] + m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if !exists(dir, target) {
				broken = append(broken, fmt.Sprintf("%s:%d: link %s", f, n, target))
			}
		}
		for _, m := range codeRE.FindAllStringSubmatch(line, -1) {
			p := m[1]
			if !pathRE.MatchString(p) || strings.Contains(p, "..") {
				continue
			}
			p = strings.TrimSuffix(p, "/")
			first, _, _ := strings.Cut(p, "/")
			var base string
			switch {
			case first == "bin": // built by make, not tracked
				continue
			case exists(root, first):
				base = root
			case exists(dir, first):
				base = dir
			default:
				continue // not a repository path: a module path, a URL path, a host
			}
			if exists(base, p) {
				continue
			}
			// A package and one of its names: internal/routes.OrderIDKey.
			if i := strings.LastIndex(p, "."); i > strings.LastIndex(p, "/") {
				if fi, err := os.Stat(filepath.Join(base, filepath.FromSlash(p[:i]))); err == nil && fi.IsDir() {
					continue
				}
			}
			broken = append(broken, fmt.Sprintf("%s:%d: `%s`", f, n, m[1]))
		}
	}
	return broken
}

// goBlocks returns README's fenced Go blocks, trimmed.
func goBlocks(md []byte) []string {
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(string(md), "\n") {
		switch {
		case !in && line == "```go":
			in, cur = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, strings.TrimSpace(strings.Join(cur, "\n")))
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}
