#!/usr/bin/env bash
# Search throughput on SciFact against its ceilings, measured in the same run:
#   hybrid search (all shards)  vs  raw single-query embedding of the same model on the
#                                    same CPUs (embed-ceiling: a search cannot beat it)
#   keyword search               vs  GET /v1/health on the same server
# No cache exists to turn off: every search embeds its query and scans the index.
# The collection is indexed once through the API and kept under target/bench-data/.
#
# Then search latency with and without ingest running beside it (documents added to
# another collection at full speed): ingest embeds on SCHED_IDLE worker threads, so the
# kernel gives searches the CPU first; the p50/p99 pair shows what that buys.
#
#   bench/search/run.sh [--embedder multilingual-e5-small|all-MiniLM-L6-v2]
#                       [--rounds 3] [--duration 8s] [--port 4472]
set -euo pipefail
cd "$(dirname "$0")/../.."
embedder=multilingual-e5-small
rounds=3
duration=8s
port=4472
while [ $# -gt 0 ]; do
    case "$1" in
        --embedder) embedder=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
cargo build --release --locked -p quarry -p quarry-bench --bin quarry --bin quarry-quality --bin quarry-load --bin embed-ceiling >&2
rel=target/release
data=target/bench-data/scifact-$embedder
mkdir -p "$data"
{ echo "embedder = \"$embedder\""; cat bench/evaluation-plan.toml; } > "$data/quarry.toml"
serve() {
    "$rel/quarry" serve --config "$data/quarry.toml" --data "$data/data" --listen "127.0.0.1:$port" 2>> "$data/server.log" &
    pid=$!
    for _ in $(seq 150); do curl -sf "http://127.0.0.1:$port/v1/health" > /dev/null && return; sleep 0.2; done
    echo "the server did not start; see $data/server.log" >&2; exit 1
}
trap 'kill "${pid:-0}" 2>/dev/null || true' EXIT
if [ ! -f "$data/ready" ]; then
    rm -rf "$data/data"
    key=$("$rel/quarry" accounts create --config "$data/quarry.toml" --data "$data/data" \
        --email bench@quarry.invalid --plan evaluation | sed -n 's/^api key (shown once): //p')
    serve
    "$rel/quarry-quality" --server "http://127.0.0.1:$port" --key "$key" --dataset ../shared/eval/scifact \
        --modes hybrid --concurrency 8 > "$data/quality.md"
    col=$(curl -sf -H "authorization: Bearer $key" "http://127.0.0.1:$port/v1/collections" | python3 -c 'import json,sys; print(json.load(sys.stdin)["collections"][0]["id"])')
    echo "$key $col" > "$data/ready"
    kill "$pid"; wait "$pid" 2>/dev/null || true
fi
read -r key col < "$data/ready"
python3 - "$key" "$col" "$data" <<'PY'
import json, sys
key, col, data = sys.argv[1:]
queries = [json.loads(l)["text"] for l in open("../shared/eval/scifact/queries.jsonl")]
for mode in ("hybrid", "keyword"):
    with open(f"{data}/{mode}.jsonl", "w") as f:
        for q in queries:
            body = json.dumps({"query": q, "mode": mode, "expand": False})
            f.write(json.dumps({"method": "POST", "path": f"/v1/collections/{col}/search",
                                "headers": {"authorization": f"Bearer {key}", "content-type": "application/json"},
                                "body": body}) + "\n")
PY
serve
out=bench/results/search-$embedder-$(date -u +%F-%H%M%S).md
exec > >(tee "$out")
echo "# Search throughput, $embedder ($(date -u +%F))"
echo
echo "Command: \`bench/search/run.sh --embedder $embedder --rounds $rounds --duration $duration\`; SciFact"
echo "(5,183 documents) indexed through the API; 2 shards on CPUs 0-1; quarry-load beside them."
echo
lat() {
    python3 -c '
import json, sys
r = json.load(sys.stdin)
l = r["latency"]
print("%.1f %.2f %.2f" % (r["rps"], l["p50_ns"] / 1e6, l["p99_ns"] / 1e6))'
}
qps() {
    python3 -c '
import json, sys
r = json.load(sys.stdin)
if r["non_2xx"] or r["socket_errors"]:
    sys.exit("load run had %d non-2xx answers and %d socket errors" % (r["non_2xx"], r["socket_errors"]))
print(round(r["rps"], 1))'
}
load() { "$rel/quarry-load" --json --duration "$duration" --warmup 2s "$@" | qps; }
rows=()
for r in $(seq "$rounds"); do
    e=$("$rel/embed-ceiling" --model "$embedder" --queries ../shared/eval/scifact/queries.jsonl --cpus 0-1 --duration "$duration" \
        | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["queries_per_s"], 1))')
    h=$(load -c 8 --requests "$data/hybrid.jsonl" "http://127.0.0.1:$port/")
    k=$(load -c 32 --requests "$data/keyword.jsonl" "http://127.0.0.1:$port/")
    g=$(load -c 32 "http://127.0.0.1:$port/v1/health")
    echo "round $r: embed $e/s, hybrid $h/s, keyword $k/s, health $g/s" >&2
    rows+=("$e $h $k $g")
done
# Search latency alone, then with ingest into a second collection beside it.
ing=$(curl -sf -X POST -H "authorization: Bearer $key" -d '{"name":"ingest-load"}' "http://127.0.0.1:$port/v1/collections" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
python3 - "$key" "$ing" "$data" <<'PY'
import json, sys
key, col, data = sys.argv[1:]
with open(f"{data}/adds.jsonl", "w") as f:
    for line in open("../shared/eval/scifact/corpus.jsonl"):
        d = json.loads(line)
        f.write(json.dumps({"method": "POST", "path": f"/v1/collections/{col}/documents",
                            "headers": {"authorization": f"Bearer {key}", "content-type": "application/json"},
                            "body": json.dumps({"title": d["title"], "text": d["text"]})}) + "\n")
PY
alone=$("$rel/quarry-load" --json --duration "$duration" --warmup 1s -c 2 --requests "$data/hybrid.jsonl" "http://127.0.0.1:$port/" | lat)
"$rel/quarry-load" --json --duration 30s --warmup 0s -c 8 --timeout 30s --requests "$data/adds.jsonl" "http://127.0.0.1:$port/" > "$data/adds.json" &
adder=$!
sleep 3
beside=$("$rel/quarry-load" --json --duration "$duration" --warmup 1s -c 2 --requests "$data/hybrid.jsonl" "http://127.0.0.1:$port/" | lat)
wait "$adder" || true
added=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["rps"], 1))' "$data/adds.json")
curl -sf -X DELETE -H "authorization: Bearer $key" "http://127.0.0.1:$port/v1/collections/$ing" > /dev/null
printf '%s\n' "${rows[@]}" | python3 -c '
import sys, statistics as st
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
e, h, k, g = (st.median(c) for c in zip(*rows))
print("| measure | req/s (median of %d rounds) | ratio |" % len(rows))
print("|---|---:|---:|")
print(f"| raw query embedding, 2 threads (ceiling) | {e:,.0f} | |")
print(f"| hybrid search, all shards | {h:,.0f} | {h/e:.2f}x of embedding |")
print(f"| GET /v1/health | {g:,.0f} | |")
print(f"| keyword search | {k:,.0f} | {k/g:.2f}x of health |")
print("| per-round ratios hybrid/embed | " + ", ".join(f"{r[1]/r[0]:.2f}" for r in rows) + " | |")
'
read -r a_rps a_p50 a_p99 <<< "$alone"
read -r b_rps b_p50 b_p99 <<< "$beside"
echo
echo "| hybrid search, 2 connections | req/s | p50 ms | p99 ms |"
echo "|---|---:|---:|---:|"
echo "| alone | $a_rps | $a_p50 | $a_p99 |"
echo "| beside ingest ($added documents/s added) | $b_rps | $b_p50 | $b_p99 |"
