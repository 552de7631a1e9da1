// The backward engine (Note [Backward order]).
#include "engine.h"

#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "loom/sdk/dtype.hpp"
#include "loom/sdk/extension.hpp"
#include "loom/sdk/ops.hpp"
#include "loom/sdk/trace.hpp"

namespace loom::autograd {
namespace {

// Note [Backward order]
// ~~~~~~~~~~~~~~~~~~~~~
// Backward runs on the calling thread. It first walks the graph from the roots, counting
// for each node how many edges lead into it (only along nodes that lead to a requested
// input, when inputs are given). A node runs once every gradient for it has arrived: the
// ready nodes wait in a queue ordered by sequence number, latest recorded first, which is
// the reverse of the forward order along any path. Gradients arriving at one node input
// are summed. Without create_graph the formulas run with the Autograd key excluded (no
// graph is recorded for them); with it they record, so the gradients can be
// differentiated again. Separate graphs can run on several threads at once: a backward
// only touches its own bookkeeping, and leaves shared between graphs lock their cell.

thread_local bool t_create_graph = false;

struct ReadyNode {
  uint64_t sequence_nr;
  Node* node;
  bool operator<(const ReadyNode& o) const { return sequence_nr < o.sequence_nr; }
};

struct Task {
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::unordered_map<Node*, std::shared_ptr<Node>> owners;  // keeps popped nodes alive
  std::unordered_set<Node*> reaches;                        // nodes leading to an input
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  bool filtered = false;
};

// Note [Gradient validation]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A gradient flowing into a node input must have that input's shape, dtype and device.
// A formula may return the broadcast shape of its output (add's gradient for a
// [3] + [2, 3] call): it is summed down to the input's shape here, so formulas need not
// repeat it. Any other shape is a bug in the formula and is reported naming it.
Tensor validate(const Node& from, size_t index, Tensor grad, const Edge& edge) {
  const InputMetadata& meta = edge.node->input_metadata[edge.input_nr];
  if (!(meta.sizes == grad.sizes())) {
    std::span<const int64_t> want = meta.sizes.span();
    bool expandable = grad.dim() >= static_cast<int64_t>(want.size());
    const int64_t lead = grad.dim() - static_cast<int64_t>(want.size());
    for (size_t d = 0; expandable && d < want.size(); ++d) {
      expandable = want[d] == grad.size(lead + d) || want[d] == 1;
    }
    if (!expandable) {
      auto str = [](std::span<const int64_t> s) {
        std::string out = "[";
        for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
        return out + "]";
      };
      throw sdk::Error("[autograd] " + from.name() + " returned a gradient of shape " +
                       str(grad.sizes()) + " for its input " + std::to_string(index) +
                       ", expected shape " + str(want));
    }
    grad = sdk::sum_to(grad, want);
  }
  if (grad.dtype() != meta.dtype) grad = sdk::op::to(grad, meta.dtype);
  return grad;
}

void check_finite(const Node& node, const std::vector<Tensor>& grads) {
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined() || !sdk::dtypes::floating.contains(grads[i].dtype())) continue;
    Tensor finite = sdk::op::all(sdk::op::isfinite(grads[i]));
    Tensor on_host = finite.device().type == LOOM_DEVICE_CPU
                         ? finite
                         : sdk::op::to(finite, LoomDevice{LOOM_DEVICE_CPU, -1});
    if (*on_host.data<bool>()) continue;
    throw sdk::Error("[autograd] " + node.name() + " returned nan or inf values in its gradient " +
                     std::to_string(i) + " (anomaly mode; the forward op was " + node.forward_op() +
                     ")");
  }
}

void collect(Task& task, const std::vector<Edge>& roots, const std::vector<Edge>& inputs) {
  // Every node reachable from the roots, in an order where each node follows one parent.
  std::vector<Node*> order;
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (const Edge& e : roots) {
    if (seen.insert(e.node.get()).second) {
      stack.push_back(e.node.get());
      task.owners[e.node.get()] = e.node;
    }
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (const Edge& e : n->next_edges) {
      if (e.valid() && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
  if (!inputs.empty()) {
    task.filtered = true;
    for (size_t i = 0; i < inputs.size(); ++i) {
      task.captures[inputs[i].node.get()].emplace_back(inputs[i].input_nr, i);
      task.reaches.insert(inputs[i].node.get());
    }
    // A node reaches an input when one of its next nodes does: iterate to a fixpoint
    // (graphs are DAGs; each pass settles at least one more level).
    bool changed = true;
    while (changed) {
      changed = false;
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        if (task.reaches.count(*it)) continue;
        for (const Edge& e : (*it)->next_edges) {
          if (e.valid() && task.reaches.count(e.node.get())) {
            task.reaches.insert(*it);
            changed = true;
            break;
          }
        }
      }
    }
  }
  for (Node* n : order) {
    if (task.filtered && !task.reaches.count(n)) continue;
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      if (task.filtered && !task.reaches.count(e.node.get())) continue;
      ++task.dependencies[e.node.get()];
    }
  }
}

void add_to_buffer(Task& task, const Edge& edge, Tensor grad) {
  std::vector<Tensor>& buffer = task.buffers[edge.node.get()];
  if (buffer.empty()) buffer.resize(edge.node->input_metadata.size());
  Tensor& slot = buffer[edge.input_nr];
  slot = slot.defined() ? slot + grad : std::move(grad);
}

std::vector<Tensor> call_pre_hooks(Node& node, std::vector<Tensor> grads) {
  std::vector<std::pair<uint32_t, Hook>> hooks;
  std::vector<std::pair<uint32_t, std::weak_ptr<GradCell>>> retained;
  {
    std::lock_guard<std::mutex> lock(node.hooks_mutex);
    hooks = node.pre_hooks;
    retained = node.retained;
  }
  for (auto& [index, hook] : hooks) {
    if (index >= grads.size() || !grads[index].defined()) continue;
    Tensor replaced = hook(grads[index]);
    if (replaced.defined()) grads[index] = std::move(replaced);
  }
  for (auto& [index, weak_cell] : retained) {
    std::shared_ptr<GradCell> cell = weak_cell.lock();
    if (!cell || index >= grads.size() || !grads[index].defined()) continue;
    std::lock_guard<std::mutex> lock(cell->mutex);
    cell->grad = cell->grad.defined() ? cell->grad + grads[index] : grads[index];
  }
  return grads;
}

}  // namespace

bool current_create_graph() {
  return t_create_graph;
}

std::vector<Tensor> run_backward(const BackwardRequest& request) {
  Task task;
  collect(task, request.roots, request.inputs);
  for (size_t i = 0; i < request.roots.size(); ++i) {
    add_to_buffer(task, request.roots[i], request.root_grads[i]);
  }
  std::vector<Tensor> captured(request.inputs.size());

  struct CreateGraphScope {
    bool saved = t_create_graph;
    explicit CreateGraphScope(bool on) { t_create_graph = on; }
    ~CreateGraphScope() { t_create_graph = saved; }
  } scope(request.create_graph);

  std::priority_queue<ReadyNode> ready;
  std::unordered_set<Node*> queued;
  for (const Edge& e : request.roots) {
    Node* n = e.node.get();
    if (task.dependencies[n] == 0 && queued.insert(n).second) ready.push({n->sequence_nr, n});
  }
  const bool anomaly = anomaly_mode_enabled();
  const bool traced = sdk::trace::recording();  // each node becomes a range in the profile
  while (!ready.empty()) {
    Node* node = ready.top().node;
    ready.pop();
    std::shared_ptr<Node> keep = task.owners.count(node) ? task.owners[node] : nullptr;
    std::vector<Tensor> grads = std::move(task.buffers[node]);
    task.buffers.erase(node);
    grads.resize(node->input_metadata.size());
    grads = call_pre_hooks(*node, std::move(grads));

    if (auto it = task.captures.find(node); it != task.captures.end()) {
      for (auto [input_nr, index] : it->second) captured[index] = grads[input_nr];
    }
    // Without accumulation (autograd::grad) a captured leaf is not written; a node that
    // leads to no requested input does not run either.
    bool run = !task.filtered || request.accumulate;
    if (task.filtered) {
      run = false;
      for (const Edge& e : node->next_edges)
        run = run || (e.valid() && task.reaches.count(e.node.get()));
      if (request.accumulate && node->next_edges.empty() && task.captures.count(node)) run = true;
    }
    if (!run) continue;

    std::vector<Tensor> outputs;
    {
      std::optional<sdk::LocalKeyGuard> no_grad;
      if (!request.create_graph)
        no_grad.emplace(std::initializer_list<uint32_t>{},
                        std::initializer_list<uint32_t>{LOOM_KEY_AUTOGRAD});
      std::optional<sdk::trace::Range> range;
      std::string node_name;
      if (traced) {
        node_name = node->name();
        range.emplace(node_name.c_str(), LOOM_TRACE_BACKWARD_NODE, node->sequence_nr);
      }
      outputs = node->apply(std::move(grads));
      if (anomaly) check_finite(*node, outputs);
    }
    if (!request.keep_graph) {
      node->release_saved();
      node->released = true;
    }
    if (outputs.size() < node->next_edges.size()) outputs.resize(node->next_edges.size());
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid()) continue;
      if (task.filtered && !task.reaches.count(e.node.get())) continue;
      if (outputs[i].defined()) {
        std::optional<sdk::LocalKeyGuard> no_grad;
        if (!request.create_graph)
          no_grad.emplace(std::initializer_list<uint32_t>{},
                          std::initializer_list<uint32_t>{LOOM_KEY_AUTOGRAD});
        add_to_buffer(task, e, validate(*node, i, std::move(outputs[i]), e));
      }
      task.owners.emplace(e.node.get(), e.node);
      if (--task.dependencies[e.node.get()] == 0 && queued.insert(e.node.get()).second) {
        ready.push({e.node->sequence_nr, e.node.get()});
      }
    }
  }
  return captured;
}

}  // namespace loom::autograd
