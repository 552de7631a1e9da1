// The shape ops on GPU tensors: cat, flip, roll and repeat, each a few launches of the
// copy kernel planned by shape_plan.h (Note [Shape ops as copies]), and tril and triu
// (shape.cu). Outputs arrive
// allocated by the op's shape rule, which has checked the dims, shifts and repeats; cat's
// inputs may have other dtypes than out (the copy converts).
#include <string>
#include <vector>

#include "../kernels/launch.h"
#include "loom/sdk/dtype.hpp"
#include "op_support.h"
#include "shape_plan.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

// A tensor's layout, one dim of size 1 for a 0-dim tensor (its storage lives on in
// `sizes`/`strides` of the caller's vectors).
struct OwnedLayout {
  std::vector<int64_t> sizes, strides;
  TensorLayout view() const { return {sizes, strides}; }
};
OwnedLayout layout_of(const Tensor& t) {
  if (t.dim() == 0) return {{1}, {1}};
  return {std::vector<int64_t>(t.sizes().begin(), t.sizes().end()),
          std::vector<int64_t>(t.strides().begin(), t.strides().end())};
}

// Queues one copy per block from src into out.
void copy_blocks(const DispatchContext& ctx, const char* op, const std::vector<CopyBlock>& blocks,
                 const Tensor& out, const Tensor& src) {
  const int64_t out_item = static_cast<int64_t>(sdk::element_size(out.dtype()));
  const int64_t src_item = static_cast<int64_t>(sdk::element_size(src.dtype()));
  for (const CopyBlock& b : blocks) {
    const int64_t* strides[2] = {b.dst_strides.data(), b.src_strides.data()};
    StridedSpace<2> space;
    if (!make_strided_space<2>(b.sizes.data(), static_cast<int>(b.sizes.size()), strides, &space)) {
      throw sdk::Error("[" + std::string(op) +
                       "] too many dims for the " LOOM_GPU_PLATFORM_NAME
                       " copy kernel after merging (at most " +
                       std::to_string(kMaxDims) + ")");
    }
    if (space.numel() == 0) continue;
    check_launch(
        launch_copy(out.dtype(), src.dtype(), space, out.data<char>() + b.dst_offset * out_item,
                    src.data<char>() + b.src_offset * src_item, stream_of(ctx)),
        op);
  }
}

Tensor cat_out(const DispatchContext& ctx, const std::vector<Tensor>& tensors, int64_t dim,
               const Tensor& out) {
  const char* op = "cat";
  for (const Tensor& t : tensors) prepare(op, out, {&t});
  if (out.numel() == 0) return out;
  const int64_t d = wrapped_dim(op, dim, out.dim());
  const OwnedLayout o = layout_of(out);
  std::vector<OwnedLayout> owned;
  for (const Tensor& t : tensors) owned.push_back(layout_of(t));
  std::vector<TensorLayout> layouts;
  for (const OwnedLayout& l : owned) layouts.push_back(l.view());
  // one launch per input: each may have its own dtype, which the copy converts
  for (const CopyBlock& b : plan_cat(layouts, d, o.view())) {
    copy_blocks(ctx, op, {b}, out, tensors[b.input]);
  }
  return out;
}

Tensor flip_out(const DispatchContext& ctx, const Tensor& self, std::span<const int64_t> dims,
                const Tensor& out) {
  const char* op = "flip";
  prepare(op, out, {&self});
  if (out.numel() == 0) return out;
  const OwnedLayout s = layout_of(self), o = layout_of(out);
  std::vector<bool> flipped(s.sizes.size(), false);
  for (int64_t d : dims) flipped[static_cast<size_t>(wrapped_dim(op, d, self.dim()))] = true;
  copy_blocks(ctx, op, {plan_flip(s.view(), flipped, o.view())}, out, self);
  return out;
}

// shift mod size, in [0, size), for any int64 shift.
int64_t wrapped_shift(int64_t shift, int64_t size) {
  const int64_t r = shift % size;
  return r < 0 ? r + size : r;
}

Tensor roll_out(const DispatchContext& ctx, const Tensor& self, std::span<const int64_t> shifts,
                std::span<const int64_t> dims, const Tensor& out) {
  const char* op = "roll";
  prepare(op, out, {&self});
  if (out.numel() == 0) return out;
  if (dims.empty()) {
    // The flattened tensor rolls: its row-major order, from a contiguous copy when self
    // is not contiguous (out arrives contiguous from the shape rule).
    const Tensor flat = self.is_contiguous() ? self : contiguous(ctx, op, self);
    const int64_t n = self.numel();
    const int64_t sizes[1] = {n}, unit[1] = {1}, shift[1] = {wrapped_shift(shifts[0], n)};
    const TensorLayout line{sizes, unit};
    if (!out.is_contiguous()) {
      throw sdk::Error("[roll] expected a contiguous out for a roll of the flattened tensor");
    }
    copy_blocks(ctx, op, plan_roll(line, shift, line), out, flat);
    return out;
  }
  const OwnedLayout s = layout_of(self), o = layout_of(out);
  std::vector<int64_t> shift(s.sizes.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {  // a dim given twice rolls by both shifts
    const size_t d = static_cast<size_t>(wrapped_dim(op, dims[i], self.dim()));
    shift[d] = wrapped_shift(shift[d] + wrapped_shift(shifts[i], s.sizes[d]), s.sizes[d]);
  }
  copy_blocks(ctx, op, plan_roll(s.view(), shift, o.view()), out, self);
  return out;
}

Tensor repeat_out(const DispatchContext& ctx, const Tensor& self, std::span<const int64_t>,
                  const Tensor& out) {
  const char* op = "repeat";
  prepare(op, out, {&self});
  if (out.numel() == 0) return out;
  const OwnedLayout s = self.dim() == 0 ? OwnedLayout{} : layout_of(self);
  const OwnedLayout o = layout_of(out);
  copy_blocks(ctx, op, {plan_repeat(s.view(), o.view())}, out, self);
  return out;
}

// tril (Lower) keeps the elements with column - row <= diagonal, triu those >= diagonal.
template <bool Lower>
Tensor triangle_out(const DispatchContext& ctx, const Tensor& self, int64_t diagonal,
                    const Tensor& out) {
  const char* op = Lower ? "tril" : "triu";
  prepare(op, out, {&self});
  if (out.numel() == 0) return out;
  if (self.dim() < 2) {
    throw sdk::Error("[" + std::string(op) + "] expected a tensor of at least 2 dims, found " +
                     std::to_string(self.dim()));
  }
  const Tensor* operands[2] = {&out, &self};
  const int64_t rows = out.sizes()[out.dim() - 2], cols = out.sizes()[out.dim() - 1];
  check_launch(launch_triangle(Lower, static_cast<int32_t>(sdk::element_size(out.dtype())),
                               space_of(op, out, operands), rows, cols, diagonal, out.data(),
                               self.data(), stream_of(ctx)),
               op);
  return out;
}

}  // namespace

void register_shape_ops(sdk::Registrar& r, uint32_t key) {
  const sdk::DTypeSet all = sdk::dtypes::all;
  r.impl<&cat_out>("loom::cat.out", key, all);
  r.impl<&flip_out>("loom::flip.out", key, all);
  r.impl<&roll_out>("loom::roll.out", key, all);
  r.impl<&repeat_out>("loom::repeat.out", key, all);
  r.impl<&triangle_out<true>>("loom::tril.out", key, all);
  r.impl<&triangle_out<false>>("loom::triu.out", key, all);
}

}  // namespace loom::gpu
