"""What the schemathesis scripts' seeding shares: a JSON call to the server under test."""

import json
import urllib.request


def call(base, method, path, body, key=None):
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = "Bearer " + key
    req = urllib.request.Request(base + path, json.dumps(body).encode(), headers, method=method)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)
