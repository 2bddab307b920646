#!/usr/bin/env python3
"""What a fast research costs the server outside the model.

Starts the release `quarry` on a temporary data directory with an instant scripted
OpenAI-compatible model on loopback (this script's own HTTP server: a search tool call,
then a stop, an answer with [n] citations and a quotation, a judge's JSON), indexes the
bundled legal sample, runs N fast researches and reads each result's timings: the aim
(issue 23) is that the time outside the model is at most the searches' time plus 5 ms,
i.e. `serverMs` = totalMs - modelMs - searchMs <= 5. Writes
bench/results/research-overhead-<date>.md.

    python3 bench/research/overhead.py [--runs 50] [--binary target/release/quarry]
"""

import argparse
import datetime
import http.server
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[2]


class Fake(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        text = json.dumps(body["messages"])
        message = {"role": "assistant", "content": ""}
        finish = "stop"
        if "You are a research assistant" in text:
            if any(m.get("role") == "tool" for m in body["messages"]):
                message["content"] = "Found the fee terms."
            else:
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": "search", "arguments": json.dumps({"query": "fees invoice due"})}}]}
                finish = "tool_calls"
        elif "You answer a question" in text:
            message["content"] = ("Fees are due \u201cthirty days after the date of each invoice\u201d [1]. "
                                  "Late amounts bear interest [1]. The agreement renews yearly [2].")
        else:
            message["content"] = json.dumps({"claims": [
                {"claim": 1, "verdict": "supported", "evidence": "Fees are due thirty days after the date of each invoice."},
                {"claim": 2, "verdict": "partial", "evidence": ""},
                {"claim": 3, "verdict": "unsupported", "evidence": ""}]})
        out = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                          "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def call(addr, method, path, key=None, body=None):
    req = urllib.request.Request(f"http://{addr}{path}", method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("content-type", "application/json")
    if key:
        req.add_header("authorization", f"Bearer {key}")
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--binary", default=str(REPO / "target/release/quarry"))
    a = ap.parse_args()
    fake = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    data = tempfile.TemporaryDirectory()
    config = pathlib.Path(data.name) / "quarry.toml"
    config.write_text(f"""[llm]
max_retries = 0
[llm.local]
enabled = false
[llm.providers.fake]
manifest = "openai-compatible"
base_url = "http://127.0.0.1:{fake.server_port}/v1"
token = "sk-fake"
models = ["reader"]
[research]
fast = "fake/reader"
[auth]
default_plan = "lab"
[plans.lab]
name = "Lab"
price = 0
stored_chars = 100000000
search = 100000
extract = 100000
research = 100000
rate_per_minute = 100000
burst = 100000
""")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUARRY_")}
    proc = subprocess.Popen([a.binary, "serve", "--listen", "127.0.0.1:0", "--data", str(pathlib.Path(data.name) / "d"), "--config", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        line = proc.stdout.readline()
        addr = line.split("http://")[1].split()[0]
        key = call(addr, "POST", "/v1/signup", body={"email": "bench@example.com"})["api_key"]
        col = call(addr, "POST", "/v1/collections", key, {"name": "legal"})["id"]
        call(addr, "POST", f"/v1/collections/{col}/sample", key, {"domain": "legal"})
        q = {"question": "When are fees due after an invoice?"}
        for _ in range(5):
            call(addr, "POST", f"/v1/collections/{col}/research", key, q)
        rows = []
        for _ in range(a.runs):
            t = call(addr, "POST", f"/v1/collections/{col}/research", key, q)["timings"]
            rows.append(t)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    server = [r["serverMs"] for r in rows]
    search = [r["searchMs"] for r in rows]
    model = [r["modelMs"] for r in rows]
    total = [r["totalMs"] for r in rows]
    within = sum(1 for s in server if s <= 5.0)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d-%H%M%S")
    report = f"""# Research overhead: the server's own time in a fast research, {date}

`python3 bench/research/overhead.py --runs {a.runs}` (release binary, the legal sample,
MiniLM hybrid search unless QUARRY_EMBEDDER says otherwise, an instant scripted
OpenAI-compatible model on loopback: 2 loop steps, the answer, the judge; 2 searches).

The aim: time outside the model <= the searches + 5 ms, i.e. serverMs <= 5.

| ms | p50 | p99 | max |
|---|---|---|---|
| serverMs (total - model - searches) | {pct(server, 50):.3f} | {pct(server, 99):.3f} | {max(server):.3f} |
| searchMs (2 searches) | {pct(search, 50):.3f} | {pct(search, 99):.3f} | {max(search):.3f} |
| modelMs (4 calls, loopback) | {pct(model, 50):.3f} | {pct(model, 99):.3f} | {max(model):.3f} |
| totalMs (rounded) | {pct(total, 50)} | {pct(total, 99)} | {max(total)} |

Runs within the aim: {within} of {len(rows)}. serverMs p50 is {pct(server, 50) / max(pct(search, 50), 1e-9):.2f}x the searches' p50.
"""
    out = REPO / "bench/results" / f"research-overhead-{date}.md"
    out.write_text(report)
    print(report)
    print(f"written to {out}")
    return 0 if within * 100 >= len(rows) * 99 else 1


if __name__ == "__main__":
    sys.exit(main())
