#!/usr/bin/env bash
# Schemathesis against the real server: SOAT v0.28's evaluations operations
# (evaluations.yaml, bundled into tests/data/specs/soat-evaluations.bundled.openapi.json
# by `ops/bundle-soat-module-specs SPECS tests/data/specs evaluations`; issue 37),
# checking that no response is a server error and that every response matches the
# schema the spec gives its status. Starts `quarry serve`, signs up, seeds an agent on a
# loopback upstream, datasets, items, evals and a run Quarry executed, one record per
# operation that changes or ends one (soat_evaluations.toml points the {id} operations
# at them), runs schemathesis once with a fixed seed and bounded examples.
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
call, key = seed.account("schemathesis-evaluations@example.com")
ids = {"ST_KEY": key}
aip = call("POST", "/api/v1/ai-providers", {"name": "seeded", "provider": "custom", "base_url": seed.upstream(), "default_model": "seeded"}, key)["id"]
agent = call("POST", "/api/v1/agents", {"ai_provider_id": aip, "name": "tested"}, key)["id"]
def dataset(name):
    ids[name] = call("POST", "/api/v1/datasets", {"name": name.lower()}, key)["id"]
    return ids[name]
def item(name, ds):
    ids[name] = call("POST", f"/api/v1/datasets/{ds}/items", {"input": [{"role": "user", "content": "hello"}], "expected_output": "seeded answer"}, key)["id"]
ds = dataset("ST_DATASET")
dataset("ST_DATASET_PUT")
dataset("ST_DATASET_DOOMED")
item("ST_ITEM", ds)
item("ST_ITEM_PUT", ds)
item("ST_ITEM_DOOMED", ds)
scorers = [{"type": "exact_match"}, {"type": "contains", "value": "answer"}]
def evaluation(name):
    ids[name] = call("POST", "/api/v1/evals", {"name": name.lower(), "agent_id": agent, "dataset_id": ds, "scorers": scorers, "pass_threshold": 0.5}, key)["id"]
    return ids[name]
ev = evaluation("ST_EVAL")
evaluation("ST_EVAL_PUT")
evaluation("ST_EVAL_DOOMED")
ids["ST_EVAL_RUN"] = call("POST", f"/api/v1/evals/{ev}/runs", {"wait": True}, key)["id"]
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_DATASET ST_DATASET_PUT ST_DATASET_DOOMED ST_ITEM ST_ITEM_PUT ST_ITEM_DOOMED ST_EVAL ST_EVAL_PUT ST_EVAL_DOOMED ST_EVAL_RUN
say "seeded dataset $ST_DATASET, eval $ST_EVAL, run $ST_EVAL_RUN"

status=0
say "spec soat-evaluations"
st_check soat_evaluations.toml "soat-evaluations.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
    --phases examples,coverage,fuzzing || status=1
st_finish "$status"
