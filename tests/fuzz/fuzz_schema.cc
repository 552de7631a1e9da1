// libFuzzer target for the schema parser (LOOM_BUILD_FUZZERS=ON, clang): any text either
// parses or throws loom::Error, and a parsed schema's canonical text parses back into an
// equal schema.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "loom/core/error.h"
#include "loom/dispatcher/function_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  loom::dispatch::FunctionSchema schema;
  try {
    schema = loom::dispatch::parse_schema(text);
  } catch (const loom::Error&) {
    return 0;  // refused with a clear error: the expected outcome for most inputs
  }
  // Canonical text is a promise (function_schema.h): breaking it is a bug, so abort and
  // let libFuzzer keep the input.
  if (!(loom::dispatch::parse_schema(schema.to_string()) == schema)) std::abort();
  return 0;
}
