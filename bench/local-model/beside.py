#!/usr/bin/env python3
"""Hybrid search latency on one keep-alive connection, idle and while the local model
generates without pause (a thread streaming from the model's own server, so the figure
is the model's CPU use beside the shards, not the gateway's). Alternates idle and busy
windows `--rounds` times and prints p50/p99 of each and the ratio of the busy p99 to
the idle p99 (the issue's aim: at most 2x).

  beside.py --quarry HOST:PORT --key KEY --index corpus.jsonl        # prints a collection id
  beside.py --quarry HOST:PORT --key KEY --collection ID --queries queries.jsonl \\
            --upstream HOST:PORT [--seconds 20] [--rounds 3]

Standard library only."""
import argparse
import http.client
import json
import statistics
import threading
import time


def conn(addr):
    h, p = addr.split(":")
    return http.client.HTTPConnection(h, int(p), timeout=120)


def call(c, method, path, key, body):
    c.request(method, path, json.dumps(body), {"authorization": f"Bearer {key}", "content-type": "application/json"})
    r = c.getresponse()
    data = r.read()
    assert r.status in (200, 201), (r.status, data[:300])
    return json.loads(data)


def index(o):
    c = conn(o.quarry)
    col = call(c, "POST", "/v1/collections", o.key, {"name": "beside-the-model"})["id"]
    for line in open(o.index):
        d = json.loads(line)
        call(c, "POST", f"/v1/collections/{col}/documents", o.key, {"title": d.get("title") or None, "text": d["text"]})
    print(col)


def window(c, o, queries, seconds):
    lat, i, end = [], 0, time.monotonic() + seconds
    while time.monotonic() < end:
        q = queries[i % len(queries)]
        i += 1
        t = time.perf_counter()
        call(c, "POST", f"/v1/collections/{o.collection}/search", o.key, {"query": q, "mode": "hybrid", "expand": False})
        lat.append((time.perf_counter() - t) * 1000)
    lat.sort()
    return lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))], len(lat)


def generate(o, stop, tokens):
    body = json.dumps({"model": "m", "stream": True, "max_tokens": 256, "temperature": 0.7,
                       "messages": [{"role": "user", "content": "Tell a long story about a lighthouse keeper."}]})
    while not stop.is_set():
        c = conn(o.upstream)
        c.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
        r = c.getresponse()
        while not stop.is_set():
            piece = r.read1(65536)
            if not piece:
                break
            tokens[0] += piece.count(b"\n\ndata: ") + piece.startswith(b"data: ")
        c.close()


def measure(o):
    queries = [json.loads(l)["text"] for l in open(o.queries)]
    c = conn(o.quarry)
    window(c, o, queries, 3)  # warm-up: the query embedder, the page cache
    idle, busy = [], []
    for r in range(o.rounds):
        idle.append(window(c, o, queries, o.seconds))
        stop, tokens = threading.Event(), [0]
        t = threading.Thread(target=generate, args=(o, stop, tokens), daemon=True)
        t.start()
        time.sleep(2)  # the model is past its prompt and generating
        busy.append(window(c, o, queries, o.seconds))
        stop.set()
        t.join()
        print(f"round {r + 1}: idle p50 {idle[-1][0]:.2f} ms p99 {idle[-1][1]:.2f} ms ({idle[-1][2]} searches); "
              f"generating p50 {busy[-1][0]:.2f} ms p99 {busy[-1][1]:.2f} ms ({busy[-1][2]} searches, ~{tokens[0]} chunks streamed)", flush=True)
    ip99, bp99 = statistics.median(x[1] for x in idle), statistics.median(x[1] for x in busy)
    print(f"median p99: idle {ip99:.2f} ms, while generating {bp99:.2f} ms, ratio {bp99 / ip99:.2f}x")


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--quarry", required=True)
    a.add_argument("--key", required=True)
    a.add_argument("--index")
    a.add_argument("--collection")
    a.add_argument("--queries")
    a.add_argument("--upstream")
    a.add_argument("--seconds", type=float, default=20)
    a.add_argument("--rounds", type=int, default=3)
    o = a.parse_args()
    if o.index:
        index(o)
    else:
        measure(o)


if __name__ == "__main__":
    main()
