#!/usr/bin/env bash
# Refreshes the GraphiQL IDE the binary serves at /graphql (api/assets/graphiql), from the
# npm registry at pinned versions checked against their published integrity. The files
# are committed so the binary serves them without any network: air-gapped and sovereign
# sites load nothing from a CDN. Run it only to move to new versions.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A INTEGRITY=(
  [graphiql@3.9.0]="sha512-rJYFlHdBbug9+YbFSwRVvgfPjCayC7wHecZkx/qB4XLuQPFQZw/yB9pmHFtOJV6RiNBBHro3u1GdocKa3YcGRA=="
  [react@18.3.1]="sha512-wS+hAgJShR0KhEvPJArfuPVN1+Hz1t0Y6n5jLrGQbkb4urgPE/0Rve+1kMB1v/oWgHgm4WIcV+i7F2pTVj+2iQ=="
  [react-dom@18.3.1]="sha512-5m4nQKp+rZRb09LNH59GM4BxTh9251/ylbKIbpe7TpGxfJ+9kv6BLkLBXIjjspbgbnIBNqlI23tRnTWT0snUIw=="
)
out=api/assets/graphiql
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for pkg in "${!INTEGRITY[@]}"; do
  tarball=$(cd "$work" && npm pack --silent "$pkg")
  actual="sha512-$(openssl dgst -sha512 -binary "$work/$tarball" | base64 -w0)"
  if [[ "$actual" != "${INTEGRITY[$pkg]}" ]]; then
    echo "$pkg: integrity $actual is not the pinned ${INTEGRITY[$pkg]}" >&2
    exit 1
  fi
  mkdir -p "$work/${pkg%@*}"
  tar xzf "$work/$tarball" -C "$work/${pkg%@*}"
done

cp "$work/graphiql/package/graphiql.min.js" "$work/graphiql/package/graphiql.min.css" "$out/"
cp "$work/react/package/umd/react.production.min.js" "$out/"
cp "$work/react-dom/package/umd/react-dom.production.min.js" "$out/"
cp "$work/graphiql/package/LICENSE" "$out/LICENSE-graphiql"
cp "$work/react/package/LICENSE" "$out/LICENSE-react"
cp "$work/react-dom/package/LICENSE" "$out/LICENSE-react-dom"
echo "GraphiQL assets written to $out."
