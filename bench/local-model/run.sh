#!/usr/bin/env bash
# Issue 2/9's two measurements of the local model, in one run on one server:
#
#   stream rate   streamed generation tokens/s through Quarry's gateway (`local/<model>`)
#                 vs the same requests straight to the model's own server (stream_rate.py,
#                 alternating A/B)
#   beside        hybrid search p99 on one connection while the model generates
#                 continuously vs the same search's p99 idle (beside.py; alternating
#                 idle and busy windows so drift in the machine's load hits both)
#
#   bench/local-model/run.sh [--rounds 5] [--seconds 20] [--port 4473]
#
# The release binary with the local model on (ops/setup installs it), SciFact's 500-document
# subset from tests/data indexed with multilingual-e5-small on the operator plan
# `evaluation`. Bounded in time; aimed at 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=5
seconds=20
port=4473
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -f models/llm/.installed ] || { echo "the local model is not installed: run ops/setup" >&2; exit 1; }
cargo build --release --locked -p quarry --bin quarry >&2
data=target/bench-data/local-model
rm -rf "$data"
mkdir -p "$data"
{ echo 'embedder = "multilingual-e5-small"'; cat bench/evaluation-plan.toml; printf '[llm.local]\nenabled = true\n'; } > "$data/quarry.toml"
key=$(target/release/quarry accounts create --config "$data/quarry.toml" --data "$data/data" \
    --email bench@quarry.invalid --plan evaluation | sed -n 's/^api key (shown once): //p')
# Started from the environment cargo's config sets for tests: the local model is on here.
env -u QUARRY_LLM__LOCAL__ENABLED target/release/quarry serve --config "$data/quarry.toml" --data "$data/data" \
    --listen "127.0.0.1:$port" 2> "$data/server.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 240); do
    curl -sf "http://127.0.0.1:$port/v1/health" | grep -q '"llm":true' && break
    sleep 0.5
done
curl -sf "http://127.0.0.1:$port/v1/health" | grep -q '"llm":true' || { echo "the local model did not become ready; see $data/server.log" >&2; exit 1; }
upstream=$(sed -n 's/.*local model starting.*port=\([0-9]*\).*/\1/p' "$data/server.log" | tail -1)
[ -n "$upstream" ] || { echo "no model port in $data/server.log" >&2; exit 1; }
col=$(python3 bench/local-model/beside.py --quarry "127.0.0.1:$port" --key "$key" --index tests/data/scifact-500/corpus.jsonl)

echo "# Local model beside Quarry ($(date -u +%F))"
echo
echo "Command: \`bench/local-model/run.sh --rounds $rounds --seconds $seconds\`. Commit $(git rev-parse --short HEAD),"
echo "$(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -1)), load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "## Streamed generation rate"
echo
python3 bench/local-model/stream_rate.py --quarry "127.0.0.1:$port" --key "$key" --upstream "127.0.0.1:$upstream" --rounds "$rounds"
echo
echo "## Hybrid search p99 on one connection, idle vs while the model generates"
echo
python3 bench/local-model/beside.py --quarry "127.0.0.1:$port" --key "$key" --collection "$col" \
    --queries tests/data/scifact-500/queries.jsonl --seconds "$seconds" --rounds 3 --upstream "127.0.0.1:$upstream"
