#!/usr/bin/env bash
# bench/ab: the speed check against the previous binary. Runs the load harness's keyword,
# hybrid, add, health and generation rows against two release binaries in one run, in
# alternation (old, new, old, new, ...: each row on one, then at once on the other), and prints per row req/s, p50 and p99 of
# each and new/old, flagging a row below 0.95x. Writes the table to
# bench/results/ab-<time>.md.
#
#   bench/ab/run.sh [--old REV | --old-bin PATH] [--new PATH] [--new-env "K=V ..."]
#                   [--rounds 3] [--duration 10s] [--rows keyword,hybrid,add,health,generation]
#                   [--embedder all-MiniLM-L6-v2] [--port 4480] [--load PATH]
#
# --old-bin PATH: this binary as the old side (nothing built; give --load too).
# --new-env: environment the new side's server runs with, e.g. the shared backends
#      ("QUARRY_STORE__KIND=postgres QUARRY_STORE__URL=... QUARRY_SEGMENTS__STORE=s3 ..."),
#      so one binary is measured on two backends; the new side's copy of the seed is
#      moved onto them first with `quarry migrate` (run with the same environment).
#      With QUARRY_SEGMENTS__STORE=s3 its segment files are then dropped from its disk:
#      it fetches them from the bucket at start, so its searches read cached segments.
#
# old: the last landed binary, REV (default 735c3a0) built once in its own git worktree,
#      $TARGET/ab/<rev>/src, into its own target directory, $TARGET/ab/<rev>/target
#      ($TARGET: $CARGO_TARGET_DIR, else target/), at nice 19; the binary is cached there
#      by rev, so a later run builds nothing. quarry-load is built there too, from the same
#      rev, and both sides are driven by that one load generator (--load to use another):
#      the instrument does not change with the code it measures.
# new: PATH (default $TARGET/release/quarry, built by whoever runs this; this script does
#      not build it).
# data: SciFact ($EVAL_DIR/scifact, default ../shared/eval/scifact) indexed once through
#      the API by the OLD binary into $TARGET/ab/seed/<embedder>-<rev>/ (cached), and
#      copied afresh for each side of each run: the new binary opens data the old one
#      wrote, as an upgrade would, and each side writes (adds, generations) only its copy.
# pins: each server `--shards 1` on CPU 0, quarry-load and the fake upstream on CPU 1
#      (as bench/ceiling.sh pins).
# rounds: both servers started afresh each round; each row in the order given measured
#      on old, then at once on new (new, then old, in even rounds), each a 2 s warmup and
#      --duration measured: a pair's figures seconds apart, not a round apart.
# cpu: each row also reports the server's CPU milliseconds a request, its process's user +
#      system time (/proc/PID/stat) over the measured seconds over the requests answered.
# rows: keyword  POST .../search mode keyword, every SciFact query, 32 connections
#       hybrid   the same in hybrid mode, 8 connections
#       add      POST .../documents, SciFact's documents into a new collection, 8
#                connections (deleted after the round)
#       health   GET /v1/health, 32 connections
#       generation  POST /api/v1/agents/{id}/generate?wait=true, 4 connections, against
#                bench/agents/generations.py's fake upstream on loopback (bench/ab/upstream.py):
#                a model call asking for an http tool, the tool call, a model call that answers
# Every load is closed-loop, bounded in time and aimed at 127.0.0.1 only.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
old_rev=735c3a0
new_bin=$TARGET/release/quarry
rounds=3
duration=10s
warmup=2s
rows=keyword,hybrid,add,health,generation
embedder=all-MiniLM-L6-v2
port=4480
load_bin=""
old_given=""
new_env=""
SERVER_CPU=0
CLIENT_CPU=1
given=$*

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --old) old_rev=$2; shift 2 ;;
        --old-bin) old_given=$2; shift 2 ;;
        --new-env) new_env=$2; shift 2 ;;
        --new) new_bin=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --rows) rows=$2; shift 2 ;;
        --embedder) embedder=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --load) load_bin=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "ab: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done

log() { echo "ab: $*" >&2; }
die() { echo "ab: error: $*" >&2; exit 1; }
seconds_of() {
    case "$1" in
        *ms) echo $(( (${1%ms} + 999) / 1000 )) ;;
        *s) echo "${1%s}" ;;
        *[!0-9]*) die "duration $1: use s or ms (10s, 500ms)" ;;
        *) echo "$1" ;;
    esac
}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number"
run_seconds=$(( $(seconds_of "$duration") + $(seconds_of "$warmup") ))
for row in ${rows//,/ }; do
    case "$row" in keyword|hybrid|add|health|generation) ;; *) die "unknown row $row (keyword, hybrid, add, health, generation)" ;; esac
done
(( $(nproc) >= 2 )) || die "needs 2 CPUs (server on CPU $SERVER_CPU, load on CPU $CLIENT_CPU)"
command -v taskset > /dev/null || die "taskset not found (util-linux)"
scifact=${EVAL_DIR:-../shared/eval}/scifact
[ -f "$scifact/corpus.jsonl" ] || die "no SciFact at $scifact (set EVAL_DIR)"
[ -x "$new_bin" ] || die "no new binary at $new_bin (cargo build --release -p quarry --bin quarry, or --new PATH)"
new_bin=$(readlink -f "$new_bin")

# --- the old binary, built once per rev in its own worktree and target directory ---
if [ -n "$old_given" ]; then
    [ -x "$old_given" ] && [ -n "$load_bin" ] || die "--old-bin needs an executable and --load PATH"
    old_bin=$(readlink -f "$old_given")
    rev=bin-$(sha256sum "$old_bin" | cut -c1-7)
    ab=$TARGET/ab/$rev
else
rev=$(git rev-parse --short=7 --verify "$old_rev^{commit}") || die "$old_rev is not a commit here"
ab=$TARGET/ab/$rev
old_bin=$ab/target/release/quarry
fi
if [ -z "$old_given" ] && { [ ! -x "$old_bin" ] || { [ -z "$load_bin" ] && [ ! -x "$ab/target/release/quarry-load" ]; }; }; then
    if [ ! -d "$ab/src" ]; then
        log "a worktree of $rev at $ab/src"
        git worktree add --detach "$ab/src" "$rev" >&2
    fi
    # build.rs embeds web/node_modules' Swagger UI: lend the working tree's installed copy.
    [ -e "$ab/src/web/node_modules" ] || ln -s "$(readlink -f web/node_modules)" "$ab/src/web/node_modules"
    log "building $rev's quarry and quarry-load at nice 19 into $ab/target (once; log: $ab/build.log)"
    (cd "$ab/src" && CARGO_TARGET_DIR=$ab/target nice -n 19 cargo build --release --locked \
        -p quarry --bin quarry -p quarry-bench --bin quarry-load) >> "$ab/build.log" 2>&1 \
        || { tail -20 "$ab/build.log" >&2; die "building $rev failed (see $ab/build.log)"; }
fi
load_bin=${load_bin:-$ab/target/release/quarry-load}
[ -x "$load_bin" ] || die "no quarry-load at $load_bin"
same=""
if [ "$(readlink -f "$old_bin")" = "$new_bin" ]; then
    same="Old and new are the same binary: this run measures the noise floor."
    log "$same"
fi

# --- processes we start, and only those, are stopped on exit ---
PIDS=()
# stop_pid PID: TERM, up to 10 s, then KILL; and forgotten, so a reused id is never signalled.
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

# config BIN: the configuration BIN runs with. The generation row's fake upstream and
# tool listen on loopback, which the egress policy closes to tenants by default: opened
# for a binary that has the [egress] section (its compiled defaults hold it), left out
# for an older one, which would refuse the key; [llm.local] likewise.
config() {
    echo "embedder = \"$embedder\""
    printf '[llm]\nmax_retries = 0\n'
    # The bundled local model is off where a binary has one (an older one refuses the key).
    if grep -aq '^\[llm.local\]$' "$1"; then printf '[llm.local]\nenabled = false\n'; fi
    cat bench/evaluation-plan.toml
    if grep -aq '^\[egress\]$' "$1"; then printf '[egress]\nallow = ["127.0.0.1"]\n'; fi
}

# serve BIN DIR PORT [pin|unpinned] [ENV]: the server on CPU 0, one shard, with ENV's
# variables; sets $server.
serve() {
    local bin=$1 dir=$2 p=$3 pin=${4:-pin} extra=${5:-}
    local -a vars=()
    [ -n "$extra" ] && read -r -a vars <<< "$extra"
    if [ "$pin" = pin ]; then
        env "${vars[@]}" taskset -c "$SERVER_CPU" "$bin" serve --config "$dir/quarry.toml" --data "$dir/data" --listen "127.0.0.1:$p" --shards 1 >> "$dir/server.log" 2>&1 &
    else
        "$bin" serve --config "$dir/quarry.toml" --data "$dir/data" --listen "127.0.0.1:$p" >> "$dir/server.log" 2>&1 &
    fi
    server=$!
    PIDS+=("$server")
    for _ in $(seq 300); do
        kill -0 "$server" 2> /dev/null || { tail -20 "$dir/server.log" >&2; die "$bin exited during start-up (log: $dir/server.log)"; }
        curl -sf -m 1 "http://127.0.0.1:$p/v1/health" > /dev/null && return
        sleep 0.2
    done
    die "$bin did not answer /v1/health on port $p within 60 s (log: $dir/server.log)"
}

# --- the seed: SciFact indexed once through the API by the old binary ---
seed=$TARGET/ab/seed/$embedder-$rev
if [ ! -f "$seed/ready" ]; then
    log "indexing SciFact with $rev into $seed (once)"
    rm -rf "$seed"; mkdir -p "$seed"
    config "$old_bin" > "$seed/quarry.toml"
    key=$("$old_bin" accounts create --config "$seed/quarry.toml" --data "$seed/data" \
        --email bench@quarry.invalid --plan evaluation | sed -n 's/^api key (shown once): //p')
    [ -n "$key" ] || die "quarry accounts create gave no key"
    serve "$old_bin" "$seed" "$port" unpinned
    col=$(python3 bench/ab/corpus.py index "127.0.0.1:$port" "$key" "$scifact")
    # The index flushes its in-memory tail to segments after index.flush_interval (5 s):
    # wait for it, so each run opens segments rather than replaying the WAL.
    sleep 15
    python3 bench/ab/corpus.py count "127.0.0.1:$port" "$key" "$col" > "$seed/count"
    stop_pid "$server"
    echo "$key $col" > "$seed/ready"
fi
read -r key col < "$seed/ready"

time=$(date -u +%F-%H%M%S)
work=$TARGET/ab/runs/$time
mkdir -p "$work"
for side in old new; do
    mkdir -p "$work/$side"
    cp -a "$seed/data" "$work/$side/data"
    if [ "$side" = old ]; then config "$old_bin"; else config "$new_bin"; fi > "$work/$side/quarry.toml"
done
if [ -n "$new_env" ]; then
    read -r -a migrate_vars <<< "$new_env"
    log "moving the new side's copy onto its backends (quarry migrate)"
    env "${migrate_vars[@]}" "$new_bin" migrate --config "$work/new/quarry.toml" --data "$work/new/data" >&2 \
        || die "quarry migrate of the new side's copy failed"
    # With segments in a bucket, the new side starts with none on disk: it fetches them
    # at start, so its searches read segments that came through the cache.
    if [[ " $new_env " == *" QUARRY_SEGMENTS__STORE=s3 "* ]]; then
        rm -rf "$work"/new/data/collections/*/segments
    fi
fi
# The copies' dirty pages written back now, not under the first round's loads.
sync
python3 bench/ab/corpus.py searches "$key" "$col" "$scifact" "$work"

if [[ ",$rows," == *,generation,* ]]; then
    taskset -c "$CLIENT_CPU" python3 bench/ab/upstream.py 2 > "$work/upstream.port" 2> "$work/upstream.log" &
    PIDS+=($!)
    for _ in $(seq 50); do [ -s "$work/upstream.port" ] && break; sleep 0.1; done
    upstream=$(cat "$work/upstream.port")
    [ -n "$upstream" ] || die "the fake upstream did not start (log: $work/upstream.log)"
fi

bin_of() { if [ "$1" = old ]; then echo "$old_bin"; else echo "$new_bin"; fi; }
port_of() { if [ "$1" = old ]; then echo "$port"; else echo $((port + 1)); fi; }

# The server's CPU ticks so far (user + system, every thread), from /proc.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# measure SIDE ROW ROUND CONNECTIONS quarry-load-args...: appends one line to $work/runs,
# with the side's server's CPU milliseconds a request over the measured window (the
# ticks read after the warmup and at the end of the measured seconds).
measure() {
    local side=$1 row=$2 round=$3 conns=$4; shift 4
    local out="$work/$side/$row-$round.json" pid=${servers[$side]} before after
    timeout $((run_seconds + 60)) taskset -c "$CLIENT_CPU" "$load_bin" --pin "$CLIENT_CPU" --json \
        -c "$conns" --duration "$duration" --warmup "$warmup" --label "$side-$row" "$@" > "$out" 2>> "$work/load.log" &
    local loader=$!
    sleep "$(seconds_of "$warmup")"
    before=$(ticks "$pid")
    sleep "$(seconds_of "$duration")"
    after=$(ticks "$pid")
    wait "$loader" || die "quarry-load failed on $side $row round $round (log: $work/load.log)"
    python3 - "$side" "$row" "$conns" "$round" "$out" "$before" "$after" "$hz" "$(seconds_of "$duration")" >> "$work/runs" <<'PY'
import json, sys
side, row, conns, rnd, path, before, after, hz, seconds = sys.argv[1:]
r = json.load(open(path))
l = r["latency"]
served = r["rps"] * int(seconds)
cpu = (int(after) - int(before)) * 1000 / int(hz) / served if served else float("nan")
print(side, row, conns, rnd, r["rps"], l["p50_ns"] / 1e6, l["p99_ns"] / 1e6, r["non_2xx"] + r["socket_errors"], cpu)
PY
    log "round $round $side $row: $(tail -1 "$work/runs" | awk '{ printf "%.1f req/s, %.3f CPU-ms a request", $5, $9 }')"
}

# start_side SIDE ROUND: a fresh server on the side's own copy; at its first start, the
# copy is checked and given the generation row's agent.
declare -A servers
start_side() {
    local side=$1 round=$2 p
    p=$(port_of "$side")
    if [ "$side" = new ]; then serve "$(bin_of "$side")" "$work/$side" "$p" pin "$new_env"; else serve "$(bin_of "$side")" "$work/$side" "$p"; fi
    servers[$side]=$server
    [ "$round" = 1 ] || return 0
    # The new binary opens the old one's data and must hold the same collection.
    python3 bench/ab/corpus.py count "127.0.0.1:$p" "$key" "$col" > "$work/$side/count"
    cmp -s "$seed/count" "$work/$side/count" \
        || die "$side holds $(cat "$work/$side/count") (documents pages) of the seed's $(cat "$seed/count")"
    if [ -n "${upstream:-}" ]; then
        python3 bench/ab/corpus.py agent "127.0.0.1:$p" "$key" "$upstream" "$work/$side/generate.jsonl"
    fi
}

# one_row SIDE ROW ROUND
one_row() {
    local side=$1 row=$2 round=$3 p url ing
    p=$(port_of "$side")
    url=http://127.0.0.1:$p/
    case "$row" in
        keyword) measure "$side" keyword "$round" 32 --requests "$work/keyword.jsonl" "$url" ;;
        hybrid) measure "$side" hybrid "$round" 8 --requests "$work/hybrid.jsonl" "$url" ;;
        health) measure "$side" health "$round" 32 "${url}v1/health" ;;
        generation) measure "$side" generation "$round" 4 --timeout 10s --requests "$work/$side/generate.jsonl" "$url" ;;
        add)
            ing=$(python3 bench/ab/corpus.py collection "127.0.0.1:$p" "$key" "ab-add-$round")
            python3 bench/ab/corpus.py adds "$key" "$ing" "$scifact" "$work/$side/adds.jsonl"
            measure "$side" add "$round" 8 --timeout 30s --requests "$work/$side/adds.jsonl" "$url"
            python3 bench/ab/corpus.py delete "127.0.0.1:$p" "$key" "$ing"
            ;;
    esac
}

# Both servers are up through a round (the idle one parks), and each row is measured on
# one side, then at once on the other, so the two figures of a pair are seconds apart
# rather than a round apart: the other work on a shared machine comes and goes on the
# scale of a round. The side that goes first swaps every round (old first in odd ones).
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
log "$rounds round(s), each row old then new (new then old in even rounds); rows $rows; $warmup + $duration each; servers on CPU $SERVER_CPU, load on CPU $CLIENT_CPU"
: > "$work/runs"
for round in $(seq "$rounds"); do
    start_side old "$round"
    start_side new "$round"
    order="old new"
    (( round % 2 )) || order="new old"
    for row in ${rows//,/ }; do
        for side in $order; do one_row "$side" "$row" "$round"; done
    done
    stop_pid "${servers[old]}"
    stop_pid "${servers[new]}"
done

out=bench/results/ab-$time.md
{
    echo "# A/B: $rev against the new binary ($(date -u +%F))"
    echo
    echo "Command: \`bench/ab/run.sh${given:+ $given}\` (rounds $rounds, duration $duration, rows $rows)."
    echo "old: \`$old_bin\` ($rev). new: \`$new_bin\`, built $(date -u -r "$new_bin" '+%F %H:%M UTC'),"
    [ -z "$new_env" ] || echo "new side's environment: \`$(sed -E 's/(PASSWORD|SECRET[A-Z_]*|URL)=[^ ]*/\1=…/g' <<< "$new_env")\`."
    echo "working tree at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src index Cargo.lock || echo ' with uncommitted changes')."
    echo "$(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -1)); each server \`--shards 1\` on CPU $SERVER_CPU, quarry-load"
    echo "(and the fake upstream) on CPU $CLIENT_CPU; each row old then new, new then old in even rounds; $warmup warmup + $duration per row."
    echo "SciFact ($(cut -d' ' -f1 "$seed/count") documents, embedder $embedder) indexed once by the old binary, each side on its own copy."
    echo "Load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg). $same"
    echo
    python3 bench/ab/table.py "$work/runs"
} > "$out"
cat "$out"
for side in old new; do rm -rf "$work/$side/data" "$work/$side/adds.jsonl"; done
log "written to $out (logs and raw figures in $work)"
