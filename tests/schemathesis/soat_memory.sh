#!/usr/bin/env bash
# Schemathesis against the real server: the SOAT memory stores and memory entries
# operations (soat/memories.yaml, soat/memoryEntries.yaml, bundled into
# tests/data/specs/soat-{memories,memoryEntries}.bundled.openapi.json by
# ops/bundle-soat-module-specs), checking that no response is a server error and that
# every response matches the schema the spec gives its status (those specs do not list
# every 400 Quarry answers, so status_code_conformance is not run). Starts `quarry
# serve` with no embedder (entries are indexed for keyword search; the write path is
# the same), signs up, seeds a store and an entry per operation that changes or ends
# one (soat_memory.toml points the {id} operations and `memory_id` at them), runs
# schemathesis once per spec with a fixed seed and bounded examples, stops the server.
#
# Environment: ST_BIN (default target/debug/quarry), QUARRY_CACHE (the venv's home),
# ST_MAX_EXAMPLES (default 8), ST_SEED (default 1; "random" for a new one),
# ST_TIME_LIMIT (seconds for each spec's run, default 60).
set -euo pipefail
ST_TIME_LIMIT="${ST_TIME_LIMIT:-60}"
source "$(dirname "$0")/common.sh"
st_serve 2 none

eval "$("$py" - "$base" "$here" <<'PY'
import sys
base = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import seed
def call(method, path, body, key=None):
    return seed.call(base, method, path, body, key)
key = call("POST", "/v1/signup", {"email": "schemathesis-memory@example.com"})["api_key"]
ids = {"ST_KEY": key}
def store(name, label):
    ids[name] = call("POST", "/api/v1/memories", {"name": label, "tags": ["seeded"]}, key)["id"]
def entry(name, text):
    ids[name] = call("POST", "/api/v1/memory-entries", {"memory_id": ids["ST_MEMORY"], "content": text}, key)["id"]
store("ST_MEMORY", "seeded")
store("ST_MEMORY_PUT", "to change")
store("ST_MEMORY_DOOMED", "to delete")
entry("ST_ENTRY", "The customer prefers email.")
entry("ST_ENTRY_PUT", "Invoices go to finance.")
entry("ST_ENTRY_DOOMED", "Ships on Fridays.")
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_MEMORY ST_MEMORY_PUT ST_MEMORY_DOOMED ST_ENTRY ST_ENTRY_PUT ST_ENTRY_DOOMED
say "seeded memory $ST_MEMORY, entry $ST_ENTRY"

status=0
for module in memories memoryEntries; do
    say "spec soat-$module"
    st_check soat_memory.toml "soat-$module.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
        --phases examples,coverage,fuzzing || status=1
done
st_finish "$status"
