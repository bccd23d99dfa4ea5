#!/bin/sh
# Temporal's schema job (docker-compose.yml, service temporal-schema, on the
# temporalio/admin-tools image): creates the databases temporal and
# temporal_visibility when missing and brings both schemas to the server's
# version with temporal-sql-tool, as `make cluster` does (internal/cluster).
# setup-schema -v 0.0 and update-schema leave an up-to-date database as it
# is, so the job runs at every `docker compose up`. Any failure exits
# non-zero: compose retries it (restart: on-failure) and, when it keeps
# failing, reports it instead of starting Temporal.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${POSTGRES_PWD:?}"
sql() {
	db=$1
	shift
	out=$(temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" --port "${DB_PORT:-5432}" \
		--user "$POSTGRES_USER" --password "$POSTGRES_PWD" --db "$db" "$@" 2>&1) || {
		echo "$out"
		return 1
	}
	echo "$out"
	# Some versions log an error and still exit 0.
	if printf '%s\n' "$out" | grep -Eq '(ERROR|FATAL)'; then
		return 1
	fi
}
for db in temporal temporal_visibility; do
	if out=$(temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" --port "${DB_PORT:-5432}" \
		--user "$POSTGRES_USER" --password "$POSTGRES_PWD" --db "$db" create 2>&1); then
		echo "$out"
	elif printf '%s\n' "$out" | grep -q 'already exists'; then
		echo "database $db exists"
	else
		echo "$out"
		exit 1
	fi
done
sql temporal setup-schema -v 0.0
sql temporal update-schema --schema-name postgresql/v12/temporal
sql temporal_visibility setup-schema -v 0.0
sql temporal_visibility update-schema --schema-name postgresql/v12/visibility
echo "temporal schemas are current"
