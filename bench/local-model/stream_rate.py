#!/usr/bin/env python3
"""Streamed generation rate through Quarry's gateway vs straight to the local model's
server, in one run: the same requests, alternating A/B, each `--rounds` times.

  bench/local-model/stream_rate.py --quarry 127.0.0.1:4400 --key al_... --upstream 127.0.0.1:PORT

PORT is the local model's (Quarry logs it: "local model starting ... port=PORT").
Rate = content chunks after the first / (last chunk - first chunk) seconds: llama.cpp
streams one token per chunk, and the first token's wait (prompt processing) is left out.
Prints each round and the medians; standard library only."""
import argparse
import http.client
import json
import statistics
import time

PROMPT = "Write a short paragraph about rivers, in plain prose."


def stream(host, path, headers, body):
    h, p = host.split(":")
    c = http.client.HTTPConnection(h, int(p), timeout=600)
    c.request("POST", path, json.dumps(body), {"content-type": "application/json", **headers})
    r = c.getresponse()
    assert r.status == 200, (r.status, r.read()[:300])
    times, buf = [], b""
    while True:
        piece = r.read1(65536)
        if not piece:
            break
        buf += piece
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            data = event.removeprefix(b"data: ")
            if data == b"[DONE]" or not data.startswith(b"{"):
                continue
            ch = json.loads(data).get("choices") or [{}]
            if ch[0].get("delta", {}).get("content"):
                times.append(time.monotonic())
    c.close()
    return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 2 else 0.0, len(times)


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--quarry", required=True)
    a.add_argument("--key", required=True)
    a.add_argument("--upstream", required=True)
    a.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    a.add_argument("--rounds", type=int, default=5)
    a.add_argument("--max-tokens", type=int, default=128)
    o = a.parse_args()
    msgs = [{"role": "user", "content": PROMPT}]
    common = {"messages": msgs, "stream": True, "max_tokens": o.max_tokens, "temperature": 0}
    via, direct = [], []
    for i in range(o.rounds):
        g, n1 = stream(o.quarry, "/v1/chat/completions", {"authorization": f"Bearer {o.key}"}, {"model": f"local/{o.model}", **common})
        d, n2 = stream(o.upstream, "/v1/chat/completions", {}, {"model": o.model, **common})
        via.append(g)
        direct.append(d)
        print(f"round {i + 1}: gateway {g:.2f} tok/s ({n1} tokens), direct {d:.2f} tok/s ({n2} tokens)", flush=True)
    mg, md = statistics.median(via), statistics.median(direct)
    print(f"median: gateway {mg:.2f} tok/s, direct {md:.2f} tok/s, ratio {mg / md:.3f}")


if __name__ == "__main__":
    main()
