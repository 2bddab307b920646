#!/usr/bin/env bash
# Schemathesis against the real server: the AgentLex spec
# (tests/data/specs/agentlex.openapi.json) on the operations this version implements,
# checking that no response is a server error (5xx) and that every response matches
# the schema the spec gives its status. Starts `quarry serve` on a free loopback port
# with a fresh data directory, signs up for a key, seeds a collection and a document
# for the read operations (schemathesis.toml beside this file), runs schemathesis
# bounded in examples and in time, stops the server. Exits non-zero on any failure.
#
#     tests/schemathesis/run.sh            # after cargo build --bin quarry and ops/setup-llm-tests
#
# Environment: ST_BIN (the binary, default target/debug/quarry), QUARRY_CACHE (where
# ops/setup-llm-tests put the venv), ST_MAX_EXAMPLES (default 10 per operation),
# ST_SEED (default 1; "random" for a new one each run), ST_TIME_LIMIT (the wall-clock
# cap of the schemathesis run in seconds, default 240), QUARRY_EMBEDDER (default
# "none": keyword search only and a quick start; name a model to run semantic and
# hybrid searches too).
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$root"
st_serve 1 "${QUARRY_EMBEDDER:-none}"

# A key, a collection and a document with two pages, through the API itself.
eval "$("$py" - "$base" <<'PY'
import json, sys, urllib.request
base = sys.argv[1]
def call(path, body, key=None):
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = "Bearer " + key
    req = urllib.request.Request(base + path, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)
key = call("/v1/signup", {"email": "schemathesis@example.com"})["api_key"]
col = call("/v1/collections", {"name": "schemathesis"}, key)["id"]
doc = call(f"/v1/collections/{col}/documents", {"title": "Audit rules", "text": "The contract permits one audit per year.\f## Notice\n\nThirty days."}, key)["id"]
print(f"ST_KEY={key} ST_COLLECTION={col} ST_DOCUMENT={doc}")
PY
)"
export ST_COLLECTION ST_DOCUMENT
say "seeded collection $ST_COLLECTION, document $ST_DOCUMENT"

st_run schemathesis.toml agentlex.openapi.json "${ST_MAX_EXAMPLES:-10}" \
    --exclude-path-regex '/v1/(chunk|collections/\{id\}/(extract|research|sample))$'
