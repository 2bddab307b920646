#!/usr/bin/env bash
# Schemathesis against the real server: SOAT v0.28's documents operations
# (soat-v0.28/documents.yaml, bundled into tests/data/specs/soat-documents.bundled.openapi.json
# by `ops/bundle-soat-module-specs SPECS tests/data/specs soat-v0.28/documents`),
# checking that no response is a server error and that every response matches the
# schema the spec gives its status (the spec does not list every 400 Quarry answers, so
# status_code_conformance is not run). Starts `quarry serve` with no embedder (documents
# are indexed for keyword search; the write path is the same), signs up, seeds a
# document per operation that changes or ends one (soat_documents.toml points the {id}
# operations at them), runs schemathesis once with a fixed seed and bounded examples.
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
call, key = seed.account("schemathesis-documents@example.com")
ids = {"ST_KEY": key}
def doc(name, path, text):
    ids[name] = call("POST", "/api/v1/documents", {"path": path, "content": text, "tags": {"seeded": "yes"}}, key)["id"]
doc("ST_DOC", "/seeded/read.txt", "The customer prefers email.")
doc("ST_DOC_PATCH", "/seeded/change.txt", "Invoices go to finance.")
doc("ST_DOC_TAGS", "/seeded/tags.txt", "Ships on Fridays.")
doc("ST_DOC_INGEST", "/seeded/again.txt", "Returns take thirty days.")
doc("ST_DOC_DOOMED", "/seeded/gone.txt", "Closed on Sundays.")
print(" ".join(f"{k}={v}" for k, v in ids.items()))
PY
)"
export ST_DOC ST_DOC_PATCH ST_DOC_TAGS ST_DOC_INGEST ST_DOC_DOOMED
say "seeded document $ST_DOC"

status=0
say "spec soat-documents"
st_check soat_documents.toml "soat-documents.bundled.openapi.json" "${ST_MAX_EXAMPLES:-8}" \
    --phases examples,coverage,fuzzing || status=1
st_finish "$status"
