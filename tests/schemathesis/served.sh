#!/usr/bin/env bash
# Schemathesis against the real server over the four OpenAPI documents it serves
# (/openapi.json, /openapi/agents.json, /openapi/retrieval.json, /openapi/gateway.json,
# read from the running server, not from the repository), on the read-only operations:
# every GET, and the retrieval plugin's POST /query (and /sub/query), which only reads.
# Checks that no response is a server error and that every response matches the schema
# its document gives its status. Starts `quarry serve` on a free loopback port with a
# fresh data directory and a gateway provider that lists a model (its upstream is a
# closed loopback port: listing models sends nothing), signs up, and seeds through the
# API a collection with a document, a plugin document, an agent with two versions, a
# generation (generate?wait=true on common.sh's loopback upstream), a guardrail, an eval with a run, a model route, a project, a key, a
# secret, a tool, a memory store with an entry; served.toml points the {id} GETs at them.
#
# No request leaves the machine: every operation is a read of this server's records;
# /api/v1/ai-providers/{id}/models reads an openai provider with no secret, which fails
# before any request, and the stateful phase is off.
#
# Environment: ST_BIN (default target/debug/quarry), QUARRY_CACHE (the venv's home),
# ST_MAX_EXAMPLES (default 8), ST_SEED (default 1; "random" for a new one),
# ST_TIME_LIMIT (seconds for each document's run, default 90).
set -euo pipefail
ST_TIME_LIMIT="${ST_TIME_LIMIT:-90}"
source "$(dirname "$0")/common.sh"
cat >>"$work/quarry.toml" <<'TOML'
[llm]
max_retries = 0
[llm.local]
enabled = false
[llm.providers.seeded]
manifest = "openai-compatible"
base_url = "http://127.0.0.1:9/v1"
models = ["listed"]
TOML
st_serve 2 none

eval "$("$py" - "$base" "$here" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import seed
call, key = seed.account("schemathesis-served@example.com")
ids = {"ST_KEY": key}
def make(name, path, body):
    ids[name] = call("POST", path, body, key)["id"]
    return ids[name]
col = make("ST_COLLECTION", "/v1/collections", {"name": "served"})
make("ST_DOCUMENT", f"/v1/collections/{col}/documents", {"title": "Audit rules", "text": "The contract permits one audit per year.\f## Notice\n\nThirty days."})
call("POST", "/upsert", {"documents": [{"id": "plugin-1", "text": "The audit clause allows one audit a year.", "metadata": {"source": "file"}}]}, key)
aip = make("ST_AIP", "/api/v1/ai-providers", {"name": "seeded", "provider": "custom", "base_url": seed.upstream(), "default_model": "seeded"})
make("ST_AIP_OPENAI", "/api/v1/ai-providers", {"name": "listing", "provider": "openai", "default_model": "gpt-4o"})
agent = make("ST_AGENT", "/api/v1/agents", {"ai_provider_id": aip, "name": "first"})
call("PATCH", f"/api/v1/agents/{agent}", {"name": "second"}, key)
g = call("POST", f"/api/v1/agents/{agent}/generate?wait=true", {"messages": [{"role": "user", "content": "hello"}]}, key)
ids["ST_GENERATION"], ids["ST_TRACE"] = g["id"], g["trace_id"]
make("ST_GUARDRAIL", "/api/v1/guardrails", {"name": "seeded"})
ds = make("ST_DATASET", "/api/v1/datasets", {"name": "seeded"})
call("POST", f"/api/v1/datasets/{ds}/items", {"input": [{"role": "user", "content": "hello"}], "expected_output": "hello"}, key)
ev = make("ST_EVAL", "/api/v1/evals", {"name": "seeded", "agent_id": agent, "dataset_id": ds, "scorers": [{"type": "exact_match"}, {"type": "contains", "value": "e"}], "pass_threshold": 0.5})
make("ST_EVAL_RUN", f"/api/v1/evals/{ev}/runs", {"wait": True, "agent_version": 2})
make("ST_ROUTE", "/api/v1/model-routes", {"name": "seeded", "targets": [{"ai_provider_id": aip, "model": "seeded"}]})
make("ST_PROJECT", "/api/v1/projects", {"name": "seeded"})
make("ST_API_KEY", "/api/v1/api-keys", {"name": "seeded"})
make("ST_SECRET", "/api/v1/secrets", {"name": "SEEDED", "value": "s3cret"})
make("ST_TOOL", "/api/v1/tools", {"name": "seeded", "type": "client"})
mem = make("ST_MEMORY", "/api/v1/memories", {"name": "seeded"})
make("ST_ENTRY", "/api/v1/memory-entries", {"memory_id": mem, "content": "The customer prefers email."})
for k, v in ids.items():
    assert isinstance(v, str) and v, (k, v)
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_COLLECTION ST_DOCUMENT ST_AIP ST_AIP_OPENAI ST_AGENT ST_GENERATION ST_TRACE ST_GUARDRAIL ST_DATASET ST_EVAL ST_EVAL_RUN ST_ROUTE ST_PROJECT ST_API_KEY ST_SECRET ST_TOOL ST_MEMORY ST_ENTRY
say "seeded collection $ST_COLLECTION, agent $ST_AGENT, generation $ST_GENERATION"

status=0
for doc in openapi.json openapi/agents.json openapi/retrieval.json openapi/gateway.json; do
    say "document /$doc"
    only=(--include-method GET)
    [ "$doc" = openapi/retrieval.json ] && only=(--include-path-regex '^/(sub/)?query$')
    st_check served.toml "$base/$doc" "${ST_MAX_EXAMPLES:-8}" "${only[@]}" \
        --phases examples,coverage,fuzzing || status=1
done
st_finish "$status"
