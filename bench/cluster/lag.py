#!/usr/bin/env python3
"""The cluster's own figures (issue 40), measured in one run on loopback:

- WAL-tail lag: an add acknowledged by node 1 of an `ops/cluster` simulation, then node 2
  searched for its unique word every 2 ms (no Quarry-After) until it answers with it;
  the lag is the time from the 201 to that answer (p50, p99 over --samples adds).
- Add latency, one at a time: on the cluster's node 1 (the shared journal, a PostgreSQL
  commit per add) and on a standalone node of the same binary (the local WAL, an
  fdatasync per add), alternating in blocks so both see the same machine.
- A follower's apply rate, on a second cluster that never flushes (so the backlog is
  records to read and apply, not a manifest to take): node 2 is stopped (SIGSTOP) while
  node 1 takes --backlog adds from 8 clients (its own acknowledged rate), then let go
  (SIGCONT) and asked to search with the last add's Quarry-After: the backlog over the
  time until it answers is the rate at which a follower reads the journal and applies.

    bench/cluster/lag.py [--bin target/release/quarry] [--samples 300] [--backlog 5000]

Writes bench/results/cluster-lag-<time>.md. Every request goes to 127.0.0.1 only, and
the run is bounded by its sample counts (each wait by 10 s).
"""
import argparse
import concurrent.futures
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def call(base, method, path, key=None, body=None, headers=None, timeout=30):
    status, j, _ = call_h(base, method, path, key, body, headers, timeout)
    return status, j


def call_h(base, method, path, key=None, body=None, headers=None, timeout=30):
    """As call, with the reply's headers."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    if key:
        req.add_header("authorization", "Bearer " + key)
    if data is not None:
        req.add_header("content-type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null"), r.headers
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null"), e.headers


def catch_up(n1, n2, pid2, key, col, backlog):
    """Node 2 stopped while node 1 takes `backlog` adds, then timed catching up."""
    os.kill(pid2, signal.SIGSTOP)
    try:
        def add(i):
            word = f"backlog{i}x{os.getpid()}"
            status, _, h = call_h(n1, "POST", f"/v1/collections/{col}/documents", key, {"title": word, "text": f"{word} in the quarry"})
            assert status == 201, status
            return int(h["quarry-seq"].rpartition(":")[2])
        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            last = max(pool.map(add, range(backlog)))
        added = time.perf_counter() - t0
    finally:
        os.kill(pid2, signal.SIGCONT)
    t0 = time.perf_counter()
    status, r = call(n2, "POST", f"/v1/collections/{col}/search", key,
                     {"query": f"backlog{backlog - 1}x{os.getpid()}", "mode": "keyword"},
                     headers={"quarry-after": f"{col}:{last}"}, timeout=120)
    caught = time.perf_counter() - t0
    assert status == 200 and r["results"], (status, r)
    return backlog / added, backlog / caught, caught


def account(base, email):
    status, j = call(base, "POST", "/v1/signup", body={"email": email})
    assert status == 201, j
    key = j["api_key"]
    status, c = call(base, "POST", "/v1/collections", key, {"name": "lag"})
    assert status == 201, c
    return key, c["id"]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/quarry"))
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--backlog", type=int, default=5000)
    args = ap.parse_args()
    plan = ('[auth]\ndefault_plan = "lab"\n[plans.lab]\nname = "Lab"\nprice = 0\nstored_chars = 100000000\n'
            'search = 10000000\nextract = 100\nresearch = 100\nrate_per_minute = 6000000\nburst = 100000\n')
    work = tempfile.mkdtemp(prefix="quarry-lag-")
    config = os.path.join(work, "quarry.toml")
    with open(config, "w") as f:
        f.write(plan)
    env = dict(os.environ, CLUSTER_BIN=args.bin, NODES="2", CLUSTER_SHARDS="1", QUARRY_EMBEDDER="none",
               QUARRY_ENGLISH_EMBEDDER="", CLUSTER_CONFIG=config)
    cdir = os.path.join(work, "cluster")
    subprocess.run(["bash", os.path.join(ROOT, "ops/cluster"), "start", cdir], env=env, check=True)
    standalone = None
    try:
        urls = {}
        for line in open(os.path.join(cdir, "cluster.env")):
            k, _, v = line.strip().removeprefix("export ").partition("=")
            urls[k] = v
        n1, n2 = urls["NODE_1_URL"], urls["NODE_2_URL"]
        port = free_port()
        senv = {k: v for k, v in os.environ.items() if not k.startswith("QUARRY_")}
        senv.update(QUARRY_EMBEDDER="none", QUARRY_ENGLISH_EMBEDDER="")
        standalone = subprocess.Popen([args.bin, "serve", "--listen", f"127.0.0.1:{port}", "--shards", "1",
                                       "--data", os.path.join(work, "alone"), "--config", config],
                                      env=senv, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "alone.log"), "w"))
        alone = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if call(alone, "GET", "/v1/health")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        key, col = account(n1, "lag@example.com")
        akey, acol = account(alone, "lag@example.com")

        lags, add_cluster, add_alone = [], [], []
        for i in range(args.samples):
            word = f"lagword{i}x{os.getpid()}"
            t0 = time.perf_counter()
            status, _ = call(n1, "POST", f"/v1/collections/{col}/documents", key, {"title": word, "text": f"{word} in the quarry"})
            acked = time.perf_counter()
            assert status == 201
            add_cluster.append(acked - t0)
            while True:
                status, r = call(n2, "POST", f"/v1/collections/{col}/search", key, {"query": word, "mode": "keyword"})
                if status == 200 and r["results"]:
                    lags.append(time.perf_counter() - acked)
                    break
                assert time.perf_counter() - acked < 10, f"{word} not on node 2 in 10 s"
                time.sleep(0.002)
            t0 = time.perf_counter()
            status, _ = call(alone, "POST", f"/v1/collections/{acol}/documents", akey, {"title": word, "text": f"{word} in the quarry"})
            assert status == 201
            add_alone.append(time.perf_counter() - t0)
            time.sleep(0.05)

        if standalone:
            standalone.terminate()
            standalone.wait(timeout=20)
            standalone = None
        subprocess.run(["bash", os.path.join(ROOT, "ops/cluster"), "stop", cdir], env=env)
        # The catch-up, on a cluster that does not flush meanwhile.
        with open(config, "a") as f:
            f.write('[index]\nflush_interval = "1h"\nflush_batches = 100000000\nflush_chunks = 100000000\n')
        cdir = os.path.join(work, "cluster-catch-up")
        subprocess.run(["bash", os.path.join(ROOT, "ops/cluster"), "start", cdir], env=env, check=True)
        urls = {}
        for line in open(os.path.join(cdir, "cluster.env")):
            k, _, v = line.strip().removeprefix("export ").partition("=")
            urls[k] = v
        n1, n2 = urls["NODE_1_URL"], urls["NODE_2_URL"]
        key, col = account(n1, "catch-up@example.com")
        pid2 = int(open(os.path.join(cdir, "node2.pid")).read())
        write_rate, apply_rate, caught = catch_up(n1, n2, pid2, key, col, args.backlog)

        ms = lambda x: f"{x * 1000:.1f}"
        stamp = time.strftime("%Y-%m-%d-%H%M%S")
        out = os.path.join(ROOT, "bench/results", f"cluster-lag-{stamp}.md")
        lines = [
            f"# Cluster lag and add latency ({stamp})",
            "",
            f"`bench/cluster/lag.py --samples {args.samples} --backlog {args.backlog}`: `ops/cluster` with 2 nodes (1 shard each, no embedder), "
            "PostgreSQL 15 and SeaweedFS on loopback, `[cluster] follow = \"100ms\"`; a standalone node of the same binary beside it.",
            "",
            "| figure | p50 ms | p99 ms | mean ms |",
            "|---|---:|---:|---:|",
            f"| WAL-tail lag: node 1's 201 to node 2's search finding it | {ms(pct(lags, 50))} | {ms(pct(lags, 99))} | {ms(statistics.mean(lags))} |",
            f"| add, one at a time, cluster node (shared journal) | {ms(pct(add_cluster, 50))} | {ms(pct(add_cluster, 99))} | {ms(statistics.mean(add_cluster))} |",
            f"| add, one at a time, standalone node (local WAL) | {ms(pct(add_alone, 50))} | {ms(pct(add_alone, 99))} | {ms(statistics.mean(add_alone))} |",
            "",
            f"Add latency ratio (cluster / standalone), p50: {pct(add_cluster, 50) / pct(add_alone, 50):.2f}x.",
            "",
            f"A follower's catch-up (`--backlog {args.backlog}`, a second cluster with flushes off): node 2 stopped while node 1 acknowledged "
            f"{args.backlog} adds from 8 clients at {write_rate:.0f} adds/s; let go, it answered a search with the last "
            f"add's Quarry-After in {caught:.2f} s: {apply_rate:.0f} records/s, "
            f"{apply_rate / write_rate:.1f}x the rate node 1 took them.",
        ]
        with open(out, "w") as f:
            f.write("\n".join(lines) + "\n")
        print("\n".join(lines))
        print(f"written to {out}", file=sys.stderr)
    finally:
        if standalone:
            standalone.terminate()
            standalone.wait(timeout=20)
        subprocess.run(["bash", os.path.join(ROOT, "ops/cluster"), "stop", cdir], env=env)


if __name__ == "__main__":
    main()
