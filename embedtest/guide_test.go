package embedtest

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

// TestGuideIsTheTestedService: every Go and SQL block of docs/embedding.md
// is a piece of testdata/invoices, word for word, so the guide shows the
// code TestServiceOutsideTheRepository runs. A block may join several
// top-level declarations (a blank line, then a line that starts in column
// one); each one must be in a file of the service in that language.
func TestGuideIsTheTestedService(t *testing.T) {
	t.Parallel()
	root, err := checkout.Root()
	require.NoError(t, err)
	sources := map[string][]string{} // language → file contents
	svc := filepath.Join(root, "embedtest", "testdata", "invoices")
	require.NoError(t, filepath.WalkDir(svc, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		lang := map[string]string{".go": "go", ".sql": "sql"}[filepath.Ext(path)]
		if lang == "" {
			return nil
		}
		b, err := os.ReadFile(path)
		sources[lang] = append(sources[lang], string(b))
		return err
	}))
	guide, err := os.ReadFile(filepath.Join(root, "docs", "embedding.md"))
	require.NoError(t, err)
	blocks := codeBlocks(t, guide)
	require.NotEmpty(t, blocks["go"], "docs/embedding.md shows no Go")
	require.NotEmpty(t, blocks["sql"], "docs/embedding.md shows no SQL")
	for lang, bs := range blocks {
		for _, block := range bs {
			for _, decl := range declarations(block) {
				found := false
				for _, src := range sources[lang] {
					found = found || strings.Contains(src, decl)
				}
				require.True(t, found, "docs/embedding.md shows %s that is not in embedtest/testdata/invoices (copy it from there, or change both):\n%s", lang, decl)
			}
		}
	}
}

// codeBlocks returns the fenced code blocks of a Markdown file by language,
// for Go and SQL.
func codeBlocks(t *testing.T, md []byte) map[string][]string {
	t.Helper()
	blocks := map[string][]string{}
	var lang string
	var cur []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```"):
			in, lang, cur = true, strings.TrimPrefix(line, "```"), nil
		case in && line == "```":
			in = false
			if lang == "go" || lang == "sql" {
				blocks[lang] = append(blocks[lang], strings.Join(cur, "\n"))
			}
		case in:
			cur = append(cur, line)
		}
	}
	require.NoError(t, sc.Err())
	require.False(t, in, "docs/embedding.md has an unclosed code block")
	return blocks
}

// declarations splits a block at each blank line followed by a line that
// starts in column one: gofmt's top-level declarations (a function body's
// lines are indented).
func declarations(block string) []string {
	var decls []string
	lines := strings.Split(block, "\n")
	start := 0
	for i := 1; i < len(lines); i++ {
		if lines[i-1] == "" && lines[i] != "" && lines[i][0] != '\t' && lines[i][0] != ' ' && lines[i][0] != ')' && lines[i][0] != '}' {
			decls = append(decls, strings.TrimSpace(strings.Join(lines[start:i-1], "\n")))
			start = i
		}
	}
	return append(decls, strings.TrimSpace(strings.Join(lines[start:], "\n")))
}
