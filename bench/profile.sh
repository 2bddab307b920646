#!/usr/bin/env bash
# Where a search's CPU goes: runs the load harness's server on its cached SciFact
# collection (bench/load/run.sh builds it on first use), drives one kind of request at it,
# samples the server with perf meanwhile, and prints the CPU split by shared object (ONNX
# Runtime, quarry, libc, the kernel) and the hottest functions, grouped by crate too.
# The closing notes quote it where a figure falls short of its ceiling.
#
#   bench/profile.sh [--embedder multilingual-e5-small|all-MiniLM-L6-v2]
#                    [--mode hybrid|semantic|keyword|health] [--seconds 10] [--port 4473]
# Needs perf (Debian: apt-get install linux-perf) and kernel.perf_event_paranoid ≤ 1 or root.
set -euo pipefail
cd "$(dirname "$0")/.."
embedder=multilingual-e5-small
mode=hybrid
seconds=10
port=4473
while [ $# -gt 0 ]; do
    case "$1" in
        --embedder) embedder=$2; shift 2 ;;
        --mode) mode=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
command -v perf > /dev/null || { echo "profile.sh needs perf (apt-get install linux-perf)" >&2; exit 1; }
data=target/bench-data/scifact-$embedder
[ -f "$data/ready" ] && [ -f "$data/$mode.jsonl" -o "$mode" = health ] \
    || { echo "no cached collection for $embedder: run bench/load/run.sh --embedder $embedder once" >&2; exit 1; }
cargo build --release --locked -p quarry -p quarry-bench --bin quarry --bin quarry-load >&2
rel=target/release
work=$(mktemp -d)
trap 'kill "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
"$rel/quarry" serve --config "$data/quarry.toml" --data "$data/data" --listen "127.0.0.1:$port" 2> "$work/server.log" &
pid=$!
for _ in $(seq 150); do curl -sf "http://127.0.0.1:$port/v1/health" > /dev/null && break; sleep 0.2; done
case "$mode" in
    health) load=(-c 32 "http://127.0.0.1:$port/v1/health") ;;
    keyword) load=(-c 32 --requests "$data/keyword.jsonl" "http://127.0.0.1:$port/") ;;
    *) load=(-c 8 --requests "$data/$mode.jsonl" "http://127.0.0.1:$port/") ;;
esac
"$rel/quarry-load" --json --duration "$((seconds + 2))s" --warmup 1s "${load[@]}" > "$work/load.json" 2> /dev/null &
loader=$!
sleep 1.5
perf record -q -F 1999 -p "$pid" -o "$work/perf.data" -- sleep "$seconds" 2> /dev/null
wait "$loader" || true
rps=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["rps"], 1))' "$work/load.json")
echo "# Profile: $mode search, $embedder ($(date -u +%F))"
echo
echo "Command: \`bench/profile.sh --embedder $embedder --mode $mode --seconds $seconds\`; the server on"
echo "the cached SciFact collection under quarry-load (${load[0]} ${load[1]}) at $rps req/s; perf at 1999 Hz."
echo
echo "| shared object | share of the server's CPU |"
echo "|---|---:|"
perf report -i "$work/perf.data" --no-children --sort dso 2> /dev/null | awk '/^ +[0-9.]+%/ { printf "| %s | %s |\n", $2, $1 }' | head -8
echo
echo "| crate (quarry's own code and its dependencies) | share |"
echo "|---|---:|"
perf report -i "$work/perf.data" --no-children --dso quarry --sort sym 2> /dev/null | python3 -c '
import collections, re, sys
by = collections.Counter()
for line in sys.stdin:
    m = re.match(r"\s*([\d.]+)%\s+\[\.\]\s+<?(.*)", line)
    if m:
        by[m.group(2).split("::")[0].strip()] += float(m.group(1))
for name, share in by.most_common(12):
    print(f"| {name} | {share:.2f}% |")'
echo
echo "| hottest functions, all objects | share |"
echo "|---|---:|"
perf report -i "$work/perf.data" --no-children --sort dso,sym 2> /dev/null \
    | awk '/^ +[0-9.]+%/ { share = $1; $1 = ""; sub(/^ +/, ""); gsub(/\|/, "\\|"); printf "| %s | %s |\n", substr($0, 1, 110), share }' | head -25
