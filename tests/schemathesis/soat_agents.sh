#!/usr/bin/env bash
# Schemathesis against the real server: the SOAT agents spec's agents, versions and
# release operations (tests/data/specs/soat-agents.bundled.openapi.json, made by
# ops/bundle-soat-agents-spec), checking that no response is a server error and that
# every response matches the schema the spec gives its status. Starts `quarry serve`
# on a free loopback port with a fresh data directory, signs up, makes an AI provider
# an agent with two versions (soat_agents.toml points the {agent_id} operations at
# it) and one for DELETE, runs schemathesis bounded in examples and time, stops the server.
#
# Environment: ST_BIN (default target/debug/quarry), QUARRY_CACHE (the venv's home),
# ST_MAX_EXAMPLES (default 15), ST_SEED (default 1; "random" for a new one),
# ST_TIME_LIMIT (seconds, default 240).
set -euo pipefail
source "$(dirname "$0")/common.sh"
st_serve 2 none

eval "$("$py" - "$base" "$here" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import seed
call, key = seed.account("schemathesis-agents@example.com")
aip = call("POST", "/api/v1/ai-providers", {"name": "main", "provider": "openai", "default_model": "gpt-4o"}, key)["id"]
agent = call("POST", "/api/v1/agents", {"ai_provider_id": aip, "name": "first"}, key)["id"]
call("PATCH", f"/api/v1/agents/{agent}", {"name": "second"}, key)
doomed = call("POST", "/api/v1/agents", {"ai_provider_id": aip, "name": "to delete"}, key)["id"]
print(f"ST_KEY={key} ST_AGENT={agent} ST_DOOMED={doomed}")
PY
)"
export ST_AGENT ST_DOOMED
say "seeded agent $ST_AGENT"

st_run soat_agents.toml soat-agents.bundled.openapi.json "${ST_MAX_EXAMPLES:-15}"
