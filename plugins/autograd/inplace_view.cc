// In-place writes through views (inplace_view.h).
#include "inplace_view.h"

#include "loom/sdk/extension.hpp"
#include "loom/sdk/ops.hpp"

namespace loom::autograd {

// Note [In-place writes to views]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every view knows its base (Note [View bases] in the core; LoomTensorView::view_base).
// When an op writes a view in place and something involved requires grad, the write
// changes the base too, so the base's history becomes a CopySlices node: its backward
// copies the incoming gradient into a buffer laid out like the base, runs the op's own
// backward on the view's part, writes the result (the gradient for the view's old
// values) back into that part, and hands the buffer to the base's previous history; the
// op's other inputs get their gradients as usual. The view itself becomes a view of the
// updated base (ViewOfBase). This is how a decomposition that fills part of a fresh
// buffer (pad, im2col, the slice and select formulas) stays differentiable.
//
// Other views of the same base still point at its old history. Each view's metadata
// keeps the storage version its history was made at; when the storage has been written
// since, gradient_edge rebuilds the view's history as a ViewOfBase of the base's current
// history. A write to a view of a leaf that requires grad is refused, as in PyTorch.

namespace {

bool is_dense(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1) dims.emplace_back(strides[d], sizes[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (auto [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

InputMetadata metadata_of(const Tensor& t) {
  InputMetadata m;
  m.sizes.assign(t.sizes());
  m.dtype = t.dtype();
  m.device = t.device();
  return m;
}

}  // namespace

ViewGeometry ViewGeometry::of(const Tensor& view, const Tensor& base) {
  if (!is_dense(base.sizes(), base.strides())) {
    throw sdk::Error(
        "[autograd] an in-place write to a view whose base is not dense (an expanded or "
        "overlapping tensor) cannot be differentiated");
  }
  ViewGeometry g;
  g.base_sizes.assign(base.sizes());
  g.base_strides.assign(base.strides());
  g.dtype = base.dtype();
  g.device = base.device();
  g.sizes.assign(view.sizes());
  g.strides.assign(view.strides());
  g.offset = view.storage_offset() - base.storage_offset();
  return g;
}

Tensor ViewGeometry::base_buffer() const {
  LoomTensor* out = nullptr;
  std::span<const int64_t> sizes = base_sizes.span();
  sdk::check(sdk::host().tensor_empty(sizes.data(), base_strides.span().data(),
                                      static_cast<int32_t>(sizes.size()), dtype, device, &out));
  return Tensor::adopt(out);
}

Tensor ViewGeometry::region(const Tensor& buffer) const {
  return sdk::op::as_strided(buffer, sizes.span(), strides.span(),
                             std::optional<int64_t>(buffer.storage_offset() + offset));
}

CopySlices::CopySlices(std::shared_ptr<Node> f, ViewGeometry g)
    : fn(std::move(f)), geometry(std::move(g)) {}

std::vector<Tensor> CopySlices::apply(std::vector<Tensor>&& grads) {
  std::vector<Tensor> out(next_edges.size());
  if (!grads[0].defined()) return out;
  Tensor result = geometry.base_buffer();
  sdk::op::copy_(result, grads[0]);
  Tensor region = geometry.region(result);
  std::vector<Tensor> fn_grads = fn->apply({sdk::op::clone(region)});
  fn_grads.resize(fn->next_edges.size());
  if (fn_grads.size() > 0 && fn_grads[0].defined()) {
    Tensor g = fn_grads[0];
    if (!(geometry.sizes == g.sizes())) g = sdk::sum_to(g, geometry.sizes.span());
    sdk::op::copy_(region, g);
  } else {
    sdk::op::fill_(region, sdk::scalar(0.0));
  }
  out[0] = result;
  for (size_t i = 1; i < fn_grads.size() && i < out.size(); ++i) out[i] = std::move(fn_grads[i]);
  return out;
}

ViewOfBase::ViewOfBase(ViewGeometry g) : geometry(std::move(g)) {}

Tensor view_gradient_to_base(const ViewGeometry& geometry, const Tensor& grad) {
  Tensor buffer = geometry.base_buffer();
  sdk::op::fill_(buffer, sdk::scalar(0.0));
  // Elements a view repeats (stride 0, from expand) take the sum of their gradients.
  Tensor g = grad;
  std::vector<int64_t> sizes(geometry.sizes.span().begin(), geometry.sizes.span().end());
  std::vector<int64_t> strides(geometry.strides.span().begin(), geometry.strides.span().end());
  std::vector<int64_t> repeated;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (strides[d] == 0 && sizes[d] > 1) {
      repeated.push_back(static_cast<int64_t>(d));
      sizes[d] = 1;
    }
  }
  if (!repeated.empty()) g = sdk::op::sum(g, std::optional<sdk::IntList>(repeated), true);
  Tensor region = sdk::op::as_strided(
      buffer, sizes, strides, std::optional<int64_t>(buffer.storage_offset() + geometry.offset));
  sdk::op::copy_(region, g);
  return buffer;
}

std::vector<Tensor> ViewOfBase::apply(std::vector<Tensor>&& grads) {
  if (!grads[0].defined()) return {Tensor()};
  return {view_gradient_to_base(geometry, grads[0])};
}

void rebase_view_write(const std::shared_ptr<Node>& fn, const Tensor& view, const Tensor& base) {
  ViewGeometry geometry = ViewGeometry::of(view, base);
  auto copy_slices = std::make_shared<CopySlices>(fn, geometry);
  copy_slices->next_edges.push_back(gradient_edge(base));
  for (size_t i = 1; i < fn->next_edges.size(); ++i)
    copy_slices->next_edges.push_back(fn->next_edges[i]);
  copy_slices->input_metadata.push_back(metadata_of(base));
  set_history(base, copy_slices, 0);

  auto as_view = std::make_shared<ViewOfBase>(geometry);
  as_view->next_edges.push_back({copy_slices, 0});
  as_view->input_metadata.push_back(metadata_of(view));
  set_history(view, as_view, 0);
  AutogradMeta& m = ensure_meta(view);
  std::lock_guard<std::mutex> lock(m.mutex);
  m.view_history = true;
  m.view_version = sdk::version(view) + 1;  // the dispatcher bumps it once the op returns
}

void refresh_view_history(const Tensor& t, AutogradMeta& m) {
  const uint64_t now = sdk::version(t);
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    if (now == m.view_version) return;
  }
  LoomTensor* base_handle = t.view_base();
  if (base_handle == nullptr) return;
  Tensor base = Tensor::borrow(base_handle);
  Edge base_edge = gradient_edge(base);
  if (!base_edge.valid()) return;
  auto as_view = std::make_shared<ViewOfBase>(ViewGeometry::of(t, base));
  as_view->next_edges.push_back(std::move(base_edge));
  as_view->input_metadata.push_back(metadata_of(t));
  std::lock_guard<std::mutex> lock(m.mutex);
  m.grad_fn = as_view;
  m.output_nr = 0;
  m.view_version = now;
}

}  // namespace loom::autograd
