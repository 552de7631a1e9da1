// Op calls and variant names (op_calls.h).
#include "op_calls.h"

#include <optional>

#include "comparison.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/op_library.h"

namespace loom::conform {

using dispatch::Dispatcher;

std::string op_name_of(std::string_view schema) {
  return std::string(schema.substr(0, schema.find('(')));
}

// As inplace_schema / out_schema in ops/src/structured_schemas.cc.
VariantNames variant_names(const std::string& op) {
  const size_t dot = op.find('.', op.find("::") + 2);
  const std::string base = op.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "" : op.substr(dot + 1);
  return {base + "_" + (overload.empty() ? "" : "." + overload),
          base + "." + (overload.empty() || overload == "Tensor" ? "out" : overload + "_out")};
}

bool is_defined(const std::string& op) {
  std::optional<dispatch::OperatorHandle> h = Dispatcher::instance().find(op);
  return h && h->is_defined();
}

bool is_variant_defined(const std::string& op, const std::string& variant) {
  if (!is_defined(variant)) return false;
  const dispatch::FunctionSchema a = Dispatcher::instance().find_defined(op).schema();
  const dispatch::FunctionSchema b = Dispatcher::instance().find_defined(variant).schema();
  if (b.arguments.size() < a.arguments.size()) return false;
  for (size_t i = 0; i < a.arguments.size(); ++i) {
    if (!(a.arguments[i].type == b.arguments[i].type)) return false;
  }
  return true;
}

std::vector<Value> run(const std::string& op, const Built& b, const Kwargs& extra) {
  Kwargs kwargs = b.kwargs;
  kwargs.insert(kwargs.end(), extra.begin(), extra.end());
  manual_seed(kSampleSeed);
  std::vector<Value> results = call(op, b.args, kwargs);
  // An op that returns nothing (the in-place foreach ops) is judged by what it writes.
  const dispatch::FunctionSchema schema = Dispatcher::instance().find_defined(op).schema();
  if (schema.returns.empty()) {
    for (size_t i = 0; i < schema.arguments.size() && i < b.args.size(); ++i) {
      const std::optional<dispatch::AliasInfo>& alias = schema.arguments[i].alias;
      if (alias && alias->is_write) results.push_back(b.args[i]);
    }
  }
  return results;
}

std::vector<Tensor> tensors_of(const std::vector<Value>& results) {
  std::vector<Tensor> out;
  for (const Value& v : results) {
    for (const Tensor& t : tensors_in(v)) out.push_back(t);
  }
  return out;
}

std::vector<Tensor> run_out(const std::string& out_op, const Built& b,
                            const std::vector<Tensor>& like, Layout layout, Device device,
                            std::string& failure) {
  const Device target = layout == Layout::Meta ? Device{kMeta, -1} : device;
  Kwargs kwargs;
  std::vector<Tensor> outs;
  for (const dispatch::Argument& a :
       Dispatcher::instance().find_defined(out_op).schema().arguments) {
    if (!a.alias || !a.alias->is_write || outs.size() >= like.size()) continue;
    const Tensor& l = like[outs.size()];
    const std::vector<int64_t> sizes(l.sizes().begin(), l.sizes().end());
    outs.push_back(layout == Layout::NonContiguous
                       ? non_contiguous_empty(sizes, l.dtype(), target)
                       : empty(sizes, TensorOptions().dtype(l.dtype()).device(target)));
    kwargs.emplace_back(a.name, outs.back());
  }
  std::vector<Tensor> returned = tensors_of(run(out_op, b, kwargs));
  for (size_t i = 0; i < returned.size(); ++i) {
    if (i >= outs.size() || returned[i].impl() != outs[i].impl()) {
      failure = str_cat(out_op, " returned a tensor other than its out");
    }
  }
  return outs;
}

bool inplace_applies(const std::string& inplace, const Built& b,
                     const std::vector<Tensor>& expected) {
  return is_defined(inplace) && !b.args.empty() && b.args[0].is_tensor() && expected.size() == 1 &&
         describe(b.args[0].to_tensor()) == describe(expected[0]);
}

}  // namespace loom::conform
