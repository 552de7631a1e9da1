// loom::compile: a function of tensors, captured into a graph (loom/graph.h) the first
// time it runs, optimised and run as fused kernels built by the compiler plugin after
// that, while the guards hold (the inputs' dtypes, devices, sizes, strides and
// requires_grad, grad mode). Shaped like torch.compile:
//
//   auto f = loom::compile([](const loom::Tensor& x, const loom::Tensor& y) {
//     return ((x * 2 + 1).sin().exp().tanh() * y + x).relu().sigmoid();
//   });
//   loom::Tensor z = f(x, y);   // captures, builds, runs; later calls run the kernels
//
//   auto model = loom::compile(net);  // an nn module: its forward, parameters by reference
//   std::cout << loom::compiler::explain(fn, x, y).to_string();
//
// The function must compute its results from its arguments (tensors, and numbers, which
// are guarded by value) and the tensors it holds (read at each call, by reference): it is
// not called again while the guards hold. Needs the compiler plugin
// (`plugins { name: "compiler" }`, in the default manifest) and a C++ compiler on PATH for
// the "loom" backend; LOOM_LOGS=recompiles prints each recompile and its reason,
// LOOM_COMPILE_DEBUG=DIR writes each graph and kernel there, LOOM_CACHE_DIR moves the
// kernel cache (default ~/.cache/loom/compile).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/exported_program.h"
#include "loom/graph.h"
#include "loom/nn/distributed.h"
#include "loom/ops/tensor.h"
#include "loom/optim/optimizer.h"

namespace loom {

struct CompileOptions {
  // "default", "reduce-overhead", "max-autotune" or "max-autotune-no-cudagraphs":
  // accepted as torch.compile accepts them; on the CPU all four compile the same way.
  std::string mode = "default";
  // Refuse graph breaks: an op that cannot be captured raises naming it and why.
  bool fullgraph = false;
  // nullopt: automatic (static first; a dimension whose size changes becomes symbolic);
  // true: every dimension of size >= 2 symbolic from the first call; false: never.
  std::optional<bool> dynamic;
  // "loom": passes and fused kernels; "eager": the captured graph runs op by op (no code
  // generation), as torch.compile's backend="eager".
  std::string backend = "loom";
  // Compiles per function before it runs eagerly for good (with one warning).
  int recompile_limit = 8;
  // The fewest consecutive pointwise ops fused into one kernel; a shorter run is left to
  // the op library's own kernels (1 fuses every fusible op: the compile sweep's setting).
  int min_fused_ops = 2;
};

namespace compiler {

struct GraphBreak {
  std::string op;      // "loom::nonzero"
  std::string reason;  // "its output's shape depends on the input's values"
};

// What compiling a function did: explain() and CompiledFunction::explanation().
struct Explanation {
  int graphs = 0;  // compiled graphs of the last compile: one more than the breaks
  std::vector<GraphBreak> breaks;
  std::vector<std::string> guards;      // of the last compile, one line each
  std::vector<std::string> recompiles;  // the reason of each compile after the first
  int compiles = 0;
  int ops = 0;         // op calls captured
  int kernels = 0;     // fused kernels in the last compile
  bool eager = false;  // running eagerly for good
  std::string eager_reason;
  std::string graph;  // the last compiled graph's text, after the passes
  // Its backward graph's (a call that records gradients), or why it has none.
  std::string backward_graph;
  std::string to_string() const;
};

// One input of a call, flattened: a tensor, or a number guarded by value.
using CallInputs = std::vector<Tensor>;

// The state of one compiled function: its specialisations (each a graph with guards),
// recompiles and fallback. Compiled<F> wraps it for a callable; CompiledFunction is the
// type-erased part, usable on its own with a function over a vector of tensors.
class CompiledFunction {
 public:
  using Eager = std::function<std::vector<Tensor>()>;  // calls the function, as is
  CompiledFunction(CompileOptions options, std::string name,
                   std::vector<std::pair<std::string, Tensor>> state = {});
  ~CompiledFunction();
  CompiledFunction(const CompiledFunction&) = delete;
  CompiledFunction& operator=(const CompiledFunction&) = delete;

  // Runs the call: `tensors` are its tensor arguments, `numbers` its other arguments
  // (guarded by value), `flags` anything else its result depends on (a module's
  // training mode); `eager` calls the function itself (capture, fallback).
  std::vector<Tensor> run(const std::vector<Tensor>& tensors, const std::vector<double>& numbers,
                          const Eager& eager, uint64_t flags = 0);
  Explanation explanation() const;
  const CompileOptions& options() const;
  // The newest specialisation's graph as captured, before the passes (plain ops: it can
  // be saved with loom/graph_proto.h and run by an Interpreter in another process), and
  // the tensors it reads after the call's own, by their input names' targets.
  graph::Graph captured_graph() const;
  std::vector<std::pair<std::string, Tensor>> captured_state() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// Flattening arguments and results of a callable.
namespace detail {
template <typename T>
inline constexpr bool is_tensor_v = std::is_same_v<std::decay_t<T>, Tensor>;
template <typename T>
inline constexpr bool is_tensor_vector_v = std::is_same_v<std::decay_t<T>, std::vector<Tensor>>;
template <typename T>
struct is_tensor_tuple : std::false_type {};
template <typename... Ts>
struct is_tensor_tuple<std::tuple<Ts...>> : std::bool_constant<(is_tensor_v<Ts> && ...)> {};

template <typename A>
void flatten_argument(const A& a, std::vector<Tensor>& tensors, std::vector<double>& numbers) {
  if constexpr (is_tensor_v<A>) {
    tensors.push_back(a);
  } else if constexpr (is_tensor_vector_v<A>) {
    numbers.push_back(static_cast<double>(a.size()));
    tensors.insert(tensors.end(), a.begin(), a.end());
  } else if constexpr (std::is_arithmetic_v<A>) {
    numbers.push_back(static_cast<double>(a));
  } else {
    static_assert(is_tensor_v<A> || std::is_arithmetic_v<A>,
                  "[compile] a compiled function's arguments must be loom::Tensor, "
                  "std::vector<loom::Tensor> or numbers");
  }
}

template <typename R>
std::vector<Tensor> flatten_result(R&& r) {
  using T = std::decay_t<R>;
  if constexpr (is_tensor_v<T>) {
    return {std::forward<R>(r)};
  } else if constexpr (is_tensor_vector_v<T>) {
    return std::forward<R>(r);
  } else if constexpr (is_tensor_tuple<T>::value) {
    return std::apply([](auto&&... t) { return std::vector<Tensor>{t...}; }, r);
  } else {
    static_assert(is_tensor_v<T>,
                  "[compile] a compiled function must return a loom::Tensor, a "
                  "std::vector<loom::Tensor> or a std::tuple of loom::Tensor");
    return {};
  }
}

template <typename R>
R rebuild_result(std::vector<Tensor>&& outputs) {
  if constexpr (is_tensor_v<R>) {
    return std::move(outputs.at(0));
  } else if constexpr (is_tensor_vector_v<R>) {
    return std::move(outputs);
  } else {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return R{std::move(outputs.at(I))...};
    }
    (std::make_index_sequence<std::tuple_size_v<R>>());
  }
}
}  // namespace detail

}  // namespace compiler

// A compiled callable: call it as the function it wraps.
template <typename F>
class Compiled {
 public:
  Compiled(F fn, CompileOptions options, std::string name,
           std::vector<std::pair<std::string, Tensor>> state = {},
           std::function<uint64_t()> flags = {})
      : fn_(std::make_shared<F>(std::move(fn))),
        impl_(std::make_shared<compiler::CompiledFunction>(std::move(options), std::move(name),
                                                           std::move(state))),
        flags_(std::move(flags)) {}

  template <typename... Args>
  auto operator()(Args&&... args) const {
    using R = std::decay_t<std::invoke_result_t<F&, Args&...>>;
    std::vector<Tensor> tensors;
    std::vector<double> numbers;
    (compiler::detail::flatten_argument(args, tensors, numbers), ...);
    auto eager = [&]() { return compiler::detail::flatten_result(std::invoke(*fn_, args...)); };
    std::vector<Tensor> out = impl_->run(tensors, numbers, eager, flags_ ? flags_() : 0);
    return compiler::detail::rebuild_result<R>(std::move(out));
  }

  compiler::Explanation explanation() const { return impl_->explanation(); }
  // The newest captured graph and the tensors it holds (CompiledFunction::captured_graph).
  graph::Graph captured_graph() const { return impl_->captured_graph(); }
  std::vector<std::pair<std::string, Tensor>> captured_state() const {
    return impl_->captured_state();
  }

 private:
  std::shared_ptr<F> fn_;
  std::shared_ptr<compiler::CompiledFunction> impl_;
  std::function<uint64_t()> flags_;
};

namespace compiler::detail {
template <typename T>
concept ModuleHolderLike = requires(const T& h) {
  h.ptr()->named_parameters();
};
}  // namespace compiler::detail

template <typename F>
requires(!compiler::detail::ModuleHolderLike<F> &&
         !std::is_base_of_v<optim::Optimizer, F>) Compiled<F> compile(F fn,
                                                                      CompileOptions options = {}) {
  return Compiled<F>(std::move(fn), std::move(options), "fn");
}

// An nn module (a ModuleHolder such as nn::Sequential or a user's TORCH_MODULE-style
// holder): compiles its forward; its parameters and buffers are read at each call and
// named in the graph, and its training mode is guarded.
template <compiler::detail::ModuleHolderLike Holder>
auto compile(const Holder& module, CompileOptions options = {}) {
  auto impl = module.ptr();
  std::vector<std::pair<std::string, Tensor>> state;
  for (auto& [name, t] : impl->named_parameters()) state.emplace_back(name, t);
  for (auto& [name, t] : impl->named_buffers()) state.emplace_back(name, t);
  auto forward = [impl](auto&&... args) { return impl->forward(args...); };
  return Compiled<decltype(forward)>(forward, std::move(options), "forward", std::move(state),
                                     [impl] { return impl->is_training() ? uint64_t{1} : 0; });
}

// A DistributedDataParallel module (torch.compile(ddp_model)): the wrapped module's
// forward is compiled as compile(module) compiles it; DDP's own work (the check of the
// previous backward, buffer broadcasts, the walk for unused parameters) runs eagerly
// around it, and the gradient hooks run as the compiled backward accumulates into the
// parameters, so the buckets launch once that backward has run.
class CompiledDistributedDataParallel {
 public:
  CompiledDistributedDataParallel(std::shared_ptr<nn::DistributedDataParallelImpl> ddp,
                                  CompileOptions options)
      : ddp_(ddp), module_(make_module(std::move(ddp), std::move(options))) {}
  Tensor operator()(const Tensor& input) const {
    return ddp_->forward_with(input, [this](const Tensor& x) { return module_(x); });
  }
  compiler::Explanation explanation() const { return module_.explanation(); }

 private:
  using Forward = std::function<Tensor(const Tensor&)>;
  static Compiled<Forward> make_module(std::shared_ptr<nn::DistributedDataParallelImpl> ddp,
                                       CompileOptions options) {
    std::vector<std::pair<std::string, Tensor>> state;
    for (auto& [name, t] : ddp->module().named_parameters()) state.emplace_back(name, t);
    for (auto& [name, t] : ddp->module().named_buffers()) state.emplace_back(name, t);
    Forward forward = [ddp](const Tensor& x) { return ddp->module_forward()(x); };
    return Compiled<Forward>(std::move(forward), std::move(options), "forward", std::move(state),
                             [ddp] { return ddp->module().is_training() ? uint64_t{1} : 0; });
  }
  std::shared_ptr<nn::DistributedDataParallelImpl> ddp_;
  Compiled<Forward> module_;
};

inline CompiledDistributedDataParallel compile(const nn::DistributedDataParallel& ddp,
                                               CompileOptions options = {}) {
  return CompiledDistributedDataParallel(ddp.ptr(), std::move(options));
}

// An exported program (loom/exported_program.h), compiled: its interpreter's op calls are
// captured like a function's, its state read by reference. `program` must outlive the
// result; call it with the user inputs as one std::vector<Tensor>.
inline auto compile(ExportedProgram& program, CompileOptions options = {}) {
  std::vector<std::pair<std::string, Tensor>> state(program.state().begin(), program.state().end());
  auto run = [&program](const std::vector<Tensor>& inputs) { return program(inputs); };
  return Compiled<decltype(run)>(run, std::move(options), "exported_program", std::move(state));
}

namespace compiler {

// An optimizer's step, compiled: torch.compile(optimizer.step). Call it where step()
// was called; it reads the gradients at each call (as the call's tensors) and the
// parameters and the optimizer's state by reference, and writes them in place: Adam's
// update becomes two fused kernels per parameter (the bias corrections, then the
// element-wise update: Note [In-place ops in fused kernels]). A step with gradients on
// another set of parameters, or after load_state_dict, runs eagerly once (making the
// state it needs) and captures again at the next call. Each group's learning rate is
// guarded (a scheduler's change recompiles); the other options are read when it captures.
class CompiledStep {
 public:
  // Refuses an optimizer whose step counts steps on the host ("[compile] ... expected a
  // capturable optimizer"): replaying it would repeat the captured step's numbers.
  CompiledStep(optim::Optimizer& optimizer, CompileOptions options);
  void operator()();
  Explanation explanation() const { return impl_->explanation(); }

 private:
  optim::Optimizer* optimizer_;
  std::shared_ptr<CompiledFunction> impl_;
  // (which parameters had gradients, generation) pairs whose state an eager step made
  std::vector<std::pair<std::vector<bool>, uint64_t>> prepared_;
};

}  // namespace compiler

// An optimizer's step, compiled (compiler::CompiledStep): `auto step =
// loom::compile(optimizer); ... loss.backward(); step();`. `optimizer` must outlive it.
inline compiler::CompiledStep compile(optim::Optimizer& optimizer, CompileOptions options = {}) {
  return compiler::CompiledStep(optimizer, std::move(options));
}

namespace compiler {

// Compiles fn for these inputs and reports graphs, breaks with reasons, guards and
// (after several calls of a Compiled) recompiles: torch._dynamo.explain.
template <typename F, typename... Args>
Explanation explain(F fn, Args&&... inputs) {
  Compiled<F> compiled(std::move(fn), CompileOptions{}, "fn");
  compiled(std::forward<Args>(inputs)...);
  return compiled.explanation();
}

}  // namespace compiler
}  // namespace loom
