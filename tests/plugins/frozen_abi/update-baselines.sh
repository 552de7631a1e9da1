#!/usr/bin/env bash
# Rewrites frozen_abi/<minor>/conform-baseline.json from a `loom conform` run on each
# frozen plugin (Note [Frozen plugins] in tests/host/frozen_plugins_test.cc): the PASS
# results only, which are what --baseline compares (a result that passed must not fail).
# Run after a change that makes a frozen plugin pass more, and commit the files.
#   tests/plugins/frozen_abi/update-baselines.sh [BUILD_DIR]   (default: build)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "${1:-build}" && pwd)"
for dir in "$here"/1.*/; do
  minor="$(basename "$dir")"
  tag="acme_${minor//./_}"
  report="$(mktemp -d)"
  LOOM_PLUGIN_PATH="$build/lib/loom/plugins" "$build/bin/loom" conform \
    --manifest "$build/conform/$tag.textproto" --backend "$tag" --jobs 2 \
    --report "$report" >/dev/null || true
  python3 - "$report/report.json" "$dir/conform-baseline.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
keep = ("op", "dtype", "sample", "check", "status")
passed = [{k: r[k] for k in keep if k in r} for r in report["results"] if r["status"] == "PASS"]
with open(sys.argv[2], "w") as out:  # one result a line, so a diff shows what changed
    out.write('{"backend": %s, "results": [\n' % json.dumps(report["backend"]))
    out.write(",\n".join(json.dumps(r, sort_keys=True) for r in passed))
    out.write("\n]}\n")
print(f"{sys.argv[2]}: {len(passed)} passing results")
PY
  rm -rf "$report"
done
