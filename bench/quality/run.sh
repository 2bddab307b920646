#!/usr/bin/env bash
# Retrieval quality through the HTTP API on the shared BEIR sets: starts a release
# quarry on a fresh data directory with the chosen embedder, creates the evaluation
# account on a plan whose limits are raised (an operator plan defined below, assigned
# with the operator CLI), indexes each set and prints nDCG@10 per mode beside the
# published references. Results land in bench/results/.
#
#   bench/quality/run.sh [--embedder all-MiniLM-L6-v2|multilingual-e5-small] [--port 4471]
set -euo pipefail
cd "$(dirname "$0")/../.."
embedder=multilingual-e5-small
port=4471
while [ $# -gt 0 ]; do
    case "$1" in
        --embedder) embedder=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
cargo build --release --locked -p quarry -p quarry-bench --bin quarry --bin quarry-quality >&2
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
{ echo "embedder = \"$embedder\""; cat bench/evaluation-plan.toml; } > "$work/quarry.toml"
key=$(target/release/quarry accounts create --config "$work/quarry.toml" --data "$work/data" \
    --email evaluation@quarry.invalid --plan evaluation | sed -n 's/^api key (shown once): //p')
target/release/quarry serve --config "$work/quarry.toml" --data "$work/data" --listen "127.0.0.1:$port" 2> "$work/server.log" &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v1/health" > /dev/null && break; sleep 0.2; done
out=bench/results/quality-$embedder-$(date -u +%F-%H%M%S).md
{
    echo "# Retrieval quality, $embedder ($(date -u +%F))"
    echo
    echo "Command: \`bench/quality/run.sh --embedder $embedder\`. The evaluation account is on"
    echo "the operator plan \`evaluation\` (limits raised), assigned with \`quarry accounts create --plan\`."
    echo
} > "$out"
target/release/quarry-quality --server "http://127.0.0.1:$port" --key "$key" \
    --dataset ../shared/eval/scifact --modes keyword,semantic,hybrid --concurrency 8 >> "$out"
target/release/quarry-quality --server "http://127.0.0.1:$port" --key "$key" \
    --dataset ../shared/eval/nfcorpus-test-preproc --modes keyword --concurrency 8 >> "$out"
cat "$out"
echo "written to $out" >&2
