#!/usr/bin/env bash
# Agent records through HTTP beside /v1/health, in one run: GET /api/v1/agents/{id}
# (a redb read through the SOAT scope), POST /api/v1/agents (a validated write, fsync'd
# before it answers) and GET /v1/health (the server's fastest route), each for the same
# time with the same connections, on the release binary with the client pinned apart.
# Writes bench/results/agents-records-<time>.md.
#
#   bench/agents/records.sh [--duration 5s] [--connections 32]
set -euo pipefail
cd "$(dirname "$0")/../.."
duration=5s
conns=32
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --connections) conns=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
cargo build --release -p quarry --bin quarry -p quarry-bench --bin quarry-load >&2
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
cat > "$dir/quarry.toml" <<'TOML'
[llm.local]
enabled = false
[auth]
default_plan = "lab"
[plans.lab]
name = "Lab"
price = 0
stored_chars = 1000000
search = 1000
extract = 10
research = 10
rate_per_minute = 100000000
burst = 100000000
TOML
env -u QUARRY_LLM__LOCAL__ENABLED QUARRY_EMBEDDER=none taskset -c 0 target/release/quarry serve --listen 127.0.0.1:0 --shards 1 \
  --data "$dir/data" --config "$dir/quarry.toml" > "$dir/out" 2> "$dir/err" &
pid=$!
for _ in $(seq 100); do grep -q "http://" "$dir/out" 2>/dev/null && break; sleep 0.1; done
addr=$(grep -o "http://[0-9.:]*" "$dir/out" | head -1)
key=$(curl -s -X POST "$addr/v1/signup" -d '{"email":"bench@example.com"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
auth="Authorization: Bearer $key"
aip=$(curl -s -X POST "$addr/api/v1/ai-providers" -H "$auth" -H 'content-type: application/json' \
  -d '{"name":"main","provider":"openai","default_model":"gpt-4o"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
agent=$(curl -s -X POST "$addr/api/v1/agents" -H "$auth" -H 'content-type: application/json' \
  -d "{\"ai_provider_id\":\"$aip\",\"name\":\"bench\",\"instructions\":\"Answer briefly.\",\"max_steps\":5}" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
printf '{"method":"POST","path":"/api/v1/agents","headers":{"Authorization":"Bearer %s"},"body":{"ai_provider_id":"%s","name":"load","instructions":"Answer briefly.","max_steps":5}}\n' "$key" "$aip" > "$dir/create.jsonl"
load() { taskset -c 1 target/release/quarry-load -c "$conns" -d "$duration" --warmup 1s "$@"; }
stamp=$(date -u +%Y-%m-%d-%H%M%S)
out="bench/results/agents-records-$stamp.md"
{
  echo "# Agent records beside /v1/health, $stamp"
  echo
  echo "\`bench/agents/records.sh --duration $duration --connections $conns\`: release quarry, one shard on CPU 0,"
  echo "quarry-load on CPU 1, $conns connections, $duration each after 1 s warmup. Load average: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  load --markdown-header "$addr/v1/health" | sed 's/^/health: /'
  load -H "$auth" "$addr/api/v1/agents/$agent" | sed 's/^/get agent: /'
  load --requests "$dir/create.jsonl" "$addr" | sed 's/^/create agent: /'
} | tee "$out"
echo "written to $out" >&2
