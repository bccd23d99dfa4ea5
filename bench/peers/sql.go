package main

import (
	"embed"

	"github.com/outflow/outflow/internal/namedsql"
)

//go:embed peers.sql
var sqlFiles embed.FS

// queries are the bench's own statements (peers.sql).
var queries = namedsql.MustLoad(sqlFiles, "peers.sql")
