# Sourced by run.sh, soat_agents.sh, soat_modules.sh and soat_memory.sh (not run on its own): what every schemathesis
# run against the real server does the same way. A script sets `set -euo pipefail`,
# sources this file, then calls st_serve, seeds its own records through the API, and
# ends with st_run, which exits with the run's status.
#
# Environment: ST_BIN (the binary, default target/debug/quarry), QUARRY_CACHE (where
# ops/setup-llm-tests put the venv), ST_SEED (default 1; "random" for a new one each
# run), ST_TIME_LIMIT (the wall-clock cap of the schemathesis run in seconds, default 240).

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
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
upstream_pid=""
stop() {
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    if [ -n "$upstream_pid" ]; then
        kill -TERM "$upstream_pid" 2>/dev/null || true
        wait "$upstream_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap stop EXIT

# The seeded AI providers' upstream (seed.upstream()), kept for the whole run: a
# provider seeded on an upstream that ended with the seeding would make every fuzzed
# generate on it a 502 (the provider could not be reached), which is right of the
# server but not what a run checks.
"$py" "$here/seed.py" >"$work/upstream" &
upstream_pid=$!
for _ in $(seq 1 100); do
    ST_UPSTREAM="$(head -n1 "$work/upstream" 2>/dev/null || true)"
    [ -n "$ST_UPSTREAM" ] && break
    sleep 0.1
done
[ -n "$ST_UPSTREAM" ] || { echo "[schemathesis] the seeded upstream printed no address in 10 s" >&2; exit 2; }
export ST_UPSTREAM

# Rates and allowances out of the way: a run sends thousands of requests with one key
# and signs up from one address; a 429 would leave the operations behind it untested.
# The seeded AI providers' upstream (seed.upstream()) listens on loopback, which the
# egress policy closes to tenants by default: opened here as an operator would.
cat >"$work/quarry.toml" <<'TOML'
[egress]
allow = ["127.0.0.0/8", "::1"]
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

# st_serve SHARDS EMBEDDER: starts `quarry serve` on a free loopback port with the
# fresh data directory and sets `base` to its address. QUARRY_* is the server's
# configuration: none of the caller's, only the embedder.
st_serve() {
    local shards="$1" embedder="$2" unset_quarry=() name
    for name in $(compgen -e | grep '^QUARRY_' || true); do unset_quarry+=(-u "$name"); done
    env "${unset_quarry[@]}" QUARRY_EMBEDDER="$embedder" "$bin" serve --listen 127.0.0.1:0 --shards "$shards" \
        --data "$work/data" --config "$work/quarry.toml" >"$work/stdout" 2>"$work/server.log" &
    pid=$!
    local addr=""
    for _ in $(seq 1 300); do
        addr="$(sed -n 's|.*listening on http://\([^ ]*\).*|\1|p' "$work/stdout" 2>/dev/null | head -n1 || true)"
        [ -n "$addr" ] && break
        kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "[schemathesis] the server exited" >&2; exit 2; }
        sleep 0.1
    done
    [ -n "$addr" ] || { echo "[schemathesis] the server printed no address in 30 s" >&2; exit 2; }
    base="http://$addr"
    say "server at $base"
}

# st_check CONFIG SPEC MAX_EXAMPLES [SCHEMATHESIS ARGS...]: one schemathesis run with
# CONFIG (a file beside this one) on SPEC (under tests/data/specs, or an http:// URL: a
# document the server serves) as the key ST_KEY,
# checking that no response is a 5xx and that every one matches its schema, within
# ST_TIME_LIMIT seconds (default 240). Returns the run's status.
st_check() {
    local config="$1" spec="$2" max_examples="$3"
    shift 3
    local seed="${ST_SEED:-1}" status=0
    local seed_args=(--seed "$seed") location="$root/tests/data/specs/$spec"
    case "$spec" in http://*) location="$spec" ;; esac
    [ "$seed" = random ] && seed_args=()
    # From the scratch directory: schemathesis keeps a cache in its working directory.
    (cd "$work" && exec timeout --signal=INT --kill-after=10 "${ST_TIME_LIMIT:-240}" \
        "$st" --config-file "$here/$config" run "$location" \
        --url "$base" \
        --header "Authorization: Bearer $ST_KEY" \
        --checks not_a_server_error,response_schema_conformance \
        "$@" \
        --max-examples "$max_examples" \
        --workers 1 \
        --request-timeout 30 \
        --generation-database none \
        --no-color \
        --output-truncate true \
        "${seed_args[@]}") || status=$?
    if [ "$status" -eq 124 ] || [ "$status" -eq 130 ]; then
        echo "[schemathesis] $spec passed its ${ST_TIME_LIMIT:-240} s limit" >&2
    fi
    return "$status"
}

# st_finish STATUS: exits with STATUS, or 1 if the server panicked.
st_finish() {
    local status="$1"
    if grep -q "panicked" "$work/server.log"; then
        echo "[schemathesis] the server panicked:" >&2
        grep -A5 "panicked" "$work/server.log" >&2
        status=1
    fi
    exit "$status"
}

# st_run CONFIG SPEC MAX_EXAMPLES [SCHEMATHESIS ARGS...]: st_check, then st_finish.
st_run() {
    local status=0
    st_check "$@" || status=$?
    st_finish "$status"
}
