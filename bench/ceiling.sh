#!/usr/bin/env bash
# The HTTP ceiling benchmark: how close Quarry's HTTP layer comes to the fastest HTTP/1.1
# server known for this machine (may_minihttp's hello world, `hello-ceiling`), measured in the
# same run, on the same core, at the same concurrency.
#
#   server (quarry, then hello-ceiling) pinned to CPU 0, load generator pinned to CPU 1;
#   quarry: GET /v1/health; hello: GET /; rounds alternate hello, quarry, hello, quarry...
#   and the table reports the median of each number over the rounds (independently per
#   column), which dampens the noise of a shared machine, beside the best round's req/s.
#
# Usage: bench/ceiling.sh [--connections N] [--duration 10s] [--warmup 2s] [--rounds 3]
#                         [--no-wrk] [--no-build] [--hello-only] [--out FILE]
# The same settings as environment variables: CONNECTIONS, DURATION, WARMUP, ROUNDS.
# Durations take s or ms (10s, 500ms). Needs 2 CPUs and taskset; wrk is optional (a
# cross-check, run when installed: apt-get install -y wrk).
set -euo pipefail

CONNECTIONS=${CONNECTIONS:-64}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
ROUNDS=${ROUNDS:-3}
USE_WRK=1
BUILD=1
HELLO_ONLY=0
OUT=""

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --connections|-c) CONNECTIONS=$2; shift 2 ;;
        --duration|-d) DURATION=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --no-wrk) USE_WRK=0; shift ;;
        --no-build) BUILD=0; shift ;;
        --hello-only) HELLO_ONLY=1; shift ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "ceiling.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
RELEASE=${CARGO_TARGET_DIR:-$ROOT/target}/release
SERVER_CPU=0
CLIENT_CPU=1

log() { echo "ceiling: $*" >&2; }
die() { echo "ceiling: error: $*" >&2; exit 1; }

# Seconds, rounded up, from "10s", "500ms" or a bare number of seconds.
seconds_of() {
    case "$1" in
        *ms) echo $(( (${1%ms} + 999) / 1000 )) ;;
        *s) echo "${1%s}" ;;
        *[!0-9]*) die "duration $1: use s or ms (10s, 500ms)" ;;
        *) echo "$1" ;;
    esac
}
RUN_SECONDS=$(( $(seconds_of "$DURATION") + $(seconds_of "$WARMUP") ))
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number"
[[ "$CONNECTIONS" =~ ^[1-9][0-9]*$ ]] || die "--connections must be a positive number"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
(( $(nproc) >= 2 )) || die "needs 2 CPUs (server on CPU $SERVER_CPU, client on CPU $CLIENT_CPU); this machine has $(nproc)"
if (( USE_WRK )) && ! command -v wrk >/dev/null; then
    log "wrk not installed: skipping the cross-check (apt-get install -y wrk)"
    USE_WRK=0
fi

# --- processes we start, and only those, are stopped on exit ----------------------------
PIDS=()
WORK=$(mktemp -d "${TMPDIR:-/tmp}/quarry-ceiling.XXXXXX")
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- build ----------------------------------------------------------------------------
if (( BUILD )); then
    log "building release (quarry-bench)"
    timeout 1800 cargo build --release -p quarry-bench >&2 || die "building quarry-bench failed"
    if (( ! HELLO_ONLY )); then
        log "building release (quarry)"
        timeout 1800 cargo build --release -p quarry >&2 \
            || die "building the quarry server failed (cargo build --release -p quarry); run with --hello-only to measure the reference alone"
    fi
fi
[[ -x "$RELEASE/quarry-load" && -x "$RELEASE/hello-ceiling" ]] || die "no quarry-load/hello-ceiling in $RELEASE (build without --no-build)"
if (( ! HELLO_ONLY )) && [[ ! -x "$RELEASE/quarry" ]]; then
    die "the quarry binary does not exist yet ($RELEASE/quarry); run with --hello-only to measure the reference alone"
fi

# --- servers --------------------------------------------------------------------------
# A free loopback port: one nothing answers on.
free_port() {
    local port
    for _ in $(seq 100); do
        port=$(( 20000 + RANDOM % 20000 ))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
    done
    die "no free loopback port found"
}

# HTTP status of GET URL, or 000.
http_status() {
    curl -s -o /dev/null -m 1 -w '%{http_code}' "$1" 2>/dev/null || echo 000
}

# wait_ready NAME PID URL LOGFILE: up to 30 s for a 200, failing clearly if the process dies.
wait_ready() {
    local name=$1 pid=$2 url=$3 logfile=$4 status=000
    for _ in $(seq 300); do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "---- last lines of $name's output ----" >&2; tail -n 20 "$logfile" >&2 || true
            die "$name exited during startup (see its output above)"
        fi
        status=$(http_status "$url")
        [[ "$status" == 200 ]] && { log "$name is up at $url (pid $pid, CPU $SERVER_CPU)"; return; }
        sleep 0.1
    done
    echo "---- last lines of $name's output ----" >&2; tail -n 20 "$logfile" >&2 || true
    die "$name did not answer 200 on $url within 30 s (last status: $status)"
}

command -v curl >/dev/null || die "curl not found (used to wait for the servers)"

HELLO_PORT=$(free_port)
HELLO_URL="http://127.0.0.1:$HELLO_PORT/"
taskset -c "$SERVER_CPU" "$RELEASE/hello-ceiling" --listen "127.0.0.1:$HELLO_PORT" --workers 1 >"$WORK/hello.log" 2>&1 &
PIDS+=($!)
wait_ready hello-ceiling "${PIDS[-1]}" "$HELLO_URL" "$WORK/hello.log"

SERVERS=(hello)
if (( ! HELLO_ONLY )); then
    QUARRY_PORT=$(free_port)
    while [[ "$QUARRY_PORT" == "$HELLO_PORT" ]]; do QUARRY_PORT=$(free_port); done
    QUARRY_URL="http://127.0.0.1:$QUARRY_PORT/v1/health"
    mkdir -p "$WORK/data"
    taskset -c "$SERVER_CPU" "$RELEASE/quarry" serve --data "$WORK/data" --listen "127.0.0.1:$QUARRY_PORT" --shards 1 \
        >"$WORK/quarry.log" 2>&1 &
    PIDS+=($!)
    wait_ready quarry "${PIDS[-1]}" "$QUARRY_URL" "$WORK/quarry.log"
    SERVERS=(hello quarry)
fi
url_of() { if [[ $1 == hello ]]; then echo "$HELLO_URL"; else echo "$QUARRY_URL"; fi; }

# --- measuring ------------------------------------------------------------------------
# Each run appends "tool server round rps p50_ms p99_ms non2xx errors" to $WORK/runs.
json_field() { sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p" "$2"; }

run_quarry_load() {
    local server=$1 round=$2 out="$WORK/ql-$1-$2.json"
    if ! timeout $(( RUN_SECONDS + 30 )) taskset -c "$CLIENT_CPU" "$RELEASE/quarry-load" --pin "$CLIENT_CPU" \
        -c "$CONNECTIONS" -d "$DURATION" --warmup "$WARMUP" --label "$server" --json "$(url_of "$server")" \
        >"$out" 2>"$WORK/ql.err"; then
        cat "$WORK/ql.err" >&2
        log "quarry-load against $server failed in round $round"
        return
    fi
    local rps p50 p99
    rps=$(json_field rps "$out"); p50=$(json_field p50_ns "$out"); p99=$(json_field p99_ns "$out")
    echo "quarry-load $server $round $rps $(awk -v n="$p50" 'BEGIN{print n/1e6}') $(awk -v n="$p99" 'BEGIN{print n/1e6}') \
$(json_field non_2xx "$out") $(json_field socket_errors "$out")" >>"$WORK/runs"
    log "round $round quarry-load $server: $(awk -v r="$rps" 'BEGIN{printf "%.0f", r}') req/s"
}

# wrk prints latencies as 261.00us / 1.23ms / 1.01s.
to_ms() { awk -v v="$1" 'BEGIN{ n=v+0; if (v ~ /us$/) n/=1000; else if (v ~ /ms$/) n=n; else if (v ~ /s$/) n*=1000; printf "%.3f", n }'; }

run_wrk() {
    local server=$1 round=$2 out="$WORK/wrk-$1-$2.txt"
    if ! timeout $(( $(seconds_of "$DURATION") + 30 )) taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNECTIONS" -d"$DURATION" \
        --latency "$(url_of "$server")" >"$out" 2>&1; then
        cat "$out" >&2
        log "wrk against $server failed in round $round"
        return
    fi
    local rps p50 p99 non2xx errors
    rps=$(awk '/^Requests\/sec:/{print $2}' "$out")
    p50=$(to_ms "$(awk '$1=="50%"{print $2}' "$out")")
    p99=$(to_ms "$(awk '$1=="99%"{print $2}' "$out")")
    non2xx=$(awk '/Non-2xx or 3xx responses:/{print $NF}' "$out"); non2xx=${non2xx:-0}
    errors=$(awk '/Socket errors:/{gsub(",",""); print $4+$6+$8+$10}' "$out"); errors=${errors:-0}
    echo "wrk $server $round $rps $p50 $p99 $non2xx $errors" >>"$WORK/runs"
    log "round $round wrk $server: $(awk -v r="$rps" 'BEGIN{printf "%.0f", r}') req/s"
}

LOADAVG_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "$ROUNDS round(s): ${SERVERS[*]} alternating; $CONNECTIONS connections, $WARMUP warmup + $DURATION each; servers on CPU $SERVER_CPU, client on CPU $CLIENT_CPU"
: >"$WORK/runs"
for round in $(seq "$ROUNDS"); do
    for server in "${SERVERS[@]}"; do
        run_quarry_load "$server" "$round"
    done
    if (( USE_WRK )); then
        for server in "${SERVERS[@]}"; do
            run_wrk "$server" "$round"
        done
    fi
done
LOADAVG_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
[[ -s "$WORK/runs" ]] || die "no run succeeded"

# --- report ---------------------------------------------------------------------------
# median TOOL SERVER COLUMN (4 = rps, 5 = p50, 6 = p99, 7 = non-2xx, 8 = errors)
median() {
    awk -v t="$1" -v s="$2" -v c="$3" '$1==t && $2==s {print $c}' "$WORK/runs" | sort -g \
        | awk '{v[NR]=$1} END{ if (NR==0) print ""; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2 }'
}

# best TOOL SERVER: the highest req/s of the rounds (noise only ever takes throughput away).
best() {
    awk -v t="$1" -v s="$2" '$1==t && $2==s && $4>m {m=$4} END{ if (m!="") print m }' "$WORK/runs"
}

table() {
    echo "| server | tool | req/s (median) | best req/s | p50 ms | p99 ms | non-2xx | socket errors | quarry/hello (median) | quarry/hello (best) |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    local tool server rps top hello_rps hello_top ratio ratio_best
    for tool in quarry-load wrk; do
        hello_rps=$(median "$tool" hello 4)
        hello_top=$(best "$tool" hello)
        [[ -n "$hello_rps" ]] || continue
        for server in "${SERVERS[@]}"; do
            rps=$(median "$tool" "$server" 4)
            top=$(best "$tool" "$server")
            [[ -n "$rps" ]] || { echo "| $server | $tool | failed | | | | | | | |"; continue; }
            ratio=$(awk -v q="$rps" -v h="$hello_rps" 'BEGIN{printf "%.2f", q/h}')
            ratio_best=$(awk -v q="$top" -v h="$hello_top" 'BEGIN{printf "%.2f", q/h}')
            [[ $server == hello ]] && { ratio="(1.00)"; ratio_best="(1.00)"; }
            printf '| %s | %s | %.0f | %.0f | %.3f | %.3f | %.0f | %.0f | %s | %s |\n' "$server" "$tool" "$rps" "$top" \
                "$(median "$tool" "$server" 5)" "$(median "$tool" "$server" 6)" \
                "$(median "$tool" "$server" 7)" "$(median "$tool" "$server" 8)" "$ratio" "$ratio_best"
        done
    done
}

raw_runs() {
    echo "| round | tool | server | req/s | p50 ms | p99 ms | non-2xx | socket errors |"
    echo "|---:|---|---|---:|---:|---:|---:|---:|"
    awk '{printf "| %s | %s | %s | %.0f | %.3f | %.3f | %s | %s |\n", $3, $1, $2, $4, $5, $6, $7, $8}' "$WORK/runs"
}

DATE=$(date +%Y-%m-%d)
if [[ -z "$OUT" ]]; then
    OUT="$ROOT/bench/results/ceiling-$DATE.md"
    [[ -e "$OUT" ]] && OUT="$ROOT/bench/results/ceiling-$DATE-$(date +%H%M%S).md"
fi
mkdir -p "$(dirname "$OUT")"
{
    echo "# HTTP ceiling: quarry vs hello-ceiling ($DATE)"
    echo
    echo "Median of $ROUNDS alternating round(s) per row (each column's median on its own), and the best"
    echo "round's req/s: on a shared machine noise only takes throughput away, so the best is the least disturbed."
    echo "Servers pinned to CPU $SERVER_CPU (quarry \`--shards 1\`, hello-ceiling \`--workers 1\`), load generator pinned to CPU $CLIENT_CPU;"
    echo "$CONNECTIONS keep-alive connections, closed loop; quarry-load: $WARMUP warmup + $DURATION; wrk: $DURATION (-t1)."
    echo "quarry: \`GET /v1/health\`; hello: \`GET /\` → \`Hello, World!\`."
    echo
    table
    echo
    echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)'),"
    echo "$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), kernel $(uname -r)."
    echo "Load average before: $LOADAVG_BEFORE; after: $LOADAVG_AFTER (other work on the machine shows up as noise)."
    echo
    echo "## Every run"
    echo
    raw_runs
} >"$OUT"

echo
table
echo
log "written to ${OUT#"$ROOT"/}"
