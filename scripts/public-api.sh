#!/usr/bin/env bash
# The public API of granary-archive (the crate a game ships), checked against the lists in
# api/: one line per public item, trait implementation, field and variant, in each feature
# tier a game may build. A change to the surface shows as a diff here; if it is on purpose,
# run `scripts/public-api.sh --bless` and commit the new lists with the change.
#
# rustdoc's JSON output is unstable: RUSTC_BOOTSTRAP=1 lets the stable toolchain write it.
# Cargo rebuilds whatever was built without that variable, so by default the documentation
# goes into its own folder, target/api (about 30 s from cold); `.ci/run`, where this is the
# last step and nothing is built after it, sets API_TARGET_DIR=target to reuse the main
# folder's dependencies (about 13 s). The lister is tools/tidy/src/api.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
bless=0
[ "${1:-}" = "--bless" ] && bless=1
cargo build -q --locked -p granary-tidy --bin public-api
status=0
dir=${API_TARGET_DIR:-target/api}
mkdir -p target/api
# name | cargo features
while read -r name features; do
  flags=(--no-default-features)
  [ -n "$features" ] && flags+=(--features "$features")
  RUSTC_BOOTSTRAP=1 cargo rustdoc -q --locked -p granary-archive --lib "${flags[@]}" --target-dir "$dir" \
    -- -Zunstable-options --output-format json 2>/dev/null
  target/debug/public-api "$dir/doc/granary_archive.json" > "target/api/granary-archive.$name.txt"
  if [ "$bless" = 1 ]; then
    cp "target/api/granary-archive.$name.txt" "api/granary-archive.$name.txt"
    echo "api/granary-archive.$name.txt: $(wc -l < "api/granary-archive.$name.txt") lines"
  elif ! diff -u "api/granary-archive.$name.txt" "target/api/granary-archive.$name.txt"; then
    echo "public-api: granary-archive ($name) differs from api/granary-archive.$name.txt;" \
      "if that is on purpose, run scripts/public-api.sh --bless and commit the lists" >&2
    status=1
  fi
done <<'TIERS'
reader
vulkan vulkan
full vulkan,capture,write,sign,serde
TIERS
exit $status
