#!/usr/bin/env bash
# bench/lucene: keyword search side by side with Lucene's REST server (Anserini 1.7.1's
# `io.anserini.api.RestServer`, BM25 over a Lucene index of the same SciFact corpus), each
# pinned to one core, quarry-load on the other, in alternating rounds of one run. Prints
# per side req/s, p50, p99 and CPU milliseconds per request (the server process's user +
# system time over the measured window, from /proc, divided by the requests answered in
# it), and Quarry over Lucene per core. Writes bench/results/lucene-<time>.md.
#
#   bench/lucene/run.sh [--quarry PATH] [--rounds 3] [--duration 20s] [--connections 32]
#                       [--extra JSON] [--variant JSON] [--port 4490]
#
# quarry: PATH (default $TARGET/release/quarry; this script does not build it). Its
#      SciFact collection is indexed once through the API, keyword only (embedder "none"),
#      into $TARGET/lucene/quarry-<binary's mtime>/ and reused.
# lucene: Anserini 1.7.1's fatjar, taken from PyPI's pyserini 1.6.0 source package (which
#      bundles it; `pip download`, the registry, once) into $TARGET/lucene/; run by the
#      first Java ≥ 21 found ($JAVA, else /usr/lib/jvm/*). SciFact indexed once with
#      `IndexCollection -collection BeirFlatCollection -storeRaw` (title and text, the
#      fields Quarry indexes), 1 thread. The JVM sees one processor
#      (-XX:ActiveProcessorCount=1) and warms up 20 s before the first round.
# requests: every SciFact query (test queries.jsonl), 10 hits. Quarry: POST .../search
#      {"query", "mode": "keyword", "expand": false} plus --extra's fields (e.g.
#      '{"highlights": false}'), 10 pages with their 2 best passages. --variant JSON
#      measures a third side in the same rounds, the same server asked with those fields
#      too (e.g. '{"highlights": false}': what highlights cost). Lucene: GET
#      /v1/<index>/search?query=...&hits=10, each hit with its parsed document (title and
#      full text).
# pins: each server on CPU 0, quarry-load on CPU 1. Both servers stay up through the run
#      (the idle one parks); each round measures one side then the other, the order
#      swapping every round; each a 2 s warmup and --duration measured.
# Every load is closed-loop, bounded in time and aimed at 127.0.0.1 only.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
quarry_bin=$TARGET/release/quarry
rounds=3
duration=20s
warmup=2s
conns=32
extra='{}'
variant=""
port=4490
SERVER_CPU=0
CLIENT_CPU=1
given=$*

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quarry) quarry_bin=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --connections) conns=$2; shift 2 ;;
        --extra) extra=$2; shift 2 ;;
        --variant) variant=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "lucene: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done

log() { echo "lucene: $*" >&2; }
die() { echo "lucene: error: $*" >&2; exit 1; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number"
[[ "$duration" =~ ^[1-9][0-9]*s$ ]] || die "--duration in whole seconds (20s)"
seconds=${duration%s}
(( $(nproc) >= 2 )) || die "needs 2 CPUs (server on CPU $SERVER_CPU, load on CPU $CLIENT_CPU)"
command -v taskset > /dev/null || die "taskset not found (util-linux)"
scifact=$(readlink -f "${EVAL_DIR:-../shared/eval}/scifact")
[ -f "$scifact/corpus.jsonl" ] || die "no SciFact at $scifact (set EVAL_DIR)"
[ -x "$quarry_bin" ] || die "no quarry at $quarry_bin (cargo build --release -p quarry --bin quarry -p quarry-bench --bin quarry-load)"
quarry_bin=$(readlink -f "$quarry_bin")
load_bin=$TARGET/release/quarry-load
[ -x "$load_bin" ] || die "no quarry-load at $load_bin"
python3 -c 'import json,sys; assert isinstance(json.loads(sys.argv[1]), dict)' "$extra" 2> /dev/null || die "--extra must be a JSON object"
[ -z "$variant" ] || python3 -c 'import json,sys; assert isinstance(json.loads(sys.argv[1]), dict)' "$variant" 2> /dev/null \
    || die "--variant must be a JSON object"

# --- Java ≥ 21 and Anserini's fatjar ---
java_version() { "$1" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
java=""
for j in ${JAVA:-} /usr/lib/jvm/*/bin/java $(command -v java || true); do
    [ -x "$j" ] && [ "$(java_version "$j")" -ge 21 ] 2> /dev/null && { java=$j; break; }
done
[ -n "$java" ] || die "Anserini 1.7.1 needs Java 21 or later (set JAVA=/path/to/java)"
dir=$TARGET/lucene
jar=$dir/anserini-1.7.1-fatjar.jar
mkdir -p "$dir"
if [ ! -f "$jar" ]; then
    log "fetching pyserini 1.6.0's source package from PyPI for the Anserini fatjar it bundles (once)"
    rm -rf "$dir/dl"; mkdir -p "$dir/dl"
    python3 -m pip download --quiet --no-deps --no-binary :all: -d "$dir/dl" pyserini==1.6.0 >&2 \
        || die "pip download pyserini==1.6.0 failed"
    tar -xzf "$dir"/dl/pyserini-1.6.0.tar.gz -C "$dir/dl" pyserini-1.6.0/pyserini/resources/jars/anserini-1.7.1-fatjar.jar
    mv "$dir/dl/pyserini-1.6.0/pyserini/resources/jars/anserini-1.7.1-fatjar.jar" "$jar"
    rm -rf "$dir/dl"
fi
index=$dir/index-scifact
if [ ! -f "$index/ready" ]; then
    log "indexing SciFact with Anserini into $index (once)"
    rm -rf "$index" "$dir/input"; mkdir -p "$dir/input"
    ln -s "$scifact/corpus.jsonl" "$dir/input/corpus.jsonl"
    "$java" -cp "$jar" io.anserini.index.IndexCollection -collection BeirFlatCollection -input "$dir/input" \
        -index "$index" -generator DefaultLuceneDocumentGenerator -threads 1 -storeRaw > "$dir/index.log" 2>&1 \
        || { tail -20 "$dir/index.log" >&2; die "Anserini's indexing failed"; }
    touch "$index/ready"
fi

# --- processes we start, and only those, are stopped on exit ---
PIDS=()
stop_pid() {
    local pid=$1 kept=() p
    if kill -TERM "$pid" 2> /dev/null; then
        for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2> /dev/null || true
    fi
    wait "$pid" 2> /dev/null || true
    for p in "${PIDS[@]}"; do [ "$p" = "$pid" ] || kept+=("$p"); done
    PIDS=("${kept[@]}")
}
cleanup() { local pid; for pid in "${PIDS[@]}"; do stop_pid "$pid"; done; }
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_up() { # PID URL LOG
    for _ in $(seq 300); do
        kill -0 "$1" 2> /dev/null || { tail -20 "$3" >&2; die "a server exited during start-up (log: $3)"; }
        curl -sf -m 1 -o /dev/null "$2" && return
        sleep 0.2
    done
    die "$2 did not answer within 60 s (log: $3)"
}

# --- Quarry's collection, keyword only, indexed once per binary ---
seed=$dir/quarry-$(stat -c %Y "$quarry_bin")
qport=$((port + 1))
if [ ! -f "$seed/ready" ]; then
    log "indexing SciFact with $quarry_bin into $seed (once per binary)"
    rm -rf "$dir"/quarry-*; mkdir -p "$seed"
    printf 'embedder = "none"\n[llm.local]\nenabled = false\n' > "$seed/quarry.toml"
    cat bench/evaluation-plan.toml >> "$seed/quarry.toml"
    key=$("$quarry_bin" accounts create --config "$seed/quarry.toml" --data "$seed/data" \
        --email bench@quarry.invalid --plan evaluation | sed -n 's/^api key (shown once): //p')
    [ -n "$key" ] || die "quarry accounts create gave no key"
    "$quarry_bin" serve --config "$seed/quarry.toml" --data "$seed/data" --listen "127.0.0.1:$qport" >> "$seed/server.log" 2>&1 &
    PIDS+=($!)
    wait_up $! "http://127.0.0.1:$qport/v1/health" "$seed/server.log"
    col=$(python3 bench/ab/corpus.py index "127.0.0.1:$qport" "$key" "$scifact")
    sleep 15 # the in-memory tail flushed to segments, so the run opens segments
    stop_pid "${PIDS[-1]}"
    echo "$key $col" > "$seed/ready"
fi
read -r key col < "$seed/ready"

time=$(date -u +%F-%H%M%S)
work=$dir/runs/$time
mkdir -p "$work"
python3 bench/ab/corpus.py searches "$key" "$col" "$scifact" "$work"
python3 - "$work/keyword.jsonl" "$extra" "${variant:-{\}}" "$scifact/queries.jsonl" "$(basename "$index")" "$work/lucene.jsonl" <<'PY'
import json, sys, urllib.parse
keyword, extra, variant, queries, index, lucene = sys.argv[1:]
def with_fields(fields, out):
    lines = []
    for line in open(keyword):
        r = json.loads(line)
        body = json.loads(r["body"])
        body.update(fields)
        r["body"] = json.dumps(body)
        lines.append(json.dumps(r))
    open(out, "w").write("\n".join(lines) + "\n")
with_fields({**json.loads(extra), **json.loads(variant)}, keyword.replace("keyword", "variant"))
with_fields(json.loads(extra), keyword)
with open(lucene, "w") as f:
    for line in open(queries):
        q = json.loads(line)["text"]
        path = f"/v1/{index}/search?" + urllib.parse.urlencode({"query": q, "hits": 10})
        f.write(json.dumps({"method": "GET", "path": path}) + "\n")
PY

# --- both servers, pinned to CPU 0 ---
taskset -c "$SERVER_CPU" "$quarry_bin" serve --config "$seed/quarry.toml" --data "$seed/data" \
    --listen "127.0.0.1:$qport" --shards 1 >> "$work/quarry.log" 2>&1 &
quarry_pid=$!
PIDS+=("$quarry_pid")
wait_up "$quarry_pid" "http://127.0.0.1:$qport/v1/health" "$work/quarry.log"
# The server runs in $dir: the index is named by its path relative to it.
(cd "$dir" && exec taskset -c "$SERVER_CPU" "$java" -XX:ActiveProcessorCount=1 -Xms1g -Xmx1g -cp "$jar" \
    io.anserini.api.RestServer --host 127.0.0.1 --port "$port") >> "$work/lucene.log" 2>&1 &
lucene_pid=$!
PIDS+=("$lucene_pid")
first=$(head -1 "$work/lucene.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
wait_up "$lucene_pid" "http://127.0.0.1:$port$first" "$work/lucene.log"
curl -sf "http://127.0.0.1:$port$first" | python3 -c 'import json,sys; r=json.load(sys.stdin); assert len(r["candidates"]) == 10 and r["candidates"][0]["doc"]["text"], r' \
    || die "Lucene's first answer is not 10 hits with their text"
log "warming Lucene's JIT up for 20 s"
taskset -c "$CLIENT_CPU" "$load_bin" --pin "$CLIENT_CPU" -c "$conns" --duration 20s --warmup 0s \
    --requests "$work/lucene.jsonl" "http://127.0.0.1:$port/" > /dev/null 2>> "$work/load.log"

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# measure SIDE ROUND PID URL FILE: one line "side round rps p50_ms p99_ms errors cpu_ms_per_request" to $work/runs.
measure() {
    local side=$1 round=$2 pid=$3 url=$4 file=$5 out=$work/$1-$2.json before after
    taskset -c "$CLIENT_CPU" "$load_bin" --pin "$CLIENT_CPU" --json -c "$conns" --duration "$duration" \
        --warmup "$warmup" --label "$side" --requests "$file" "$url" > "$out" 2>> "$work/load.log" &
    local loader=$!
    sleep "${warmup%s}"
    before=$(ticks "$pid")
    sleep "$seconds"
    after=$(ticks "$pid")
    wait "$loader" || die "quarry-load failed on $side round $round (log: $work/load.log)"
    python3 - "$side" "$round" "$out" "$before" "$after" "$hz" "$seconds" >> "$work/runs" <<'PY'
import json, sys
side, rnd, path, before, after, hz, seconds = sys.argv[1:]
r = json.load(open(path))
l = r["latency"]
cpu_ms = (int(after) - int(before)) * 1000 / int(hz)
print(side, rnd, r["rps"], l["p50_ns"] / 1e6, l["p99_ns"] / 1e6, r["non_2xx"] + r["socket_errors"], cpu_ms / (r["rps"] * int(seconds)))
PY
    log "round $round $side: $(tail -1 "$work/runs" | awk '{ printf "%.1f req/s, %.3f CPU-ms a request", $3, $7 }')"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: > "$work/runs"
for round in $(seq "$rounds"); do
    order="lucene quarry${variant:+ variant}"
    (( round % 2 )) || order="${variant:+variant }quarry lucene"
    for side in $order; do
        case "$side" in
            lucene) measure lucene "$round" "$lucene_pid" "http://127.0.0.1:$port/" "$work/lucene.jsonl" ;;
            quarry) measure quarry "$round" "$quarry_pid" "http://127.0.0.1:$qport/" "$work/keyword.jsonl" ;;
            variant) measure variant "$round" "$quarry_pid" "http://127.0.0.1:$qport/" "$work/variant.jsonl" ;;
        esac
    done
done

out=bench/results/lucene-$time.md
{
    echo "# Keyword search beside Lucene's REST server ($(date -u +%F))"
    echo
    echo "Command: \`bench/lucene/run.sh${given:+ $given}\`. Quarry: \`$quarry_bin\`, built $(date -u -r "$quarry_bin" '+%F %H:%M UTC'),"
    echo "working tree at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src index services Cargo.lock || echo ' with uncommitted changes'), \`--shards 1\`, extra request fields \`$extra\`${variant:+; the variant adds \`$variant\`}."
    echo "Lucene: Anserini 1.7.1 \`io.anserini.api.RestServer\` on $("$java" -version 2>&1 | head -1), one processor."
    echo "$(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -1)); each server on CPU $SERVER_CPU, quarry-load -c $conns on CPU $CLIENT_CPU;"
    echo "SciFact's $(wc -l < "$scifact/queries.jsonl") queries, 10 hits each; $warmup warmup + $duration a side a round, the order swapping each round."
    echo "Load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    python3 - "$work/runs" "$variant" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
sides = {}
for side, rnd, rps, p50, p99, errors, cpu in rows:
    sides.setdefault(side, []).append((int(rnd), float(rps), float(p50), float(p99), int(errors), float(cpu)))
med = lambda side, i: statistics.median(m[i] for m in sides[side])
print("| server | req/s | p50 ms | p99 ms | CPU-ms a request | errors | req/s per round |")
print("|---|---:|---:|---:|---:|---:|---|")
for side in [s for s in ("lucene", "quarry", "variant") if s in sides]:
    per = ", ".join(f"{m[1]:.0f}" for m in sorted(sides[side]))
    print(f"| {side} | {med(side, 1):.1f} | {med(side, 2):.2f} | {med(side, 3):.2f} | {med(side, 5):.3f} | {sum(m[4] for m in sides[side])} | {per} |")
print()
print(f"Quarry / Lucene per core: **{med('quarry', 1) / med('lucene', 1):.2f}x** req/s, "
      f"{med('lucene', 5) / med('quarry', 5):.2f}x less CPU a request.")
if "variant" in sides:
    per = ", ".join(f"{q[1] / v[1]:.2f}" for q, v in zip(sorted(sides["quarry"]), sorted(sides["variant"])))
    print(f"Quarry / its variant ({sys.argv[2]}): **{med('quarry', 1) / med('variant', 1):.2f}x** req/s "
          f"(per round {per}), {med('quarry', 5) / med('variant', 5):.2f}x the CPU a request.")
PY
} > "$out"
cat "$out"
log "written to $out (logs and raw figures in $work)"
