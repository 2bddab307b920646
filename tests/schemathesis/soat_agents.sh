#!/usr/bin/env bash
# Schemathesis against the real server: the SOAT agents spec's agents, versions and
# release operations (tests/data/specs/soat-agents.bundled.openapi.json, made by
# ops/bundle-soat-agents-spec), checking that no response is a server error and that
# every response matches the schema the spec gives its status. Starts `quarry serve`
# on a free loopback port with a fresh data directory, signs up, makes an AI provider
# an agent with two versions (soat_agents.toml points the {agent_id} operations at
# it) and one for DELETE, runs schemathesis bounded in examples and time, stops the server.
#
# Environment: ST_BIN (default target/debug/quarry), QUARRY_CACHE (the venv's home),
# ST_MAX_EXAMPLES (default 15), ST_SEED (default 1; "random" for a new one),
# ST_TIME_LIMIT (seconds, default 240).
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

# Rates out of the way: a 429 would leave the operations behind it untested.
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
key = call("POST", "/v1/signup", {"email": "schemathesis-agents@example.com"})["api_key"]
aip = call("POST", "/api/v1/ai-providers", {"name": "main", "provider": "openai", "default_model": "gpt-4o"}, key)["id"]
agent = call("POST", "/api/v1/agents", {"ai_provider_id": aip, "name": "first"}, key)["id"]
call("PATCH", f"/api/v1/agents/{agent}", {"name": "second"}, key)
doomed = call("POST", "/api/v1/agents", {"ai_provider_id": aip, "name": "to delete"}, key)["id"]
print(f"ST_KEY={key} ST_AGENT={agent} ST_DOOMED={doomed}")
PY
)"
export ST_AGENT ST_DOOMED
say "seeded agent $ST_AGENT"

seed="${ST_SEED:-1}"
seed_args=(--seed "$seed")
[ "$seed" = random ] && seed_args=()
status=0
(cd "$work" && exec timeout --signal=INT --kill-after=10 "${ST_TIME_LIMIT:-240}" \
    "$st" --config-file "$here/soat_agents.toml" run "$root/tests/data/specs/soat-agents.bundled.openapi.json" \
    --url "$base" \
    --header "Authorization: Bearer $ST_KEY" \
    --checks not_a_server_error,response_schema_conformance \
    --max-examples "${ST_MAX_EXAMPLES:-15}" \
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
