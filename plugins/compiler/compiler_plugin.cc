// The compiler plugin: captures op calls through a fallback on the Tracer key and builds
// fused kernels with the system C++ compiler. Apps reach it through loom::compile
// (loom/compile.h), which drives the extension table "loom.compiler"
// (loom/compiler_api.h). Built like a vendor's plugin: the SDK alone (plus xxHash).
#include <string>

#include "capture.h"
#include "cpp_codegen.h"
#include "fused_kernel.h"
#include "loom/compiler_api.h"
#include "loom/sdk/plugin.hpp"
#include "toolchain.h"

namespace loom::compiler {
namespace {

LoomError* visit_fusible_ops(void* ctx, LoomCompilerTextFn visit) {
  return sdk::catch_all([&] {
    if (visit == nullptr)
      throw sdk::Error("[compiler] visit_fusible_ops: the visit function is null");
    for (const std::string& op : fusible_ops()) visit(ctx, op.c_str());
  });
}

LoomError* describe_toolchain(void* ctx, LoomCompilerTextFn write) {
  return sdk::catch_all([&] {
    if (write == nullptr) throw sdk::Error("[compiler] toolchain: the write function is null");
    write(ctx, toolchain().describe().c_str());
  });
}

const LoomCompilerApi kApi = {
    sizeof(LoomCompilerApi), &capture_begin,     &capture_end,
    &build_kernel,           &visit_fusible_ops, &describe_toolchain,
};

void init(sdk::Registrar& r) {
  configure_threads();
  r.fallback(LOOM_KEY_TRACER, &capture_op);
  sdk::publish_extension(LOOM_COMPILER_EXTENSION_NAME, &kApi);
}

}  // namespace
}  // namespace loom::compiler

LOOM_PLUGIN("compiler", "0.1.0", loom::compiler::init)
