#!/bin/sh
# The main job on the embedded default (local engines, LanceDB on disk, no key, no network):
# ingest the shared fixture documents into ./.effect-rag/db, then run a query that prints
# cited results. A second run skips every unchanged document.
set -u
cd "$(dirname "$0")/.."
SHARED="${EFFECT_RAG_SHARED:-../shared}"
# the command line runs from dist/: build it on a fresh clone
[ -f dist/bundle/effect-rag.js ] || npm run build >/dev/null || exit 1
node bin/effect-rag.js ingest "$SHARED/fixtures/docs"
status=$?
# Exit status 3 means "partial": the fixtures include encrypted and corrupt files on purpose.
# They are reported with their typed errors; everything else is stored.
if [ "$status" -ne 0 ] && [ "$status" -ne 3 ]; then exit "$status"; fi
node bin/effect-rag.js query --limit 5 "${1:-trace-based just-in-time compilation for dynamic languages}"
