// Checking a call against what its compiled graph assumed (loom/compile.h): every tensor
// argument's dtype, device, sizes (or, for a symbolic dimension, any size >= 2: 0 and 1
// change broadcasting and stay specialised, as in PyTorch), strides (contiguous, or
// exactly the captured ones), requires_grad and identity with another argument; the
// numbers passed; grad mode; the autocast regions; and the tensors the function holds,
// read by reference, which must keep their dtype, device, sizes and strides.
//
// Note [Autocast guards]
// ~~~~~~~~~~~~~~~~~~~~~~
// A graph replays its ops through the dispatcher, the Autocast key included, and its
// fused kernels were compiled for the dtypes the capture saw. Captured outside an
// autocast region and called inside one, its products would come out in bfloat16 into
// kernels compiled for float32 (and the reverse), so a graph holds only under the autocast
// state of its capture: the regions of the device types of the call's tensors, each with
// its dtype. Outside every region the Autocast key is not among the thread's dispatch keys,
// so the common case costs one bit test.
#include "guards.h"

#include <cmath>

#include <algorithm>

#include "loom/autocast.h"
#include "loom/autograd.h"
#include "loom/core/device.h"
#include "loom/core/str_cat.h"
#include "loom/core/type_promotion.h"
#include "loom/dispatcher/local_dispatch_key_set.h"

namespace loom::compiler::detail {
namespace {

TensorGuard guard_of(const Tensor& t, const std::vector<uint8_t>& dynamic) {
  TensorGuard g;
  g.dtype = t.dtype();
  g.device = t.device();
  g.sizes.assign(t.sizes().begin(), t.sizes().end());
  g.strides.assign(t.strides().begin(), t.strides().end());
  g.dynamic = dynamic;
  g.dynamic.resize(g.sizes.size(), 0);
  g.contiguous = t.is_contiguous();
  g.requires_grad = t.requires_grad();
  return g;
}

std::string sizes_text(const TensorGuard& g) {
  std::string s = "[";
  for (size_t d = 0; d < g.sizes.size(); ++d) {
    s += d ? ", " : "";
    s += g.dynamic[d] ? str_cat("s(>=2)") : str_cat(g.sizes[d]);
  }
  return s + "]";
}

// Why `t` fails `g` (empty when it holds); size-only mismatches go to `dims`.
std::string mismatch(const TensorGuard& g, const Tensor& t, std::vector<int>* dims) {
  if (!t.defined()) return "is undefined";
  if (t.dtype() != g.dtype)
    return str_cat("dtype is ", scalar_type_name(t.dtype()), ", expected ",
                   scalar_type_name(g.dtype));
  if (t.device() != g.device)
    return str_cat("device is ", t.device().to_string(), ", expected ", g.device.to_string());
  if (t.dim() != static_cast<int64_t>(g.sizes.size()))
    return str_cat("has ", t.dim(), " dimensions, expected ", g.sizes.size());
  if (t.requires_grad() != g.requires_grad)
    return str_cat("requires_grad is ", t.requires_grad() ? "true" : "false", ", expected ",
                   g.requires_grad ? "true" : "false");
  std::string sizes;
  for (size_t d = 0; d < g.sizes.size(); ++d) {
    const int64_t have = t.sizes()[d];
    const bool ok = g.dynamic[d] ? have >= 2 : have == g.sizes[d];
    if (!ok) {
      if (dims != nullptr) dims->push_back(static_cast<int>(d));
      if (sizes.empty())
        sizes = str_cat("size ", have, " at dimension ", d, ", expected ",
                        g.dynamic[d] ? std::string("a size >= 2") : str_cat(g.sizes[d]));
    }
  }
  if (!sizes.empty()) {
    // a size-only failure still needs the same layout to be generalised
    if (g.contiguous != t.is_contiguous() && dims != nullptr) dims->clear();
    return sizes;
  }
  if (g.contiguous) {
    if (!t.is_contiguous()) return "is not contiguous, expected contiguous";
  } else {
    for (size_t d = 0; d < g.strides.size(); ++d) {
      if (t.strides()[d] != g.strides[d])
        return str_cat("stride ", t.strides()[d], " at dimension ", d, ", expected ", g.strides[d]);
    }
  }
  return "";
}

}  // namespace

std::string autocast_state(const std::vector<Tensor>& tensors) {
  if ((dispatch::local_dispatch_key_set().included & DispatchKeySet(DispatchKey::Autocast).raw()) ==
      0) {
    return {};
  }
  std::vector<std::string> types;
  for (const Tensor& t : tensors)
    types.push_back(DeviceTypeRegistry::instance().name(t.device().type));
  if (types.empty()) types.push_back("cpu");
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  std::string out;
  for (const std::string& type : types) {
    if (!autocast::is_enabled(type)) continue;
    out += str_cat(out.empty() ? "" : ", ", type, " in ",
                   scalar_type_name(autocast::lower_dtype(type)));
  }
  return out;
}

Guards::Guards(const std::vector<Tensor>& tensors, const std::vector<double>& numbers,
               uint64_t flags, bool grad_mode, std::string autocast,
               const std::vector<Tensor>& held, const DynamicDims& dynamic)
    : numbers_(numbers), flags_(flags), grad_mode_(grad_mode), autocast_(std::move(autocast)) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<uint8_t> dims(static_cast<size_t>(tensors[i].dim()), 0);
    for (auto [arg, dim] : dynamic) {
      if (arg == static_cast<int>(i) && dim < static_cast<int>(dims.size()) &&
          tensors[i].sizes()[dim] >= 2)
        dims[dim] = 1;
    }
    TensorGuard g = guard_of(tensors[i], dims);
    for (size_t j = 0; j < i; ++j) {
      if (tensors[j].impl() == tensors[i].impl()) {
        g.same_as = static_cast<int>(j);
        break;
      }
    }
    tensors_.push_back(std::move(g));
  }
  for (const Tensor& t : held) held_.push_back(guard_of(t, {}));
}

GuardFailure Guards::check(const std::vector<Tensor>& tensors, const std::vector<double>& numbers,
                           uint64_t flags, bool grad_mode, const std::string& autocast,
                           const std::vector<Tensor>& held) const {
  GuardFailure f;
  if (tensors.size() != tensors_.size()) {
    f.reason = str_cat("the call has ", tensors.size(), " tensors, expected ", tensors_.size());
    return f;
  }
  if (numbers.size() != numbers_.size()) {
    f.reason = str_cat("the call has ", numbers.size(), " numbers, expected ", numbers_.size());
    return f;
  }
  for (size_t i = 0; i < numbers.size(); ++i) {
    if (numbers[i] != numbers_[i] && !(std::isnan(numbers[i]) && std::isnan(numbers_[i]))) {
      f.reason = str_cat("number argument ", i, " is ", numbers[i], ", expected ", numbers_[i]);
      return f;
    }
  }
  if (grad_mode != grad_mode_) {
    f.reason = str_cat("grad mode is ", grad_mode ? "on" : "off", ", expected ",
                       grad_mode_ ? "on" : "off");
    return f;
  }
  if (autocast != autocast_) {
    f.reason = str_cat("autocast is ", autocast.empty() ? "off" : autocast, ", expected ",
                       autocast_.empty() ? "off" : autocast_);
    return f;
  }
  if (flags != flags_) {
    f.reason = str_cat("the module's training mode is ", flags & 1 ? "on" : "off", ", expected ",
                       flags_ & 1 ? "on" : "off");
    return f;
  }
  bool only_sizes = true;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorGuard& g = tensors_[i];
    if (g.same_as >= 0 && tensors[i].impl() != tensors[g.same_as].impl()) {
      f.reason = str_cat("tensor ", i, " is not the same tensor as tensor ", g.same_as);
      return f;
    }
    std::vector<int> dims;
    std::string why = mismatch(g, tensors[i], &dims);
    if (why.empty()) continue;
    if (f.reason.empty()) f.reason = str_cat("tensor ", i, ": ", why);
    if (dims.empty()) only_sizes = false;
    for (int d : dims) f.sizes_only.emplace_back(static_cast<int>(i), d);
  }
  if (!only_sizes) f.sizes_only.clear();
  if (!f.reason.empty()) return f;
  for (size_t i = 0; i < held.size() && i < held_.size(); ++i) {
    std::string why = mismatch(held_[i], held[i], nullptr);
    if (!why.empty()) {
      f.reason = str_cat("held tensor ", i, ": ", why);
      return f;
    }
  }
  return f;
}

std::vector<std::string> Guards::describe() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorGuard& g = tensors_[i];
    std::string line = str_cat("x", i, ": ", scalar_type_name(g.dtype), sizes_text(g), " on ",
                               g.device.to_string(), g.contiguous ? ", contiguous" : ", strides [");
    if (!g.contiguous) {
      for (size_t d = 0; d < g.strides.size(); ++d) line += str_cat(d ? ", " : "", g.strides[d]);
      line += "]";
    }
    line += str_cat(", requires_grad=", g.requires_grad ? "true" : "false");
    if (g.same_as >= 0) line += str_cat(", the same tensor as x", g.same_as);
    out.push_back(line);
  }
  for (size_t i = 0; i < numbers_.size(); ++i)
    out.push_back(str_cat("number ", i, " == ", numbers_[i]));
  out.push_back(str_cat("grad mode ", grad_mode_ ? "on" : "off"));
  if (!autocast_.empty()) out.push_back(str_cat("autocast ", autocast_));
  if (flags_ != 0) out.push_back("module in training mode");
  for (size_t i = 0; i < held_.size(); ++i) {
    out.push_back(str_cat("held tensor ", i, ": ", scalar_type_name(held_[i].dtype),
                          sizes_text(held_[i]), " on ", held_[i].device.to_string()));
  }
  return out;
}

}  // namespace loom::compiler::detail
