#!/usr/bin/env bash
# The research benchmark in one command: builds quarry (debug unless --release), checks the
# harness on its canned results, then runs bench/research/run.py, which starts the binary
# with the local model on a temporary data directory, indexes the sample corpora and
# SciFact's 500-document subset, and puts every question of bench/research/questions.json
# through POST /v1/collections/{id}/research. Results: bench/results/research-<time>.md/.json.
#
#   bench/research/run.sh [--release] [--limit N] [--deep N] [--again N] [--timeout 600] [--plain] [--nice N]
#                         [--corpora legal,medical,archive,scifact] [--embedder NAME] [--port 4475]
#
# Bounded: --limit N questions (corpora interleaved), --timeout seconds per question.
# On 2 shared cores a fast research on the local model took 6-7 minutes (2026-12-01, load 6-12).
set -euo pipefail
cd "$(dirname "$0")/../.."
command="bench/research/run.sh${*:+ $*}"
profile=debug
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --release) profile=release; shift ;;
        *) args+=("$1"); shift ;;
    esac
done
[ -f models/llm/.installed ] || { echo "the local model is not installed: run ops/setup" >&2; exit 1; }
if [ "$profile" = release ]; then
    cargo build --release --locked -p quarry --bin quarry >&2
else
    cargo build --locked -p quarry --bin quarry >&2
fi
python3 -m unittest discover -s bench/research -p 'test_*.py' >&2
exec python3 bench/research/run.py --binary "target/$profile/quarry" --command "$command" "${args[@]}"
