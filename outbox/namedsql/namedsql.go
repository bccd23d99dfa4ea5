// Package namedsql loads SQL statements from embedded .sql files in which each
// statement is introduced by a "-- name: Name" line, the convention sqlc and
// yesql use. Runtime code refers to statements by name, so the SQL lives in
// .sql files a reviewer can read (and EXPLAIN) on their own.
//
// [Bind] gives a statement the Go types of its arguments and its rows (a
// [Stmt]), checked against the SQL when the package is initialised, and
// [CheckColumns] lets the package's test have the database confirm the
// result columns: what sqlc's generated code would guarantee.
package namedsql

import (
	"bufio"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
)

// Queries maps a statement's name to its text.
type Queries map[string]string

// MustLoad parses the named file of fsys and panics on a malformed file or a
// duplicate name: both are programming errors caught by any test that loads
// the package.
func MustLoad(fsys fs.FS, file string) Queries {
	q, err := Load(fsys, file)
	if err != nil {
		panic(err)
	}
	return q
}

// Load parses the named file of fsys.
func Load(fsys fs.FS, file string) (Queries, error) {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, fmt.Errorf("namedsql: %w", err)
	}
	q := Queries{}
	var name string
	var body strings.Builder
	flush := func() error {
		if name == "" {
			return nil
		}
		text := strings.TrimSpace(body.String())
		if text == "" {
			return fmt.Errorf("namedsql: %s: statement %q is empty", file, name)
		}
		if _, dup := q[name]; dup {
			return fmt.Errorf("namedsql: %s: statement %q defined twice", file, name)
		}
		q[name] = strings.TrimSuffix(text, ";")
		body.Reset()
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			fields := strings.Fields(rest)
			if len(fields) == 0 {
				return nil, fmt.Errorf("namedsql: %s: a name line without a name", file)
			}
			name = fields[0]
			continue
		}
		if name != "" {
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return q, nil
}

// Get returns the statement called name, panicking if there is none: a typo
// in a statement name fails the first test that reaches it.
func (q Queries) Get(name string) string {
	s, ok := q[name]
	if !ok {
		panic(fmt.Sprintf("namedsql: no statement named %q", name))
	}
	return s
}

// MustLoadAll loads every .sql file at the top of fsys into one set, the
// way a package loads its statements in one place. It panics on a malformed
// file, on no .sql file at all, and on a name two statements share, within
// one file or across files (each name must say which statement it is).
func MustLoadAll(fsys fs.FS) Queries {
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("namedsql: no .sql files embedded (%v)", err))
	}
	all := Queries{}
	for _, file := range files {
		q := MustLoad(fsys, file)
		for name := range q {
			if _, dup := all[name]; dup {
				panic(fmt.Sprintf("namedsql: %s: statement %q is also defined in another .sql file", file, name))
			}
		}
		maps.Copy(all, q)
	}
	return all
}

// MustMerge joins sets of statements into one, the way a package whose
// statements live in more than one place (package outbox and the relay's
// outbox/internal/relaysql) loads them in one set. It panics on a name two sets
// share.
func MustMerge(sets ...Queries) Queries {
	all := Queries{}
	for _, q := range sets {
		for name := range q {
			if _, dup := all[name]; dup {
				panic(fmt.Sprintf("namedsql: statement %q is defined in two sets", name))
			}
		}
		maps.Copy(all, q)
	}
	return all
}

// Unbound lists what is wrong between the statements a package loaded and
// those it bound: a statement of q that no Info names (reached by a name
// string, or left over when its caller went) and a name two Infos share.
// A package's test requires it to be empty.
func Unbound(q Queries, bound ...Info) []string {
	var bad []string
	seen := map[string]bool{}
	for _, s := range bound {
		if seen[s.Name] {
			bad = append(bad, fmt.Sprintf("statement %s is listed twice", s.Name))
		}
		seen[s.Name] = true
		if _, ok := q[s.Name]; !ok {
			bad = append(bad, fmt.Sprintf("statement %s is not one of the loaded set", s.Name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if !seen[name] {
			bad = append(bad, fmt.Sprintf("statement %s is not bound: bind it with namedsql.Bind and list its Info", name))
		}
	}
	return bad
}
