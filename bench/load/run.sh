#!/usr/bin/env bash
# The load harness: Quarry's throughput and latency through its HTTP API on SciFact, each
# figure printed beside a ceiling measured in the same run, as a Markdown table (printed and
# written to bench/results/load-<embedder>-<time>.md).
#
#   HTTP       GET /v1/health                vs  may_minihttp hello (bench/ceiling.sh: one core
#                                                each for server and load generator)
#   search     hybrid, semantic               vs  raw single-query embedding of the same model,
#                                                one thread per shard (embed-ceiling --queries)
#              plugin POST /query, top_k 10   vs  AgentLex hybrid search, k 10, in the same rounds
#              keyword                        vs  GET /v1/health on the same server, and the same
#                                                hello server answering a body of the same size
#   ingest     documents added through the API  vs  raw batch-32 embedding of the same documents,
#                                                one thread per shard (embed-ceiling --corpus), and
#                                                raw embedding one document per call (no padding:
#                                                on SciFact the tighter of the two)
#              add → searchable latency          (an add, then a search that must find it)
#   latency    hybrid p99 while ingest runs   vs  hybrid p99 idle
#
# No cache exists to turn off: every search embeds its query and scans the index. The account
# is on the operator plan `evaluation` (bench/evaluation-plan.toml, assigned with `quarry
# accounts create --plan`), so no rate limit or allowance shapes a figure. The collection is
# indexed once through the API and kept under target/bench-data/. Every load is closed-loop,
# bounded in time and aimed at 127.0.0.1 only.
#
#   bench/load/run.sh [--embedder multilingual-e5-small|all-MiniLM-L6-v2] [--rounds 3]
#                     [--duration 8s] [--port 4472] [--no-ceiling]
#
# SciFact is read from $EVAL_DIR/scifact (default: ../shared/eval, from the repository root).
set -euo pipefail
cd "$(dirname "$0")/../.."
embedder=multilingual-e5-small
rounds=3
duration=8s
port=4472
http_ceiling=1
while [ $# -gt 0 ]; do
    case "$1" in
        --embedder) embedder=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --no-ceiling) http_ceiling=0; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
cargo build --release --locked -p quarry -p quarry-bench \
    --bin quarry --bin quarry-quality --bin quarry-load --bin embed-ceiling --bin hello-ceiling >&2
rel=target/release
scifact=${EVAL_DIR:-../shared/eval}/scifact
data=target/bench-data/scifact-$embedder
cpus=$(nproc)
cpu_list=0-$((cpus - 1))
mkdir -p "$data"
{ echo "embedder = \"$embedder\""; cat bench/evaluation-plan.toml; } > "$data/quarry.toml"
serve() {
    "$rel/quarry" serve --config "$data/quarry.toml" --data "$data/data" --listen "127.0.0.1:$port" 2>> "$data/server.log" &
    pid=$!
    for _ in $(seq 150); do curl -sf "http://127.0.0.1:$port/v1/health" > /dev/null && return; sleep 0.2; done
    echo "the server did not start; see $data/server.log" >&2; exit 1
}
trap 'kill "${pid:-0}" "${hello:-0}" 2>/dev/null || true' EXIT
if [ ! -f "$data/ready" ]; then
    rm -rf "$data/data"
    key=$("$rel/quarry" accounts create --config "$data/quarry.toml" --data "$data/data" \
        --email bench@quarry.invalid --plan evaluation | sed -n 's/^api key (shown once): //p')
    serve
    "$rel/quarry-quality" --server "http://127.0.0.1:$port" --key "$key" --dataset "$scifact" \
        --modes hybrid --concurrency 8 > "$data/quality.md"
    col=$(curl -sf -H "authorization: Bearer $key" "http://127.0.0.1:$port/v1/collections" | python3 -c 'import json,sys; print(json.load(sys.stdin)["collections"][0]["id"])')
    echo "$key $col" > "$data/ready"
    kill "$pid"; wait "$pid" 2>/dev/null || true
fi
read -r key col < "$data/ready"
python3 - "$key" "$col" "$data" "$scifact" <<'PY'
import json, sys
key, col, data, scifact = sys.argv[1:]
auth = {"authorization": f"Bearer {key}", "content-type": "application/json"}
queries = [json.loads(l)["text"] for l in open(f"{scifact}/queries.jsonl")]
for mode in ("hybrid", "semantic", "keyword"):
    with open(f"{data}/{mode}.jsonl", "w") as f:
        for q in queries:
            body = json.dumps({"query": q, "mode": mode, "expand": False})
            f.write(json.dumps({"method": "POST", "path": f"/v1/collections/{col}/search", "headers": auth, "body": body}) + "\n")
# The retrieval plugin's /query over the same collection: one query, top_k 10, as
# AgentLex's hybrid search above (k defaults to 10).
with open(f"{data}/plugin.jsonl", "w") as f:
    for q in queries:
        body = json.dumps({"queries": [{"query": q, "top_k": 10}], "namespace": col})
        f.write(json.dumps({"method": "POST", "path": "/query", "headers": auth, "body": body}) + "\n")
PY

# --- HTTP ceiling: its own quarry and hello server, one core each (bench/ceiling.sh) ---
if [ "$http_ceiling" = 1 ]; then
    bench/ceiling.sh --no-build --no-wrk --rounds "$rounds" --duration "$duration" --out "$data/ceiling.md" >&2
fi

serve
out=bench/results/load-$embedder-$(date -u +%F-%H%M%S).md
exec > >(tee "$out")
echo "# Load harness, $embedder ($(date -u +%F))"
echo
echo "Command: \`bench/load/run.sh --embedder $embedder --rounds $rounds --duration $duration\`."
echo "Commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)'), $cpus CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -1)),"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "SciFact (5,183 documents) indexed through the API on the operator plan \`evaluation\`"
echo "(limits raised with \`quarry accounts create --plan evaluation\`). No cache exists to turn off."
echo

# A load run's JSON → "rps p50 p90 p99 max errors" (ms); a failed request fails the harness.
stats() {
    python3 -c '
import json, sys
r = json.load(sys.stdin)
l = r["latency"]
errors = r["non_2xx"] + r["socket_errors"]
if errors:
    sys.exit("load run %s had %d non-2xx answers and %d socket errors" % (r["label"], r["non_2xx"], r["socket_errors"]))
print("%.1f %.2f %.2f %.2f %.2f %d %.0f" % (r["rps"], l["p50_ns"] / 1e6, l["p90_ns"] / 1e6, l["p99_ns"] / 1e6,
      l["max_ns"] / 1e6, errors, r["bytes_read"] / max(r["requests"], 1)))'
}
load() { "$rel/quarry-load" --json --duration "$duration" --warmup 2s "$@" 2>/dev/null | stats; }
ceiling() { "$rel/embed-ceiling" --model "$embedder" --cpus "$cpu_list" --duration "$duration" "$@" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(round(r.get("queries_per_s") or r["docs_per_s"], 2))'; }

# --- Search: rounds alternate every measure, the table takes each column's median ---
: > "$data/rounds"
for r in $(seq "$rounds"); do
    e=$(ceiling --queries "$scifact/queries.jsonl")
    h=$(load -c 8 --requests "$data/hybrid.jsonl" "http://127.0.0.1:$port/")
    pq=$(load -c 8 --requests "$data/plugin.jsonl" "http://127.0.0.1:$port/")
    s=$(load -c 8 --requests "$data/semantic.jsonl" "http://127.0.0.1:$port/")
    k=$(load -c 32 --requests "$data/keyword.jsonl" "http://127.0.0.1:$port/")
    g=$(load -c 32 "http://127.0.0.1:$port/v1/health")
    # The same reference server as the HTTP ceiling, answering a body the size of a keyword answer.
    size=$(echo "$k" | cut -d' ' -f7)
    "$rel/hello-ceiling" --listen 127.0.0.1:$((port + 1)) --workers "$cpus" --body-bytes "$size" 2>/dev/null & hello=$!
    sleep 0.5
    b=$(load -c 32 "http://127.0.0.1:$((port + 1))/")
    kill "$hello"; wait "$hello" 2>/dev/null || true
    echo "round $r: embed $e/s, hybrid ${h%% *}/s, plugin /query ${pq%% *}/s, semantic ${s%% *}/s, keyword ${k%% *}/s, health ${g%% *}/s, static ${size} B ${b%% *}/s" >&2
    echo "embed $e" >> "$data/rounds"
    for m in "hybrid $h" "plugin $pq" "semantic $s" "keyword $k" "health $g" "static $b"; do echo "$m" >> "$data/rounds"; done
done

# --- Ingest: the batch-32 ceiling, then documents added through the API into a new collection ---
ceil_ingest=$(ceiling --corpus "$scifact/corpus.jsonl" --batch 32 --warmup 2s)
ceil_single=$(ceiling --corpus "$scifact/corpus.jsonl" --batch 1 --warmup 2s)
new_collection() {
    curl -sf -X POST -H "authorization: Bearer $key" -H 'content-type: application/json' -d "{\"name\":\"$1\"}" \
        "http://127.0.0.1:$port/v1/collections" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}
adds_for() {
    python3 - "$key" "$1" "$scifact" > "$data/adds-$1.jsonl" <<'PY'
import json, sys
key, col, scifact = sys.argv[1:]
auth = {"authorization": f"Bearer {key}", "content-type": "application/json"}
for line in open(f"{scifact}/corpus.jsonl"):
    d = json.loads(line)
    print(json.dumps({"method": "POST", "path": f"/v1/collections/{col}/documents", "headers": auth,
                      "body": json.dumps({"title": d["title"], "text": d["text"]})}))
PY
}
ing=$(new_collection "ingest-load")
adds_for "$ing"
ingest=$("$rel/quarry-load" --json --duration "$duration" --warmup 0s -c 8 --timeout 30s --requests "$data/adds-$ing.jsonl" "http://127.0.0.1:$port/" 2>/dev/null | stats)
pages=$(curl -sf -H "authorization: Bearer $key" "http://127.0.0.1:$port/v1/collections/$ing" \
    | python3 -c 'import json,sys; c=json.load(sys.stdin); s=c.get("stats", c); print(s.get("pages", 0), s.get("documents", 0))')
curl -sf -X DELETE -H "authorization: Bearer $key" "http://127.0.0.1:$port/v1/collections/$ing" > /dev/null

# add → searchable: each add carries a word no other document has; the clock runs from sending
# the add until a keyword search for that word returns the document.
visible=$(python3 - "$key" "$port" <<'PY'
import http.client, json, sys, time, secrets
key, port = sys.argv[1], int(sys.argv[2])
conn = http.client.HTTPConnection("127.0.0.1", port)
auth = {"authorization": f"Bearer {key}", "content-type": "application/json"}
def call(method, path, body=None):
    conn.request(method, path, json.dumps(body) if body is not None else None, auth)
    r = conn.getresponse()
    return r.status, json.loads(r.read() or b"null")
_, c = call("POST", "/v1/collections", {"name": "add-to-search"})
col = c["id"]
lat = []
for _ in range(30):
    word = "zq" + secrets.token_hex(6)
    t = time.perf_counter()
    status, d = call("POST", f"/v1/collections/{col}/documents", {"title": "probe", "text": f"A probe document that holds {word} once."})
    assert status == 201, (status, d)
    status, s = call("POST", f"/v1/collections/{col}/search", {"query": word, "mode": "keyword", "expand": False})
    found = status == 200 and any(x["document"]["id"] == d["id"] for x in s["results"])
    assert found, f"an acknowledged add was not found by the next search: {s}"
    lat.append((time.perf_counter() - t) * 1000)
call("DELETE", f"/v1/collections/{col}")
lat.sort()
print("%.2f %.2f %d" % (lat[len(lat) // 2], lat[-1], len(lat)))
PY
)

# --- Hybrid latency alone, then with ingest into another collection beside it ---
# One connection: the kernel spreads connections over the shards by a hash of their
# ports, so two connections share a shard in about half the runs, which doubles p50 and
# p99 by queueing alone; a ratio of two such draws measured the draws, not ingest.
alone=$(load -c 1 --requests "$data/hybrid.jsonl" "http://127.0.0.1:$port/")
ing=$(new_collection "ingest-beside")
adds_for "$ing"
"$rel/quarry-load" --json --duration 30s --warmup 0s -c 8 --timeout 30s --requests "$data/adds-$ing.jsonl" "http://127.0.0.1:$port/" > "$data/adds.json" 2>/dev/null &
adder=$!
sleep 3
beside=$(load -c 1 --requests "$data/hybrid.jsonl" "http://127.0.0.1:$port/")
wait "$adder" || true
added=$(stats < "$data/adds.json" | cut -d' ' -f1)
curl -sf -X DELETE -H "authorization: Bearer $key" "http://127.0.0.1:$port/v1/collections/$ing" > /dev/null
rm -f "$data"/adds-*.jsonl

if [ "$http_ceiling" = 1 ]; then
    echo "## HTTP: /v1/health against may_minihttp hello"
    echo
    echo "From \`bench/ceiling.sh --rounds $rounds --duration $duration\` in this run: quarry \`--shards 1\` and"
    echo "hello-ceiling \`--workers 1\` pinned to CPU 0, quarry-load pinned to CPU 1, 64 connections."
    echo
    sed -n '/^| server |/,/^$/p' "$data/ceiling.md"
fi
echo "## Search, ingest and latency ($cpus shards on CPUs $cpu_list, quarry-load beside them)"
echo
python3 - "$data/rounds" "$ceil_ingest" "$ceil_single" "$ingest" "${pages:-0 0}" "$visible" "$alone" "$beside" "$added" "$cpus" <<'PY'
import statistics as st, sys
rounds_file, ceil_ingest, ceil_single, ingest, pages, visible, alone, beside, added, cpus = sys.argv[1:]
cols = {}
for line in open(rounds_file):
    name, *vals = line.split()
    cols.setdefault(name, []).append([float(v) for v in vals])
med = {n: [st.median(c) for c in zip(*rows)] for n, rows in cols.items()}
e = med["embed"][0]
n = len(cols["embed"])
def row(label, m, ratio):
    rps, p50, p90, p99, mx, err = m[:6]
    print(f"| {label} | {rps:,.0f} | {p50:.2f} | {p90:.2f} | {p99:.2f} | {mx:.2f} | {err:.0f} | {ratio} |")
print(f"| measure | req/s (median of {n} rounds) | p50 ms | p90 ms | p99 ms | max ms | errors | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
print(f"| raw query embedding, {cpus} threads (ceiling) | {e:,.0f} | | | | | | |")
row("hybrid search, 8 connections", med["hybrid"], f"**{med['hybrid'][0] / e:.2f}x** of embedding")
row("plugin POST /query (top_k 10), 8 connections", med["plugin"], f"**{med['plugin'][0] / med['hybrid'][0]:.2f}x** of hybrid search")
row("semantic search, 8 connections", med["semantic"], f"{med['semantic'][0] / e:.2f}x of embedding")
row("GET /v1/health, 32 connections", med["health"], "")
row("keyword search, 32 connections", med["keyword"], f"**{med['keyword'][0] / med['health'][0]:.2f}x** of health")
size = med["keyword"][6]
row(f"may_minihttp, a static {size / 1000:.1f} kB answer (keyword's size)", med["static"],
    f"keyword = {med['keyword'][0] / med['static'][0]:.2f}x of it")
hy = [r[0] / x[0] for r, x in zip(cols["hybrid"], cols["embed"])]
print(f"| per-round hybrid/embedding | " + ", ".join(f"{v:.2f}" for v in hy) + " | | | | | | |")
pl = [p[0] / h[0] for p, h in zip(cols["plugin"], cols["hybrid"])]
print(f"| per-round /query / hybrid | " + ", ".join(f"{v:.2f}" for v in pl) + " | | | | | | |")
print()
ci, cs = float(ceil_ingest), float(ceil_single)
rps, p50, p90, p99, mx, err = map(float, ingest.split()[:6])
pg, docs = map(float, pages.split())
per_doc = pg / docs if docs else 1.0
print("| ingest | documents/s | pages/s | add p50 ms | add p99 ms | errors | ratio |")
print("|---|---:|---:|---:|---:|---:|---|")
print(f"| raw batch-32 embedding of the same documents, {cpus} threads (ceiling) | {ci:,.1f} | | | | | |")
print(f"| raw embedding, one document per call, {cpus} threads | {cs:,.1f} | | | | | |")
print(f"| POST documents through the API, 8 connections | {rps:,.1f} | {rps * per_doc:,.1f} | {p50:.0f} | {p99:.0f} | {err:.0f} | **{rps / ci:.2f}x** of batch-32, {rps / cs:.2f}x of one per call |")
v50, vmax, vn = visible.split()
print(f"| add → found by the next search, one at a time ({vn} documents) | | | {v50} | max {vmax} | 0 | |")
print()
a = list(map(float, alone.split()))
b = list(map(float, beside.split()))
print("| hybrid search, 1 connection | req/s | p50 ms | p99 ms | ratio |")
print("|---|---:|---:|---:|---|")
print(f"| alone | {a[0]:.1f} | {a[1]:.2f} | {a[3]:.2f} | |")
print(f"| beside ingest ({float(added):.1f} documents/s added) | {b[0]:.1f} | {b[1]:.2f} | {b[3]:.2f} | **p99 {b[3] / a[3]:.2f}x** of idle |")
PY
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine shows up as noise)."
echo "written to $out" >&2
