// The list of sample families and their union, and check names (Note [Op samples] in
// loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {

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

std::span<const SampleFamily> sample_families() {
  static const std::vector<SampleFamily> families = {
      {"copy", copy_samples()},
      {"creation", creation_samples()},
      {"unary", unary_samples()},
      {"binary", binary_samples()},
      {"ternary", ternary_samples()},
      {"reduction", reduction_samples()},
      {"scan", scan_samples()},
      {"linalg", linalg_samples()},
      {"conv", conv_samples()},
      {"pool", pool_samples()},
      {"random", random_samples()},
      {"view", view_samples()},
      {"shape", shape_samples()},
      {"indexing", indexing_samples()},
      {"sort", sort_samples()},
      {"softmax", softmax_samples()},
      {"normalization", normalization_samples()},
      {"loss", loss_samples()},
      {"embedding", embedding_samples()},
      {"rnn", rnn_samples()},
      {"foreach", foreach_samples()},
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
