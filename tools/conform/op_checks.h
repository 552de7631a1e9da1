// The checks `loom conform` makes of one op on one backend (Note [Conformance checks]),
// run inside a worker process (worker_pool.h), each result handed to a callback as it
// is known so that a crash loses none before it.
#pragma once

#include <functional>
#include <set>
#include <string>

#include "conform_report.pb.h"
#include "loom/loom.h"
#include "loom/ops/samples.h"
#include "sample_inputs.h"

namespace loom::conform {

// Note [Conformance checks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// For an op, first its availability on the backend: the dispatch-table row of the
// backend's key (for a structured op, the better of its out= variant's row and its
// own): a kernel, a decomposition (CompositeImplicit or CompositeExplicit), the key's
// fallback, or missing. Then, for each sample of the op (ops/samples/) whose dtype passes
// the filter, with the inputs built on the cpu and copied to the backend's device:
//   errors     an error input (OpSample::raises) must raise a loom::Error;
//   claims     where the backend's kernel claims dtypes (the SDK's DTypeSet), a dtype it
//              does not claim is refused with the dispatcher's "does not support dtype"
//              error: SKIPPED for an unclaimed dtype, FAIL for a claimed one (a dtype
//              claimed and run wrongly fails the values check);
//   values     the functional call against the reference: the CPU plugin on the same
//              values, in float64 where the sample's floating tensors are lower
//              (Note [Conformance tolerances]; a sample marked dtype_dependent, whose
//              result depends on its dtype's range, in its own dtype); random ops against
//              the CPU plugin in
//              the same dtype from the same seed, exactly (the SDK's Philox promise);
//   distribution  a random sample with an ops::Distribution: every value in range, the
//              mean within 6 standard errors and the deviation within 10%;
//   variants   the out= and in-place variants give the functional call's values;
//   strided    every tensor rebuilt non-contiguous (reversed dims, stride 2, a storage
//              offset), and outs of that layout, give the same values;
//   gradients  with the autograd plugin loaded, the gradients of the differentiable
//              floating inputs for a fixed cotangent, against the reference's in float64.
// A dtype the kernel claims that no sample of the op has is checked on the op's first
// sample of the same kind (floating, integral, bool) with its tensors of that kind in the
// claimed dtype. A check raising a loom::Error where it should not is ERROR with the
// message.
// The quantized target (`--backend quantized`: the Quantized key, tensors on the cpu) runs
// only the samples with quantized tensors (Note [Quantized samples] in loom/ops/samples.h),
// and the other targets only the rest: values against the sample's float reference within
// one quantization step, the in-place variant and non-contiguous inputs exactly against the
// functional call; no out= variants, gradients or claimed-dtype retyping.
struct Target {
  std::string backend;  // device type name
  Device device;
  DispatchKey key = DispatchKey::Undefined;
  bool gradients = false;  // the autograd plugin is loaded
  bool quantized = false;  // the Quantized key (cpu tensors): quantized samples only
};

struct OpChecks {
  std::string op;
  bool structured = false;       // has an out= variant its functional form derives from
  std::set<std::string> dtypes;  // empty: every dtype
};

using EmitResult = std::function<void(const CheckResult&)>;
// Called before each sample with the result it is about to fill (op, dtype, sample,
// sample_text), so a crash can name the sample.
using EmitProgress = std::function<void(const CheckResult&)>;

// Runs every check of `checks.op` on `target`; returns the op's coverage.
OpCoverage check_op(const OpChecks& checks, const Target& target, const EmitResult& emit,
                    const EmitProgress& progress);

}  // namespace loom::conform
