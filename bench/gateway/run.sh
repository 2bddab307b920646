#!/usr/bin/env bash
# The gateway's cost: Quarry's POST /v1/chat/completions (which parses, routes,
# translates to the provider's wire format, calls out through the provider layer and
# translates the answer back) beside nginx as a plain reverse proxy, both in front
# of the same fake upstream (a second nginx that answers at once with a fixed chat
# completion, or a fixed event stream), in the same run, at the same concurrency.
#
#   CPU 0: the gateway under test (quarry with 1 shard, which calls the plain-HTTP
#          upstream from the shard itself through its keep-alive pool, or nginx with
#          1 worker); CPU 1: the fake upstream and the load generator.
#   A third contender, proxy-floor (bench/src/bin/proxy-floor.rs), is Quarry's own HTTP
#   stack as a plain reverse proxy: hyper's server on a glommio executor set up as a shard,
#   forwarding bytes through the provider layer's keep-alive pool, with no key, no JSON
#   and no translation. nginx / floor is the most a gateway on this stack could reach;
#   quarry / floor is what translating costs on top of it.
#   Rounds run nginx, floor, quarry in turn; the table reports each side's median req/s,
#   p50, p99, and the ratios quarry / nginx (of the medians, and the best round's) and
#   floor / nginx and quarry / floor, whole and streamed.
#
# Usage: bench/gateway/run.sh [--connections N] [--duration 10s] [--rounds 3] [--no-build]
# Needs nginx (apt-get install -y nginx-light), taskset, 2 CPUs. Loopback only.
set -euo pipefail

CONNECTIONS=${CONNECTIONS:-32}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
BUILD=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --connections|-c) CONNECTIONS=$2; shift 2 ;;
        --duration|-d) DURATION=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
RELEASE=${CARGO_TARGET_DIR:-$ROOT/target}/release
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "run.sh: nginx is missing (apt-get install -y nginx-light)" >&2; exit 1; }
if [ "$BUILD" = 1 ]; then
    cargo build --release -p quarry --bin quarry -p quarry-bench --bin quarry-load --bin proxy-floor >&2
fi

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
UP=$(free_port); NX=$(free_port); QP=$(free_port); FP=$(free_port)

WHOLE='{"id":"chatcmpl-bench","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today?"},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":9,"total_tokens":18}}'
chunk() { printf 'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}\\n\\n' "$1" "$2"; }
STREAM="$(chunk '{"role":"assistant","content":""}' null)"
for w in Hello '!' ' How' ' can' ' I' ' help' ' you' ' today' '?'; do STREAM+="$(chunk "{\"content\":\"$w\"}" null)"; done
STREAM+="$(chunk '{}' '"stop"')data: [DONE]\\n\\n"

mkdir -p "$WORK/up" "$WORK/nx"
cat > "$WORK/up/nginx.conf" <<CONF
worker_processes 1;
error_log $WORK/up/error.log warn;
pid $WORK/up/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path $WORK/up;
    server {
        listen 127.0.0.1:$UP reuseport;
        location /whole/ { default_type application/json; return 200 '$WHOLE'; }
        location /stream/ { default_type text/event-stream; return 200 '$STREAM'; }
    }
}
CONF
cat > "$WORK/nx/nginx.conf" <<CONF
worker_processes 1;
error_log $WORK/nx/error.log warn;
pid $WORK/nx/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path $WORK/nx;
    proxy_temp_path $WORK/nx;
    upstream fake { server 127.0.0.1:$UP; keepalive 256; }
    server {
        listen 127.0.0.1:$NX reuseport;
        location / {
            proxy_pass http://fake;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }
    }
}
CONF
cat > "$WORK/quarry.toml" <<CONF
[log]
level = "warn"
[auth]
default_plan = "bench"
[plans.bench]
name = "Bench"
price = 0
stored_chars = "unlimited"
search = "unlimited"
extract = "unlimited"
research = "unlimited"
rate_per_minute = 1000000000
burst = 100000000
[llm.providers.whole]
manifest = "openai"
base_url = "http://127.0.0.1:$UP/whole/v1"
token = "sk-bench"
[llm.providers.stream]
manifest = "openai"
base_url = "http://127.0.0.1:$UP/stream/v1"
token = "sk-bench"
CONF

taskset -c 1 "$NGINX" -c "$WORK/up/nginx.conf" -g 'daemon off;' & PIDS+=($!)
taskset -c 0 "$NGINX" -c "$WORK/nx/nginx.conf" -g 'daemon off;' & PIDS+=($!)
taskset -c 0 "$RELEASE/quarry" serve --config "$WORK/quarry.toml" --data "$WORK/data" --listen "127.0.0.1:$QP" --shards 1 > "$WORK/quarry.out" & PIDS+=($!)
taskset -c 0 "$RELEASE/proxy-floor" --listen "127.0.0.1:$FP" --upstream "http://127.0.0.1:$UP" > "$WORK/floor.out" & PIDS+=($!)
for _ in $(seq 100); do grep -q listening "$WORK/quarry.out" 2>/dev/null && grep -q listening "$WORK/floor.out" 2>/dev/null && break; sleep 0.1; done
KEY=$(curl -s -X POST "http://127.0.0.1:$QP/v1/signup" -H 'content-type: application/json' -d '{"email":"bench@x.org"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')

BODY_WHOLE='{"model":"MODEL","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello."}],"temperature":0.2,"max_tokens":64}'
load() { # label url model stream
    local body=${BODY_WHOLE/MODEL/$3}
    [ "$4" = 1 ] && body=${body%\}},\"stream\":true}
    taskset -c 1 "$RELEASE/quarry-load" -c "$CONNECTIONS" -d "$DURATION" --warmup 2s -m POST \
        -H "authorization: Bearer $KEY" -H "content-type: application/json" --body "$body" --json --label "$1" "$2"
}

RESULTS="$WORK/results.jsonl"
for round in $(seq "$ROUNDS"); do
    for stream in 0 1; do
        kind=$([ $stream = 1 ] && echo stream || echo whole)
        load "nginx-$kind" "http://127.0.0.1:$NX/$kind/v1/chat/completions" m $stream >> "$RESULTS"
        load "floor-$kind" "http://127.0.0.1:$FP/$kind/v1/chat/completions" m $stream >> "$RESULTS"
        load "quarry-$kind" "http://127.0.0.1:$QP/v1/chat/completions" "$kind/m" $stream >> "$RESULTS"
    done
    echo "round $round done" >&2
done

python3 - "$RESULTS" "$CONNECTIONS" "$DURATION" "$ROUNDS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(label, get):
    vals = [get(r) for r in rows if r["label"] == label]
    return statistics.median(vals) if vals else float("nan")
rps = lambda r: r["rps"]
p50 = lambda r: r["latency"]["p50_ns"] / 1e6
p99 = lambda r: r["latency"]["p99_ns"] / 1e6
bad = lambda r: r["non_2xx"] + r["socket_errors"]
print(f"gateway bench: {sys.argv[2]} connections, {sys.argv[3]} x {sys.argv[4]} rounds, medians")
def rounds(label):
    return [r["rps"] for r in rows if r["label"] == label]
print("| mode | nginx req/s | floor req/s | quarry req/s | quarry / nginx | best round | floor / nginx | quarry / floor | nginx p50/p99 ms | quarry p50/p99 ms | non-2xx + socket errors |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for kind in ["whole", "stream"]:
    n, f, q = f"nginx-{kind}", f"floor-{kind}", f"quarry-{kind}"
    rn, rf, rq = med(n, rps), med(f, rps), med(q, rps)
    # Each round's quarry run beside the nginx run of the same round.
    best = max((b / a for a, b in zip(rounds(n), rounds(q))), default=float("nan"))
    errors = med(q, bad) + med(n, bad) + med(f, bad)
    print(f"| {kind} | {rn:.0f} | {rf:.0f} | {rq:.0f} | {rq / rn:.2f} | {best:.2f} | {rf / rn:.2f} | {rq / rf:.2f} | {med(n, p50):.2f}/{med(n, p99):.2f} | {med(q, p50):.2f}/{med(q, p99):.2f} | {errors:.0f} |")
PY
