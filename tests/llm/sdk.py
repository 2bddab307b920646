"""Drives Quarry's gateway with the official openai SDK. Reads cases from stdin:
{"base_url", "api_key", "cases": [{"model", "stream", "text", "calls": [[name, args]], "finish"}]}
and checks each: non-streamed with chat.completions.create, streamed with the
.stream() helper (and its final completion). Also checks that an error answer is
raised as the SDK's typed error. Prints "N passed, M failed"; exits 1 on a failure."""
import json
import sys

import openai

spec = json.load(sys.stdin)
client = openai.OpenAI(base_url=spec["base_url"], api_key=spec["api_key"], max_retries=0, timeout=30)
passed, failed = 0, []


def calls_of(message):
    return [[c.function.name, json.loads(c.function.arguments) if c.function.arguments.strip() else {}]
            for c in (message.tool_calls or [])]


for case in spec["cases"]:
    messages = [{"role": "user", "content": "hi"}]
    try:
        if case["stream"] and case["finish"] == "content_filter":
            # The helper raises its typed error for a refusal, by design.
            try:
                with client.chat.completions.stream(model=case["model"], messages=messages) as stream:
                    for _ in stream:
                        pass
                    stream.get_final_completion()
                raise AssertionError("a refusal did not raise ContentFilterFinishReasonError")
            except openai.ContentFilterFinishReasonError:
                passed += 1
                continue
        if case["stream"]:
            with client.chat.completions.stream(model=case["model"], messages=messages) as stream:
                deltas = "".join(e.delta for e in stream if e.type == "content.delta")
                final = stream.get_final_completion()
            text = final.choices[0].message.content or ""
            assert deltas == text, f"content.delta events {deltas!r} != final {text!r}"
        else:
            final = client.chat.completions.create(model=case["model"], messages=messages)
            text = final.choices[0].message.content or ""
        got = {"text": text, "calls": calls_of(final.choices[0].message), "finish": final.choices[0].finish_reason}
        want = {"text": case["text"], "calls": case["calls"], "finish": case["finish"]}
        assert got == want, f"got {got!r}\nwant {want!r}"
        passed += 1
    except Exception as e:  # noqa: BLE001 - report every case
        failed.append(f"{case['model']} stream={case['stream']}: {type(e).__name__}: {e}")

try:
    client.chat.completions.create(model="nope/x", messages=[{"role": "user", "content": "hi"}])
    failed.append("an unknown model did not raise")
except openai.NotFoundError as e:
    assert e.code == "model_not_found", e.code
    passed += 1

for f in failed:
    print(f, file=sys.stderr)
print(f"{passed} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
