#!/usr/bin/env python3
"""bench/ab's corpus and request files, on loopback only.

    corpus.py index ADDR KEY SCIFACT         SciFact's corpus added through the API into a
                                             new collection (8 connections); prints its id
    corpus.py searches KEY COL SCIFACT DIR   DIR/keyword.jsonl and DIR/hybrid.jsonl: every
                                             SciFact query, as bench/load/run.sh sends them
    corpus.py adds KEY COL SCIFACT FILE      one add per SciFact document into COL
    corpus.py agent ADDR KEY UPSTREAM FILE   a provider on the fake upstream, an http tool
                                             and an agent using it; FILE: its generate
                                             request (`?wait=true`), checked once first
    corpus.py collection ADDR KEY NAME       a new collection; prints its id
    corpus.py delete ADDR KEY COL            deletes a collection
    corpus.py count ADDR KEY COL             "documents pages" of a collection
"""

import concurrent.futures
import http.client
import json
import sys
import threading


class Client:
    """Keep-alive JSON calls on one connection."""

    def __init__(self, addr, key):
        host, port = addr.rsplit(":", 1)
        assert host.startswith("127."), f"loopback only, not {host}"
        self.conn = http.client.HTTPConnection(host, int(port), timeout=120)
        self.headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}

    def call(self, method, path, body=None, expect=(200, 201)):
        self.conn.request(method, path, None if body is None else json.dumps(body), self.headers)
        r = self.conn.getresponse()
        data = r.read()
        value = json.loads(data) if data.strip() else None
        if r.status not in expect:
            sys.exit(f"{method} {path}: {r.status} {value}")
        return value


def auth(key):
    return {"authorization": f"Bearer {key}", "content-type": "application/json"}


def documents(scifact):
    with open(f"{scifact}/corpus.jsonl") as f:
        for line in f:
            d = json.loads(line)
            yield {"title": d["title"], "text": d["text"]}


def index(addr, key, scifact):
    col = Client(addr, key).call("POST", "/v1/collections", {"name": "scifact"})["id"]
    local = threading.local()

    def add(doc):
        if not hasattr(local, "client"):
            local.client = Client(addr, key)
        local.client.call("POST", f"/v1/collections/{col}/documents", doc)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for n, _ in enumerate(pool.map(add, documents(scifact)), 1):
            if n % 500 == 0:
                print(f"indexed {n} documents", file=sys.stderr)
    print(col)


def searches(key, col, scifact, out):
    queries = [json.loads(line)["text"] for line in open(f"{scifact}/queries.jsonl")]
    for mode in ("keyword", "hybrid"):
        with open(f"{out}/{mode}.jsonl", "w") as f:
            for q in queries:
                body = json.dumps({"query": q, "mode": mode, "expand": False})
                f.write(json.dumps({"method": "POST", "path": f"/v1/collections/{col}/search", "headers": auth(key), "body": body}) + "\n")


def adds(key, col, scifact, out):
    with open(out, "w") as f:
        for doc in documents(scifact):
            f.write(json.dumps({"method": "POST", "path": f"/v1/collections/{col}/documents", "headers": auth(key), "body": json.dumps(doc)}) + "\n")


def agent(addr, key, upstream, out):
    """The same provider, tool and agent as bench/agents/generations.py's per-step part."""
    c = Client(addr, key)
    base = f"http://127.0.0.1:{upstream}"
    p = c.call("POST", "/api/v1/ai-providers", {"name": "fake", "provider": "custom", "base_url": f"{base}/v1", "default_model": "m"})
    t = c.call("POST", "/api/v1/tools", {"name": "note", "type": "http", "execute": {"url": f"{base}/tool"},
                                         "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}})
    a = c.call("POST", "/api/v1/agents", {"ai_provider_id": p["id"], "instructions": "Answer briefly.", "max_steps": 50,
                                          "tool_bindings": [{"tool_id": t["id"]}]})
    path = f"/api/v1/agents/{a['id']}/generate?wait=true"
    body = {"messages": [{"role": "user", "content": "Go."}]}
    g = c.call("POST", path, body)
    if g.get("status") != "completed":
        sys.exit(f"the generation row's probe did not complete: {g}")
    with open(out, "w") as f:
        f.write(json.dumps({"method": "POST", "path": path, "headers": auth(key), "body": json.dumps(body)}) + "\n")


def main(argv):
    cmd, *args = argv
    if cmd == "index":
        index(*args)
    elif cmd == "searches":
        searches(*args)
    elif cmd == "adds":
        adds(*args)
    elif cmd == "agent":
        agent(*args)
    elif cmd == "collection":
        addr, key, name = args
        print(Client(addr, key).call("POST", "/v1/collections", {"name": name})["id"])
    elif cmd == "delete":
        addr, key, col = args
        Client(addr, key).call("DELETE", f"/v1/collections/{col}", expect=(200, 204))
    elif cmd == "count":
        addr, key, col = args
        c = Client(addr, key).call("GET", f"/v1/collections/{col}")
        s = c.get("stats", c)
        print(s.get("documents", 0), s.get("pages", 0))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
