#!/usr/bin/env bash
# Proof of isolation (docs/architecture.md §1, Layers and dependencies): in-tree plugins
# include only sdk/ headers and their shared objects do not link the core or dispatcher
# libraries.
#   ci/check-plugin-isolation.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
status=0
bad_includes=$(grep -rnE '#[[:space:]]*include[[:space:]]*[<"](loom/(core|dispatcher|ops|runtime|loom)[/.]|.*\.\./(core|dispatcher|ops))' \
  "$src/plugins" "$src/tests/plugins" "$src/sdk/examples" || true)
if [ -n "$bad_includes" ]; then
  echo "plugins include core/dispatcher/ops headers (only sdk/ is allowed):"
  echo "$bad_includes"
  status=1
fi
count=0
while IFS= read -r so; do
  count=$((count + 1))
  if readelf -d "$so" | grep -qE 'NEEDED.*libloom(_core|_schema|_dispatcher|_ops|)\.so'; then
    echo "$so links a loom core library:"
    readelf -d "$so" | grep NEEDED
    status=1
  fi
done < <(find "$build/lib/loom" "$build/example-plugin/lib" -name 'libloom_plugin_*.so' \
           -type f 2>/dev/null | while read -r f; do readelf -h "$f" >/dev/null 2>&1 && echo "$f"; done)
if [ "$count" = 0 ]; then
  echo "no plugin shared objects found under $build/lib/loom"
  status=1
fi
[ $status = 0 ] && echo "plugin isolation: $count plugin(s) checked, none includes or links the core"
exit $status
