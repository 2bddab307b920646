"""The peer reference of the quality harness: bm25s (PyPI) on a BEIR-layout directory.

BM25 with k1 = 1.2, b = 0.75 (bm25s's default Lucene variant), English stopwords and
the Snowball English stemmer (PyStemmer), over "title text" per document, as the issue
asks. Prints one JSON object: nDCG@10, recall@50 and MRR@10 with the same definitions
as quarry-quality (bench/src/quality/metrics.rs: linear gain, every judged query counts,
one with no positive judgement scores 0).

    python bm25s_peer.py $EVAL_DIR/scifact [--split test]
"""
import argparse
import json
import math
import os
import time

import bm25s
import Stemmer


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path):
    qrels = {}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            parts = line.rstrip("\n").split("\t")
            if i == 0 and not parts[-1].lstrip("-").isdigit():
                continue  # the header row
            query, doc, score = parts[0], parts[1], int(parts[2])
            qrels.setdefault(query, {})[doc] = score
    return qrels


def ndcg_at(ranked, rels, k):
    dcg = sum(max(rels.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked, rels, k):
    relevant = sum(1 for r in rels.values() if r > 0)
    if relevant == 0:
        return 0.0
    return sum(1 for d in ranked[:k] if rels.get(d, 0) > 0) / relevant


def mrr_at(ranked, rels, k):
    for i, d in enumerate(ranked[:k]):
        if rels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--split", default="test")
    args = ap.parse_args()
    corpus = read_jsonl(os.path.join(args.dataset, "corpus.jsonl"))
    queries = {q["_id"]: q["text"] for q in read_jsonl(os.path.join(args.dataset, "queries.jsonl"))}
    qrels = read_qrels(os.path.join(args.dataset, "qrels", f"{args.split}.tsv"))
    judged = [q for q in qrels if q in queries]
    stemmer = Stemmer.Stemmer("english")
    started = time.perf_counter()
    texts = [f"{d.get('title') or ''} {d['text']}".strip() for d in corpus]
    retriever = bm25s.BM25(k1=1.2, b=0.75)
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    indexed = time.perf_counter()
    tokens = bm25s.tokenize([queries[q] for q in judged], stopwords="en", stemmer=stemmer, show_progress=False)
    k = min(50, len(corpus))
    docs, _scores = retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
    searched = time.perf_counter()
    ids = [d["_id"] for d in corpus]
    n = len(judged)
    totals = {"ndcg@10": 0.0, "recall@50": 0.0, "mrr@10": 0.0}
    for row, q in enumerate(judged):
        ranked = [ids[i] for i in docs[row]]
        totals["ndcg@10"] += ndcg_at(ranked, qrels[q], 10)
        totals["recall@50"] += recall_at(ranked, qrels[q], 50)
        totals["mrr@10"] += mrr_at(ranked, qrels[q], 10)
    out = {m: (v / n if n else 0.0) for m, v in totals.items()}
    out.update({
        "system": f"bm25s {bm25s.__version__} (k1 1.2, b 0.75, English stopwords, Snowball stemmer)",
        "queries": n,
        "documents": len(corpus),
        "index_s": round(indexed - started, 2),
        "queries_per_s": round(n / (searched - indexed), 1) if searched > indexed else None,
    })
    print(json.dumps(out))


if __name__ == "__main__":
    main()
