// The autograd plugin: claims the Autograd key for every backend (its kernel records the
// graph, Note [Recording] in record.cc) and publishes the "loom.autograd" table through
// which frontends reach tensors' gradients, backward, hooks and anomaly mode
// (api_table.cc). Built like a vendor's plugin: the SDK alone.
#include <algorithm>
#include <string>
#include <vector>

#include "api_table.h"
#include "graph.h"
#include "loom/sdk/plugin.hpp"
#include "record.h"

namespace loom::autograd {
namespace {

// The in-place variant's name of "ns::name.overload": "ns::name_.overload".
std::string inplace_name(const std::string& op) {
  size_t dot = op.find('.', op.find("::") + 2);
  if (dot == std::string::npos) return op + "_";
  return op.substr(0, dot) + "_" + op.substr(dot);
}

void register_formula_kernels(sdk::Registrar& r) {
  build_formula_table();
  std::vector<std::string> names;
  for (const Formula& f : all_formulas()) {
    names.push_back(f.op);
    recorded_ops().push_back({f.op, f.differentiable});
  }
  for (const Formula& f : all_formulas()) {
    const LoomOperator* op = r.op(f.op);  // throws for a formula naming no op
    const OpInfo& info = op_info(op);
    r.impl(f.op, LOOM_KEY_AUTOGRAD, &autograd_kernel, const_cast<OpInfo*>(&info));
    // The in-place variant shares the formula unless it has its own.
    std::string inplace = inplace_name(f.op);
    if (std::find(names.begin(), names.end(), inplace) != names.end()) continue;
    const LoomOperator* inplace_op = nullptr;
    sdk::check(sdk::host().find_op(inplace.c_str(), &inplace_op));
    if (inplace_op == nullptr) continue;
    OpInfo& inplace_info = const_cast<OpInfo&>(op_info(inplace_op));
    inplace_info.formula = &f;
    r.impl(inplace.c_str(), LOOM_KEY_AUTOGRAD, &autograd_kernel, &inplace_info);
    recorded_ops().push_back({inplace, f.differentiable});
  }
}

void init(sdk::Registrar& r) {
  claim_meta_slot();
  recorded_ops().clear();
  register_formula_kernels(r);
  r.fallback(LOOM_KEY_AUTOGRAD, &autograd_kernel);
  publish_api_table();
}

}  // namespace
}  // namespace loom::autograd

LOOM_PLUGIN("autograd", "0.1.0", loom::autograd::init)
