#!/usr/bin/env bash
# Installs loom from a build tree into a private prefix, then builds and runs the example
# app (frontends/cpp/examples/app) out of tree against it, as an app would:
# find_package(Loom) and target_link_libraries(app Loom::loom), nothing else. The app runs
# from its own build directory, so the default manifest must find the installed plugins
# beside the loom libraries ($LIBDIR), not beside the executable.
#   ci/build-app-example.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
prefix="$build/app-install"
rm -rf "$prefix" "$build/example-app"
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$src/frontends/cpp/examples/app" -B "$build/example-app" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$build/example-app"
env -u LOOM_PLUGIN_PATH "$build/example-app/loom_app"
"$prefix/bin/loom" plugins >/dev/null
echo "example app built and run out of tree against $prefix"
