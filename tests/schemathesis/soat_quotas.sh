#!/usr/bin/env bash
# Schemathesis against the real server: SOAT v0.28's quotas operations (quotas.yaml,
# and usage.yaml's served operations, bundled likewise,
# bundled into tests/data/specs/soat-quotas.bundled.openapi.json by
# `ops/bundle-soat-module-specs SPECS tests/data/specs quotas`; issue 37), checking
# that no response is a server error and that every response matches the schema the
# spec gives its status. Starts `quarry serve`, signs up, seeds a quota per operation
# that changes or ends one (soat_quotas.toml points the {id} operations at them), runs
# schemathesis once with a fixed seed and bounded examples.
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
call, key = seed.account("schemathesis-quotas@example.com")
ids = {"ST_KEY": key}
for name, window in [("ST_QUOTA", "rolling_1m"), ("ST_QUOTA_PATCH", "rolling_1h"), ("ST_QUOTA_DOOMED", "rolling_24h")]:
    ids[name] = call("POST", "/api/v1/quotas", {"scope": "project", "metric": "tokens", "window": window, "limit": 1000}, key)["id"]
ids["ST_PROJECT"] = call("GET", "/api/v1/projects", None, key)["data"][0]["id"]  # usage (issue 37): getUsage's project
# usage thresholds (issue 37): one for deleteUsageThreshold to end.
ids["ST_THRESHOLD_DOOMED"] = call("POST", "/api/v1/usage/thresholds", {"metric": "tokens", "window": "calendar_month", "threshold": 1000}, key)["id"]
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_QUOTA ST_QUOTA_PATCH ST_QUOTA_DOOMED ST_PROJECT ST_THRESHOLD_DOOMED
say "seeded quota $ST_QUOTA"

status=0
say "spec soat-quotas"
st_check soat_quotas.toml "soat-quotas.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
    --phases examples,coverage,fuzzing || status=1
# usage (issue 37): the operations of usage.yaml (the receipt, the price book, the
# meters, the rollup and the usage thresholds).
say "spec soat-usage"
st_check soat_quotas.toml "soat-usage.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
    --phases examples,coverage,fuzzing || status=1
st_finish "$status"
