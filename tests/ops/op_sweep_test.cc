// The op sweep: every op of the standard library (ops.def, loom::standard_ops()) on its
// samples (ops/samples/, Note [Op samples]), through the CPU plugin and the meta device.
//
// Note [Op sweep]
// ~~~~~~~~~~~~~~~
// Driven by the op library, not by a list here: one test per op of ops.def
// (OpSweep.Conforms/<op>), so a new op is swept, and it and EveryOpHasSamples fail until
// it has samples. The test checks:
//   kernel    the CPU dispatch-table row of the op (of its out= variant, for structured
//             ops) is a kernel, or, for unstructured ops, a decomposition or a
//             CompositeExplicit kernel of the core;
// an error input (OpSample::raises) must raise a loom::Error holding its text; and, for
// each other sample, against the functional call on contiguous CPU tensors:
//   meta      the same call on meta tensors gives outputs of the same shapes and dtypes,
//             and the out= and in-place variants, where defined, accept meta outs of
//             those and meta self (a sample marked not meta-checkable must raise);
//   variants  the in-place (`name_`) and out= (`name.out`, `name.<overload>_out`)
//             variants, named as ops/src/structured_schemas.cc derives them and
//             called where defined, give the same values (in-place only where the
//             result has self's shape and dtype);
//   strided   every tensor argument rebuilt with a reversed-dim, stride-2, offset layout (same
//             values) gives the same values, also through the out= variant into outs
//             of that layout.
// Values compare as in `loom conform` (tools/conform/comparison.h, Note [Conformance
// tolerances]): exactly for integer and bool dtypes, floats within per-dtype tolerances
// raised to the sample's own. Inputs come from a splitmix64 stream seeded by the op name, the
// sample's ordinal and the argument's position; every call is preceded by
// loom::manual_seed(conform::kSampleSeed), so random ops compare exactly too. A known failure
// (OpSample::known_failures) of a check is printed ("[  KNOWN   ]", with the observed difference)
// instead of failing, and listed by the skipped OpSweepSummary.KnownFailures; the op's test fails
// once the check passes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "comparison.h"
#include "loom/call.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/loom.h"
#include "loom/ops/op_library.h"
#include "loom/ops/samples.h"
#include "op_calls.h"
#include "sample_inputs.h"

namespace loom {
namespace {

using conform::Built;
using conform::inplace_applies;
using conform::is_defined;
using conform::is_variant_defined;
using conform::Layout;
using conform::op_name_of;
using conform::run;
using conform::run_out;
using conform::sample_stride_from_environment;
using conform::tensors_of;
using conform::variant_names;
using conform::VariantNames;
using dispatch::Dispatcher;
using dispatch::EntrySource;
using ops::Check;
using ops::OpSample;

const Device kMetaDevice{kMeta, -1};
const Device kCpuDevice{kCPU, -1};

struct SweepParam {
  const OpSample* sample;
  int ordinal;  // among the samples of the op
};

Built build(const SweepParam& p, Layout layout) {
  return conform::build(*p.sample, p.ordinal, layout);
}

using conform::describe;  // "[2, 3] float32"

// Why `actual` differs from `expected` (empty when it does not): the outputs' shapes and
// dtypes, then (`values_too`) their values as `loom conform` compares them.
std::string compare(const std::vector<Tensor>& expected, const std::vector<Tensor>& actual,
                    double tolerance, bool values_too = true) {
  if (expected.size() != actual.size()) {
    return str_cat(actual.size(), " outputs, expected ", expected.size());
  }
  for (size_t k = 0; k < expected.size(); ++k) {
    if (describe(expected[k]) != describe(actual[k])) {
      return str_cat("output ", k, " is ", describe(actual[k]), ", expected ",
                     describe(expected[k]));
    }
  }
  return values_too ? conform::compare_outputs(expected, expected, actual, tolerance).message : "";
}

// "loom::add.Tensor #2 ([2, 3] float32, [3] float32, alpha=0.5)"
std::string describe(const SweepParam& p) {
  return str_cat(p.sample->op, " #", p.ordinal, " (", conform::describe_sample(*p.sample), ")");
}

// Reports a check's outcome, honouring the sample's known failure of that check.
void report(const SweepParam& p, Check check, const std::string& failure) {
  const OpSample& s = *p.sample;
  const ops::KnownFailure* known = s.known_failure_of(check);
  if (known == nullptr) {
    if (!failure.empty()) ADD_FAILURE() << ops::check_name(check) << " check: " << failure;
  } else if (failure.empty()) {
    ADD_FAILURE() << "marked a known failure of the " << ops::check_name(check) << " check ("
                  << known->reason << ") but it passes: remove the mark";
  } else {
    std::cout << "[  KNOWN   ] " << describe(p) << ", " << ops::check_name(check)
              << " check: " << known->reason << "; observed: " << failure << "\n";
  }
}

// --- the checks (Note [Op sweep]); each returns why it failed, empty when it passed ---

std::string check_kernel(const std::string& op, OutputRule rule) {
  const bool structured = rule != OutputRule::None;
  const std::string target = structured ? variant_names(op).out : op;
  if (!is_defined(target)) return target + " is not defined";
  Dispatcher& d = Dispatcher::instance();
  for (const dispatch::TableRow& row : d.dump_table(d.find_defined(target))) {
    if (row.key != DispatchKey::CPU) continue;
    if (row.source == EntrySource::Kernel) return "";
    if (!structured && (row.source == EntrySource::Decomposition ||
                        row.source == EntrySource::CompositeExplicit)) {
      return "";
    }
    return str_cat(target, ": the CPU entry is ", dispatch::entry_source_name(row.source),
                   " (provider '", row.provider, "'), expected ",
                   structured ? "a kernel of the out= variant" : "a kernel or decomposition");
  }
  return target + " has no CPU row in its dispatch table";
}

std::string check_meta(const SweepParam& p, const std::vector<Tensor>& expected) {
  const OpSample& s = *p.sample;
  try {
    std::vector<Tensor> meta = tensors_of(run(s.op, build(p, Layout::Meta)));
    if (!s.meta_checkable) {
      return str_cat("marked not meta-checkable (", s.meta_reason, ") but runs on meta");
    }
    for (const Tensor& t : meta) {
      if (!(t.device() == kMetaDevice)) return "an output is not on the meta device";
    }
    std::string failure = compare(expected, meta, 0, /*values_too=*/false);
    const VariantNames v = variant_names(s.op);
    if (failure.empty() && is_variant_defined(s.op, v.out)) {
      run_out(v.out, build(p, Layout::Meta), expected, Layout::Meta, kMetaDevice, failure);
    }
    Built b = build(p, Layout::Meta);
    if (failure.empty() && inplace_applies(v.inplace, b, expected)) {
      std::vector<Tensor> returned = tensors_of(run(v.inplace, b));
      if (returned.size() != 1 || returned[0].impl() != b.args[0].to_tensor().impl()) {
        failure = str_cat(v.inplace, " on meta returned a new tensor");
      }
    }
    return failure;
  } catch (const Error& e) {
    return s.meta_checkable ? str_cat("the meta call threw: ", e.what()) : "";
  }
}

std::string check_variants(const SweepParam& p, const std::vector<Tensor>& expected) {
  const OpSample& s = *p.sample;
  const VariantNames v = variant_names(s.op);
  std::string failure;
  try {
    if (is_variant_defined(s.op, v.out)) {
      std::vector<Tensor> outs = run_out(v.out, build(p, Layout::Contiguous), expected,
                                         Layout::Contiguous, kCpuDevice, failure);
      if (failure.empty()) failure = compare(expected, outs, s.tolerance);
      if (!failure.empty()) return str_cat(v.out, ": ", failure);
    }
    Built b = build(p, Layout::Contiguous);
    if (inplace_applies(v.inplace, b, expected)) {
      Tensor self = b.args[0].to_tensor();
      std::vector<Tensor> returned = tensors_of(run(v.inplace, b));
      failure = compare(expected, {self}, s.tolerance);
      if (failure.empty() && returned[0].impl() != self.impl()) failure = "returned a new tensor";
      if (!failure.empty()) return str_cat(v.inplace, ": ", failure);
    }
  } catch (const Error& e) {
    return str_cat("a variant threw: ", e.what());
  }
  return "";
}

std::string check_strided(const SweepParam& p, const std::vector<Tensor>& expected) {
  if (!p.sample->strided_checkable) return "";  // layout-dependent by design (its reason)
  Built b = build(p, Layout::NonContiguous);
  try {
    std::string failure = compare(expected, tensors_of(run(p.sample->op, b)), p.sample->tolerance);
    const std::string out_op = variant_names(p.sample->op).out;
    if (failure.empty() && is_variant_defined(p.sample->op, out_op)) {
      std::vector<Tensor> outs =
          run_out(out_op, b, expected, Layout::NonContiguous, kCpuDevice, failure);
      if (failure.empty()) failure = compare(expected, outs, p.sample->tolerance);
      if (!failure.empty()) failure = str_cat(out_op, " into non-contiguous outs: ", failure);
    }
    return failure;
  } catch (const Error& e) {
    return str_cat("the call with non-contiguous tensors threw: ", e.what());
  }
}

// --- the tests ---

struct LibraryOp {
  std::string name;
  OutputRule rule;
};

void PrintTo(const LibraryOp& op, std::ostream* os) {
  *os << op.name;
}

std::vector<LibraryOp> library_ops() {
  std::vector<LibraryOp> ops;
  for (const OpDefinition& def : standard_ops()) {
    ops.push_back({op_name_of(def.schema), def.output});
  }
  return ops;
}

std::vector<SweepParam> samples_of(const std::string& op) {
  std::vector<SweepParam> out;
  for (const OpSample& s : ops::all_samples()) {
    // Quantized samples: `loom conform --backend quantized` (Note [Quantized samples]).
    if (s.op == op && !ops::has_quantized_tensors(s)) {
      out.push_back({&s, static_cast<int>(out.size())});
    }
  }
  return out;
}

class OpSweep : public ::testing::TestWithParam<LibraryOp> {
 protected:
  static void SetUpTestSuite() {
    setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
    Runtime::load_default();
  }
};

TEST_P(OpSweep, Conforms) {
  const LibraryOp& op = GetParam();
  EXPECT_EQ(check_kernel(op.name, op.rule), "") << "kernel check";
  const std::vector<SweepParam> samples = samples_of(op.name);
  ASSERT_FALSE(samples.empty()) << op.name << " has no samples (Note [Op samples])";
  const int stride = sample_stride_from_environment();  // Note [A sweep over every k-th sample]
  for (const SweepParam& p : samples) {
    if (p.ordinal % stride != 0) continue;
    SCOPED_TRACE(describe(p));
    if (!p.sample->expected_error.empty()) {  // an error input: it must raise, naming why
      try {
        run(op.name, build(p, Layout::Contiguous));
        ADD_FAILURE() << "an error input ran without raising";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(p.sample->expected_error), std::string::npos)
            << "raised, but without '" << p.sample->expected_error << "': " << e.what();
      }
      continue;
    }
    std::vector<Tensor> expected;
    try {
      expected = tensors_of(run(op.name, build(p, Layout::Contiguous)));
    } catch (const Error& e) {
      ADD_FAILURE() << "the call on contiguous cpu tensors threw: " << e.what();
      continue;
    }
    report(p, Check::Meta, check_meta(p, expected));
    report(p, Check::Variants, check_variants(p, expected));
    report(p, Check::Strided, check_strided(p, expected));
  }
}

INSTANTIATE_TEST_SUITE_P(Library, OpSweep, ::testing::ValuesIn(library_ops()),
                         [](const auto& info) {
                           std::string name = info.param.name.substr(6);  // "loom::"
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// An op of ops.def without samples fails here by name (Note [Op samples]).
TEST(OpSweepSummary, EveryOpHasSamples) {
  std::set<std::string> library;
  for (const LibraryOp& op : library_ops()) library.insert(op.name);
  std::map<std::string, std::set<std::string_view>> families_of;
  for (const ops::SampleFamily& f : ops::sample_families()) {
    for (const OpSample& s : f.samples) families_of[s.op].insert(f.name);
  }
  std::string missing, unknown, doubled;
  for (const std::string& op : library) {
    if (!families_of.count(op)) missing += " " + op;
  }
  for (const auto& [op, families] : families_of) {
    if (!library.count(op)) unknown += " " + op;
    if (families.size() > 1) doubled += str_cat(" ", op, " (", families.size(), " families)");
  }
  EXPECT_TRUE(missing.empty()) << "ops of ops.def without samples (add them to ops/samples/):"
                               << missing;
  EXPECT_TRUE(unknown.empty()) << "samples of ops not in ops.def:" << unknown;
  EXPECT_TRUE(doubled.empty()) << "ops with samples in more than one family:" << doubled;
}

// The samples marked known failures, listed (skipped when there are any, so ctest shows
// them); OpSweep.Conforms checks that each still fails.
TEST(OpSweepSummary, KnownFailures) {
  std::map<std::string, int> marks;  // "op, check: reason" -> samples
  for (const OpSample& s : ops::all_samples()) {
    for (const ops::KnownFailure& k : s.known_failures) {
      ++marks[str_cat(s.op, ", ", ops::check_name(k.check), " check: ", k.reason)];
    }
  }
  std::string list;
  for (const auto& [mark, count] : marks) list += str_cat("\n  ", mark, " (", count, " samples)");
  if (!list.empty()) GTEST_SKIP() << "known failures:" << list;
}

}  // namespace
}  // namespace loom
