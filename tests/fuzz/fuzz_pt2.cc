// libFuzzer target for the .pt2 reader (LOOM_BUILD_FUZZERS=ON, clang). The input is an
// archive's three parts separated by NUL bytes: models/model.json, then
// data/weights/model_weights_config.json, then the bytes every data/weights/weight_<i>
// holds; the reader sees them as the entries of a .pt2 (graph/src/pt2_reader.h), so the
// mutations reach the JSON and the weights rather than dying on a zip's CRC. Whatever
// the input, the reader builds a valid program or throws loom::Error. The zip layer
// itself is libzip's, checked by the tests' damaged archives.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "loom/core/error.h"
#include "loom/ops/standard_library.h"
#include "pt2_reader.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  loom::ops::load_standard_library();  // the operators nodes name; no plugin needed
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  size_t start = 0;
  while (parts.size() < 2) {
    size_t nul = input.find('\0', start);
    if (nul == std::string::npos) break;
    parts.push_back(input.substr(start, nul - start));
    start = nul + 1;
  }
  parts.push_back(input.substr(std::min(start, input.size())));
  std::vector<std::pair<std::string, std::string>> entries = {{"m/archive_format", "pt2"},
                                                              {"m/byteorder", "little"}};
  entries.emplace_back("m/models/model.json", parts[0]);
  if (parts.size() > 1) entries.emplace_back("m/data/weights/model_weights_config.json", parts[1]);
  if (parts.size() > 2) {
    for (int i = 0; i < 8; ++i)
      entries.emplace_back("m/data/weights/weight_" + std::to_string(i), parts[2]);
  }
  try {
    loom::ExportedProgram program =
        loom::read_exported_program(loom::graph::EntryMap("<fuzz>.pt2", std::move(entries)));
    program.graph().validate();  // what the reader returns is a well-formed graph
  } catch (const loom::Error&) {
  }
  return 0;
}
