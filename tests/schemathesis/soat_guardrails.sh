#!/usr/bin/env bash
# Schemathesis against the real server: SOAT v0.28's guardrails and approvals operations
# (guardrails.yaml and approvals.yaml, bundled into tests/data/specs/soat-{guardrails,
# approvals}.bundled.openapi.json by `ops/bundle-soat-module-specs SPECS tests/data/specs
# guardrails approvals`; issue 37), checking that no response is a server error and that
# every response matches the schema the spec gives its status. Seeds a guardrail per
# operation that changes or ends one (soat_guardrails.toml points the {id} operations at
# them); the approval operations run on an id no item has (items are filed only by a
# paused generation; tests/it/soat_guardrails.rs drives those).
#
# Environment: as soat_memory.sh's.
set -euo pipefail
ST_TIME_LIMIT="${ST_TIME_LIMIT:-60}"
source "$(dirname "$0")/common.sh"
st_serve 2 none

eval "$("$py" - "$base" "$here" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import seed
call, key = seed.account("schemathesis-guardrails@example.com")
ids = {"ST_KEY": key}
def guardrail(name):
    ids[name] = call("POST", "/api/v1/guardrails", {"name": name.lower(), "document": {"class": "B", "guard": {"<": [{"var": "args.amount"}, 500]}}}, key)["id"]
guardrail("ST_GUARDRAIL")
guardrail("ST_GUARDRAIL_PATCH")
guardrail("ST_GUARDRAIL_RESTORE")
guardrail("ST_GUARDRAIL_DOOMED")
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_GUARDRAIL ST_GUARDRAIL_PATCH ST_GUARDRAIL_RESTORE ST_GUARDRAIL_DOOMED
say "seeded guardrail $ST_GUARDRAIL"

status=0
say "spec soat-guardrails"
st_check soat_guardrails.toml "soat-guardrails.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
    --phases examples,coverage,fuzzing || status=1
say "spec soat-approvals"
st_check soat_guardrails.toml "soat-approvals.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
    --phases examples,coverage,fuzzing || status=1
st_finish "$status"
