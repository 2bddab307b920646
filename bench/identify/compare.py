#!/usr/bin/env python3
"""The identifier scanner beside Presidio's pattern recognizers, on the same texts in
the same run.

Texts (--corpus): `identifiers`, the lines of tests/data/identifiers/*.txt with their
marks taken out, joined per file into one document each (15 documents, about 12 kB, an
identifier every ~50 bytes), the list repeated --copies times; or `scifact`, 300
abstracts of tests/data/scifact-500 (about 470 kB of prose with few identifiers). Quarry's side is the scanner itself (`quarry_index::identify::scan` for all 13
kinds, index/examples/identify_bench.rs built in the identify-bench profile), not the
HTTP endpoint, so that what is compared is the detection work. Presidio's side is
presidio-analyzer's recognizers for the kinds both have (US SSN, phone, email, credit
card, IP, URL, US passport, date, US NPI) called directly, with no spaCy model and no
AnalyzerEngine: `recognizer.analyze(text, entities)` for each recognizer and text.
Quarry's side does more (persons, addresses, MRNs, dates of birth, the look-alike
zones); Presidio's does no NER here.

    python3 -m venv ~/.cache/quarry/venv-presidio
    ~/.cache/quarry/venv-presidio/bin/pip install presidio-analyzer
    cargo build --profile identify-bench -p quarry-index --example identify_bench
    ~/.cache/quarry/venv-presidio/bin/python bench/identify/compare.py
    ~/.cache/quarry/venv-presidio/bin/python bench/identify/compare.py --corpus scifact

Prints both throughputs in MB/s (Presidio's per recognizer too) and their ratio, once
against all nine and once against the eight PatternRecognizers (PhoneRecognizer is
phonenumbers' matcher, by far the slowest). Each side's throughput is given twice: by
the wall clock and by the CPU time of the thread doing the work (Quarry's from its
`/proc/thread-self/schedstat`, Presidio's from `time.thread_time()`), since on a machine
shared with other work the wall clock counts the time either side waited for a core.
`--repeat N` runs both sides N times, alternating, and prints each run's ratios and
their median.
"""

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
MARK = re.compile(r"\[\[[a-z_]+:(.*?)\]\]")


def scifact(n):
    """The first `n` SciFact abstracts (title and text): prose with few identifiers."""
    docs = []
    with open(ROOT / "tests/data/scifact-500/corpus.jsonl") as f:
        for line in f:
            d = json.loads(line)
            docs.append(d["title"] + "\n" + d["text"])
            if len(docs) == n:
                break
    return docs


def documents():
    docs = []
    for f in sorted((ROOT / "tests/data/identifiers").glob("*.txt")):
        lines = [MARK.sub(r"\1", l) for l in f.read_text().splitlines() if l.strip() and not l.startswith("#")]
        docs.append("\n".join(lines))
    return docs


def presidio_recognizers():
    # The email recognizer's tldextract would fetch the public suffix list on first use:
    # no URLs, so it takes the snapshot it ships with and the run stays off the network.
    os.environ["TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS"] = ""
    from presidio_analyzer import predefined_recognizers as p

    names = ["UsSsnRecognizer", "PhoneRecognizer", "EmailRecognizer", "CreditCardRecognizer", "IpRecognizer",
             "UrlRecognizer", "UsPassportRecognizer", "DateRecognizer", "UsNpiRecognizer"]
    out = []
    for n in names:
        r = getattr(p, n)()
        out.append((n, r, r.supported_entities))
    return out


def time_presidio(texts, rounds):
    """Seconds per recognizer over `rounds` passes of `texts`, after a warm-up pass."""
    recs = presidio_recognizers()
    for t in texts:  # warm-up: compiled patterns, caches
        for _, r, ents in recs:
            r.analyze(t, ents)
    per = {}
    cpu = {}
    found = 0
    for name, r, ents in recs:
        start = time.perf_counter()
        cpu_start = time.thread_time()
        for _ in range(rounds):
            for t in texts:
                found += len(r.analyze(t, ents) or [])
        cpu[name] = time.thread_time() - cpu_start
        per[name] = time.perf_counter() - start
    return {"seconds": per, "cpu_seconds": cpu, "results": found // rounds}


def time_quarry(texts, rounds, binary):
    r = subprocess.run([str(binary), str(rounds)], input=json.dumps(texts), capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=20, help="how many times the document list is repeated")
    ap.add_argument("--quarry-rounds", type=int, default=50)
    ap.add_argument("--presidio-rounds", type=int, default=2)
    ap.add_argument("--corpus", choices=["identifiers", "scifact"], default="identifiers",
                    help="identifiers: the labelled set (an identifier every ~50 bytes); scifact: 300 abstracts of tests/data/scifact-500 (prose)")
    ap.add_argument("--repeat", type=int, default=1, help="how many alternating runs of both sides")
    ap.add_argument("--binary", default=str(ROOT / "target/identify-bench/examples/identify_bench"))
    a = ap.parse_args()
    texts = documents() * a.copies if a.corpus == "identifiers" else scifact(300)
    size = sum(len(t.encode()) for t in texts)
    print(f"texts: {len(texts)} documents, {size / 1e3:.1f} kB")
    runs = []
    for run in range(a.repeat):
        q = time_quarry(texts, a.quarry_rounds, a.binary)
        p = time_presidio(texts, a.presidio_rounds)
        runs.append(report(q, p, size, a.presidio_rounds, run))
    if a.repeat > 1:
        for key in ("wall", "cpu"):
            r = sorted(x[key] for x in runs if x[key] is not None)
            if r:
                print(f"median of {len(r)} runs, {key} ratio against the 8 pattern recognizers: {r[len(r) // 2] if len(r) % 2 else (r[len(r) // 2 - 1] + r[len(r) // 2]) / 2:.1f}x  (all: {', '.join(f'{x:.1f}' for x in r)})")


def report(q, p, size, rounds, run):
    """Prints one run's figures; returns its two ratios against the pattern recognizers."""
    done = size * rounds / 1e6
    every = done / sum(p["seconds"].values())
    # PhoneRecognizer is phonenumbers' matcher, not a PatternRecognizer: also without it.
    patterns = done / sum(v for k, v in p["seconds"].items() if k != "PhoneRecognizer")
    patterns_cpu = done / sum(v for k, v in p["cpu_seconds"].items() if k != "PhoneRecognizer")
    q_cpu = size * q["rounds"] / 1e6 / q["cpu_seconds"] if q.get("cpu_seconds") else None
    print(f"run {run + 1}")
    print(f"quarry scanner, 13 kinds:         {q['mb_per_s']:9.3f} MB/s wall, {q_cpu or 0:9.3f} MB/s CPU  ({q['rounds']} rounds in {q['seconds']:.2f} s, {q.get('cpu_seconds') or 0:.2f} s CPU, {q['spans']} spans)")
    print(f"presidio, 9 recognizers:          {every:9.3f} MB/s wall  ({rounds} rounds, {p['results']} results)")
    print(f"presidio, 8 pattern recognizers:  {patterns:9.3f} MB/s wall, {patterns_cpu:9.3f} MB/s CPU  (without PhoneRecognizer)")
    for k, v in p["seconds"].items():
        print(f"    {k:<22} {done / v:9.3f} MB/s wall, {done / p['cpu_seconds'][k]:9.3f} MB/s CPU")
    wall = q["mb_per_s"] / patterns
    cpu = q_cpu / patterns_cpu if q_cpu else None
    print(f"ratio: {q['mb_per_s'] / every:.0f}x against the 9, {wall:.1f}x against the 8 pattern recognizers (wall)" + (f", {cpu:.1f}x (CPU)" if cpu else ""))
    p["ratio"] = {"nine": q["mb_per_s"] / every, "patterns": wall, "patterns_cpu": cpu}
    json.dump({"quarry": q, "presidio": p}, sys.stderr)
    print(file=sys.stderr)
    return {"wall": wall, "cpu": cpu}

if __name__ == "__main__":
    main()
