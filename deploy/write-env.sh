#!/bin/sh
# Writes the compose stack's secrets into FILE (default .env at the
# repository root, which `docker compose` reads by itself), unless FILE
# exists: keep it, because histories and customer keys written under its
# OUTFLOW_CODEC_KEYS cannot be read without it. `make up` runs this, then
# `docker compose up --build`. .env.example documents every variable.
set -eu
file=${1:-.env}
if [ -e "$file" ]; then
	echo "compose: keeping the secrets in $file"
	exit 0
fi
# 24 random bytes as hex, and 32 random bytes as base64: the formats the
# order API and the codec keyring (KEY_ID:BASE64_32_BYTES) take.
rand_hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
rand_b64() { head -c "$1" /dev/urandom | base64 | tr -d '\n'; }
umask 077
cat >"$file" <<EOT
# Written by deploy/write-env.sh (make up); docker compose reads it. Keep
# OUTFLOW_CODEC_KEYS: workflow histories and customer keys encrypted under it
# cannot be read without it. See .env.example for every variable.
ORDERAPI_TOKEN=$(rand_hex 24)
OUTFLOW_CODEC_KEYS=k1:$(rand_b64 32)
GRAFANA_ADMIN_PASSWORD=$(rand_hex 12)
EOT
echo "compose: wrote new secrets to $file (mode 600); the order API's token is ORDERAPI_TOKEN there"
