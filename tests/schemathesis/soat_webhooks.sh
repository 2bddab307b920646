#!/usr/bin/env bash
# Schemathesis against the real server: SOAT v0.28.0's webhooks spec (webhooks.yaml,
# bundled into tests/data/specs/soat-webhooks.bundled.openapi.json by
# ops/bundle-soat-module-specs), checking that no response is a server error and that
# every response matches the schema the spec gives its status. Starts `quarry serve`
# on a free loopback port with a fresh data directory, signs up, seeds the webhooks
# the {id} operations read and a delivery (a generation through `generate?wait=true`
# against a loopback upstream, to a webhook pointed at that upstream), runs
# schemathesis once with a fixed seed and bounded examples, stops the server.
#
# No request leaves the machine: the only webhook events fire while seeding (to the
# loopback upstream); a fuzzed redelivery goes to the seeded webhook, which no fuzzed
# PUT changes (PUT has a webhook of its own), and a fuzzed webhook gets no events.
#
# Environment: ST_BIN (default target/debug/quarry), QUARRY_CACHE (the venv's home),
# ST_MAX_EXAMPLES (default 8), ST_SEED (default 1; "random" for a new one),
# ST_TIME_LIMIT (seconds for the run, default 60).
set -euo pipefail
ST_TIME_LIMIT="${ST_TIME_LIMIT:-60}"
source "$(dirname "$0")/common.sh"
st_serve 2 none

eval "$("$py" - "$base" "$here" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[2])
import seed
call, key = seed.account("schemathesis-webhooks@example.com")
up = seed.upstream()
ids = {"ST_KEY": key}
def hook(name, url="http://127.0.0.1:9/hook"):
    ids[name] = call("POST", "/api/v1/webhooks", {"name": name.lower(), "url": url, "events": ["*"]}, key)["id"]
hook("ST_WEBHOOK", up + "/hook")
hook("ST_WEBHOOK_PUT")
hook("ST_WEBHOOK_DOOMED")
aip = call("POST", "/api/v1/ai-providers", {"name": "seeded", "provider": "custom", "base_url": up, "default_model": "seeded"}, key)["id"]
agent = call("POST", "/api/v1/agents", {"ai_provider_id": aip, "name": "seeded"}, key)["id"]
call("POST", f"/api/v1/agents/{agent}/generate?wait=true", {"messages": [{"role": "user", "content": "hello"}]}, key)
deliveries = call("GET", f"/api/v1/webhook-deliveries?webhook_id={ids['ST_WEBHOOK']}", None, key)["data"]
assert deliveries, "the generation left no delivery"
ids["ST_DELIVERY"] = deliveries[0]["id"]
# Sent while the upstream listens (the worker polls every 200 ms).
for _ in range(100):
    data = call("GET", f"/api/v1/webhook-deliveries?webhook_id={ids['ST_WEBHOOK']}", None, key)["data"]
    if all(d["status"] != "pending" for d in data):
        break
    time.sleep(0.1)
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_WEBHOOK ST_WEBHOOK_PUT ST_WEBHOOK_DOOMED ST_DELIVERY
say "seeded webhook $ST_WEBHOOK, delivery $ST_DELIVERY"

status=0
say "spec soat-webhooks"
st_check soat_webhooks.toml "soat-webhooks.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
    --phases examples,coverage,fuzzing || status=1
st_finish "$status"
