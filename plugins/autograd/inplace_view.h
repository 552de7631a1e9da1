// In-place writes through views (Note [In-place writes to views]): the CopySlices node
// that gives a view's base the history of the write, and the view-of-base node that
// rebuilds a view's history from its base's.
#pragma once

#include <memory>

#include "graph.h"
#include "loom/plugin.h"

namespace loom::autograd {

// Where a view sits in its base: enough to rebuild it over a buffer shaped like the base.
struct ViewGeometry {
  Sizes base_sizes, base_strides;
  LoomDType dtype = LOOM_DTYPE_FLOAT32;
  LoomDevice device{};
  Sizes sizes, strides;
  int64_t offset = 0;  // from the base's first element, in elements

  static ViewGeometry of(const Tensor& view, const Tensor& base);
  // An uninitialised tensor laid out like the base.
  Tensor base_buffer() const;
  // The view's elements inside `buffer` (a tensor laid out like the base).
  Tensor region(const Tensor& buffer) const;
};

// The base's history after `fn` wrote in place through a view: backward runs `fn`'s
// backward on the view's part of the gradient, passes the rest through unchanged.
struct CopySlices final : Node {
  CopySlices(std::shared_ptr<Node> fn, ViewGeometry geometry);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "CopySlices"; }
  void release_saved() override {
    fn->release_saved();
    fn->released = true;
  }
  std::shared_ptr<Node> fn;
  ViewGeometry geometry;
};

// A view's history as a view of its base: the gradient lands at the view's place in a
// zero tensor shaped like the base.
struct ViewOfBase final : Node {
  explicit ViewOfBase(ViewGeometry geometry);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "AsStridedBackward0"; }
  ViewGeometry geometry;
};

// The gradient of a view (geometry.sizes, strides, offset over a base laid out as
// geometry.base_*) put at its place in zeros shaped like the base; elements the view
// repeats (stride 0) add up.
Tensor view_gradient_to_base(const ViewGeometry& geometry, const Tensor& grad);

// Records that `fn` wrote `view` (argument 0 of its op) in place, `base` being the view's
// base: the base gets a CopySlices history, the view a view-of-base history.
void rebase_view_write(const std::shared_ptr<Node>& fn, const Tensor& view, const Tensor& base);

}  // namespace loom::autograd
