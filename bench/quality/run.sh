#!/usr/bin/env bash
# Retrieval quality through the HTTP API on the full BEIR sets: starts one release quarry
# loading every embedder asked for on a fresh data directory, creates the evaluation account on a plan whose
# limits are raised (the operator plan in bench/evaluation-plan.toml, assigned with the
# operator CLI), indexes each set (quarry-quality adds the corpus through `quarry ingest`'s
# code, quarry::ingest_cli, so each record's _id is its metadata.source_id) and prints
# nDCG@10, recall@50 and MRR@10 per mode beside the published references and beside bm25s
# (PyPI; k1 1.2, b 0.75, English stopwords and stemming) run on the same data in the same
# run, once per embedder, each set in a collection created with that embedder
# (settings.embedder). Results land in bench/results/.
#
#   bench/quality/run.sh [--embedder all-MiniLM-L6-v2|multilingual-e5-small|none|default]... [--port 4471]
#                        [--expand off|on|both]  (both: every mode with expand false and
#                                              true on the same collection, and the change)
#                        [--dataset DIR]...   (any BEIR-layout directory; default: SciFact,
#                                              NFCorpus keyword-only, and scifact-long, from
#                                              $EVAL_DIR, default ../shared/eval from the
#                                              repository root)
#
# scifact-long is built in the run by long_queries.py (seeded): each judged SciFact claim
# as a long request of 30-60 words with one or two words in double quotes; bm25s gets
# the same text, quotes included. `--embedder none` runs the server without an embedder
# and scores the keyword list alone (no model loaded: the fast way to check keyword ranking).
# `--embedder default` runs the server on the product's own embedder settings and creates
# each collection naming none: the model the server chooses for the set's language (alone:
# it cannot share a server whose embedders another run sets).
set -euo pipefail
cd "$(dirname "$0")/../.."
command="bench/quality/run.sh${*:+ $*}"
embedders=(all-MiniLM-L6-v2 multilingual-e5-small)
chosen=()
datasets=()
port=4471
expand=off
while [ $# -gt 0 ]; do
    case "$1" in
        --embedder) chosen+=("$2"); shift 2 ;;
        --dataset) datasets+=("$2"); shift 2 ;;
        --port) port=$2; shift 2 ;;
        --expand) expand=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
[ ${#chosen[@]} -gt 0 ] && embedders=("${chosen[@]}")
cargo build --release --locked -p quarry -p quarry-bench --bin quarry --bin quarry-quality >&2

# The peer: bm25s in its own venv, from PyPI only, every wheel pinned by hash.
venv=${QUARRY_CACHE:-$HOME/.cache/quarry}/venv-bm25s
lock=bench/quality/requirements.lock
if ! cmp -s "$lock" "$venv/installed.lock" 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --no-deps --require-hashes --only-binary=:all: -r "$lock" >&2
    cp "$lock" "$venv/installed.lock"
fi
peer_scores() { # dataset → a JSON file of bm25s's scores on it
    local out=$work/peer-$(basename "$1").json
    "$venv/bin/python" bench/quality/bm25s_peer.py "$1" > "$out"
    echo "$out"
}

# One server loads every embedder asked for; each run's collection chooses its own
# (settings.embedder, through quarry-quality --embedder), so the models are compared on
# the same server, data directory and plan.
work=$(mktemp -d)
trap 'kill "${pid:-0}" 2>/dev/null || true; wait "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
# "none" runs keyword-only collections (fast: nothing is embedded); it loads no model.
models=(); for e in "${embedders[@]}"; do [ "$e" != none ] && [ "$e" != default ] && models+=("$e"); done
if [[ " ${embedders[*]} " == *" default "* ]] && [ ${#embedders[@]} -gt 1 ]; then
    echo "--embedder default runs alone (the server keeps its own embedder settings)" >&2; exit 2
fi
{
    if [ "${embedders[*]}" = default ]; then
        : # the compiled defaults: embedder, english_embedder, embedders
    elif [ ${#models[@]} -eq 0 ]; then
        echo 'embedder = "none"'
    else
        loaded=$(printf '"%s", ' "${models[@]}")
        echo "embedder = \"${models[0]}\""; echo "embedders = [${loaded%, }]"
    fi
    cat bench/evaluation-plan.toml
} > "$work/quarry.toml"
key=$(target/release/quarry accounts create --config "$work/quarry.toml" --data "$work/data" \
    --email evaluation@quarry.invalid --plan evaluation | sed -n 's/^api key (shown once): //p')
target/release/quarry serve --config "$work/quarry.toml" --data "$work/data" --listen "127.0.0.1:$port" 2> "$work/server.log" &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v1/health" > /dev/null && break; sleep 0.2; done
# The default sets: SciFact (every mode), NFCorpus (keyword: its text is pre-processed)
# and SciFact's claims rewritten as long requests (keyword; bench/quality/long_queries.py).
if [ ${#datasets[@]} -eq 0 ]; then
    eval_dir=${EVAL_DIR:-../shared/eval}
    python3 bench/quality/long_queries.py "$eval_dir/scifact" "$work/scifact-long"
    runs=("$eval_dir/scifact all" "$eval_dir/nfcorpus-test-preproc keyword" "$work/scifact-long keyword")
else
    runs=(); for d in "${datasets[@]}"; do runs+=("$d all"); done
fi
for embedder in "${embedders[@]}"; do
    out=bench/results/quality-$embedder-$(date -u +%F-%H%M%S).md
    {
        echo "# Retrieval quality, $embedder ($(date -u +%F))"
        echo
        echo "Command: \`$command\` (one server loading ${embedders[*]};"
        if [ "$embedder" = default ]; then
            echo "each collection created naming no embedder: the server's choice for its language). The evaluation account is on"
        else
            echo "each collection created with settings.embedder = $embedder). The evaluation account is on"
        fi
        echo "the operator plan \`evaluation\` (limits raised), assigned with \`quarry accounts create --plan\`."
        echo
    } > "$out"
    all_modes=keyword,semantic,hybrid
    chosen_embedder=(--embedder "$embedder")
    if [ "$embedder" = none ]; then all_modes=keyword; chosen_embedder=(); fi
    if [ "$embedder" = default ]; then chosen_embedder=(); fi
    for r in "${runs[@]}"; do
        read -r set modes <<< "$r"
        [ "$modes" = all ] && modes=$all_modes
        target/release/quarry-quality --server "http://127.0.0.1:$port" --key "$key" "${chosen_embedder[@]}" \
            --dataset "$set" --modes "$modes" --expand "$expand" --concurrency 8 --peer "$(peer_scores "$set")" >> "$out"
    done
    cat "$out"
    echo "written to $out" >&2
done
kill "$pid"; wait "$pid" 2>/dev/null || true
