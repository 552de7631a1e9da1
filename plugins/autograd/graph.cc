// The autograd slot, gradient edges, saved tensors and leaf accumulation.
#include "graph.h"

#include "object_pool.h"

#include <algorithm>
#include <numeric>

#include "loom/sdk/dtype.hpp"
#include "loom/sdk/extension.hpp"
#include "loom/sdk/ops.hpp"
#include "loom/sdk/shape.hpp"

namespace loom::autograd {
namespace {

int32_t g_meta_slot = -1;
std::atomic<uint64_t> g_sequence_nr{0};
std::atomic<bool> g_anomaly{false};

void destroy_meta(void* p) {
  delete static_cast<AutogradMeta*>(p);
}

// Strides of a dense tensor whose dims are laid out in some order (channels_last and
// other permutations): a gradient can take them. Expanded or overlapping layouts cannot.
bool is_dense_permutation(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (size_t d : order) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

}  // namespace

void* AutogradMeta::operator new(size_t size) {
  if (size != sizeof(AutogradMeta)) return ::operator new(size);
  return BlockPool<sizeof(AutogradMeta)>::allocate();
}

void AutogradMeta::operator delete(void* meta, size_t size) {
  if (size != sizeof(AutogradMeta)) {
    ::operator delete(meta);
    return;
  }
  BlockPool<sizeof(AutogradMeta)>::deallocate(meta);
}

void Sizes::assign(std::span<const int64_t> s) {
  ndim_ = static_cast<int32_t>(s.size());
  if (s.size() <= 6) {
    heap_.clear();
    std::copy(s.begin(), s.end(), inline_);
  } else {
    heap_.assign(s.begin(), s.end());
  }
}

bool Sizes::operator==(std::span<const int64_t> other) const {
  std::span<const int64_t> mine = span();
  return std::equal(mine.begin(), mine.end(), other.begin(), other.end());
}

Node::Node() : sequence_nr(next_sequence_nr()) {}

uint64_t next_sequence_nr() {
  return g_sequence_nr.fetch_add(1, std::memory_order_relaxed);
}

bool anomaly_mode_enabled() {
  return g_anomaly.load(std::memory_order_relaxed);
}

void set_anomaly_mode(bool enabled) {
  g_anomaly.store(enabled, std::memory_order_relaxed);
}

void claim_meta_slot() {
  g_meta_slot = sdk::slot_of("autograd");
}

AutogradMeta* meta_of(const Tensor& t) {
  return static_cast<AutogradMeta*>(sdk::slot_value(t, g_meta_slot));
}

AutogradMeta& ensure_meta(const Tensor& t) {
  if (AutogradMeta* m = meta_of(t)) return *m;
  auto* m = new AutogradMeta();
  try {
    sdk::set_slot_value(t, g_meta_slot, m, &destroy_meta);
  } catch (...) {
    delete m;
    throw;
  }
  return *m;
}

bool requires_grad(const Tensor& t) {
  const AutogradMeta* m = meta_of(t);
  return m != nullptr && m->needs_grad();
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  AutogradMeta& m = ensure_meta(t);
  std::lock_guard<std::mutex> lock(m.mutex);
  m.grad_fn = node;
  m.output_nr = output_nr;
  m.requires_grad = false;
  m.grad_accumulator.reset();
  if (m.retains_grad && m.cell) node->retained.emplace_back(output_nr, m.cell);
  sdk::set_key(t, LOOM_KEY_AUTOGRAD, true);
}

void set_new_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr,
                     bool is_view) {
  auto* m = new AutogradMeta();
  m->grad_fn = node;
  m->output_nr = output_nr;
  if (is_view) {
    m->view_history = true;
    m->view_version = sdk::version(t);
  }
  try {
    sdk::set_slot_value(t, g_meta_slot, m, &destroy_meta, LOOM_KEY_AUTOGRAD);
  } catch (...) {
    delete m;
    throw;
  }
}

Edge gradient_edge(const Tensor& t) {
  return gradient_edge(t, meta_of(t));
}

Edge gradient_edge(const Tensor& t, AutogradMeta* m) {
  if (m == nullptr) return {};
  if (m->view_history) refresh_view_history(t, *m);
  std::lock_guard<std::mutex> lock(m->mutex);
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  if (!m->requires_grad) return {};
  if (!m->grad_accumulator) {
    if (!m->cell) m->cell = std::make_shared<GradCell>();
    m->grad_accumulator = std::make_shared<AccumulateGrad>(m->cell, t);
  }
  return {m->grad_accumulator, 0};
}

std::shared_ptr<GradCell> grad_cell(const Tensor& t, bool create) {
  AutogradMeta* m = create ? &ensure_meta(t) : meta_of(t);
  if (m == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(m->mutex);
  if (!m->cell && create) m->cell = std::make_shared<GradCell>();
  return m->cell;
}

// --- saved tensors ---

namespace {
thread_local std::vector<std::shared_ptr<SavedTensorHooks>> tls_saved_tensor_hooks;

// While a hook runs: no recording, and no hooks but those it pushes itself.
struct InsideHook {
  InsideHook() : no_grad({}, {LOOM_KEY_AUTOGRAD}) { push_saved_tensor_hooks(nullptr); }
  ~InsideHook() { pop_saved_tensor_hooks(); }
  sdk::LocalKeyGuard no_grad;
};
}  // namespace

void push_saved_tensor_hooks(std::shared_ptr<SavedTensorHooks> hooks) {
  tls_saved_tensor_hooks.push_back(std::move(hooks));
}

bool pop_saved_tensor_hooks() {
  if (tls_saved_tensor_hooks.empty()) return false;
  tls_saved_tensor_hooks.pop_back();
  return true;
}

std::shared_ptr<SavedTensorHooks> current_saved_tensor_hooks() {
  return tls_saved_tensor_hooks.empty() ? nullptr : tls_saved_tensor_hooks.back();
}

PackedTensor::PackedTensor(std::shared_ptr<SavedTensorHooks> h, void* p, const Tensor& t)
    : hooks(std::move(h)), handle(p), sizes(t.sizes()), dtype(t.dtype()) {}

PackedTensor::~PackedTensor() {
  if (hooks->c.release_packed != nullptr) hooks->c.release_packed(hooks->c.context, handle);
}

Tensor PackedTensor::unpack(const char* op) const {
  LoomTensor* out = nullptr;
  {
    InsideHook inside;
    sdk::check(hooks->c.unpack(hooks->c.context, handle, &out));
  }
  if (out == nullptr) {
    throw sdk::Error(
        std::string("[autograd] the unpack hook returned no tensor for one saved by ") + op);
  }
  Tensor t = Tensor::adopt(out);
  if (!(sizes == t.sizes()) || t.dtype() != dtype) {
    throw sdk::Error(std::string("[autograd] the unpack hook returned ") +
                     sdk::dtype_name(t.dtype()) + " " + sdk::shape_string(t.sizes()) +
                     " for a tensor saved by " + op + " as " + sdk::dtype_name(dtype) + " " +
                     sdk::shape_string(sizes.span()));
  }
  return t;
}

void pack_if_hooked(SavedTensor& s) {
  std::shared_ptr<SavedTensorHooks> hooks = current_saved_tensor_hooks();
  if (!hooks || !s.data.defined()) return;
  void* handle = nullptr;
  {
    InsideHook inside;
    sdk::check(hooks->c.pack(hooks->c.context, s.data.get(), &handle));
  }
  s.packed = std::make_shared<PackedTensor>(std::move(hooks), handle, s.data);
  s.data = Tensor();
}

SavedTensor save_input(const Tensor& t, const Edge& history) {
  SavedTensor s;
  s.data = sdk::detached_alias(t);
  s.version = sdk::version(t);
  s.history = history.node;
  s.history_nr = history.input_nr;
  pack_if_hooked(s);
  return s;
}

SavedTensor save_layout(const Tensor& t) {
  SavedTensor s;
  s.data = sdk::detached_alias(t);
  s.layout_only = true;  // kept as is, hooks or not: its geometry is what is read
  return s;
}

SavedTensor save_output(const Tensor& t, const std::shared_ptr<Node>& owner, uint32_t output_nr,
                        uint64_t version_offset) {
  SavedTensor s;
  s.data = sdk::detached_alias(t);
  s.version = sdk::version(t) + version_offset;
  s.is_output = true;
  s.output_nr = output_nr;
  s.owner = owner;
  pack_if_hooked(s);
  return s;
}

Tensor unpack(const SavedTensor& s, const char* op, bool create_graph) {
  Tensor data = s.packed ? s.packed->unpack(op) : s.data;
  if (s.layout_only) return data;
  if (!s.packed) {
    const uint64_t now = sdk::version(data);
    if (now != s.version) {
      throw sdk::Error(std::string("[autograd] a tensor saved by ") + op +
                       " for backward was modified in place (version " + std::to_string(now) +
                       ", saved at version " + std::to_string(s.version) + ")");
    }
  }
  if (!create_graph) return data;
  // Double backward: give the alias back the history it had (Note [Saved tensors]).
  std::shared_ptr<Node> node = s.is_output ? s.owner.lock() : s.history;
  if (!node) return data;
  Tensor attached = sdk::detached_alias(data);
  set_new_history(attached, node, s.is_output ? s.output_nr : s.history_nr, false);
  return attached;
}

// --- AccumulateGrad ---

// Note [Gradient layout]
// ~~~~~~~~~~~~~~~~~~~~~~
// A leaf's first gradient is copied into a tensor laid out like the leaf (contiguous, or
// the leaf's own dense strides such as channels_last), so optimizers can walk parameter
// and gradient together; the copy also means no two leaves, and no caller's tensor, ever
// share a .grad. Later gradients are added in place. When backward builds a graph
// (create_graph) the gradient is kept as computed, history included, and later ones are
// added out of place so the history stays correct.
AccumulateGrad::AccumulateGrad(std::shared_ptr<GradCell> c, const Tensor& leaf)
    : cell(std::move(c)) {
  InputMetadata meta;
  meta.sizes.assign(leaf.sizes());
  meta.dtype = leaf.dtype();
  meta.device = leaf.device();
  input_metadata.push_back(std::move(meta));
  contiguous = leaf.is_contiguous() || !is_dense_permutation(leaf.sizes(), leaf.strides());
  strides.assign(leaf.strides());
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  Tensor& g = grads[0];
  if (!g.defined()) return {};
  std::vector<Hook> post_hooks;
  Tensor result;
  {
    std::lock_guard<std::mutex> lock(cell->mutex);
    const bool building = sdk::has_key(g, LOOM_KEY_AUTOGRAD);
    if (!cell->grad.defined()) {
      if (building) {
        cell->grad = g;
      } else {
        const InputMetadata& meta = input_metadata[0];
        LoomTensor* out = nullptr;
        std::span<const int64_t> sizes = meta.sizes.span();
        sdk::check(sdk::host().tensor_empty(
            sizes.data(), contiguous ? nullptr : strides.span().data(),
            static_cast<int32_t>(sizes.size()), meta.dtype, meta.device, &out));
        cell->grad = Tensor::adopt(out);
        sdk::op::copy_(cell->grad, g);
      }
    } else if (building || sdk::has_key(cell->grad, LOOM_KEY_AUTOGRAD)) {
      cell->grad = cell->grad + g;
    } else {
      sdk::op::add_(cell->grad, g);
    }
    post_hooks = cell->post_accumulate_hooks;
    result = cell->grad;
  }
  for (const Hook& hook : post_hooks) hook(result);
  return {};
}

}  // namespace loom::autograd
