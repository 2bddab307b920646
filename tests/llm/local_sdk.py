"""The official openai SDK against Quarry's gateway and the real local model. Reads
{"base_url", "api_key", "model", "deadline_s", "tools", "prompts": [{"prompt", "tool"}],
"plain": [prompt]} on stdin. Each prompt is asked once, whole (chat.completions.create)
and streamed (stream=True, tool-call deltas joined by index) in turn, so both paths are
driven by half the set each: a valid call names the
prompt's tool and its arguments validate against that tool's JSON schema (jsonschema).
Every plain prompt must be answered with text and no call. Prints one line per answer,
then a JSON summary line; stops early (counting the rest as failures) past deadline_s."""
import json
import sys
import time

import jsonschema
import openai

spec = json.load(sys.stdin)
client = openai.OpenAI(base_url=spec["base_url"], api_key=spec["api_key"], max_retries=0, timeout=600)
schemas = {t["function"]["name"]: t["function"]["parameters"] for t in spec["tools"]}
start = time.monotonic()
late = lambda: time.monotonic() - start > spec["deadline_s"]


def ask(prompt, stream):
    kw = dict(model=spec["model"], messages=[{"role": "user", "content": prompt}], tools=spec["tools"],
              max_tokens=160, temperature=0)
    if not stream:
        m = client.chat.completions.create(**kw).choices[0].message
        return m.content or "", [(c.function.name, c.function.arguments) for c in (m.tool_calls or [])]
    text, calls = "", {}
    for chunk in client.chat.completions.create(stream=True, **kw):
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        text += d.content or ""
        for c in d.tool_calls or []:
            name, args = calls.get(c.index, ("", ""))
            calls[c.index] = (name + (c.function.name or ""), args + (c.function.arguments or ""))
    return text, [calls[i] for i in sorted(calls)]


def valid(calls, tool):
    if len(calls) != 1 or calls[0][0] != tool:
        return False
    try:
        jsonschema.validate(json.loads(calls[0][1]), schemas[tool])
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


summary = {"tool_ok": 0, "tool_total": 0, "plain_ok": 0, "plain_total": 0}


def answer(prompt, stream):
    try:
        return ask(prompt, stream)
    except openai.APIError as e:
        return f"(error: {e})", []


for i, prompt in enumerate(spec["plain"]):
    for stream in (i % 2 == 1,):
        summary["plain_total"] += 1
        if late():
            print(f"LATE  stream={stream} {prompt!r}")
            continue
        t0 = time.monotonic()
        text, calls = answer(prompt, stream)
        took = time.monotonic() - t0
        ok = not calls and text.strip() != "" and not text.startswith("(error")
        summary["plain_ok"] += ok
        print(f"{'ok   ' if ok else 'MISS '} {took:5.1f}s stream={stream} plain {prompt!r} -> calls={calls} text={text[:80]!r}", flush=True)
for i, p in enumerate(spec["prompts"]):
    for stream in (i % 2 == 1,):
        summary["tool_total"] += 1
        if late():
            print(f"LATE  stream={stream} {p['prompt']!r}")
            continue
        t0 = time.monotonic()
        text, calls = answer(p["prompt"], stream)
        took = time.monotonic() - t0
        ok = valid(calls, p["tool"])
        summary["tool_ok"] += ok
        print(f"{'ok   ' if ok else 'MISS '} {took:5.1f}s stream={stream} {p['prompt']!r} -> calls={calls} text={text[:80]!r}", flush=True)
summary["seconds"] = round(time.monotonic() - start, 1)
print(json.dumps(summary))
