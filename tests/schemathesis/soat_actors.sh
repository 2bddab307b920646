#!/usr/bin/env bash
# Schemathesis against the real server: SOAT v0.28's actors operations (actors.yaml,
# bundled into tests/data/specs/soat-actors.bundled.openapi.json by
# `ops/bundle-soat-module-specs SPECS tests/data/specs actors`; issue 36, actors),
# checking that no response is a server error and that every response matches the
# schema the spec gives its status. Starts `quarry serve`, signs up, seeds an actor per
# operation that changes or ends one (soat_actors.toml points the {id} operations at
# them), runs schemathesis once with a fixed seed and bounded examples.
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
call, key = seed.account("schemathesis-actors@example.com")
ids = {"ST_KEY": key}
def actor(name, external):
    ids[name] = call("POST", "/api/v1/actors", {"name": name.lower(), "external_id": external}, key)["id"]
actor("ST_ACTOR", "+15550101")
actor("ST_ACTOR_PATCH", "+15550102")
actor("ST_ACTOR_TAGS", "+15550103")
actor("ST_ACTOR_DOOMED", "+15550104")
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_ACTOR ST_ACTOR_PATCH ST_ACTOR_TAGS ST_ACTOR_DOOMED
say "seeded actor $ST_ACTOR"

status=0
say "spec soat-actors"
st_check soat_actors.toml "soat-actors.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
    --phases examples,coverage,fuzzing || status=1
st_finish "$status"
