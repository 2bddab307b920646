#!/usr/bin/env python3
"""Do the retrieval plugin's /query and AgentLex's hybrid search rank the same pages?

    python3 bench/plugin/compare.py --server http://127.0.0.1:4472 --key al_... \
        --collection col_... --queries $EVAL_DIR/scifact/queries.jsonl [--k 10]

For every query of a BEIR queries file it asks both surfaces of one running server
(AgentLex `POST /v1/collections/{id}/search` in hybrid mode with k, and the plugin's
`POST /query` with top_k and the collection as namespace) and compares the ranked pages
(the plugin's chunk id is its page's citation plus the passage position) and their fused
scores. Prints how many queries agree, and the first that does not. Standard library only.
"""
import argparse
import json
import sys
import urllib.request


def post(server, path, key, body):
    req = urllib.request.Request(server + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"authorization": f"Bearer {key}", "content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--collection", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--k", type=int, default=10)
    a = ap.parse_args()
    queries = [json.loads(line)["text"] for line in open(a.queries) if line.strip()]
    same_pages = same_scores = 0
    first_diff = None
    for q in queries:
        al = post(a.server, f"/v1/collections/{a.collection}/search", a.key, {"query": q, "k": a.k, "mode": "hybrid", "expand": False})
        pl = post(a.server, "/query", a.key, {"queries": [{"query": q, "top_k": a.k}], "namespace": a.collection})
        al_pages = [r["citation"] for r in al["results"]]
        pl_pages = [c["id"].rsplit("-", 1)[0] for c in pl["results"][0]["results"]]
        if al_pages == pl_pages:
            same_pages += 1
            if [r["score"] for r in al["results"]] == [c["score"] for c in pl["results"][0]["results"]]:
                same_scores += 1
        elif first_diff is None:
            first_diff = (q, al_pages, pl_pages)
    n = len(queries)
    print(f"{n} queries, k={a.k}: same ranked pages in {same_pages} ({same_pages / n:.1%}), same pages and scores in {same_scores}")
    if first_diff:
        print(f"first difference: {first_diff[0]!r}\n  agentlex {first_diff[1]}\n  plugin   {first_diff[2]}")
    return 0 if same_pages == n else 1


if __name__ == "__main__":
    sys.exit(main())
