// The checks of one op on one backend (op_checks.h, Note [Conformance checks]).
#include "op_checks.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "absl/strings/str_join.h"
#include "comparison.h"
#include "loom/devices.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/samples.h"
#include "op_calls.h"
#include "quantized_reference.h"
#include "sample_inputs.h"

namespace loom::conform {
namespace {

using dispatch::Dispatcher;
using dispatch::EntrySource;
using ops::OpSample;

const Device kCpu{kCPU, -1};

// The results of one sample, filled in by the checks.
class SampleRun {
 public:
  SampleRun(const std::string& op, const OpSample& sample, int ordinal, const Target& target,
            const EmitResult& emit)
      : emit_(emit),
        missing_marker_(str_cat("no kernel for dispatch key ", target.backend, ";")),
        unclaimed_marker_(str_cat("backend ", target.backend, " does not support dtype")) {
    base_.set_op(op);
    base_.set_dtype(sample_dtype(sample));
    base_.set_sample(ordinal);
    base_.set_sample_text(describe_sample(sample));
  }
  void result(std::string_view check, Status status, std::string message = "",
              const Comparison* c = nullptr) const {
    // An op this one decomposes into (or its backward uses) has no kernel here: the
    // coverage is missing, not wrong.
    if (status == ERROR && names_missing_kernel(message)) status = MISSING;
    // A dtype the backend does not claim, refused inside the op (a copy, a fill): the
    // claim is honoured, the sample is outside the backend's coverage.
    if (status == ERROR && message.find(unclaimed_marker_) != std::string::npos) status = SKIPPED;
    CheckResult r = base_;
    r.set_check(std::string(check));
    r.set_status(status);
    r.set_message(std::move(message));
    if (c != nullptr) {
      r.set_max_abs_error(c->max_abs_error);
      r.set_max_rel_error(c->max_rel_error);
      r.set_worst_element(c->worst_element);
    }
    emit_(r);
  }
  // Whether `message` says an op has no kernel on the backend checked.
  bool names_missing_kernel(const std::string& message) const {
    return message.find(missing_marker_) != std::string::npos;
  }
  void compared(std::string_view check, const Comparison& c) const {
    result(check, c.agrees ? PASS : FAIL, c.message, &c);
  }

 private:
  CheckResult base_;
  const EmitResult& emit_;
  std::string missing_marker_;
  std::string unclaimed_marker_;
};

struct Availability {
  std::string name = "missing";
  std::string provider;
  uint64_t dtype_claim = 0;
};

Availability availability_of(const std::string& op, const Target& target, bool structured) {
  Dispatcher& d = Dispatcher::instance();
  Availability best;
  int best_rank = 0;
  std::vector<std::string> rows{op};
  // Quantized tensors have no out= forms: only the op's own row counts at that key.
  if (structured && !target.quantized) rows.insert(rows.begin(), variant_names(op).out);
  for (const std::string& name : rows) {
    if (!is_defined(name)) continue;
    // A structured op's functional form is the core's wrapper of its out= kernel on every
    // backend; only a kernel the backend registers for it directly counts.
    const bool wrapper_only = structured && name == op && !target.quantized;
    const std::vector<dispatch::TableRow> table = d.dump_table(d.find_defined(name));
    auto row_at = [&](DispatchKey key) -> const dispatch::TableRow* {
      for (const dispatch::TableRow& row : table) {
        if (row.key == key) return &row;
      }
      return nullptr;
    };
    const dispatch::TableRow* found = row_at(target.key);
    // The Quantized key falls through to the CPU's entry where no quantized kernel is
    // registered: views and reshapes keep the quantizer there.
    if (found != nullptr && target.quantized && found->source == EntrySource::Fallthrough) {
      found = row_at(DispatchKey::CPU);
    }
    if (found != nullptr) {
      const dispatch::TableRow& row = *found;
      if (wrapper_only && row.source != EntrySource::Kernel) continue;
      const int rank =
          row.source == EntrySource::Kernel ? 3
          : row.source == EntrySource::Decomposition || row.source == EntrySource::CompositeExplicit
              ? 2
          : row.source == EntrySource::Fallback ? 1
                                                : 0;
      if (rank > best_rank) {
        best_rank = rank;
        best.name = rank == 3 ? "kernel" : rank == 2 ? "decomposition" : "fallback";
        best.provider = row.provider;
        best.dtype_claim = row.dtype_claim;
      }
    }
  }
  return best;
}

// The differentiable results of `results` (floating, with a history).
std::vector<Tensor> differentiable(const std::vector<Tensor>& results) {
  std::vector<Tensor> out;
  for (const Tensor& t : results) {
    if (is_floating_point(t.dtype()) && t.requires_grad()) out.push_back(t);
  }
  return out;
}

// Gradients of the floating tensor arguments of `b` (numel > 0) for cotangents drawn
// from `seed`; nullopt when no result is differentiable. `upcast`: in float64.
std::optional<std::vector<Tensor>> gradients(const std::string& op, Built b, bool upcast,
                                             uint64_t seed) {
  std::vector<Tensor> inputs;
  const bool inplace = op.substr(0, op.find('.', 6)).ends_with("_");
  for (size_t i = 0; i < b.args.size(); ++i) {
    if (!b.args[i].is_tensor()) continue;
    bool widened = false;
    Tensor t = upcast ? to_float64(b.args[i], widened).to_tensor() : b.args[i].to_tensor();
    if (!is_floating_point(t.dtype()) || t.numel() == 0) {
      b.args[i] = t;
      continue;
    }
    Tensor leaf = t.detach();
    leaf.requires_grad_();
    inputs.push_back(leaf);
    // An in-place op writes a copy of self (a leaf that requires grad cannot be written).
    b.args[i] = inplace && i == 0 ? leaf.clone() : leaf;
  }
  if (inputs.empty()) return std::nullopt;
  std::vector<Tensor> outs = differentiable(tensors_of(run(op, b)));
  if (outs.empty()) return std::nullopt;
  std::vector<Tensor> cotangents;
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::vector<int64_t> shape(outs[k].sizes().begin(), outs[k].sizes().end());
    Tensor v = build_tensor({shape, outs[k].dtype(), ops::Fill::Normal, 0}, seed + k,
                            Layout::Contiguous, outs[k].device());
    cotangents.push_back(v);
  }
  std::vector<Tensor> grads = autograd::grad(outs, inputs, cotangents, std::nullopt, false, true);
  // An input the results do not depend on: a zero gradient on both sides.
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!grads[k].defined()) {
      grads[k] = zeros(inputs[k].sizes(),
                       TensorOptions().dtype(inputs[k].dtype()).device(inputs[k].device()));
    }
  }
  return grads;
}

// The first output of a random sample against its distribution (ops::Distribution).
Comparison check_distribution(const ops::Distribution& d, const std::vector<Tensor>& outputs) {
  if (outputs.empty()) return Comparison{false, "no output", 0, 0, ""};
  Tensor host = outputs[0].device().type == kCPU ? outputs[0] : outputs[0].to("cpu");
  Tensor f64 = empty(host.sizes(), TensorOptions().dtype(ScalarType::Float64));
  copy_(f64, host);
  const double* v = static_cast<const double*>(f64.data_ptr());
  const int64_t n = f64.numel();
  double sum = 0, squares = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!(v[i] >= d.low && v[i] <= d.high)) {
      return Comparison{
          false, str_cat("value ", v[i], " at ", i, " is outside [", d.low, ", ", d.high, "]"), 0,
          0, ""};
    }
    sum += v[i];
  }
  const double mean = sum / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) squares += (v[i] - mean) * (v[i] - mean);
  const double stddev = std::sqrt(squares / static_cast<double>(n - 1));
  const double standard_error = d.stddev / std::sqrt(static_cast<double>(n));
  Comparison c;
  c.max_abs_error = std::abs(mean - d.mean);
  c.max_rel_error = d.stddev == 0 ? 0 : std::abs(stddev - d.stddev) / d.stddev;
  if (c.max_abs_error > 6 * standard_error) {
    c = Comparison{false,
                   str_cat("mean ", mean, ", expected ", d.mean, " within 6 standard errors (",
                           6 * standard_error, ")"),
                   c.max_abs_error, c.max_rel_error, ""};
  } else if (c.max_rel_error > 0.1) {
    c = Comparison{false,
                   str_cat("standard deviation ", stddev, ", expected ", d.stddev, " within 10%"),
                   c.max_abs_error, c.max_rel_error, ""};
  } else {
    c.message = str_cat("mean ", mean, ", standard deviation ", stddev, " over ", n, " values");
  }
  return c;
}

// The tolerance of the least precise floating dtype among the sample's tensors.
Tolerance input_tolerance(const OpSample& sample) {
  Tolerance t;
  auto widen = [&](const TensorSpec& spec) {
    if (!is_floating_point(spec.dtype)) return;
    const Tolerance d = default_tolerance(spec.dtype);
    t = {std::max(t.atol, d.atol), std::max(t.rtol, d.rtol)};
  };
  auto visit = [&](const ops::SampleArg& a) {
    if (auto* spec = std::get_if<TensorSpec>(&a)) widen(*spec);
    if (auto* list = std::get_if<std::vector<TensorSpec>>(&a)) {
      for (const TensorSpec& spec : *list) widen(spec);
    }
  };
  for (const ops::SampleArg& a : sample.args) visit(a);
  for (const auto& kv : sample.kwargs) visit(kv.second);
  return t;
}

void check_sample(const OpChecks& checks, const Target& target, const Availability& available,
                  const OpSample& sample, int ordinal, const EmitResult& emit) {
  const std::string& op = checks.op;
  const SampleRun r(op, sample, ordinal, target, emit);
  const bool on_cpu = target.device == kCpu;
  const Tolerance floor = input_tolerance(sample);
  auto build_on = [&](Layout layout, Device device) {
    return build(sample, ordinal, layout, device);
  };

  if (available.name == "missing") {
    r.result(sample.expected_error.empty() ? "values" : "errors", MISSING,
             str_cat(op, " has no kernel, decomposition or fallback for ", target.backend));
    return;
  }
  // The sample's inputs on the backend's device; nullopt (reported SKIPPED under `check`)
  // when the device cannot hold them.
  auto place = [&](std::string_view check) -> std::optional<Built> {
    try {
      return build_on(Layout::Contiguous, target.device);
    } catch (const Error& e) {
      r.result(check, SKIPPED,
               str_cat("inputs cannot be placed on ", target.backend, ": ", e.what()));
      return std::nullopt;
    }
  };
  if (!sample.expected_error.empty()) {
    const std::optional<Built> inputs = place("errors");
    if (!inputs) return;
    try {
      run(op, *inputs);
      // A kernel that finds bad input on an asynchronous device reports it at the next
      // wait for the device (the device interface's waits, loom/plugin.h), as a PyTorch
      // user's CUDA errors surface at the next synchronising call.
      if (!on_cpu) synchronize(target.device);
      r.result("errors", FAIL,
               "an error input ran without raising (expected an error with '" +
                   sample.expected_error + "')");
    } catch (const Error& e) {
      // Raised because an op it decomposes into is missing here: not the refusal checked.
      r.result("errors", r.names_missing_kernel(e.what()) ? MISSING : PASS, e.what());
    }
    return;
  }
  // The reference: the cpu in the sample's dtypes (shapes, dtypes) and, where floating
  // tensors are lower, in float64 (values). Every call gets freshly built inputs: an
  // in-place op writes its self.
  std::vector<Tensor> like;
  try {
    like = tensors_of(run(op, build_on(Layout::Contiguous, kCpu)));
  } catch (const Error& e) {
    r.result("values", on_cpu ? ERROR : SKIPPED,
             str_cat(on_cpu ? "" : "the reference (cpu) raised: ", e.what()));
    return;
  }
  std::vector<Tensor> expected = like;
  if (sample.deterministic && !sample.dtype_dependent && !target.quantized) {
    Built wide = build_on(Layout::Contiguous, kCpu);
    bool upcast = false;
    for (Value& v : wide.args) v = to_float64(v, upcast);
    for (auto& kv : wide.kwargs) kv.second = to_float64(kv.second, upcast);
    if (upcast) {
      try {
        std::vector<Tensor> e = tensors_of(run(op, wide));
        bool same_shapes = e.size() == like.size();
        for (size_t k = 0; same_shapes && k < e.size(); ++k) {
          same_shapes = std::ranges::equal(e[k].sizes(), like[k].sizes());
        }
        if (same_shapes) expected = e;
      } catch (const Error&) {
        // An op that refuses float64 here keeps the reference in the sample's dtype.
      }
    }
  }

  const std::optional<Built> placed = place("values");
  if (!placed) return;
  const Built& dev_in = *placed;
  std::vector<Tensor> actual;
  try {
    actual = on_cpu ? like : tensors_of(run(op, dev_in));
  } catch (const Error& e) {
    // A dtype the kernel does not claim must be refused with the dispatcher's error
    // (the dtype reaching the kernel may differ from the sample's: promotion).
    if (std::string(e.what()).find("does not support dtype") != std::string::npos) {
      const std::string dtype = sample_dtype(sample);
      const bool claimed =
          dtype != "none" && (available.dtype_claim &
                              (uint64_t{1} << static_cast<int>(parse_scalar_type(dtype)))) != 0;
      r.result("claims", claimed ? FAIL : SKIPPED,
               str_cat(claimed ? "claimed, but refused: " : "not claimed, refused: ", e.what()));
      return;
    }
    r.result("values", ERROR, e.what());
    return;
  }
  try {  // reading the results back is a copy through the backend too
    if (target.quantized) {
      r.compared("values", compare_with_quantized_reference(
                               sample, build_on(Layout::Contiguous, kCpu), actual));
    } else if (sample.deterministic) {
      r.compared("values", compare_outputs(expected, like, actual, sample.tolerance, floor));
    } else {
      Comparison c = compare_outputs(like, like, actual, 0);
      if (!c.agrees) c.message = "not the cpu's Philox stream for the same seed: " + c.message;
      r.compared("values", c);
    }
  } catch (const Error& e) {
    r.result("values", ERROR, str_cat("reading the results back to the cpu: ", e.what()));
    return;
  }

  if (sample.distribution)
    r.compared("distribution", check_distribution(*sample.distribution, actual));

  const VariantNames v = variant_names(op);
  // Quantized results have no out= form (PyTorch's quantized kernels have none either).
  const bool has_out = !target.quantized && is_variant_defined(op, v.out);
  try {
    std::string failure;
    if (has_out || inplace_applies(v.inplace, dev_in, actual)) {
      Comparison c;
      if (has_out) {
        std::vector<Tensor> outs = run_out(v.out, build_on(Layout::Contiguous, target.device),
                                           actual, Layout::Contiguous, target.device, failure);
        c = failure.empty() ? compare_outputs(actual, actual, outs, sample.tolerance)
                            : Comparison{};
        if (!failure.empty()) c = Comparison{false, failure, 0, 0, ""};
        if (!c.agrees) c.message = str_cat(v.out, ": ", c.message);
      }
      Built b = build_on(Layout::Contiguous, target.device);
      if (c.agrees && inplace_applies(v.inplace, b, actual)) {
        Tensor self = b.args[0].to_tensor();
        std::vector<Tensor> returned = tensors_of(run(v.inplace, b));
        c = compare_outputs(actual, actual, {self}, sample.tolerance);
        if (c.agrees && (returned.size() != 1 || returned[0].impl() != self.impl())) {
          c = Comparison{false, "returned a new tensor", 0, 0, ""};
        }
        if (!c.agrees) c.message = str_cat(v.inplace, ": ", c.message);
      }
      r.compared("variants", c);
    }
  } catch (const Error& e) {
    r.result("variants", ERROR, e.what());
  }

  bool has_layout = false;
  for (const Value& a : dev_in.args) {
    for (const Tensor& t : tensors_in(a)) has_layout = has_layout || t.numel() > 1;
  }
  if (sample.strided_checkable && has_layout) {
    try {
      const Built b = build_on(Layout::NonContiguous, target.device);
      Comparison c = compare_outputs(actual, actual, tensors_of(run(op, b)), sample.tolerance);
      if (c.agrees && has_out) {
        std::string failure;
        std::vector<Tensor> outs =
            run_out(v.out, b, actual, Layout::NonContiguous, target.device, failure);
        c = failure.empty() ? compare_outputs(actual, actual, outs, sample.tolerance)
                            : Comparison{false, failure, 0, 0, ""};
        if (!c.agrees) c.message = str_cat(v.out, " into non-contiguous outs: ", c.message);
      }
      r.compared("strided", c);
    } catch (const Error& e) {
      r.result("strided", ERROR, e.what());
    }
  }

  if (target.gradients && sample.deterministic) {
    const uint64_t seed = hash_of(op) + static_cast<uint64_t>(ordinal) * 7919;
    std::optional<std::vector<Tensor>> want;
    try {
      want = gradients(op, build_on(Layout::Contiguous, kCpu), /*upcast=*/true, seed);
    } catch (const Error&) {
      return;  // not differentiable in the reference either (no formula, integer-only)
    }
    if (!want) return;
    try {
      std::optional<std::vector<Tensor>> got =
          gradients(op, build_on(Layout::Contiguous, target.device), /*upcast=*/false, seed);
      if (!got) {
        r.result("gradients", FAIL, "the results have no gradient history on this backend");
        return;
      }
      std::vector<Tensor> shapes;
      for (const Tensor& g : *got) shapes.push_back(g);
      Comparison c = compare_outputs(*want, shapes, *got, sample.tolerance, floor);
      r.compared("gradients", c);
    } catch (const Error& e) {
      r.result("gradients", ERROR, e.what());
    }
  }
}

}  // namespace

OpCoverage check_op(const OpChecks& checks, const Target& target, const EmitResult& emit,
                    const EmitProgress& progress) {
  const Availability available = availability_of(checks.op, target, checks.structured);
  OpCoverage coverage;
  coverage.set_op(checks.op);
  coverage.set_availability(available.name);
  coverage.set_provider(available.provider);
  for (int t = 0; t < 64; ++t) {
    if (available.dtype_claim & (uint64_t{1} << t)) {
      coverage.add_claimed_dtypes(std::string(scalar_type_name(static_cast<ScalarType>(t))));
    }
  }
  CheckResult a;
  a.set_op(checks.op);
  a.set_sample(-1);
  a.set_check("availability");
  a.set_status(available.name == "missing" ? MISSING : PASS);
  a.set_message(available.name == "missing"
                    ? str_cat("no kernel, decomposition or fallback for ", target.backend)
                    : str_cat(available.name, " from '", available.provider, "'"));
  emit(a);
  auto run_sample = [&](const OpSample& sample, int ordinal) {
    if (!checks.dtypes.empty() && !checks.dtypes.count(sample_dtype(sample))) return;
    CheckResult next;
    next.set_op(checks.op);
    next.set_dtype(sample_dtype(sample));
    next.set_sample(ordinal);
    next.set_check(sample.expected_error.empty() ? "values" : "errors");
    next.set_sample_text(describe_sample(sample));
    progress(next);
    check_sample(checks, target, available, sample, ordinal, emit);
  };
  std::vector<std::pair<const OpSample*, int>> samples;
  std::set<std::string> covered;
  for (const OpSample& sample : ops::all_samples()) {
    if (sample.op != checks.op || ops::has_quantized_tensors(sample) != target.quantized) continue;
    samples.emplace_back(&sample, static_cast<int>(samples.size()));
    covered.insert(sample_dtype(sample));
    run_sample(sample, samples.back().second);
  }
  // A dtype the kernel claims that no sample has: the first sample of the same kind of
  // dtype (floating, integral, bool), its tensors of that kind in the claimed dtype.
  for (int t = 0; t < kNumScalarTypes && available.name != "missing" && !target.quantized; ++t) {
    const ScalarType claimed = static_cast<ScalarType>(t);
    if (!(available.dtype_claim & (uint64_t{1} << t)) ||
        covered.count(std::string(scalar_type_name(claimed)))) {
      continue;
    }
    auto kind = [](ScalarType d) {
      return is_floating_point(d) ? 0 : d == ScalarType::Bool ? 1 : is_integral(d, false) ? 2 : 3;
    };
    for (const auto& [sample, ordinal] : samples) {
      if (!sample->deterministic || !sample->expected_error.empty() ||
          sample_dtype(*sample) == "none" ||
          kind(parse_scalar_type(sample_dtype(*sample))) != kind(claimed)) {
        continue;
      }
      OpSample retyped = *sample;
      // Index tensors keep their dtype: the claim is about the data.
      auto retype_one = [&](TensorSpec& spec) {
        if (spec.fill != ops::Fill::Index && kind(spec.dtype) == kind(claimed))
          spec.dtype = claimed;
      };
      auto retype = [&](ops::SampleArg& a) {
        if (auto* spec = std::get_if<TensorSpec>(&a)) retype_one(*spec);
        if (auto* list = std::get_if<std::vector<TensorSpec>>(&a)) {
          for (TensorSpec& spec : *list) retype_one(spec);
        }
      };
      for (ops::SampleArg& a : retyped.args) retype(a);
      for (auto& kv : retyped.kwargs) retype(kv.second);
      if (!is_floating_point(claimed)) retyped.tolerance = 0;
      if (claimed == ScalarType::Float16 || claimed == ScalarType::BFloat16) {
        retyped.tolerance = std::max(retyped.tolerance, 2e-2);
      }
      if (sample_dtype(retyped) != scalar_type_name(claimed)) continue;  // its data is indices
      run_sample(retyped, ordinal);
      break;
    }
  }
  return coverage;
}

}  // namespace loom::conform
