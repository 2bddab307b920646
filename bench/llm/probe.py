#!/usr/bin/env python3
"""A candidate local model, probed on this machine through the bundled llama.cpp runtime
(models/llm.py serve): prompt reading and generation speed from llama.cpp's own timings,
whether it answers from numbered sources with a [n], and whether it calls a bound tool,
counted as Quarry counts one: the protocol's tool_calls field, or the text forms the
openai-compatible manifest reads (a bare or fenced JSON object {"name", "arguments"}, or
Qwen's <tool_call> tags).

    python3 bench/llm/probe.py MODEL.gguf [--port 18790]

Bounded (each call at most 600 s); loopback only; the server it starts is stopped.
"""
import argparse
import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def text_call(content):
    """A tool call written as text, as core/src/llm/text_tools.rs reads one."""
    s = (content or "").strip()
    m = re.fullmatch(r"<tool_call>\s*(.*?)\s*</tool_call>", s, re.S) or re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", s, re.S)
    body = m.group(1) if m else s
    try:
        v = json.loads(body)
    except ValueError:
        return None
    return v if isinstance(v, dict) and "name" in v else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--port", type=int, default=18790)
    o = ap.parse_args()
    log = Path("/tmp") / f"probe-{o.port}.log"
    srv = subprocess.Popen([str(ROOT / "models/llm/runtime/bin/python"), str(ROOT / "models/llm.py"), "serve", "--model", o.model,
                            "--port", str(o.port), "--threads", "2", "--ctx", "4096", "--alias", "probe"],
                           stdout=open(log, "w"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{o.port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(base + "/health", timeout=2)
                break
            except OSError:
                time.sleep(1)

        def call(body):
            req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"})
            return json.load(urllib.request.urlopen(req, timeout=600))

        src = "\n".join(f"[{i}] Clause {i}: The provider shall keep records of audit {i} for {i} years and permit inspection on notice."
                        for i in range(1, 30))
        r = call({"model": "probe", "messages": [{"role": "user", "content": src + "\n\nHow long are records of audit 7 kept? Answer in one sentence ending with its [n]."}],
                  "max_tokens": 64, "temperature": 0})
        t = r["timings"]
        answer = r["choices"][0]["message"]["content"] or ""
        print(f"prompt: {t['prompt_n']} tokens at {t['prompt_per_second']:.1f} tok/s; generation: {t['predicted_n']} tokens at {t['predicted_per_second']:.1f} tok/s")
        print(f"answer from sources: {answer[:160]!r} (cites [7] with '7 years': {'[7]' in answer and '7 year' in answer})")
        tools = [{"type": "function", "function": {"name": "search", "description": "Search the collection for pages.",
                                                   "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
        asks = ["Find the audit clause.", "What does the contract say about termination?", "Search for the governing law.",
                "Look up late payment interest.", "Which clause covers confidentiality?"]
        ok = 0
        for q in asks:
            r = call({"model": "probe", "messages": [{"role": "system", "content": "Answer by calling the search tool first."}, {"role": "user", "content": q}],
                      "tools": tools, "max_tokens": 96, "temperature": 0})
            msg = r["choices"][0]["message"]
            calls = [(c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or []]
            t_call = text_call(msg.get("content"))
            if t_call:
                calls.append((t_call.get("name"), json.dumps(t_call.get("arguments", {}))))
            good = False
            for name, args in calls:
                try:
                    good |= name == "search" and bool(json.loads(args).get("query"))
                except (ValueError, AttributeError):
                    pass
            ok += good
        print(f"valid search calls: {ok}/{len(asks)}")
    finally:
        srv.terminate()
        srv.wait(30)


if __name__ == "__main__":
    sys.exit(main())
