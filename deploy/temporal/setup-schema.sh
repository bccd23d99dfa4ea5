#!/bin/sh
# Temporal's schema job (docker-compose.yml, service temporal-schema, on the
# temporalio/admin-tools image): creates the databases TEMPORAL_DB (default
# temporal) and VISIBILITY_DB (default temporal_visibility) when missing and brings both schemas to the server's
# version with temporal-sql-tool, as `make cluster` does (internal/dev/cluster).
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
	# Some versions log an error and still exit 0 (internal/dev/cluster checks
	# the same markers: the level between tabs, or in colour).
	tab=$(printf '\t')
	if printf '%s\n' "$out" | grep -Eq "${tab}(ERROR|FATAL)${tab}|ERROR.\[0m"; then
		return 1
	fi
}
main_db=${TEMPORAL_DB:-temporal}
vis_db=${VISIBILITY_DB:-temporal_visibility}
for db in "$main_db" "$vis_db"; do
	# create leaves an existing database as it is (some versions refuse it
	# instead, saying it already exists).
	if out=$(temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" --port "${DB_PORT:-5432}" \
		--user "$POSTGRES_USER" --password "$POSTGRES_PWD" --db "$db" create 2>&1); then
		[ -z "$out" ] || echo "$out"
		echo "database $db is there"
	elif printf '%s\n' "$out" | grep -q 'already exists'; then
		echo "database $db exists"
	else
		echo "$out"
		exit 1
	fi
done
sql "$main_db" setup-schema -v 0.0
sql "$main_db" update-schema --schema-name postgresql/v12/temporal
sql "$vis_db" setup-schema -v 0.0
sql "$vis_db" update-schema --schema-name postgresql/v12/visibility
echo "temporal schemas are current"
