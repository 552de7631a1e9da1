#!/usr/bin/env bash
# Installs the SDK from a loom build tree into a private prefix, then builds the example
# vendor plugin (sdk/examples/vendor_backend) out of tree against it, exactly as a vendor
# would: find_package(LoomSDK) and nothing else of loom.
#   ci/build-sdk-example.sh SOURCE_DIR BUILD_DIR
# Output: BUILD_DIR/example-plugin/lib/libloom_plugin_npu_sim.so
set -euo pipefail
src=$1
build=$2
prefix="$build/sdk-install"
rm -rf "$prefix" "$build/example-plugin"
cmake --install "$build/sdk" --prefix "$prefix" >/dev/null
cmake -S "$src/sdk/examples/vendor_backend" -B "$build/example-plugin/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_LIBRARY_OUTPUT_DIRECTORY="$build/example-plugin/lib" >/dev/null
cmake --build "$build/example-plugin/build"
test -f "$build/example-plugin/lib/libloom_plugin_npu_sim.so"
echo "example plugin built out of tree: $build/example-plugin/lib/libloom_plugin_npu_sim.so"
