#!/usr/bin/env bash
# Schemathesis against the real server: the AgentLex spec
# (tests/data/specs/agentlex.openapi.json) on the operations this version implements,
# checking that no response is a server error (5xx) and that every response matches
# the schema the spec gives its status. Starts `quarry serve` on a free loopback port
# with a fresh data directory, signs up for a key, seeds a collection and a document
# for the read operations (schemathesis.toml beside this file), runs schemathesis
# bounded in examples and in time, stops the server. Exits non-zero on any failure.
#
#     tests/schemathesis/run.sh            # after cargo build --bin quarry and ops/setup-llm-tests
#
# Environment: ST_BIN (the binary, default target/debug/quarry), QUARRY_CACHE (where
# ops/setup-llm-tests put the venv), ST_MAX_EXAMPLES (default 10 per operation),
# ST_SEED (default 1; "random" for a new one each run), ST_TIME_LIMIT (the wall-clock
# cap of the schemathesis run in seconds, default 240), QUARRY_EMBEDDER (default
# "none": keyword search only and a quick start; name a model to run semantic and
# hybrid searches too).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
here="$root/tests/schemathesis"
bin="${ST_BIN:-$root/target/debug/quarry}"
cache="${QUARRY_CACHE:-$HOME/.cache/quarry}"
venv="$cache/venv-sdk"
st="$venv/bin/schemathesis"
py="$venv/bin/python"
say() { printf '[schemathesis] %s\n' "$*"; }

[ -x "$bin" ] || { echo "[schemathesis] $bin is missing: cargo build --bin quarry" >&2; exit 2; }
[ -x "$st" ] || { echo "[schemathesis] $st is missing: ops/setup-llm-tests installs it" >&2; exit 2; }

work="$(mktemp -d)"
pid=""
stop() {
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap stop EXIT

# Rates and allowances out of the way: the run sends thousands of requests with one
# key and signs up from one address; a 429 would leave the operations behind it untested.
cat >"$work/quarry.toml" <<'TOML'
[auth.signup_per_ip]
burst = 0
[plans.scribe]
name = "Scribe"
price = 0
stored_chars = "unlimited"
search = "unlimited"
extract = "unlimited"
research = "unlimited"
rate_per_minute = 1000000
burst = 100000
max_keys = 5
TOML

# QUARRY_* is the server's configuration: none of the caller's, only the embedder.
unset_quarry=()
for name in $(compgen -e | grep '^QUARRY_' || true); do unset_quarry+=(-u "$name"); done
env "${unset_quarry[@]}" QUARRY_EMBEDDER="${QUARRY_EMBEDDER:-none}" "$bin" serve --listen 127.0.0.1:0 --shards 1 \
    --data "$work/data" --config "$work/quarry.toml" >"$work/stdout" 2>"$work/server.log" &
pid=$!
addr=""
for _ in $(seq 1 300); do
    addr="$(sed -n 's|.*listening on http://\([^ ]*\).*|\1|p' "$work/stdout" | head -n1)"
    [ -n "$addr" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "[schemathesis] the server exited" >&2; exit 2; }
    sleep 0.1
done
[ -n "$addr" ] || { echo "[schemathesis] the server printed no address in 30 s" >&2; exit 2; }
base="http://$addr"
say "server at $base"

# A key, a collection and a document with two pages, through the API itself.
eval "$("$py" - "$base" <<'PY'
import json, sys, urllib.request
base = sys.argv[1]
def call(path, body, key=None):
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = "Bearer " + key
    req = urllib.request.Request(base + path, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)
key = call("/v1/signup", {"email": "schemathesis@example.com"})["api_key"]
col = call("/v1/collections", {"name": "schemathesis"}, key)["id"]
doc = call(f"/v1/collections/{col}/documents", {"title": "Audit rules", "text": "The contract permits one audit per year.\f## Notice\n\nThirty days."}, key)["id"]
print(f"ST_KEY={key} ST_COLLECTION={col} ST_DOCUMENT={doc}")
PY
)"
export ST_COLLECTION ST_DOCUMENT
say "seeded collection $ST_COLLECTION, document $ST_DOCUMENT"

seed="${ST_SEED:-1}"
seed_args=(--seed "$seed")
[ "$seed" = random ] && seed_args=()
status=0
# From the scratch directory: schemathesis keeps a cache in its working directory.
(cd "$work" && exec timeout --signal=INT --kill-after=10 "${ST_TIME_LIMIT:-240}" \
    "$st" --config-file "$here/schemathesis.toml" run "$root/tests/data/specs/agentlex.openapi.json" \
    --url "$base" \
    --header "Authorization: Bearer $ST_KEY" \
    --checks not_a_server_error,response_schema_conformance \
    --exclude-path-regex '/v1/(chunk|collections/\{id\}/(extract|research|sample))$' \
    --max-examples "${ST_MAX_EXAMPLES:-10}" \
    --workers 1 \
    --request-timeout 30 \
    --generation-database none \
    --no-color \
    --output-truncate true \
    "${seed_args[@]}") || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 130 ]; then
    echo "[schemathesis] the run passed its ${ST_TIME_LIMIT:-240} s limit" >&2
fi
if grep -q "panicked" "$work/server.log"; then
    echo "[schemathesis] the server panicked:" >&2
    grep -A5 "panicked" "$work/server.log" >&2
    status=1
fi
exit "$status"
