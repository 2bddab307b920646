#!/usr/bin/env python3
"""Quarry's research benchmark: every question of questions.json through
`POST /v1/collections/{id}/research` of a real quarry server with the local model, scored by
score.py, written to bench/results/research-<time>.md and .json.

  run.py [--binary target/debug/quarry] [--limit N] [--timeout 600] [--deep N] [--plain]
         [--corpora legal,medical,archive,scifact] [--embedder multilingual-e5-small]
         [--nice N] [--k 8] [--port 4475] [--out bench/results] [--keep] [--model GGUF]
  run.py --server http://127.0.0.1:4400 [--key al_...]   (a server already running, the
                                           account's or a new signup's; collections afresh)

Starts the binary on a temporary data directory with `[llm.local] enabled = true` (and
QUARRY_LLM__LOCAL__ENABLED=true, since .cargo/config.toml turns it off for cargo-run
processes), the account on the operator plan `evaluation` (bench/evaluation-plan.toml: no
allowance or rate limit cuts a run short), one collection per corpus (the samples through
`POST /v1/collections/{id}/sample`, SciFact's 500-document subset from tests/data through
`POST .../documents`), then runs the questions one at a time: tier fast on all, tier deep on
the first `--deep N`, each streamed (`stream: true`, the result from the `done` event; the
events are checked too) unless `--plain`. `--limit N` takes the first N questions after interleaving the corpora
(legal, medical, archive, scifact, legal, …), so a short run covers each. A question that
takes longer than `--timeout` seconds is recorded as a timeout and the next one starts.
Standard library only (Python 3.11).
"""
import argparse
import re
import http.client
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import score as scoring  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


class Api:
    def __init__(self, base, key=None, timeout=120):
        u = urllib.parse.urlsplit(base)
        self.host, self.port, self.key, self.timeout = u.hostname, u.port, key, timeout
        self.waited_429 = 0

    def call(self, method, path, body=None, timeout=None):
        """One request; a 429 is waited out (retry-after) and sent again, up to 20 times."""
        for _ in range(20):
            c = http.client.HTTPConnection(self.host, self.port, timeout=timeout or self.timeout)
            try:
                headers = {"content-type": "application/json"}
                if self.key:
                    headers["authorization"] = f"Bearer {self.key}"
                c.request(method, path, json.dumps(body) if body is not None else None, headers)
                r = c.getresponse()
                data = r.read()
            finally:
                c.close()
            if r.status != 429:
                break
            self.waited_429 += 1
            time.sleep(float(r.getheader("retry-after") or 1))
        return r.status, data

    def json(self, method, path, body=None, ok=(200, 201), timeout=None):
        status, data = self.call(method, path, body, timeout)
        if status not in ok:
            raise RuntimeError(f"{method} {path}: {status} {data[:400]!r}")
        return json.loads(data)


def interleave(questions, corpora):
    lanes = [[q for q in questions if q["corpus"] == c] for c in corpora]
    out = []
    for i in range(max((len(lane) for lane in lanes), default=0)):
        out += [lane[i] for lane in lanes if i < len(lane)]
    return out


class Server:
    """The real binary on a temporary data directory, the local model on."""

    def __init__(self, binary, port, embedder, keep, nice, model=None):
        self.work = Path(tempfile.mkdtemp(prefix="quarry-research-"))
        self.keep, self.port = keep, port
        cfg = self.work / "quarry.toml"
        cfg.write_text(f'embedder = "{embedder}"\n' + (ROOT / "bench/evaluation-plan.toml").read_text()
                       + "\n[llm.local]\nenabled = true\n" + (f"nice = {nice}\n" if nice is not None else "")
                       # Another GGUF than the installed default, under its own name (the model id says which).
                       + (f'model = "{Path(model).resolve()}"\nname = "{Path(model).stem.lower()}"\n' if model else ""))
        env = dict(os.environ, QUARRY_LLM__LOCAL__ENABLED="true")
        out = subprocess.run([binary, "accounts", "create", "--config", cfg, "--data", self.work / "data",
                              "--email", "research@quarry.invalid", "--plan", "evaluation"],
                             env=env, capture_output=True, text=True, check=True).stdout
        self.key = next(line.split(": ", 1)[1].strip() for line in out.splitlines() if line.startswith("api key"))
        self.log = open(self.work / "server.log", "w")
        self.proc = subprocess.Popen([binary, "serve", "--config", cfg, "--data", self.work / "data",
                                      "--listen", f"127.0.0.1:{port}"], env=env, stdout=self.log, stderr=self.log)
        self.base = f"http://127.0.0.1:{port}"
        # llama.cpp's own log: its `print_timing` lines time each call's prompt reading.
        self.model_log = self.work / "data" / "local-model.log"

    def wait_ready(self, seconds):
        api, end = Api(self.base, timeout=5), time.monotonic() + seconds
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"quarry exited ({self.proc.returncode}); see {self.work / 'server.log'}")
            try:
                status, data = api.call("GET", "/v1/health")
                if status == 200 and json.loads(data).get("llm"):
                    return json.loads(data)
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError(f"the local model did not become ready in {seconds} s; see {self.work / 'server.log'}")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        if self.keep:
            print(f"data kept in {self.work}", file=sys.stderr)
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def index_corpus(api, name, spec, embedder):
    settings = {"domain": spec["domain"]}
    if embedder:
        settings["embedder"] = embedder
    col = api.json("POST", "/v1/collections", {"name": f"research-{name}", "settings": settings})["id"]
    t = time.monotonic()
    if "sample" in spec:
        api.json("POST", f"/v1/collections/{col}/sample", {"domain": spec["sample"]}, timeout=1800)
    else:
        docs = [json.loads(line) for line in open(ROOT / spec["dataset"] / "corpus.jsonl")]

        def add(d):
            api.json("POST", f"/v1/collections/{col}/documents",
                     {"title": d.get("title") or None, "text": d["text"], "metadata": {"source_id": d["_id"]}}, timeout=600)

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(add, docs))
    listed = api.json("GET", f"/v1/collections/{col}/documents")["documents"]
    titles = {d["title"]: d["id"] for d in listed}
    return {"id": col, "titles": titles, "documents": len(listed), "seconds": round(time.monotonic() - t, 1)}


def expected_pages(q, col):
    keys, missing = [], []
    for p in q["pages"]:
        doc = col["titles"].get(p["document"])
        (keys.append(scoring.page_key(doc, p["page"])) if doc else missing.append(p["document"]))
    return keys, missing


class Pages:
    """Page texts by (document id, n), fetched once each."""

    def __init__(self, api):
        self.api, self.col, self.cache = api, None, {}

    def __call__(self, doc, n):
        key = (self.col, doc, n)
        if key not in self.cache:
            status, data = self.api.call("GET", f"/v1/collections/{self.col}/documents/{doc}/pages/{n}")
            self.cache[key] = json.loads(data)["page"]["text"] if status == 200 else ""
        return self.cache[key]


def research(api, col, q, tier, timeout):
    body = {"question": q["question"], "tier": tier}
    t = time.monotonic()
    try:
        status, data = api.call("POST", f"/v1/collections/{col}/research", body, timeout=timeout)
    except TimeoutError:
        return {"outcome": "timeout", "seconds": round(time.monotonic() - t, 2), "request": body}
    except OSError as e:
        return {"outcome": "error", "error": f"{type(e).__name__}: {e}", "seconds": round(time.monotonic() - t, 2), "request": body}
    seconds = round(time.monotonic() - t, 2)
    if status != 200:
        return {"outcome": "error", "status": status, "error": data[:2000].decode("utf-8", "replace"), "seconds": seconds, "request": body}
    try:
        return {"outcome": "ok", "seconds": seconds, "result": json.loads(data), "request": body}
    except ValueError:
        return {"outcome": "error", "status": status, "error": "not JSON: " + data[:500].decode("utf-8", "replace"), "seconds": seconds, "request": body}


def research_stream(api, col, q, tier, timeout):
    """The same question with `stream: true`: every NDJSON line, in order, with the time
    each arrived; the `done` event's result is scored like a plain one."""
    body = {"question": q["question"], "tier": tier, "stream": True}
    t = time.monotonic()
    c = http.client.HTTPConnection(api.host, api.port, timeout=timeout)
    events, at = [], []
    try:
        c.request("POST", f"/v1/collections/{col}/research", json.dumps(body),
                  {"content-type": "application/json", "authorization": f"Bearer {api.key}"})
        r = c.getresponse()
        ctype = r.getheader("content-type")
        if r.status != 200:
            return {"outcome": "error", "status": r.status, "error": r.read()[:2000].decode("utf-8", "replace"),
                    "seconds": round(time.monotonic() - t, 2), "request": body}
        while time.monotonic() - t < timeout:
            line = r.readline()
            if not line:
                break
            if line.strip():
                events.append(json.loads(line))
                at.append(round(time.monotonic() - t, 2))
    except TimeoutError:
        return {"outcome": "timeout", "seconds": round(time.monotonic() - t, 2), "request": body, "events": events}
    except (OSError, ValueError) as e:
        return {"outcome": "error", "error": f"{type(e).__name__}: {e}", "seconds": round(time.monotonic() - t, 2), "request": body, "events": events}
    finally:
        c.close()
    seconds = round(time.monotonic() - t, 2)
    if time.monotonic() - t >= timeout:
        return {"outcome": "timeout", "seconds": seconds, "request": body, "events": events}
    done = [e for e in events if e.get("type") == "done"]
    answer = [e.get("text") for e in events if e.get("type") == "answer"]
    deltas = "".join(e.get("text", "") for e in events if e.get("type") == "delta")
    first_delta = next((a for a, e in zip(at, events) if e.get("type") == "delta"), None)
    stream = {"content_type": ctype, "events": len(events), "kinds": [e.get("type") for e in events],
              "order_problems": scoring.stream_order(events), "first_event_s": at[0] if at else None,
              "first_delta_s": first_delta, "answer_event_matches_result": bool(done and answer and answer[-1] == done[0]["result"].get("answer")),
              "deltas_equal_answer": bool(answer and deltas == answer[-1]),
              "error_event": next((e for e in events if e.get("type") == "error"), None),
              # every event but done's result (the record has it) and the sources lists, with its arrival time
              "log": [[a, {k: v for k, v in e.items() if k not in ("result", "sources")}] for a, e in zip(at, events)]}
    rec = {"outcome": "ok" if done else "error", "seconds": seconds, "request": body, "stream": stream}
    if done:
        rec["result"] = done[0]["result"]
    else:
        rec["error"] = json.dumps(stream["error_event"] or stream["kinds"][-5:], ensure_ascii=False)
    return rec


def search_recall(api, col, q, expected, k):
    """The reference beside the research loop: one hybrid search with the question as the
    query. Returns (how many expected pages are among its top k, None), or (None, the
    failure) for an error status or no answer in time: one failed request goes on the
    record and the run goes on."""
    try:
        status, data = api.call("POST", f"/v1/collections/{col}/search", {"query": q["question"], "k": k})
    except OSError as e:  # TimeoutError included
        return None, f"{type(e).__name__}: {e}"
    if status != 200:
        return None, f"{status}: {data[:500].decode('utf-8', 'replace')}"
    found = {scoring.page_key(r["document"]["id"], r["page"]["n"]) for r in json.loads(data)["results"]}
    return len(set(expected) & found), None


PROMPT_TIMING = re.compile(r"prompt eval time =\s*([0-9.]+) ms /\s*([0-9]+) tokens")


class ModelLog:
    """llama.cpp's timings of the calls one research made: the `prompt eval time` lines
    its log gained meanwhile (prompt reading, the part its prompt cache saves)."""

    def __init__(self, path):
        self.path = path
        self.at = path.stat().st_size if path and path.exists() else 0

    def since(self):
        if not self.path or not self.path.exists():
            return None
        with open(self.path, "rb") as f:
            f.seek(self.at)
            text = f.read().decode("utf-8", "replace")
            self.at = f.tell()
        found = [(float(ms), int(n)) for ms, n in PROMPT_TIMING.findall(text)]
        return {"calls": len(found), "prompt_ms": round(sum(ms for ms, _ in found), 1), "prompt_tokens": sum(n for _, n in found)}


def run_all(api, cols, tiers, timeout, log, k, records, write, plain, model_log=None):
    """Each (question, tier) in turn into `records`; `write` after each, so a run cut short
    still leaves its report. A tier named `fast again` asks a question a second time."""
    pages = Pages(api)
    timings = ModelLog(model_log)
    done = len(records)  # a run taken up again counts on from what it holds
    for i, (q, tier) in enumerate(tiers, start=done):
        again = tier.endswith(" again")
        tier = tier.removesuffix(" again")
        col = cols[q["corpus"]]
        pages.col = col["id"]
        expected, missing = expected_pages(q, col)
        rec = {"id": q["id"], "corpus": q["corpus"], "kind": q["kind"], "tier": tier, "question": q["question"],
               "expected": expected, "unresolved_pages": missing, "again": again,
               "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        rec["search_hits"], failed = search_recall(api, col["id"], q, expected, k)
        if failed:
            rec["search_error"] = failed
            print(f"[{i + 1}] {q['id']}: the reference search failed: {failed}", file=log, flush=True)
        timings.since()
        rec |= research(api, col["id"], q, tier, timeout) if plain else research_stream(api, col["id"], q, tier, timeout)
        rec["llama"] = timings.since()
        if rec["outcome"] == "ok":
            rec["score"] = scoring.score(rec["result"], expected, q.get("facts") or [], pages)
            rec["problems"] = scoring.problems(rec["score"])
            if "stream" in rec:
                st = rec["stream"]
                rec["problems"] += [f"stream order: {p}" for p in st["order_problems"]]
                if not st["answer_event_matches_result"]:
                    rec["problems"].append("the answer event differs from done.result.answer")
                if st["content_type"] != "application/x-ndjson":
                    rec["problems"].append(f"content-type {st['content_type']}")
        if rec.get("result", {}).get("warnings"):
            rec["warnings"] = rec["result"]["warnings"]
        records.append(rec)
        write(records)
        s = rec.get("score")
        line = (f"[{i + 1}/{done + len(tiers)}] {q['id']} {tier}{' again' if again else ''}: {rec['outcome']} {rec['seconds']} s"
                + (f", recall {s['recall']['in_sources']}/{s['recall']['expected']}, citations "
                   f"{'ok' if s['citations']['valid'] else 'BAD'}, quotes {s['quotes']['verified']}/{s['quotes']['total']}, "
                   f"claims {s['claims']['counts']}" if s else f" {rec.get('status', '')} {rec.get('error', '')[:200]}"))
        print(line, file=log, flush=True)


def pct(xs):
    return f"{100 * sum(xs) / len(xs):.0f}%" if xs else "—"


def summarize(records):
    ok = [r for r in records if r["outcome"] == "ok"]
    secs = sorted(r["seconds"] for r in records if r["outcome"] == "ok")
    counts = {s: sum(r["score"]["claims"]["counts"][s] for r in ok) for s in scoring.STATUSES}
    exp = sum(r["score"]["recall"]["expected"] for r in ok)
    return {
        "questions": len(records), "ok": len(ok),
        "errors": sum(r["outcome"] == "error" for r in records),
        "timeouts": sum(r["outcome"] == "timeout" for r in records),
        "search_recall": (sum(r["search_hits"] or 0 for r in ok) / exp) if exp else None,
        "page_recall": sum(r["score"]["recall"]["in_sources"] for r in ok) / exp if exp else None,
        "cited_recall": sum(r["score"]["recall"]["in_cited"] for r in ok) / exp if exp else None,
        "all_pages_found": sum(r["score"]["recall"]["in_sources"] == r["score"]["recall"]["expected"] for r in ok),
        "citations_valid": sum(r["score"]["citations"]["valid"] for r in ok),
        "answers_with_citations": sum(r["score"]["citations"]["markers"] > 0 for r in ok),
        "answers_with_text": sum(r["score"].get("answer_text_chars", 1) > 0 for r in ok),
        "quotes_verified": sum(r["score"]["quotes"]["verified"] for r in ok),
        "quotes_total": sum(r["score"]["quotes"]["total"] for r in ok),
        "quotes_confirmed": sum(r["score"]["quotes"]["confirmed"] for r in ok),
        "claims": counts | {"total": sum(counts.values())},
        "evidence": sum(r["score"]["claims"]["evidence"] for r in ok),
        "facts_found": sum(r["score"]["facts"]["found"] for r in ok),
        "facts_wanted": sum(r["score"]["facts"]["wanted"] for r in ok),
        "with_problems": sum(bool(r["problems"]) for r in ok),
        "seconds_mean": round(statistics.mean(secs), 1) if secs else None,
        "seconds_p50": round(statistics.median(secs), 1) if secs else None,
        "seconds_p95": round(statistics.quantiles(secs, n=20, method="inclusive")[18] if len(secs) > 1 else secs[0], 1) if secs else None,
        "seconds_max": round(max(secs), 1) if secs else None,
        "steps_mean": round(statistics.mean(r["score"]["steps"] or 0 for r in ok), 2) if ok else None,
    }


def fmt_ratio(a, b):
    return f"{a}/{b}" + (f" ({100 * a / b:.0f}%)" if b else "")


def summary_row(label, s):
    c = s["claims"]
    recall = "—" if s["page_recall"] is None else f"{s['page_recall']:.2f}"
    search = "—" if s["search_recall"] is None else f"{s['search_recall']:.2f}"
    cited = "—" if s["cited_recall"] is None else f"{s['cited_recall']:.2f}"
    return (f"| {label} | {s['questions']} | {s['ok']} | {s['answers_with_text']} | {s['errors']} | {s['timeouts']} | {recall} | {cited} | {search} | "
            f"{fmt_ratio(s['citations_valid'], s['ok'])} | {fmt_ratio(s['quotes_verified'], s['quotes_total'])} | "
            f"{c['supported']} / {c['partial']} / {c['unsupported']} / {c['uncited']} / {c['unchecked']} | "
            f"{fmt_ratio(s['facts_found'], s['facts_wanted'])} | {dash(s['seconds_mean'])} | {dash(s['seconds_p50'])} | {dash(s['seconds_p95'])} | {dash(s['seconds_max'])} |")


def dash(x):
    return "—" if x is None else x


HEADER = ("| set | questions | answered | answer has text | errors | timeouts | page recall (sources) | page recall (cited) | reference: one search, top k | "
          "citations valid | quotes verified | claims supported / partial / unsupported / uncited / unchecked | "
          "key facts in answer | s mean | s p50 | s p95 | s max |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")


def report(meta, records):
    lines = [f"# Research benchmark ({meta['date']})", "",
             f"Command: `{meta['command']}`. Commit {meta['commit']}, {meta['cpus']} CPUs, load average before: "
             f"{meta['load_before']}, after: {meta['load_after']}."
             + ("" if meta.get("finished", True) else f" **Partial: {meta['runs_done']} of {meta['runs_planned']} runs done.**"),
             f"Server: {meta['binary']} (local model `{meta['local_model']}`, niceness "
             f"{'10 (the default)' if meta.get('nice') is None else meta['nice']}), collections embedded with "
             f"`{meta['embedder']}`, account on the operator plan `evaluation`. {meta['selected']} of "
             f"{meta['in_set']} questions (bench/research/questions.json), per-question timeout {meta['timeout']} s, "
             f"one research at a time, {'stream: false' if meta.get('plain') else 'stream: true (the done event carries the result)'}; "
             f"reference search k = {meta['k']}.", "",
             "Ingest: " + "; ".join(f"{k} {v['documents']} documents in {v['seconds']} s" for k, v in meta["collections"].items()) + "."]
    if meta.get("sittings"):
        lines += ["", "Run in sittings (`--rest-of`: a run cut short taken up again; the questions each sitting asked are "
                  "its own, on a fresh server and index):", ""]
        lines += [f"- {x['started']}: {x['runs_done']} runs, commit {x['commit']}, `{x['command']}`, load before {x['load_before']}, "
                  f"after {x['load_after']}" for x in meta["sittings"]]
    lines += ["", "## By tier", "", HEADER]
    firsts = [r for r in records if not r.get("again")]
    for tier in ("fast", "deep"):
        rs = [r for r in firsts if r["tier"] == tier]
        if rs:
            lines.append(summary_row(tier, summarize(rs)))
    lines += ["", "## Tier fast by corpus and kind", "", HEADER]
    fast = [r for r in firsts if r["tier"] == "fast"]
    for corpus in dict.fromkeys(r["corpus"] for r in fast):
        lines.append(summary_row(corpus, summarize([r for r in fast if r["corpus"] == corpus])))
    for kind in ("single", "multi", "partial"):
        rs = [r for r in fast if r["kind"] == kind]
        if rs:
            lines.append(summary_row(f"kind: {kind}", summarize(rs)))
    lines += ["", "page recall: the expected pages found among `sources` (and among the sources the answer cites), "
              "over all expected pages. answer has text: an answer with more than its citation markers; the reference: the expected pages among the top k pages of one hybrid search "
              "with the question as its query, on the same collection in the same run. citations valid: every [n] resolves to a source, the markers are dense in "
              "order of first use, sources are numbered 1..N, `cited` agrees with the answer, no compound marker. "
              "quotes verified: `verification.verified / total` summed. claims: `verification.counts` summed. key "
              "facts: the question's facts found in the answer text (loose: a paraphrase misses). seconds: client "
              "wall time of the whole request.", "", "## Checks that failed (possible bugs)", ""]
    failed = [r for r in records if r["outcome"] == "ok" and r["problems"]]
    for r in failed:
        lines.append(f"- {r['id']} ({r['tier']}): " + "; ".join(r["problems"]))
    errors = [r for r in records if r["outcome"] != "ok"]
    for r in errors:
        lines.append(f"- {r['id']} ({r['tier']}): {r['outcome']} after {r['seconds']} s {r.get('status', '')} {r.get('error', '')[:300]}")
    if not failed and not errors:
        lines.append("None.")
    warned = {}
    for r in records:
        for w in r.get("warnings") or []:
            warned.setdefault(w, []).append(r["id"])
    if warned:
        lines += ["", "## Warnings the results carried", ""]
        lines += [f"- {w} ({len(ids)}: {', '.join(ids[:8])})" for w, ids in warned.items()]
    agains = [r for r in records if r.get("again")]
    if agains:
        lines += ["", "## The prompt cache: the same research asked twice", "",
                  "Prompt reading as llama.cpp's own log times it (`prompt eval time`, summed over the research's model calls), "
                  "and the input tokens the result's usage says the cache held (`usage.cached_input_tokens`).", "",
                  "| id | first: prompt ms / tokens read / cached | second: prompt ms / tokens read / cached | second / first | s first → second |",
                  "|---|---:|---:|---:|---|"]
        ratios = []
        for r in agains:
            first = next((f for f in records if f["id"] == r["id"] and f["tier"] == r["tier"] and not f.get("again")), None)
            a, b = (first or {}).get("llama"), r.get("llama")
            cached = lambda x: (x or {}).get("result", {}).get("usage", {}).get("cached_input_tokens", "")
            if not a or not b or not a["prompt_ms"]:
                lines.append(f"| {r['id']} | | | | |")
                continue
            ratio = b["prompt_ms"] / a["prompt_ms"]
            ratios.append(ratio)
            lines.append(f"| {r['id']} | {a['prompt_ms']} / {a['prompt_tokens']} / {cached(first)} | {b['prompt_ms']} / {b['prompt_tokens']} / "
                         f"{cached(r)} | {ratio:.3f} | {first['seconds']} → {r['seconds']} |")
        if ratios:
            lines += ["", f"Second / first prompt time: median {sorted(ratios)[len(ratios) // 2]:.3f}, worst {max(ratios):.3f} (aim ≤ 0.3)."]
    streamed = [r for r in records if r.get("stream")]
    if streamed:
        lines += ["", "## The event streams", "", "| id | events | first event s | first delta s | total s | order | answer event = result |",
                  "|---|---:|---:|---:|---:|---|---|"]
        lines += [f"| {r['id']} | {r['stream']['events']} | {r['stream']['first_event_s']} | {r['stream']['first_delta_s']} | "
                  f"{r['seconds']} | {'ok' if not r['stream']['order_problems'] else '; '.join(r['stream']['order_problems'])} | "
                  f"{r['stream']['answer_event_matches_result']} |" for r in streamed]
    lines += ["", "## Per question", "", "| id | tier | kind | s | steps | queries | sources | recall | citations | quotes | claims S/P/U/Unc/Unch | facts | note |",
              "|---|---|---|---:|---:|---:|---:|---:|---|---:|---|---:|---|"]
    for r in records:
        if r["outcome"] != "ok":
            lines.append(f"| {r['id']} | {r['tier']} | {r['kind']} | {r['seconds']} | | | | | {r['outcome']} | | | | |")
            continue
        s = r["score"]
        c = s["claims"]["counts"]
        note = (r["result"].get("note") or "").replace("|", "\\|").replace("\n", " ")[:120]
        lines.append(f"| {r['id']} | {r['tier']} | {r['kind']} | {r['seconds']} | {s['steps']} | {s['queries']} | {s['sources']} | "
                     f"{s['recall']['in_sources']}/{s['recall']['expected']} | {'ok' if s['citations']['valid'] else 'BAD'} "
                     f"({s['citations']['distinct']} cited) | {s['quotes']['verified']}/{s['quotes']['total']} | "
                     f"{c['supported']}/{c['partial']}/{c['unsupported']}/{c['uncited']}/{c['unchecked']} | "
                     f"{s['facts']['found']}/{s['facts']['wanted']} | {note} |")
    return "\n".join(lines) + "\n"


def remaining(tiers, records):
    """The (question, tier) runs of `tiers` that `records` (a saved run's) lacks."""
    held = {(r["id"], r["tier"] + (" again" if r.get("again") else "")) for r in records}
    return [(q, t) for q, t in tiers if (q["id"], t) not in held]


# What each sitting of a run taken up again (`--rest-of`) reports of itself.
SITTING = ("started", "command", "commit", "binary", "load_before", "load_after", "runs_done", "nice", "timeout")


def rerender(path):
    saved = json.loads(path.read_text())
    for r in saved["records"]:
        if r["outcome"] == "ok":
            r["score"]["answer_text_chars"] = len(scoring.MARKER.sub("", r["result"].get("answer") or "").strip())
            r["problems"] = scoring.problems(r["score"])
    path.with_suffix(".md").write_text(report(saved["meta"], saved["records"]))
    saved["summary"] = {t: summarize([r for r in saved["records"] if r["tier"] == t]) for t in ("fast", "deep")
                        if any(r["tier"] == t for r in saved["records"])}
    path.write_text(json.dumps(saved, ensure_ascii=False, indent=1))
    print(path.with_suffix(".md").read_text())


def redact(args):
    return [("al_…" if prev == "--key" else a) for prev, a in zip([None] + list(args), args)]


def git(*args):
    try:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(ROOT / "target/debug/quarry"))
    ap.add_argument("--server", help="a running server's base URL (with --key) instead of starting one")
    ap.add_argument("--key")
    ap.add_argument("--port", type=int, default=4475)
    ap.add_argument("--questions", default=str(HERE / "questions.json"))
    ap.add_argument("--corpora", default="legal,medical,archive,scifact")
    ap.add_argument("--embedder", default="multilingual-e5-small")
    ap.add_argument("--limit", type=int, default=0, help="at most N questions (0: all)")
    ap.add_argument("--deep", type=int, default=0, help="also run tier deep on the first N questions run")
    ap.add_argument("--again", type=int, default=0,
                    help="ask the first N questions (tier fast) a second time, after the rest: the prompt cache's effect")
    ap.add_argument("--plain", action="store_true",
                    help="ask for one JSON result (stream: false) instead of the NDJSON stream")
    ap.add_argument("--model", default=None,
                    help="a GGUF to serve instead of the installed default ([llm.local] model, named after the file): a candidate's row")
    ap.add_argument("--nice", type=int, default=None,
                    help="the local model's niceness ([llm.local] nice; default the server's, 10)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per question")
    ap.add_argument("--ready-timeout", type=float, default=600, help="seconds to wait for the local model")
    ap.add_argument("--k", type=int, default=8, help="pages of the reference search")
    ap.add_argument("--out", default=str(ROOT / "bench/results"))
    ap.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    ap.add_argument("--command", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--rest-of", metavar="JSON",
                    help="take up a run cut short: its records kept, the questions it lacks run (same options), one report")
    ap.add_argument("--retry-timeouts", action="store_true",
                    help="with --rest-of: ask the questions that timed out again too (a sitting on a loaded machine)")
    ap.add_argument("--rerender", metavar="JSON", help="write the report of a saved run again (its scores as saved; the checks again)")
    o = ap.parse_args(argv)
    if o.rerender:
        return rerender(Path(o.rerender))
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    os.chdir(ROOT)  # the server finds models/ relative to its working directory
    spec = json.load(open(o.questions))
    corpora = [c for c in o.corpora.split(",") if c]
    unknown = [c for c in corpora if c not in spec["corpora"]]
    if unknown:
        ap.error(f"unknown corpus {unknown}; questions.json has {list(spec['corpora'])}")
    chosen = interleave([q for q in spec["questions"] if q["corpus"] in corpora], corpora)
    if o.limit:
        chosen = chosen[:o.limit]
    tiers = [(q, "fast") for q in chosen] + [(q, "deep") for q in chosen[:o.deep]] + [(q, "fast again") for q in chosen[:o.again]]
    earlier = json.loads(Path(o.rest_of).read_text()) if o.rest_of else None
    if earlier and o.retry_timeouts:
        earlier["records"] = [r for r in earlier["records"] if r["outcome"] != "timeout"]
    if earlier:
        tiers = remaining(tiers, earlier["records"])
        print(f"taking up {o.rest_of}: {len(earlier['records'])} runs held, {len(tiers)} to run", file=sys.stderr)
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    server = None
    if o.server:
        health = Api(o.server).json("GET", "/v1/health")
        key = o.key or Api(o.server).json("POST", "/v1/signup", {"email": f"research-{os.getpid()}@quarry.invalid"})["api_key"]
        api = Api(o.server, key)
        binary = o.server
    else:
        if not (ROOT / "models/llm/.installed").exists():
            sys.exit("the local model is not installed (models/llm): run ops/setup")
        server = Server(o.binary, o.port, o.embedder, o.keep, o.nice, o.model)
        binary = os.path.relpath(o.binary, ROOT)
    try:
        if server:
            print(f"waiting for the local model ({server.work}/server.log)", file=sys.stderr)
            health = server.wait_ready(o.ready_timeout)
            api = Api(server.base, server.key)
        cols = {}
        for c in dict.fromkeys(q["corpus"] for q in chosen):
            cols[c] = index_corpus(api, c, spec["corpora"][c], o.embedder)
            print(f"indexed {c}: {cols[c]['documents']} documents in {cols[c]['seconds']} s", file=sys.stderr)
        started = datetime.now(timezone.utc)
        commit = git("rev-parse", "--short", "HEAD")
        stem = Path(o.out) / f"research-{started.strftime('%Y-%m-%d-%H%M%S')}"
        if earlier:
            stem = Path(o.rest_of).with_suffix("")
        stem.parent.mkdir(parents=True, exist_ok=True)

        def write(records, final=False):
            meta = {
                "date": started.strftime("%Y-%m-%d"), "started": started.isoformat(timespec="seconds"),
                "command": o.command or "bench/research/run.py " + " ".join(redact(argv if argv is not None else sys.argv[1:])),
                "commit": commit, "cpus": os.cpu_count(),
                "machine": platform.processor() or platform.machine(),
                "load_before": load_before, "load_after": " ".join(open("/proc/loadavg").read().split()[:3]),
                "binary": binary, "local_model": health.get("local_model"), "embedder": o.embedder, "nice": o.nice,
                "selected": len(chosen), "in_set": len(spec["questions"]), "timeout": o.timeout, "k": o.k, "plain": o.plain,
                "waited_429": api.waited_429, "runs_planned": len(tiers), "runs_done": len(records), "finished": final,
                "collections": {k: {"documents": v["documents"], "seconds": v["seconds"]} for k, v in cols.items()},
            }
            if earlier:
                # One report over the sittings: each one's own facts, the totals of both.
                before = earlier["meta"]
                meta["sittings"] = before.get("sittings") or [{k: before[k] for k in SITTING if k in before}]
                this = {k: meta[k] for k in SITTING} | {"runs_done": len(records) - len(earlier["records"])}
                meta["sittings"] = meta["sittings"] + [this]
                meta["runs_planned"] = before["runs_done"] + len(tiers)
                meta["runs_done"] = len(records)
                meta["started"], meta["date"] = before["started"], before["date"]
            md = report(meta, records)
            stem.with_suffix(".md").write_text(md)
            summary = {t: summarize([r for r in records if r["tier"] == t and not r.get("again")]) for t in ("fast", "deep")
                       if any(r["tier"] == t for r in records)}
            stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "summary": summary, "records": records},
                                                            ensure_ascii=False, indent=1))
            return md

        records = list(earlier["records"]) if earlier else []
        try:
            run_all(api, cols, tiers, o.timeout, sys.stderr, o.k, records, write, o.plain, server.model_log if server else None)
        except KeyboardInterrupt:
            print(f"interrupted after {len(records)} of {len(tiers)} runs", file=sys.stderr)
        md = write(records, final=len(records) == len(tiers) + (len(earlier["records"]) if earlier else 0))
    finally:
        if server:
            server.stop()
    print(md)
    print(f"written to {stem}.md and {stem}.json", file=sys.stderr)


if __name__ == "__main__":
    main()
