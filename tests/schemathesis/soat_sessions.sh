#!/usr/bin/env bash
# Schemathesis against the real server: the SOAT sessions and conversations operations
# (SOAT v0.28.0's sessions.yaml and conversations.yaml, bundled into
# tests/data/specs/soat-{sessions,conversations}.bundled.openapi.json by
# ops/bundle-soat-module-specs), checking that no response is a server error and that
# every response matches the schema the spec gives its status (status codes are not
# checked: the specs do not list every 400 Quarry answers). Starts `quarry serve`, signs
# up, seeds an agent on a loopback upstream (seed.upstream), sessions and conversations
# with a message each (one to read, one to change, one to delete; soat_sessions.toml
# points the {id} operations and `agent_id` at them), runs schemathesis once per spec
# with a fixed seed and bounded examples, stops the server.
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
call, key = seed.account("schemathesis-sessions@example.com")
aip = call("POST", "/api/v1/ai-providers", {"name": "seeded", "provider": "custom", "base_url": seed.upstream(), "default_model": "seeded"}, key)["id"]
agent = call("POST", "/api/v1/agents", {"ai_provider_id": aip, "name": "seeded"}, key)["id"]
ids = {"ST_KEY": key, "ST_AGENT": agent}
def session(name):
    s = call("POST", "/api/v1/sessions", {"agent_id": agent, "name": name}, key)
    call("POST", f"/api/v1/sessions/{s['id']}/messages", {"message": "hello"}, key)
    ids[name] = s["id"]
    return s
def conversation(name):
    c = call("POST", "/api/v1/conversations", {"name": name}, key)
    ids[name] = c["id"]
    return c
session("ST_SESSION")
session("ST_SESSION_PATCH")
session("ST_SESSION_DOOMED")
conversation("ST_CONVERSATION")
conversation("ST_CONVERSATION_PATCH")
conversation("ST_CONVERSATION_DOOMED")
for c in ("ST_CONVERSATION", "ST_CONVERSATION_PATCH"):
    call("POST", f"/api/v1/conversations/{ids[c]}/messages", {"message": "hello", "role": "user"}, key)
doomed = call("POST", f"/api/v1/conversations/{ids['ST_CONVERSATION']}/messages", {"message": "bye", "role": "user"}, key)
ids["ST_DOCUMENT_DOOMED"] = doomed["document_id"]
for k, v in ids.items():
    assert isinstance(v, str) and v, (k, v)
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_AGENT ST_SESSION ST_SESSION_PATCH ST_SESSION_DOOMED ST_CONVERSATION ST_CONVERSATION_PATCH ST_CONVERSATION_DOOMED ST_DOCUMENT_DOOMED
say "seeded session $ST_SESSION, conversation $ST_CONVERSATION"

status=0
for module in sessions conversations; do
    say "spec soat-$module"
    st_check soat_sessions.toml "soat-$module.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
        --phases examples,coverage,fuzzing || status=1
done
st_finish "$status"
