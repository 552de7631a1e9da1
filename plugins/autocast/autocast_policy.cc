// The default autocast policy and the lookup of a backend's overrides (autocast_policy.h).
#include "autocast_policy.h"

#include <string_view>
#include <unordered_map>

namespace loom::autocast {
namespace {

// PyTorch's lists (its CUDA autocast's), by loom op name.
// clang-format off
constexpr const char* kLower[] = {
    "mm", "bmm", "addmm", "addmv", "baddbmm", "matmul", "linear", "einsum", "mv", "dot",
    "conv1d", "conv2d", "conv3d", "convolution", "conv_transpose1d", "conv_transpose2d",
    "_conv2d_activation", "_addmm_activation", "prelu", "lstm_cell", "gru_cell"};
constexpr const char* kFloat32[] = {
    "acos", "asin", "cosh", "sinh", "tan", "exp", "exp2", "expm1", "log", "log10", "log2",
    "log1p", "reciprocal", "rsqrt", "pow", "softplus", "softmax", "log_softmax", "_softmax",
    "_log_softmax", "layer_norm", "native_layer_norm", "group_norm", "native_group_norm",
    "batch_norm", "instance_norm", "norm", "linalg_vector_norm", "cdist", "logsumexp", "sum",
    "prod", "cumsum", "cumprod", "nll_loss", "cross_entropy_loss", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy_with_logits",
    "upsample_bilinear2d", "upsample_nearest2d", "grid_sampler_2d"};
constexpr const char* kPromote[] = {
    "cat", "stack", "where", "index_put", "index_copy", "scatter_add", "addcmul", "addcdiv",
    "atan2", "lerp"};
// clang-format on

const std::unordered_map<std::string, LoomAutocastCast>& default_table() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, LoomAutocastCast>();
    for (const char* op : kLower) (*t)[std::string("loom::") + op] = LOOM_AUTOCAST_LOWER;
    for (const char* op : kFloat32) (*t)[std::string("loom::") + op] = LOOM_AUTOCAST_FLOAT32;
    for (const char* op : kPromote) (*t)[std::string("loom::") + op] = LOOM_AUTOCAST_PROMOTE;
    return t;
  }();
  return *table;
}

}  // namespace

std::string base_name(const std::string& op) {
  const size_t ns = op.find("::");
  const size_t dot = op.find('.', ns == std::string::npos ? 0 : ns + 2);
  return dot == std::string::npos ? op : op.substr(0, dot);
}

bool writes_its_arguments(const std::string& op) {
  const std::string base = base_name(op);
  const std::string overload = op.size() > base.size() ? op.substr(base.size() + 1) : "";
  return base.ends_with("_") || overload == "out" || overload.ends_with("_out");
}

LoomAutocastCast default_cast(const std::string& op) {
  const auto& table = default_table();
  auto it = table.find(base_name(op));
  return it == table.end() ? LOOM_AUTOCAST_KEEP : it->second;
}

int32_t override_cast(const LoomAutocastPolicyTable* table, const std::string& op) {
  if (table == nullptr || table->overrides == nullptr) return -1;
  const std::string base = base_name(op);
  int32_t by_base = -1;
  for (size_t i = 0; i < table->num_overrides; ++i) {
    const LoomAutocastOverride& o = table->overrides[i];
    if (o.op == nullptr) continue;
    if (op == o.op) return o.cast;
    if (base == o.op) by_base = o.cast;
  }
  return by_base;
}

}  // namespace loom::autocast
