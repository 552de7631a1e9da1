// Which cast autocast applies to each op (Note [Autocast policy]): PyTorch's lists, and a
// backend's overrides from its published LoomAutocastPolicyTable.
#pragma once

#include <cstdint>
#include <string>

#include "loom/autocast_api.h"

namespace loom::autocast {

// Note [Autocast policy]
// ~~~~~~~~~~~~~~~~~~~~~~
// One policy serves every device type, a vendor's included: the ops PyTorch's CUDA autocast
// runs in lower precision (products and convolutions: mm, bmm, addmm, baddbmm, matmul,
// linear, einsum, conv*, conv_transpose*, prelu, the RNN cells) take their floating tensors
// in the region's lower dtype; the ops that lose accuracy there (exp, log, pow, softmax,
// log_softmax, the norms and normalisations, the losses, sum, prod, cumsum, ...) take
// float16 and bfloat16 tensors in float32; the ops that combine several tensors (cat,
// stack, where, index_put, addcmul, ...) take all in the widest floating dtype among them.
// batch_norm and instance_norm are in the float32 list too (PyTorch leaves them to cuDNN,
// which takes float16 inputs with float32 parameters; loom's kernels take one dtype).
// Binary ops of mixed dtypes need nothing: their type promotion already computes in the
// wider dtype. Everything else runs as given. Only floating tensors on the region's device
// type are cast, and never float64 (as PyTorch). The lower dtype is bfloat16 on cpu and
// float16 elsewhere unless the region names one; a backend may publish a
// LoomAutocastPolicyTable under "loom.autocast_policy.<device type>" to change its default
// dtype and the cast of any op ("ns::name" for every overload, or "ns::name.overload").
// An op that writes its arguments (in-place "name_", out= ".out" / "._out") is never cast,
// whatever a table says: a cast copy would take the write (PyTorch casts neither).
LoomAutocastCast default_cast(const std::string& op);  // op: "ns::name.overload"

// Whether `op` writes its arguments: "loom::add_.Tensor", "loom::mm.out", "loom::sum.IntList_out".
bool writes_its_arguments(const std::string& op);

// "loom::add.Tensor" -> "loom::add"
std::string base_name(const std::string& op);

// `table`'s cast for `op` (its exact name first, then its base name); -1 when it has none.
int32_t override_cast(const LoomAutocastPolicyTable* table, const std::string& op);

}  // namespace loom::autocast
