#!/usr/bin/env bash
# Schemathesis against the real server: the SOAT sibling module specs Quarry serves
# under /api/v1 (projects, api-keys, ai-providers, secrets, tools; bundled into
# tests/data/specs/soat-MODULE.bundled.openapi.json by ops/bundle-soat-module-specs),
# checking that no response is a server error and that every response matches the
# schema the spec gives its status. Those older specs do not list every 400 Quarry
# answers, so status_code_conformance is not run. Starts `quarry serve` on a free
# loopback port with a fresh data directory, signs up, seeds the records the {id}
# operations read (soat_modules.toml), runs schemathesis once per spec with a fixed
# seed and bounded examples, stops the server.
#
# No request leaves the machine: `POST /api/v1/tools/{tool_id}/call` is not fuzzed (the
# spec's examples name hosts like mcp.example.com), the stateful phase is off (its links
# would call /models on providers the fuzzer made, pointed at any host), and /models
# reads a provider that fails before any request (openai with no secret).
#
# Environment: ST_BIN (default target/debug/quarry), QUARRY_CACHE (the venv's home),
# ST_MAX_EXAMPLES (default 8), ST_SEED (default 1; "random" for a new one),
# ST_TIME_LIMIT (seconds for each spec's run, default 60).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/tests/schemathesis"
bin="${ST_BIN:-$root/target/debug/quarry}"
venv="${QUARRY_CACHE:-$HOME/.cache/quarry}/venv-sdk"
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

# Rates and key counts out of the way: a 429 or a plan refusal would leave the
# operations behind it, and the success schemas, untested.
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
max_keys = 100000
TOML

unset_quarry=()
for name in $(compgen -e | grep '^QUARRY_' || true); do unset_quarry+=(-u "$name"); done
env "${unset_quarry[@]}" QUARRY_EMBEDDER=none "$bin" serve --listen 127.0.0.1:0 --shards 2 \
    --data "$work/data" --config "$work/quarry.toml" >"$work/stdout" 2>"$work/server.log" &
pid=$!
addr=""
for _ in $(seq 1 300); do
    addr="$(sed -n 's|.*listening on http://\([^ ]*\).*|\1|p' "$work/stdout" 2>/dev/null | head -n1 || true)"
    [ -n "$addr" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "[schemathesis] the server exited" >&2; exit 2; }
    sleep 0.1
done
[ -n "$addr" ] || { echo "[schemathesis] the server printed no address in 30 s" >&2; exit 2; }
base="http://$addr"
say "server at $base"

eval "$("$py" - "$base" <<'PY'
import json, sys, urllib.request
base = sys.argv[1]
def call(method, path, body, key=None):
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = "Bearer " + key
    req = urllib.request.Request(base + path, json.dumps(body).encode(), headers, method=method)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)
key = call("POST", "/v1/signup", {"email": "schemathesis-modules@example.com"})["api_key"]
ids = {"ST_KEY": key}
def make(name, path, body):
    ids[name] = call("POST", path, body, key)["id"]
make("ST_PROJECT", "/api/v1/projects", {"name": "seeded"})
make("ST_PROJECT_DOOMED", "/api/v1/projects", {"name": "to delete"})
make("ST_API_KEY", "/api/v1/api-keys", {"name": "seeded"})
make("ST_API_KEY_DOOMED", "/api/v1/api-keys", {"name": "to delete"})
provider = {"name": "seeded", "provider": "openai", "default_model": "gpt-4o"}
make("ST_AIP", "/api/v1/ai-providers", provider)
make("ST_AIP_PATCHED", "/api/v1/ai-providers", provider)
make("ST_AIP_DOOMED", "/api/v1/ai-providers", provider)
make("ST_SECRET", "/api/v1/secrets", {"name": "SEEDED", "value": "s3cret"})
make("ST_SECRET_DOOMED", "/api/v1/secrets", {"name": "DOOMED", "value": "s3cret"})
make("ST_TOOL", "/api/v1/tools", {"name": "seeded", "type": "client"})
make("ST_TOOL_DOOMED", "/api/v1/tools", {"name": "doomed", "type": "client"})
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_PROJECT ST_PROJECT_DOOMED ST_API_KEY ST_API_KEY_DOOMED ST_AIP ST_AIP_PATCHED ST_AIP_DOOMED ST_SECRET ST_SECRET_DOOMED ST_TOOL ST_TOOL_DOOMED
say "seeded project $ST_PROJECT, provider $ST_AIP, tool $ST_TOOL"

seed="${ST_SEED:-1}"
seed_args=(--seed "$seed")
[ "$seed" = random ] && seed_args=()
status=0
for module in projects api-keys ai-providers secrets tools; do
    say "spec soat-$module"
    one=0
    (cd "$work" && exec timeout --signal=INT --kill-after=10 "${ST_TIME_LIMIT:-60}" \
        "$st" --config-file "$here/soat_modules.toml" run "$root/tests/data/specs/soat-$module.bundled.openapi.json" \
        --url "$base" \
        --header "Authorization: Bearer $ST_KEY" \
        --checks not_a_server_error,response_schema_conformance \
        --exclude-path-regex '^/api/v1/tools/\{tool_id\}/call$' \
        --phases examples,coverage,fuzzing \
        --max-examples "${ST_MAX_EXAMPLES:-8}" \
        --workers 1 \
        --request-timeout 10 \
        --generation-database none \
        --no-color \
        --output-truncate true \
        "${seed_args[@]}") || one=$?
    if [ "$one" -eq 124 ] || [ "$one" -eq 130 ]; then
        echo "[schemathesis] soat-$module passed its ${ST_TIME_LIMIT:-60} s limit" >&2
    fi
    [ "$one" -eq 0 ] || status=1
done
if grep -q "panicked" "$work/server.log"; then
    echo "[schemathesis] the server panicked:" >&2
    grep -A5 "panicked" "$work/server.log" >&2
    status=1
fi
exit "$status"
