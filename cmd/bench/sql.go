package main

import (
	"embed"

	"github.com/outflow/outflow/internal/namedsql"
)

//go:embed bench.sql
var sqlFiles embed.FS

// queries are the bench's own statements (bench.sql).
var queries = namedsql.MustLoad(sqlFiles, "bench.sql")
