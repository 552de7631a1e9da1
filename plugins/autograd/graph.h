// The autograd graph: what a tensor that requires grad carries in its autograd slot
// (AutogradMeta), the backward nodes recorded by ops, their edges, saved tensors and the
// leaves' gradient cells. Everything here is plugin-owned and reached through the SDK.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "loom/autograd_api.h"
#include "loom/sdk/tensor.hpp"

namespace loom::autograd {

using sdk::Tensor;

// A gradient hook: gets the gradient, returns a replacement or an undefined tensor to
// keep it.
using Hook = std::function<Tensor(const Tensor&)>;

// Sizes with six dims inline (what every tensor up to 6-D needs: no allocation).
class Sizes {
 public:
  Sizes() = default;
  explicit Sizes(std::span<const int64_t> s) { assign(s); }
  void assign(std::span<const int64_t> s);
  std::span<const int64_t> span() const {
    return {heap_.empty() ? inline_ : heap_.data(), static_cast<size_t>(ndim_)};
  }
  bool operator==(std::span<const int64_t> other) const;

 private:
  int64_t inline_[6] = {};
  std::vector<int64_t> heap_;
  int32_t ndim_ = 0;
};

// What a gradient flowing into an input must look like (Note [Gradient validation]).
struct InputMetadata {
  Sizes sizes;
  LoomDType dtype = LOOM_DTYPE_FLOAT32;
  LoomDevice device{};
};

struct Node;

// Where a gradient goes: input `input_nr` of `node` (the node's forward output index).
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t input_nr = 0;
  bool valid() const { return node != nullptr; }
};

// A leaf's gradient and what runs after accumulating into it. Shared by the leaf's
// AutogradMeta and its AccumulateGrad node (and by a retained non-leaf's meta).
struct GradCell {
  std::mutex mutex;
  Tensor grad;
  std::vector<Hook> post_accumulate_hooks;
};

// Note [Saved-tensor hooks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// While a frontend has pushed hooks on a thread (loom/autograd_api.h), each tensor an op
// recorded there saves goes to the innermost pack hook, and the node keeps only the handle
// it returns, with the tensor's shape and dtype; backward's read calls unpack and refuses a
// tensor of another shape or dtype. Hooks run with recording off and with an empty entry
// pushed, so what they compute is not packed again, while hooks they push themselves (a
// non-reentrant checkpoint's recomputation) apply. A packed tensor has no version check:
// the node holds no reference to it (that is the point); a checkpoint recomputes from its
// inputs. The handle is released when the node's saved tensors are. A save of an argument's
// geometry only (as_strided's strides and offset, a pooling's shape) is kept as it is: an
// unpacked copy would lose its strides.
struct SavedTensorHooks {
  explicit SavedTensorHooks(const LoomSavedTensorHooks& h) : c(h) {}
  ~SavedTensorHooks() {
    if (c.release != nullptr) c.release(c.context);
  }
  SavedTensorHooks(const SavedTensorHooks&) = delete;
  SavedTensorHooks& operator=(const SavedTensorHooks&) = delete;
  LoomSavedTensorHooks c;
};

struct PackedTensor {
  PackedTensor(std::shared_ptr<SavedTensorHooks> h, void* p, const Tensor& t);
  ~PackedTensor();
  PackedTensor(const PackedTensor&) = delete;
  PackedTensor& operator=(const PackedTensor&) = delete;
  Tensor unpack(const char* op) const;
  std::shared_ptr<SavedTensorHooks> hooks;
  void* handle;
  Sizes sizes;
  LoomDType dtype;
};

// The thread's saved-tensor hooks: push (nullptr: none, while a hook runs), pop, innermost.
void push_saved_tensor_hooks(std::shared_ptr<SavedTensorHooks> hooks);
bool pop_saved_tensor_hooks();
std::shared_ptr<SavedTensorHooks> current_saved_tensor_hooks();

// Note [Saved tensors]
// ~~~~~~~~~~~~~~~~~~~~
// A node keeps what its backward reads as a detached alias (LoomHostApi::tensor_alias:
// the same storage and version counter, no metadata, no view base), never the tensor
// itself. Keeping the tensor would make a cycle as soon as its history passes through
// this node: an output's history is this node, and an input's becomes a later node when
// it is written in place (`h.add_(h * 3)`: add_'s node leads to mul's, which kept h).
// The storage's version is recorded, and unpacking a tensor modified in place since is
// refused, naming the op and both versions. When backward builds a graph
// (create_graph), the alias is given back the history it had when saved (an input's edge,
// or output i of this node through a weak reference), so the second derivative flows on.
struct SavedTensor {
  Tensor data;
  std::shared_ptr<PackedTensor> packed;  // instead of data, under saved-tensor hooks
  uint64_t version = 0;
  bool layout_only = false;
  bool is_output = false;
  uint32_t output_nr = 0;
  std::weak_ptr<Node> owner;      // outputs
  std::shared_ptr<Node> history;  // inputs: the node their gradient went to when saved
  uint32_t history_nr = 0;
  bool defined() const { return data.defined() || packed != nullptr; }
};
// Gives s.data to the thread's saved-tensor hooks, if any (Note [Saved-tensor hooks]).
void pack_if_hooked(SavedTensor& s);

struct Node {
  Node();
  virtual ~Node() = default;
  // Gradients of the forward outputs (undefined where none flowed) -> gradients of the
  // forward inputs, one per next edge (undefined where none).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  virtual std::string name() const = 0;
  // The forward op this node differentiates ("loom::sqrt"), for messages.
  virtual std::string forward_op() const { return name(); }
  // Drops saved tensors after a backward without retain_graph.
  virtual void release_saved() {}

  absl::InlinedVector<Edge, 3> next_edges;
  absl::InlinedVector<InputMetadata, 1> input_metadata;                // one per forward output
  std::vector<std::pair<uint32_t, Hook>> pre_hooks;                    // (output index, hook)
  std::vector<std::pair<uint32_t, std::weak_ptr<GradCell>>> retained;  // retain_grad
  uint64_t sequence_nr;
  bool released = false;  // saved tensors freed by a backward without retain_graph
  std::mutex hooks_mutex;
};

// Accumulates into a leaf's .grad (Note [Gradient layout]).
struct AccumulateGrad final : Node {
  AccumulateGrad(std::shared_ptr<GradCell> cell, const Tensor& leaf);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  std::shared_ptr<GradCell> cell;
  Sizes strides;
  bool contiguous = true;
};

// The per-tensor autograd state kept in the "autograd" slot (pooled: Note [Node and
// metadata pools]).
struct AutogradMeta {
  static void* operator new(size_t size);
  static void operator delete(void* meta, size_t size);
  std::mutex mutex;
  bool requires_grad = false;  // leaves; a non-leaf requires grad through grad_fn
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  std::shared_ptr<GradCell> cell;  // leaves, and non-leaves that retain their grad
  // A leaf's node, kept while it requires grad: it holds the gradient cell, not the
  // tensor, so no cycle (PyTorch's holds the tensor and must be weak).
  std::shared_ptr<Node> grad_accumulator;
  bool retains_grad = false;
  // A view's history holds while its storage is at this version; after an in-place write
  // elsewhere in the storage it is rebuilt from its base's (Note [In-place writes to views]).
  bool view_history = false;
  uint64_t view_version = 0;
  bool is_leaf() const { return grad_fn == nullptr; }
  bool needs_grad() const { return requires_grad || grad_fn != nullptr; }
};

// --- the slot ---
void claim_meta_slot();
AutogradMeta* meta_of(const Tensor& t);  // nullptr when none
// The meta, created when absent.
AutogradMeta& ensure_meta(const Tensor& t);
bool requires_grad(const Tensor& t);
// Marks `t` as output `output_nr` of `node`.
void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr);
// The same for a tensor the op just made (it has no metadata yet); `is_view`: it is a
// view op's result, whose history is rebuilt after writes to its storage.
void set_new_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr,
                     bool is_view);
// The edge a gradient for `t` flows along: its grad_fn, or its leaf accumulator; `meta` is
// t's metadata when the caller has read it already.
Edge gradient_edge(const Tensor& t);
Edge gradient_edge(const Tensor& t, AutogradMeta* meta);
// Rebuilds a view's history from its base's when its storage was written since
// (Note [In-place writes to views]).
void refresh_view_history(const Tensor& t, AutogradMeta& m);
// The gradient cell of a leaf or retained tensor (created on demand for leaves).
std::shared_ptr<GradCell> grad_cell(const Tensor& t, bool create);

// --- saved tensors ---
// `history`: t's gradient edge (the caller has built it for the node already).
SavedTensor save_input(const Tensor& t, const Edge& history);
// A detached alias of t kept for its layout; unpacking skips the version check.
SavedTensor save_layout(const Tensor& t);
// `version_offset`: 1 for an output written in place by the running op (the dispatcher
// bumps its version once the op returns).
SavedTensor save_output(const Tensor& t, const std::shared_ptr<Node>& owner, uint32_t output_nr,
                        uint64_t version_offset);
// The tensor to compute with; `op` names the node for the messages.
Tensor unpack(const SavedTensor& s, const char* op, bool create_graph);

// --- modes ---
bool anomaly_mode_enabled();
void set_anomaly_mode(bool enabled);
// The next sequence number (later nodes run first in backward).
uint64_t next_sequence_nr();

}  // namespace loom::autograd
