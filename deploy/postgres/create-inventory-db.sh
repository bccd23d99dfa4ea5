#!/bin/sh
# The inventory's database job (docker-compose.yml, service inventory-db, on
# the postgres image for its psql): creates the database INVENTORY_DB
# (default inventory) in the stack's PostgreSQL server when it is missing,
# and leaves it as it is when it exists. An init script in
# /docker-entrypoint-initdb.d would run only on a fresh pgdata volume; this
# job runs at every `docker compose up`, so a volume created before the
# inventory joined the stack gets its database too. The inventory migrates
# its own schema when it starts. psql takes the server from PGHOST, PGUSER,
# PGPASSWORD and PGDATABASE (a database that exists, to connect to). Any
# failure exits non-zero: compose retries it (restart: on-failure) and, when
# it keeps failing, reports it instead of starting the inventory.
set -eu
: "${PGHOST:?}" "${PGUSER:?}"
db=${INVENTORY_DB:-inventory}
# CREATE DATABASE cannot run inside a DO block or a function: \gexec runs
# it only when the SELECT returns it, that is when the database is missing.
psql -X -v ON_ERROR_STOP=1 -v db="$db" <<'SQL'
SELECT format('CREATE DATABASE %I', :'db')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db')\gexec
SQL
echo "inventory database $db is there"
