#!/usr/bin/env bash
# Schemathesis against the real server: SOAT v0.28's chats and embeddings specs (issue
# 36; chats.yaml and embeddings.yaml bundled into
# tests/data/specs/soat-{chats,embeddings}.bundled.openapi.json by
# `ops/bundle-soat-module-specs SPECS tests/data/specs chats embeddings`), checking that
# no response is a server error and that every response matches the schema the spec
# gives its status (the specs do not list every 400 Quarry answers, so
# status_code_conformance is not run). Starts `quarry serve` with the default embedder
# (embeddings need one), signs up, seeds an AI provider on a loopback upstream
# (seed.upstream) and a chat per {chat_id} operation (soat_chats.toml points them at
# the chats), runs schemathesis once per spec with a fixed seed and bounded examples.
#
# Environment: as soat_sessions.sh's.
set -euo pipefail
ST_TIME_LIMIT="${ST_TIME_LIMIT:-60}"
source "$(dirname "$0")/common.sh"
st_serve 2 multilingual-e5-small

eval "$("$py" - "$base" "$here" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import seed
call, key = seed.account("schemathesis-chats@example.com")
aip = call("POST", "/api/v1/ai-providers", {"name": "seeded", "provider": "custom", "base_url": seed.upstream(), "default_model": "seeded"}, key)["id"]
ids = {"ST_KEY": key, "ST_AIP": aip}
def chat(name):
    ids[name] = call("POST", "/api/v1/chats", {"ai_provider_id": aip, "name": name, "instructions": "Be brief."}, key)["id"]
chat("ST_CHAT")
chat("ST_CHAT_DOOMED")
# The seeded chat answers, so a completion's 200 is in the run's reach too.
done = call("POST", "/api/v1/chat/completions", {"chat_id": ids["ST_CHAT"], "messages": [{"role": "user", "content": "hi"}]}, key)
assert done["choices"][0]["message"]["content"] == "seeded answer", done
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_AIP ST_CHAT ST_CHAT_DOOMED
say "seeded chat $ST_CHAT on provider $ST_AIP"

status=0
for module in chats embeddings; do
    say "spec soat-$module"
    st_check soat_chats.toml "soat-$module.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
        --phases examples,coverage,fuzzing || status=1
done
st_finish "$status"
