#!/usr/bin/env bash
# Runs schemathesis against a fresh `moodledger serve` with a test user, every phase (examples, coverage, fuzzing,
# stateful); installs schemathesis from PyPI into a temporary virtualenv. `.ci/run` runs it with a fixed seed.
# Usage: Tests/Server/schemathesis.sh [extra `st run` options…]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet schemathesis
(cd "$root" && swift build --product moodledger)
bin=$root/.build/debug/moodledger
key=$("$bin" serve user add tester --data "$work/data" | tail -1)
token=$("$bin" serve token --user tester --data "$work/data" --ttl 1d)
"$bin" serve --data "$work/data" --port 0 --writes-per-hour 0 --reads-per-hour 0 > "$work/out" 2> "$work/err" &
server=$!
for _ in $(seq 50); do grep -q listening "$work/out" && break; sleep 0.1; done
port=$(grep -o '127.0.0.1:[0-9]*' "$work/out" | cut -d: -f2)
cd "$work"  # schemathesis keeps a cache in the working directory
"$work/venv/bin/st" run "$root/Specs/openapi.yaml" --url "http://127.0.0.1:$port" \
    -H "X-API-Key: $key" -H "Authorization: Bearer $token" \
    --checks all --phases examples,coverage,fuzzing,stateful "$@"
