#!/usr/bin/env bash
# Schemathesis against the real server: SOAT v0.28's policies, audit-log, activity and
# exceptions specs (issue 37; bundled into tests/data/specs/soat-{policies,audit-log,
# activity,exceptions}.bundled.openapi.json by `ops/bundle-soat-module-specs SPECS
# tests/data/specs policies audit-log activity exceptions`), checking that no response
# is a server error and that every response matches the schema the spec gives its
# status. Starts `quarry serve`, signs up, seeds policies (one to read, one to PUT, one
# to delete), audit entries (the seeding's own writes) and three exceptions (three
# agents' generations failing on a provider nothing listens to, so each files its own:
# one to read, one to acknowledge, one to resolve); soat_policies.toml points the {id}
# operations at them. Then one schemathesis run per spec.
#
# Environment: as soat_memory.sh's.
set -euo pipefail
ST_TIME_LIMIT="${ST_TIME_LIMIT:-60}"
source "$(dirname "$0")/common.sh"
st_serve 2 none

eval "$("$py" - "$base" "$here" <<'PY'
import sys, urllib.error
sys.path.insert(0, sys.argv[2])
import seed
call, key = seed.account("schemathesis-policies@example.com")
ids = {"ST_KEY": key}
doc = {"statement": [{"effect": "Allow", "action": ["secrets:ListSecrets"], "resource": ["*"]}]}
for name in ("ST_POLICY", "ST_POLICY_PUT", "ST_POLICY_DOOMED"):
    ids[name] = call("POST", "/api/v1/policies", {"name": name.lower(), "document": doc}, key)["id"]
aip = call("POST", "/api/v1/ai-providers", {"name": "down", "provider": "custom", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"}, key)["id"]
agents = {}
for name in ("ST_EXCEPTION", "ST_EXCEPTION_ACK", "ST_EXCEPTION_RESOLVE"):
    agent = call("POST", "/api/v1/agents", {"ai_provider_id": aip, "name": name.lower()}, key)["id"]
    agents[agent] = name
    try:
        call("POST", f"/api/v1/agents/{agent}/generate?wait=true", {"messages": [{"role": "user", "content": "hi"}]}, key)
    except urllib.error.HTTPError:
        pass
for x in call("GET", "/api/v1/exceptions", None, key)["data"]:
    ids[agents[x["agent_id"]]] = x["id"]
ids["ST_AUDIT_ENTRY"] = call("GET", "/api/v1/audit-log?action=policies:CreatePolicy", None, key)["data"][0]["id"]
for k in ("ST_EXCEPTION", "ST_EXCEPTION_ACK", "ST_EXCEPTION_RESOLVE"):
    assert k in ids, (k, ids)
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_POLICY ST_POLICY_PUT ST_POLICY_DOOMED ST_EXCEPTION ST_EXCEPTION_ACK ST_EXCEPTION_RESOLVE ST_AUDIT_ENTRY
say "seeded policy $ST_POLICY, exception $ST_EXCEPTION, audit entry $ST_AUDIT_ENTRY"

status=0
for module in policies audit-log activity exceptions; do
    say "spec soat-$module"
    st_check soat_policies.toml "soat-$module.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
        --phases examples,coverage,fuzzing || status=1
done
st_finish "$status"
