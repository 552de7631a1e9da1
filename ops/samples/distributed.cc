// Samples of the distributed family: a single process has no process group, so each op's
// sample is the error it raises before init_process_group (the sweep runs in one
// process). The collectives themselves are tested by ranks in separate processes
// (tests/distributed/).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

constexpr const char* kNoGroup = "the default process group is not initialized";

OpSample no_group(std::string op, std::vector<SampleArg> args) {
  return OpSample{std::move(op), std::move(args)}.raises(kNoGroup);
}

std::vector<OpSample> make() {
  const TensorSpec t = T({2, 3});
  return {
      no_group("loom::all_reduce_", {t}),
      no_group("loom::broadcast_", {t, I(0)}),
      no_group("loom::reduce_", {t, I(0)}),
      no_group("loom::all_gather_", {TL({T({2, 3})}), t}),
      no_group("loom::all_gather_into_tensor_", {T({2, 3}), t}),
      no_group("loom::reduce_scatter_", {T({2, 3}), TL({T({2, 3})})}),
      no_group("loom::reduce_scatter_tensor_", {T({2, 3}), t}),
      no_group("loom::all_to_all_", {TL({T({2, 3})}), TL({T({2, 3})})}),
      no_group("loom::all_to_all_single_", {T({2, 3}), t}),
      no_group("loom::barrier", {}),
      no_group("loom::send", {t, I(1)}),
      no_group("loom::recv_", {t, I(1)}),
      OpSample{"loom::all_reduce_", {t, S("mean")}}.raises(
          "unknown reduce op 'mean' (expected sum, product, min, max or avg)"),
      OpSample{"loom::all_reduce_", {T({2, 3}, kI64), S("avg")}}.raises(
          "reduce op 'avg' needs a floating-point tensor, found int64"),
  };
}

}  // namespace

std::span<const OpSample> distributed_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
