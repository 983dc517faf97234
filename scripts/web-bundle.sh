#!/usr/bin/env bash
# Builds the portal and console bundle (api/web → api/web/dist, embedded in the binary)
# from the committed lockfile: npm ci, codegen from schema/graphql/schema.graphql, type
# check, unit tests, vite build. The bundle is committed, so `cargo build` and the demo
# need no Node.js; run this after changing api/web or the GraphQL schema, and commit
# what it writes. With --check (CI) it fails when the committed bundle or generated
# client differs from what the sources build.
set -euo pipefail
cd "$(dirname "$0")/../api/web"
npm ci --no-audit --no-fund --loglevel=error
npm run build
npm test
if [ "${1:-}" = "--check" ]; then
  cd ..
  if ! git diff --exit-code --stat -- web/dist web/src; then
    echo "api/web/dist or the generated client is not what its sources build:" >&2
    echo "run scripts/web-bundle.sh and commit the result." >&2
    exit 1
  fi
  untracked=$(git ls-files --others --exclude-standard -- web/dist web/src)
  if [ -n "$untracked" ]; then
    echo "the build wrote files that are not committed: $untracked" >&2
    exit 1
  fi
fi
