// The loom side of the safetensors interop test (safetensors_interop.py):
//   safetensors_tool write FILE   writes the tensors the script expects
//   safetensors_tool check FILE   reads the script's file and checks its values
// Exit 0 when all is well; a message and 1 otherwise.
#include <algorithm>
#include <cstdio>
#include <string>

#include "loom/loom.h"
#include "loom/safetensors.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: safetensors_tool write|check FILE\n");
    return 2;
  }
  try {
    loom::Runtime::load_default();
    const std::string mode = argv[1], path = argv[2];
    if (mode == "write") {
      loom::save_safetensors(
          path,
          {{"weight",
            loom::arange(6, loom::TensorOptions().dtype(loom::ScalarType::Float32)).view({2, 3})},
           {"steps", loom::tensor({int64_t{-1}, int64_t{5}})},
           {"half", loom::full({2}, 0.5, loom::TensorOptions().dtype(loom::ScalarType::Float64))},
           {"transposed", loom::arange(6).view({2, 3}).t()}},
          {{"writer", "loom"}});
      return 0;
    }
    loom::SafetensorsFile f = loom::load_safetensors(path);
    // Writers order the bytes as they like (the package groups by alignment): by name.
    std::sort(f.tensors.begin(), f.tensors.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string seen;
    for (const auto& [name, t] : f.tensors) {
      seen += name + ":" + std::string(loom::scalar_type_name(t.dtype())) + ":" +
              loom::shape_to_string(t.sizes()) + "=";
      loom::Tensor flat = t.contiguous().view({-1});
      for (int64_t i = 0; i < flat.numel(); ++i) {
        seen +=
            std::to_string(flat.select(0, i).to(loom::ScalarType::Float64).item<double>()) + ",";
      }
      seen += ";";
    }
    const std::string expected =
        "b:bool:[2]=1.000000,0.000000,;"
        "h:float16:[2]=1.000000,1.000000,;"
        "idx:int64:[3]=1.000000,2.000000,3.000000,;"
        "weight:float32:[2, 3]=0.000000,1.000000,2.000000,3.000000,4.000000,5.000000,;";
    if (seen != expected || f.metadata.at("who") != "python") {
      std::fprintf(stderr, "read   %s\nwanted %s\n", seen.c_str(), expected.c_str());
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
