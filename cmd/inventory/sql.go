package main

import (
	"bufio"
	"embed"
	"fmt"
	"strings"
)

//go:embed queries.sql
var queryFile embed.FS

// queries are the statements of queries.sql by name, each introduced by a
// "-- name: Name" line.
var queries = mustLoadQueries("queries.sql")

// query returns the statement called name; a typo panics in the first test
// that reaches it.
func query(name string) string {
	q, ok := queries[name]
	if !ok {
		panic(fmt.Sprintf("inventory: no statement named %q in queries.sql", name))
	}
	return q
}

func mustLoadQueries(file string) map[string]string {
	data, err := queryFile.ReadFile(file)
	if err != nil {
		panic(err)
	}
	out := map[string]string{}
	var name string
	var body strings.Builder
	flush := func() {
		if name == "" {
			return
		}
		text := strings.TrimSuffix(strings.TrimSpace(body.String()), ";")
		if _, dup := out[name]; dup || text == "" {
			panic(fmt.Sprintf("inventory: %s: statement %q is empty or defined twice", file, name))
		}
		out[name] = text
		body.Reset()
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
			flush()
			name = strings.TrimSpace(rest)
			continue
		}
		if name != "" {
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	flush()
	return out
}
