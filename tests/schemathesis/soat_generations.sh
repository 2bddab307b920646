#!/usr/bin/env bash
# Schemathesis against the real server: the SOAT generations and traces module specs
# (soat/generations.yaml, soat/traces.yaml, bundled into
# tests/data/specs/soat-{generations,traces}.bundled.openapi.json by
# ops/bundle-soat-module-specs), checking that no response is a server error and that
# every response matches the schema the spec gives its status (status codes are not
# checked: those older specs do not list the 400s of pagination.yaml). Starts `quarry
# serve` on a free loopback port with a fresh data directory, signs up, and seeds real
# generations through `POST /api/v1/agents/{id}/generate?wait=true` against a loopback
# upstream (seed.upstream): one to read and PATCH, one to purge, and a child trace
# below the first (parent_trace_id) so the tree has two levels; soat_generations.toml
# points the {id} operations at them. Then one schemathesis run per spec.
#
# Environment: ST_BIN (default target/debug/quarry), QUARRY_CACHE (the venv's home),
# ST_MAX_EXAMPLES (default 10), ST_SEED (default 1; "random" for a new one),
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
key = call("POST", "/v1/signup", {"email": "schemathesis-generations@example.com"})["api_key"]
aip = call("POST", "/api/v1/ai-providers", {"name": "seeded", "provider": "custom", "base_url": seed.upstream(), "default_model": "seeded"}, key)["id"]
agent = call("POST", "/api/v1/agents", {"ai_provider_id": aip, "name": "seeded"}, key)["id"]
def generate(**extra):
    body = dict({"messages": [{"role": "user", "content": "hello"}]}, **extra)
    return call("POST", f"/api/v1/agents/{agent}/generate?wait=true", body, key)
first = generate(metadata={"team": "payments"})
child = generate(parent_trace_id=first["trace_id"], root_trace_id=first["trace_id"])
doomed = generate()
ids = {"ST_KEY": key, "ST_GENERATION": first["id"], "ST_TRACE": first["trace_id"], "ST_CHILD_TRACE": child["trace_id"],
       "ST_GENERATION_DOOMED": doomed["id"], "ST_TRACE_DOOMED": doomed["trace_id"]}
for k, v in ids.items():
    assert isinstance(v, str) and v, (k, v)
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_GENERATION ST_TRACE ST_CHILD_TRACE ST_GENERATION_DOOMED ST_TRACE_DOOMED
say "seeded generation $ST_GENERATION in trace $ST_TRACE (child trace $ST_CHILD_TRACE)"

status=0
for module in generations traces; do
    say "spec soat-$module"
    st_check soat_generations.toml "soat-$module.bundled.openapi.json" "${ST_MAX_EXAMPLES:-10}" \
        --phases examples,coverage,fuzzing || status=1
done
st_finish "$status"
