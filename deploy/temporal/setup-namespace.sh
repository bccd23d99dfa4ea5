#!/bin/sh
# Temporal's namespace job (docker-compose.yml, service temporal-setup, on the
# temporalio/admin-tools image): the namespace outflow uses, with the
# retention that is the relay's replay horizon (docs/time-and-money.md), and
# the OrderId Keyword search attribute every order workflow sets. Idempotent;
# any failure exits non-zero and compose retries it (restart: on-failure).
set -eu
ns=${NAMESPACE:-default}
addr=${TEMPORAL_ADDRESS:-temporal:7233}
if ! temporal operator cluster health --address "$addr" | grep -q SERVING; then
	echo "temporal at $addr is not serving yet"
	exit 1
fi
if ! temporal operator namespace describe --address "$addr" --namespace "$ns" >/dev/null 2>&1; then
	temporal operator namespace create --address "$addr" --namespace "$ns" --retention "${RETENTION:-168h}"
fi
# A namespace just registered reaches the frontend's namespace cache within
# seconds; until then its search attributes are "not found".
tries=0
until temporal operator search-attribute list --address "$addr" --namespace "$ns" >/dev/null 2>&1; do
	tries=$((tries + 1))
	if [ "$tries" -ge 30 ]; then
		echo "namespace $ns is not visible to the frontend yet"
		exit 1
	fi
	sleep 1
done
if ! temporal operator search-attribute list --address "$addr" --namespace "$ns" | grep -qw OrderId; then
	temporal operator search-attribute create --address "$addr" --namespace "$ns" --name OrderId --type Keyword
fi
temporal operator search-attribute list --address "$addr" --namespace "$ns" | grep -qw OrderId
echo "namespace $ns and the OrderId search attribute are ready"
