// Guards: what a compiled graph assumed about a call, checked before each run.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loom/ops/tensor.h"

namespace loom::compiler::detail {

// (tensor argument, dimension) pairs whose size is symbolic.
using DynamicDims = std::set<std::pair<int, int>>;

struct TensorGuard {
  ScalarType dtype = ScalarType::Float32;
  Device device{};
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  std::vector<uint8_t> dynamic;  // per dimension: any size >= 2
  bool contiguous = false;
  bool requires_grad = false;
  int same_as = -1;  // the earlier argument this one is the same tensor as
};

struct GuardFailure {
  std::string reason;  // empty: the guards hold
  // Set when only sizes of the call's tensors differ (their dtypes, devices, ranks and
  // layouts hold): the (argument, dimension) pairs that differ.
  std::vector<std::pair<int, int>> sizes_only;
  bool holds() const { return reason.empty(); }
};

// The calling thread's autocast regions over the device types of `tensors` (the cpu for a
// call without tensors): "cpu in bfloat16", empty where autocast is off for all of them
// (Note [Autocast guards]).
std::string autocast_state(const std::vector<Tensor>& tensors);

class Guards {
 public:
  Guards(const std::vector<Tensor>& tensors, const std::vector<double>& numbers, uint64_t flags,
         bool grad_mode, std::string autocast, const std::vector<Tensor>& held,
         const DynamicDims& dynamic);

  GuardFailure check(const std::vector<Tensor>& tensors, const std::vector<double>& numbers,
                     uint64_t flags, bool grad_mode, const std::string& autocast,
                     const std::vector<Tensor>& held) const;

  // One line per guard ("x0: float32[s0, 16] contiguous, requires_grad=false").
  std::vector<std::string> describe() const;

 private:
  std::vector<TensorGuard> tensors_;
  std::vector<double> numbers_;
  uint64_t flags_ = 0;
  bool grad_mode_ = false;
  std::string autocast_;
  std::vector<TensorGuard> held_;
};

}  // namespace loom::compiler::detail
