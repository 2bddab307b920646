#!/usr/bin/env python3
"""Cuts the evaluation subsets in tests/data from the full sets (BEIR layout), byte for byte.

    python3 tests/data/cut-subsets.py /path/to/eval    # the directory holding scifact/, nfcorpus-test-preproc/

scifact-500: the 500 documents `Dataset::subset(500)` (bench/src/quality/beir.rs) keeps of SciFact
under the test qrels -- the documents relevant to a judged query in file order, then the first
non-relevant ones in file order until there are 500 -- kept in file order, with the queries the
test split judges and the test qrels whole. Loading it gives what `subset(500)` of the full set
gives: the same documents, queries and judgements.

nfcorpus-300: the first 300 documents of the pre-processed NFCorpus test corpus (vocabulary only).
"""
import json
import os
import sys

def qrels(path):
    judged = {}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if not line.strip() or (i == 0 and line.startswith("query-id")):
                continue
            q, d, s = [x.strip() for x in line.split("\t")]
            judged.setdefault(q, {})[d] = int(s)
    return judged

def scifact(src, dst, n=500):
    judged = qrels(os.path.join(src, "qrels", "test.tsv"))
    relevant = {d for docs in judged.values() for d, s in docs.items() if s > 0}
    lines = [l for l in open(os.path.join(src, "corpus.jsonl"), encoding="utf-8") if l.strip()]
    ids = [json.loads(l)["_id"] for l in lines]
    keep = [i for i in ids if i in relevant][:n]
    keep += [i for i in ids if i not in relevant][: n - len(keep)]
    keep = set(keep)
    os.makedirs(os.path.join(dst, "qrels"), exist_ok=True)
    with open(os.path.join(dst, "corpus.jsonl"), "w", encoding="utf-8") as out:
        out.writelines(l for l, i in zip(lines, ids) if i in keep)
    with open(os.path.join(dst, "queries.jsonl"), "w", encoding="utf-8") as out:
        out.writelines(l for l in open(os.path.join(src, "queries.jsonl"), encoding="utf-8") if l.strip() and json.loads(l)["_id"] in judged)
    with open(os.path.join(src, "qrels", "test.tsv"), encoding="utf-8") as f, open(os.path.join(dst, "qrels", "test.tsv"), "w", encoding="utf-8") as out:
        out.write(f.read())

def nfcorpus(src, dst, n=300):
    os.makedirs(dst, exist_ok=True)
    lines = [l for l in open(os.path.join(src, "corpus.jsonl"), encoding="utf-8") if l.strip()]
    with open(os.path.join(dst, "corpus.jsonl"), "w", encoding="utf-8") as out:
        out.writelines(lines[:n])

if __name__ == "__main__":
    eval_dir = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    scifact(os.path.join(eval_dir, "scifact"), os.path.join(here, "scifact-500"))
    nfcorpus(os.path.join(eval_dir, "nfcorpus-test-preproc"), os.path.join(here, "nfcorpus-300"))
