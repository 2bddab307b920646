"""Drives Quarry's gateway with the official openai SDK. Reads cases from stdin:
{"base_url", "api_key", "cases": [{"model", "stream", "text", "calls": [[name, args]], "finish"}]}
and checks each: non-streamed with chat.completions.create, streamed with the
.stream() helper (and its final completion). Also checks that an error answer is
raised as the SDK's typed error. With "errors": {"burst"} instead of cases (a server
whose plan allows `burst` calls), checks the typed error of each gateway failure: a bad
key, an unknown model, a wrong method, an oversized body, the rate limit.
Prints "N passed, M failed"; exits 1 on a failure."""
import json
import sys

import openai

spec = json.load(sys.stdin)
client = openai.OpenAI(base_url=spec["base_url"], api_key=spec["api_key"], max_retries=0, timeout=30)
passed, failed = 0, []


def calls_of(message):
    return [[c.function.name, json.loads(c.function.arguments) if c.function.arguments.strip() else {}]
            for c in (message.tool_calls or [])]


for case in spec.get("cases", []):
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

HI = [{"role": "user", "content": "hi"}]


def expect(name, error, call, status, kind, code):
    """`call` raises exactly `error` with this status, OpenAI `type` and our code."""
    global passed
    try:
        call()
        failed.append(f"{name}: did not raise")
    except openai.APIStatusError as e:
        got = (type(e).__name__, e.status_code, e.type, e.code)
        want = (error.__name__, status, kind, code)
        if got == want and e.message:
            passed += 1
        else:
            failed.append(f"{name}: got {got}, want {want}: {e.body!r}")
        return e


def typed_errors(burst):
    bad = openai.OpenAI(base_url=spec["base_url"], api_key="qk_not_a_key", max_retries=0, timeout=30)
    expect("bad key, models", openai.AuthenticationError, lambda: bad.models.list(), 401, "authentication_error", "invalid_key")
    expect("bad key, chat", openai.AuthenticationError, lambda: bad.chat.completions.create(model="fast", messages=HI),
           401, "authentication_error", "invalid_key")
    expect("unknown model", openai.NotFoundError, lambda: client.chat.completions.create(model="nope/x", messages=HI),
           404, "not_found_error", "model_not_found")
    # The SDK has no class of its own for 405 and 413: a plain APIStatusError.
    expect("wrong method", openai.APIStatusError, lambda: client.put("/chat/completions", cast_to=object, body={}),
           405, "invalid_request_error", "method_not_allowed")
    big = [{"role": "user", "content": "x" * 8192}]
    expect("oversized body", openai.APIStatusError, lambda: client.chat.completions.create(model="fast", messages=big),
           413, "invalid_request_error", "body_too_large")
    # The two calls above spent two of the key's `burst` tokens; the rest go on listing.
    for _ in range(burst):
        try:
            client.models.list()
        except openai.RateLimitError:
            break
    e = expect("rate limit", openai.RateLimitError, lambda: client.models.list(), 429, "rate_limit_error", "rate_limited")
    if e is not None and not e.response.headers.get("retry-after"):
        failed.append("rate limit: no retry-after")


if "errors" in spec:
    typed_errors(spec["errors"]["burst"])
else:
    expect("unknown model", openai.NotFoundError, lambda: client.chat.completions.create(model="nope/x", messages=HI),
           404, "not_found_error", "model_not_found")

for f in failed:
    print(f, file=sys.stderr)
print(f"{passed} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
