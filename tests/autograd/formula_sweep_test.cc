// The formula sweep: every differentiable op of the op library, gradient-checked on its
// samples (ops/samples/, Note [Op samples]) through the autograd plugin.
//
// Note [Formula sweep]
// ~~~~~~~~~~~~~~~~~~~~
// Driven by the op library, as the op sweep is. FormulaCoverage checks that every op of
// ops.def is one of: an op with a formula in the plugin (its Autograd entry is the
// plugin's kernel), an op marked not differentiable, or a decomposition whose Autograd
// entry is the decomposition (differentiated through its pieces); an op in none of these
// fails by name unless kPending lists it with the reason. Every op with a formula must
// have samples. FormulaSweep.Gradients/<op> then runs each sample with its floating-point
// tensors made float64 and requiring grad: gradcheck (central differences) and, for the
// formulas that are themselves differentiable, gradgradcheck. The outputs checked are the
// floating-point results (complex ones as their real and imaginary parts, view_as_real),
// flattened and concatenated. Random samples, and samples whose
// values make the op non-smooth at the sampled point (ties, NaN), are skipped with the
// reason in kNotSmooth.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "loom/dispatcher/dispatcher.h"
#include "loom/loom.h"
#include "loom/ops/op_library.h"
#include "sample_inputs.h"

namespace loom {
namespace {

using dispatch::Dispatcher;
using dispatch::EntrySource;
using ops::OpSample;
using ops::SampleArg;
using ops::TensorSpec;

// Differentiable ops whose formula is not written yet: backward through them raises
// "[op] has no derivative for input '...'" (checked below).
const std::map<std::string, std::string> kPending = {
    {"loom::grid_sampler_2d_backward", "no double backward through grid sampling, as in PyTorch"},
};

// The foreach ops refuse tensors that require grad (Note [Foreach ops]): optimizers call
// them under no-grad, and they have no formula.
bool is_foreach_op(const std::string& op) {
  return op.starts_with("loom::_foreach_");
}

// Samples not checked, by op (or "op#ordinal" for one sample): the sampled point is not
// a smooth point of the op, or the op is undefined there.
const std::map<std::string, std::string> kNotSmooth = {
    {"loom::pow.Tensor_Tensor#11", "negative bases: d/d exponent is log(base), undefined"},
    {"loom::var.correction#4", "one element per reduction with correction 1: 0/0"},
    {"loom::var.correction#5", "one element per reduction with correction 1: 0/0"},
    {"loom::cummax#2", "ties among the values"},
    {"loom::cummin#2", "ties among the values"},
    {"loom::embedding#3", "rows at padding_idx get no gradient by definition"},
    {"loom::remainder.Tensor", "jumps where self / other is an integer"},
    {"loom::fmod.Tensor", "jumps where self / other is an integer"},
    {"loom::round", "piecewise constant"},
    {"loom::fake_quantize_per_tensor_affine",
     "piecewise constant; its gradient is the straight-through estimator by definition "
     "(tests/quantization/ checks it)"},
    {"loom::fake_quantize_per_channel_affine",
     "piecewise constant; its gradient is the straight-through estimator by definition "
     "(tests/quantization/ checks it)"},
    {"loom::floor", "piecewise constant"},
    {"loom::ceil", "piecewise constant"},
    {"loom::trunc", "piecewise constant"},
    {"loom::sign", "piecewise constant"},
    {"loom::div.Tensor_mode", "piecewise constant with a rounding mode"},
    {"loom::remainder.Scalar", "jumps where self / other is an integer"},
    {"loom::remainder_.Scalar", "jumps where self / other is an integer"},
    {"loom::fmod.Scalar", "jumps where self / other is an integer"},
    {"loom::fmod_.Scalar", "jumps where self / other is an integer"},
    {"loom::div.Scalar_mode", "piecewise constant with a rounding mode"},
    {"loom::div_.Scalar_mode", "piecewise constant with a rounding mode"},
    {"loom::_softmax#2", "half_to_float takes a float16 input, not the sweep's float64"},
    {"loom::_log_softmax#2", "half_to_float takes a float16 input, not the sweep's float64"},
    {"loom::_assert_tensor_metadata",
     "an assertion, no result (and the sweep's float64 inputs fail its dtype check)"},
    {"loom::acosh#0", "inputs below 1 are outside acosh's domain (the samples' [0.5, 2.5))"},
    {"loom::acosh#1", "inputs below 1 are outside acosh's domain (the samples' [0.5, 2.5))"},
};

// Tensor arguments PyTorch does not differentiate (by position): class weights of the
// losses, and the running statistics the normalizations update in place.
const std::map<std::string, std::set<size_t>> kNotDifferentiableArgs = {
    {"loom::nll_loss", {2}},
    {"loom::cross_entropy_loss", {2}},
    {"loom::batch_norm", {3, 4}},
    {"loom::_native_batch_norm_legit", {3, 4}},
    {"loom::_native_batch_norm_legit_no_training", {3, 4}},
    {"loom::instance_norm", {3, 4}},
};

// Ops whose formula is not itself differentiable (gradgradcheck is not run), with why.
const std::map<std::string, std::string> kFirstOrderOnly = {
    {"loom::grid_sampler_2d", "grid_sampler_2d_backward has no derivative, as in PyTorch"},
};

std::string op_name_of(std::string_view schema) {
  return std::string(schema.substr(0, schema.find('(')));
}

struct FormulaTable {
  std::set<std::string> with_formula, not_differentiable;
};

const FormulaTable& formula_table() {
  static const FormulaTable table = [] {
    FormulaTable t;
    for (const autograd::RecordedOp& op : autograd::recorded_ops()) {
      (op.differentiable ? t.with_formula : t.not_differentiable).insert(op.op);
    }
    return t;
  }();
  return table;
}

EntrySource autograd_entry(const std::string& op) {
  Dispatcher& d = Dispatcher::instance();
  for (const dispatch::TableRow& row : d.dump_table(d.find_defined(op))) {
    if (row.key == DispatchKey::Autograd) return row.source;
  }
  return EntrySource::Missing;
}

std::vector<std::string> library_ops() {
  std::vector<std::string> ops;
  for (const OpDefinition& def : standard_ops()) ops.push_back(op_name_of(def.schema));
  return ops;
}

class AutogradSweep : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
    Runtime::load_default();
  }
};

TEST_F(AutogradSweep, FormulaCoverage) {
  const FormulaTable& table = formula_table();
  std::set<std::string> sampled;
  for (const OpSample& s : ops::all_samples()) sampled.insert(s.op);
  std::string uncovered, unsampled, stale;
  for (const std::string& op : library_ops()) {
    const bool formula = table.with_formula.count(op) > 0;
    const bool marked = table.not_differentiable.count(op) > 0;
    const EntrySource entry = autograd_entry(op);
    if (formula || marked) {
      EXPECT_EQ(entry, EntrySource::Kernel) << op << ": the Autograd entry is not the plugin's";
      if (formula && !sampled.count(op)) unsampled += " " + op;
      if (kPending.count(op)) stale += " " + op;
      continue;
    }
    if (entry == EntrySource::Decomposition || is_foreach_op(op)) continue;
    if (!kPending.count(op)) uncovered += " " + op;
  }
  EXPECT_TRUE(uncovered.empty()) << "differentiable ops without a formula (add one in "
                                    "plugins/autograd/formulas/<family>.cc or mark the op "
                                    "not differentiable):"
                                 << uncovered;
  EXPECT_TRUE(unsampled.empty()) << "ops with a formula but no samples:" << unsampled;
  EXPECT_TRUE(stale.empty()) << "ops listed in kPending that have a formula now:" << stale;
  for (const std::string& op : table.with_formula) {
    EXPECT_TRUE(Dispatcher::instance().find(op).has_value()) << "a formula for unknown op " << op;
  }
}

// --- gradcheck on the samples ---

bool is_float(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Float16 ||
         t == ScalarType::BFloat16;
}

// The sample with its floating-point tensors as float64; false when it has none, or
// holds special values.
bool as_float64(SampleArg& arg, bool& any) {
  if (auto* spec = std::get_if<TensorSpec>(&arg)) {
    if (spec->fill == ops::Fill::Special) return false;
    if (is_float(spec->dtype)) {
      spec->dtype = ScalarType::Float64;
      any = true;
    }
  } else if (auto* list = std::get_if<std::vector<TensorSpec>>(&arg)) {
    for (TensorSpec& s : *list) {
      if (s.fill == ops::Fill::Special) return false;
      if (is_float(s.dtype)) {
        s.dtype = ScalarType::Float64;
        any = true;
      }
    }
  }
  return true;
}

// Whether a sample has a tensor of more than 1000 elements (those exist for the
// vectorised and threaded paths of the kernels).
bool is_large(const OpSample& sample) {
  auto large = [](const SampleArg& a) {
    const TensorSpec* spec = std::get_if<TensorSpec>(&a);
    if (spec == nullptr) return false;
    int64_t n = 1;
    for (int64_t d : spec->shape) n *= d;
    return n > 1000;
  };
  for (const SampleArg& a : sample.args) {
    if (large(a)) return true;
  }
  for (const auto& kv : sample.kwargs) {
    if (large(kv.second)) return true;
  }
  return false;
}

class FormulaSweep : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
    Runtime::load_default();
  }
};

TEST_P(FormulaSweep, Gradients) {
  const std::string& op = GetParam();
  const FormulaTable& table = formula_table();
  if (table.not_differentiable.count(op)) GTEST_SKIP() << "not differentiable";
  if (kPending.count(op)) GTEST_SKIP() << "pending: " << kPending.at(op);
  if (is_foreach_op(op)) GTEST_SKIP() << "foreach ops refuse autograd";
  if (kNotSmooth.count(op)) GTEST_SKIP() << "not smooth: " << kNotSmooth.at(op);
  int ordinal = -1, checked = 0;
  const int stride =
      conform::sample_stride_from_environment();  // Note [A sweep over every k-th sample]
  for (const OpSample& original : ops::all_samples()) {
    if (original.op != op) continue;
    ++ordinal;
    if (ordinal % stride != 0) continue;
    if (!original.deterministic || !original.expected_error.empty()) continue;
    if (ops::has_quantized_tensors(original)) continue;  // Note [Quantized samples]
    if (kNotSmooth.count(op + "#" + std::to_string(ordinal))) continue;
    if (is_large(original)) continue;  // numeric Jacobians: one call per input element
    OpSample sample = original;
    bool any = false, usable = true;
    for (SampleArg& a : sample.args) usable = usable && as_float64(a, any);
    for (auto& [name, a] : sample.kwargs) usable = usable && as_float64(a, any);
    if (!usable || !any) continue;
    conform::Built built = conform::build(sample, ordinal, conform::Layout::Contiguous);
    // The float64 tensor arguments (not list elements) are the inputs checked.
    std::vector<size_t> positions;
    std::vector<Tensor> inputs;
    const auto skipped = kNotDifferentiableArgs.find(op);
    for (size_t i = 0; i < built.args.size(); ++i) {
      if (!built.args[i].is_tensor()) continue;
      if (skipped != kNotDifferentiableArgs.end() && skipped->second.count(i)) continue;
      Tensor t = built.args[i].to_tensor();
      if (t.dtype() != ScalarType::Float64 || t.numel() == 0) continue;
      positions.push_back(i);
      inputs.push_back(t.requires_grad_());
    }
    if (inputs.empty()) continue;
    // An in-place op writes a copy of self (a leaf that requires grad cannot be written).
    const bool inplace = op.substr(0, op.find('.', 6)).ends_with("_");
    // Which results are differentiable (have a history) is read on the first call, which
    // gradcheck makes in grad mode; its numeric calls (no grad) keep the same results.
    std::vector<bool> keep;
    autograd::MultiFunction f = [&](const std::vector<Tensor>& in) {
      std::vector<Value> args = built.args;
      for (size_t k = 0; k < positions.size(); ++k) {
        args[positions[k]] = inplace && positions[k] == 0 ? in[k].clone() : in[k];
      }
      // The differentiable results (those with a history), lists flattened.
      std::vector<Tensor> outs;
      const bool first = keep.empty();
      size_t index = 0;
      auto take = [&](Tensor t) {
        // A complex result is checked through its real and imaginary parts.
        if (t.dtype() == ScalarType::ComplexDouble) t = view_as_real(t);
        if (first) keep.push_back(t.dtype() == ScalarType::Float64 && t.requires_grad());
        if (index < keep.size() && keep[index]) outs.push_back(t.reshape({-1}));
        ++index;
      };
      for (const Value& v : call(op, args, built.kwargs)) {
        if (v.is_tensor()) take(v.to_tensor());
        if (v.is_tensor_list()) {
          for (const Tensor& t : v.to_tensor_list()) take(t);
        }
      }
      if (outs.empty()) return zeros({0}, TensorOptions().dtype(ScalarType::Float64));
      return outs.size() == 1 ? outs[0] : cat(outs);
    };
    SCOPED_TRACE("sample " + std::to_string(ordinal));
    try {
      autograd::gradcheck(f, inputs);
      ++checked;
    } catch (const Error& e) {
      ADD_FAILURE() << op << " sample " << ordinal << ": " << e.what();
      continue;
    }
    if (kFirstOrderOnly.count(op)) continue;
    try {
      autograd::gradgradcheck(f, inputs);
    } catch (const Error& e) {
      ADD_FAILURE() << op << " sample " << ordinal << " (second derivative): " << e.what();
    }
  }
  if (checked == 0 && stride > 1)
    GTEST_SKIP() << "no sample with floating-point inputs at stride " << stride;
  if (checked == 0) GTEST_SKIP() << "no sample with floating-point inputs";
}

INSTANTIATE_TEST_SUITE_P(Library, FormulaSweep, ::testing::ValuesIn(library_ops()),
                         [](const auto& info) {
                           std::string name = info.param.substr(6);  // "loom::"
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace loom
