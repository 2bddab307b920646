#!/usr/bin/env bash
# Schemathesis against the real server: the SOAT sibling module specs Quarry serves
# under /api/v1 (projects, api-keys, ai-providers, secrets, tools; bundled into
# tests/data/specs/soat-MODULE.bundled.openapi.json by ops/bundle-soat-module-specs),
# checking that no response is a server error and that every response matches the
# schema the spec gives its status. Those older specs do not list every 400 Quarry
# answers, so status_code_conformance is not run. Starts `quarry serve` on a free
# loopback port with a fresh data directory, signs up, seeds the records the {id}
# operations read (soat_modules.toml), runs schemathesis once per spec with a fixed
# seed and bounded examples, stops the server.
#
# No request leaves the machine: `POST /api/v1/tools/{tool_id}/call` is not fuzzed (the
# spec's examples name hosts like mcp.example.com), the stateful phase is off (its links
# would call /models on providers the fuzzer made, pointed at any host), and /models
# reads a provider that fails before any request (openai with no secret).
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
sys.path.insert(0, sys.argv[2])
import seed
call, key = seed.account("schemathesis-modules@example.com")
ids = {"ST_KEY": key}
def make(name, path, body):
    ids[name] = call("POST", path, body, key)["id"]
make("ST_PROJECT", "/api/v1/projects", {"name": "seeded"})
make("ST_PROJECT_DOOMED", "/api/v1/projects", {"name": "to delete"})
make("ST_API_KEY", "/api/v1/api-keys", {"name": "seeded"})
make("ST_API_KEY_DOOMED", "/api/v1/api-keys", {"name": "to delete"})
provider = {"name": "seeded", "provider": "openai", "default_model": "gpt-4o"}
make("ST_AIP", "/api/v1/ai-providers", provider)
make("ST_AIP_PATCHED", "/api/v1/ai-providers", provider)
make("ST_AIP_DOOMED", "/api/v1/ai-providers", provider)
make("ST_SECRET", "/api/v1/secrets", {"name": "SEEDED", "value": "s3cret"})
make("ST_SECRET_DOOMED", "/api/v1/secrets", {"name": "DOOMED", "value": "s3cret"})
make("ST_TOOL", "/api/v1/tools", {"name": "seeded", "type": "client"})
make("ST_TOOL_DOOMED", "/api/v1/tools", {"name": "doomed", "type": "client"})
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_PROJECT ST_PROJECT_DOOMED ST_API_KEY ST_API_KEY_DOOMED ST_AIP ST_AIP_PATCHED ST_AIP_DOOMED ST_SECRET ST_SECRET_DOOMED ST_TOOL ST_TOOL_DOOMED
say "seeded project $ST_PROJECT, provider $ST_AIP, tool $ST_TOOL"

status=0
for module in projects api-keys ai-providers secrets tools; do
    say "spec soat-$module"
    st_check soat_modules.toml "soat-$module.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
        --exclude-path-regex '^/api/v1/tools/\{tool_id\}/call$' \
        --phases examples,coverage,fuzzing || status=1
done
st_finish "$status"
