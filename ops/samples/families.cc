// The sample families the build finds (sample_families.inc, Note [Op families as data])
// and their union, check names and which samples are quantized (Note [Op samples] in
// loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {

#define LOOM_FAMILY(family) std::span<const OpSample> family##_samples();
#include "sample_families.inc"
#undef LOOM_FAMILY

std::string_view check_name(Check check) {
  switch (check) {
    case Check::Meta:
      return "meta";
    case Check::Variants:
      return "variants";
    case Check::Strided:
      return "strided";
  }
  return "?";
}

bool has_quantized_tensors(const OpSample& sample) {
  auto quantized = [](const SampleArg& a) {
    if (auto* spec = std::get_if<TensorSpec>(&a)) return is_quantized(spec->dtype);
    if (auto* list = std::get_if<std::vector<TensorSpec>>(&a)) {
      for (const TensorSpec& spec : *list) {
        if (is_quantized(spec.dtype)) return true;
      }
    }
    return false;
  };
  for (const SampleArg& a : sample.args) {
    if (quantized(a)) return true;
  }
  for (const auto& kv : sample.kwargs) {
    if (quantized(kv.second)) return true;
  }
  return false;
}

std::span<const SampleFamily> sample_families() {
  static const std::vector<SampleFamily> families = {
#define LOOM_FAMILY(family) {#family, family##_samples()},
#include "sample_families.inc"
#undef LOOM_FAMILY
  };
  return families;
}

std::span<const OpSample> all_samples() {
  static const std::vector<OpSample> all = [] {
    std::vector<OpSample> v;
    for (const SampleFamily& f : sample_families())
      v.insert(v.end(), f.samples.begin(), f.samples.end());
    return v;
  }();
  return all;
}

}  // namespace loom::ops
