// One rank of the distributed tests (tests/distributed/distributed_test.cc starts N of
// them under `loom launch`): `distributed_rank SCENARIO`. Each scenario checks its
// results itself and exits non-zero with what differed; the test reads the output.
#include <execinfo.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "loom/compile.h"
#include "loom/loom.h"
#include "loom/nn.h"
#include "loom/optim.h"

namespace {

namespace dist = loom::distributed;
using loom::Tensor;

int g_rank = 0, g_size = 1;
std::string g_device = "cpu";  // nccl: this rank's GPU
std::string g_backend;
int g_policy_before_init = SCHED_OTHER;
int g_batch_threads_before_init = 0;

// The threads of this process that run SCHED_BATCH.
int batch_threads() {
  int count = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    if (sched_getscheduler(std::stoi(task.path().filename().string())) == SCHED_BATCH) ++count;
  }
  return count;
}

// The default deployment, and for an nccl group the CUDA plugin too (optional: on a
// machine without a GPU it is skipped, and init_process_group says there is none).
loom::Runtime load_runtime(const std::string& backend) {
  if (backend != "nccl") return loom::Runtime::load_default();
  loom::dispatch::DeploymentManifest manifest = loom::dispatch::default_manifest();
  loom::dispatch::PluginRequest cuda;
  cuda.name = "cuda";
  cuda.required = false;
  manifest.plugins.push_back(cuda);
  return loom::Runtime::load(manifest);
}

// A rank that crashes writes its stack to stderr (the launcher prefixes it with the rank),
// so that a crash the suite meets once is diagnosable from the test's output: glibc's
// backtrace() writes without allocating once it has run (it is called before the handler
// is installed); frames in hidden symbols show as library+offset, for addr2line. Left to
// the sanitizers' own reports in their builds.
void write_stack_on_fatal_signals() {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  void* warm[4];
  backtrace(warm, 4);
  struct sigaction action {};
  action.sa_handler = [](int signal) {
    const char* name = strsignal(signal);
    write(STDERR_FILENO, "fatal signal: ", 14);
    write(STDERR_FILENO, name, std::strlen(name));
    write(STDERR_FILENO, "\n", 1);
    void* frames[64];
    backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
    raise(signal);  // SA_RESETHAND: the default action, so the launcher sees the signal
  };
  action.sa_flags = SA_RESETHAND;
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(signal, &action, nullptr);
#endif
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "FAILED on rank %d: %s\n", g_rank, what.c_str());
  std::exit(1);
}

void expect(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

// `body` must raise a loom::Error whose message holds `part`; prints it.
void expect_error(const std::function<void()>& body, const std::string& part) {
  try {
    body();
  } catch (const loom::Error& e) {
    const std::string m = e.what();
    if (m.find(part) == std::string::npos) fail("expected an error with '" + part + "', got: " + m);
    std::printf("refused: %s\n", m.c_str());
    return;
  }
  fail("expected an error with '" + part + "', but the call succeeded");
}

Tensor filled(std::vector<int64_t> shape, double v, loom::ScalarType dtype) {
  return loom::full(shape, v,
                    loom::TensorOptions().dtype(dtype).device(loom::parse_device(g_device)));
}

// Whether every element of t equals v (compared in float64).
bool all_equal(const Tensor& t, double v) {
  Tensor d = t.to(loom::ScalarType::Float64);
  return loom::eq(d, v).all().item<bool>();
}

void profiled();

// gloo's event-loop thread runs SCHED_BATCH, and init gave the calling thread its own
// policy back (Note [gloo's event loop runs SCHED_BATCH] in
// plugins/distributed/gloo_mesh.cc). The engines built on a gloo mesh: gloo and nccl.
void gloo_event_loop_runs_batch() {
  if (g_backend == "mpi" || g_policy_before_init != SCHED_OTHER) return;
  expect(sched_getscheduler(0) == SCHED_OTHER,
         "init_process_group left the calling thread's scheduling policy at " +
             std::to_string(sched_getscheduler(0)));
  expect(batch_threads() > g_batch_threads_before_init,
         "init_process_group started no SCHED_BATCH thread; gloo's event loop should be one");
}

void collectives() {
  gloo_event_loop_runs_batch();
  using loom::ScalarType;
  const int n = g_size, r = g_rank;
  const std::vector<ScalarType> dtypes = {
      ScalarType::Float32, ScalarType::Float64, ScalarType::Float16, ScalarType::BFloat16,
      ScalarType::Int8,    ScalarType::UInt8,   ScalarType::Int16,   ScalarType::Int32,
      ScalarType::Int64,   ScalarType::Bool};
  double factorial = 1;
  for (int i = 1; i <= n; ++i) factorial *= i;
  const bool nccl = g_device != "cpu";
  if (nccl) {
    // NCCL has no int16, and an nccl group takes tensors of this rank's GPU only.
    Tensor shorts = filled({4}, 1, ScalarType::Int16);
    expect_error([&] { dist::all_reduce(shorts); },
                 "the nccl backend has no collectives for int16");
    Tensor host = loom::ones({4});
    expect_error([&] { dist::all_reduce(host); }, "must be a CUDA tensor on this rank's device");
  }
  for (ScalarType dt : dtypes) {
    if (nccl && dt == ScalarType::Int16) continue;
    const std::string name(loom::scalar_type_name(dt));
    const bool is_bool = dt == ScalarType::Bool;
    const bool floating = dt == ScalarType::Float32 || dt == ScalarType::Float64 ||
                          dt == ScalarType::Float16 || dt == ScalarType::BFloat16;
    // Each rank holds rank + 1 (bool: rank == 0).
    const double mine = is_bool ? (r == 0) : r + 1;
    struct Case {
      dist::ReduceOp op;
      double expected;
    };
    std::vector<Case> cases = {{dist::ReduceOp::Sum, is_bool ? 1 : n * (n + 1) / 2.0},
                               {dist::ReduceOp::Product, is_bool ? (n == 1) : factorial},
                               {dist::ReduceOp::Min, is_bool ? (n == 1) : 1.0},
                               {dist::ReduceOp::Max, is_bool ? 1.0 : static_cast<double>(n)}};
    if (floating) cases.push_back({dist::ReduceOp::Avg, (n + 1) / 2.0});
    for (const Case& c : cases) {
      if (dt == ScalarType::Int8 && c.op == dist::ReduceOp::Product && factorial > 127) continue;
      Tensor t = filled({3, 5}, mine, dt);
      dist::all_reduce(t, c.op);
      expect(all_equal(t, c.expected), "all_reduce " + name + " " + dist::reduce_op_name(c.op) +
                                           ": expected " + std::to_string(c.expected));
      Tensor u = filled({7}, mine, dt);
      dist::reduce(u, 0, c.op);
      if (r == 0) expect(all_equal(u, c.expected), "reduce " + name + " to rank 0");
      if (r != 0) expect(all_equal(u, mine), "reduce left a non-root rank's tensor as it was");
    }
    Tensor b = filled({4}, r == n - 1 ? 1 : 0, dt);
    dist::broadcast(b, n - 1);
    expect(all_equal(b, 1), "broadcast " + name + " from the last rank");
    if (is_bool) continue;
    // all_gather, list and single tensor.
    std::vector<Tensor> parts;
    for (int i = 0; i < n; ++i) parts.push_back(filled({2, 2}, 0, dt));
    dist::all_gather(parts, filled({2, 2}, mine, dt));
    for (int i = 0; i < n; ++i) expect(all_equal(parts[i], i + 1), "all_gather " + name);
    Tensor gathered = filled({2 * n, 3}, 0, dt);
    dist::all_gather_into_tensor(gathered, filled({2, 3}, mine, dt));
    for (int i = 0; i < n; ++i) {
      expect(all_equal(gathered.narrow(0, 2 * i, 2), i + 1), "all_gather_into_tensor " + name);
    }
    // reduce_scatter: block i of every rank sums into rank i.
    std::vector<Tensor> blocks;
    for (int i = 0; i < n; ++i) blocks.push_back(filled({3}, i + r, dt));
    Tensor out = filled({3}, 0, dt);
    dist::reduce_scatter(out, blocks);
    expect(all_equal(out, n * r + n * (n - 1) / 2.0), "reduce_scatter " + name);
    Tensor whole = loom::cat(blocks, 0);
    Tensor out2 = filled({3}, 0, dt);
    dist::reduce_scatter_tensor(out2, whole);
    expect(all_equal(out2, n * r + n * (n - 1) / 2.0), "reduce_scatter_tensor " + name);
    Tensor largest = filled({3}, 0, dt);
    dist::reduce_scatter(largest, blocks, dist::ReduceOp::Max);
    expect(all_equal(largest, r + n - 1), "reduce_scatter max " + name);
    // all_to_all: rank r sends r * 10 + j to rank j.
    std::vector<Tensor> ins, outs;
    for (int j = 0; j < n; ++j) {
      ins.push_back(filled({2}, r * 10 + j, dt));
      outs.push_back(filled({2}, 0, dt));
    }
    dist::all_to_all(outs, ins);
    for (int j = 0; j < n; ++j) expect(all_equal(outs[j], j * 10 + r), "all_to_all " + name);
  }
  // all_to_all_single with uneven splits: rank r sends j + 1 rows to rank j.
  {
    std::vector<int64_t> in_splits, out_splits;
    int64_t rows_in = 0, rows_out = 0;
    for (int j = 0; j < n; ++j) {
      in_splits.push_back(j + 1);
      out_splits.push_back(r + 1);
      rows_in += j + 1;
      rows_out += r + 1;
    }
    Tensor in = filled({rows_in, 2}, r, loom::ScalarType::Float32);
    Tensor out = filled({rows_out, 2}, -1, loom::ScalarType::Float32);
    dist::all_to_all_single(out, in, out_splits, in_splits);
    for (int j = 0; j < n; ++j) {
      expect(all_equal(out.narrow(0, j * (r + 1), r + 1), j), "all_to_all_single uneven");
    }
  }
  // A large all-reduce takes the engine's ring (beyond the inline size).
  {
    Tensor big = filled({1 << 20}, r + 1, loom::ScalarType::Float32);
    dist::all_reduce(big);
    expect(all_equal(big, n * (n + 1) / 2.0), "all_reduce of 4 MiB");
  }
  // A reduce_scatter beyond the inline size takes the engine's own (gloo: the mesh's ring,
  // Note [A ring reduce-scatter]; MPI's; NCCL's). Element j of rank k's block i is
  // (i * count + j) mod 251 + k, so a block or an element out of place changes the sum; the
  // sums stay exact in float16.
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float16, ScalarType::Int32}) {
    const int64_t count = 40000;
    Tensor pattern = loom::arange(n * count, loom::TensorOptions().dtype(ScalarType::Float64));
    pattern = pattern - loom::floor(pattern / 251) * 251;
    Tensor input = (pattern + r).to(dt).to(loom::parse_device(g_device));
    Tensor out = filled({count}, -1, dt);
    dist::reduce_scatter_tensor(out, input);
    Tensor expected = pattern.narrow(0, r * count, count) * n + n * (n - 1) / 2.0;
    expect(loom::eq(out.to("cpu").to(ScalarType::Float64), expected).all().item<bool>(),
           "reduce_scatter_tensor of " + std::to_string(n * count) + " " +
               std::string(loom::scalar_type_name(dt)) + " elements");
  }
  // Asynchronous work completes in order.
  {
    Tensor a = filled({1000}, 1, loom::ScalarType::Float32);
    Tensor c = filled({100000}, 2, loom::ScalarType::Float32);
    dist::Work wa = dist::all_reduce(a, dist::ReduceOp::Sum, {}, true);
    dist::Work wc = dist::all_reduce(c, dist::ReduceOp::Max, {}, true);
    wc.wait();
    expect(wc.is_completed(), "a waited work is completed");
    wa.wait();
    expect(all_equal(a, n) && all_equal(c, 2), "async all_reduce results");
  }
  // Point to point around a ring.
  if (n > 1) {
    Tensor token = filled({5}, r, loom::ScalarType::Int32);
    Tensor got = filled({5}, -1, loom::ScalarType::Int32);
    dist::Work s = dist::isend(token, (r + 1) % n, {}, 7);
    dist::recv(got, (r + n - 1) % n, {}, 7);
    s.wait();
    expect(all_equal(got, (r + n - 1) % n), "send/recv around the ring");
  }
  dist::barrier();
  // A group of the even ranks.
  std::vector<int> evens;
  for (int i = 0; i < n; i += 2) evens.push_back(i);
  dist::Group g = dist::new_group(evens);
  if (r % 2 == 0) {
    expect(dist::get_rank(g) == r / 2 && dist::get_world_size(g) == (int)evens.size(),
           "rank and size in the group of even ranks");
    Tensor t = filled({3}, r, loom::ScalarType::Float32);
    dist::all_reduce(t, dist::ReduceOp::Sum, g);
    double expected = 0;
    for (int e : evens) expected += e;
    expect(all_equal(t, expected), "all_reduce in the group of even ranks");
  } else {
    expect(dist::get_rank(g) == -1, "a non-member's rank in a group is -1");
    Tensor t = filled({3}, 0, loom::ScalarType::Float32);
    expect_error([&] { dist::all_reduce(t, dist::ReduceOp::Sum, g); }, "is not a member");
  }
  profiled();
}

// A reduce_scatter beyond the inline size (gloo: the mesh's ring, Note [A ring
// reduce-scatter]; MPI's): from blocks apart (the list form), with sum, max and avg; in
// place refused. With 5 ranks or more a scratch block is received into a second time.
void ring() {
  const int n = g_size, r = g_rank;
  const int64_t count = 20000;
  const auto pattern = [&](int block) {
    Tensor p = loom::arange(count, loom::TensorOptions().dtype(loom::ScalarType::Float64)) +
               double(block * count);
    return p - loom::floor(p / 251) * 251;
  };
  const auto same = [](const Tensor& got, const Tensor& want) {
    return loom::eq(got.to("cpu").to(loom::ScalarType::Float64), want).all().item<bool>();
  };
  std::vector<Tensor> blocks;
  for (int i = 0; i < n; ++i) {
    blocks.push_back(
        (pattern(i) + r).to(loom::ScalarType::Float32).to(loom::parse_device(g_device)));
  }
  const std::vector<std::pair<dist::ReduceOp, Tensor>> cases = {
      {dist::ReduceOp::Sum, pattern(r) * n + n * (n - 1) / 2.0},
      {dist::ReduceOp::Max, pattern(r) + (n - 1)},
      {dist::ReduceOp::Avg, pattern(r) + (n - 1) / 2.0}};
  for (const auto& [op, want] : cases) {
    Tensor out = filled({count}, -1, loom::ScalarType::Float32);
    dist::reduce_scatter(out, blocks, op);
    expect(same(out, want), std::string("ring reduce_scatter ") + dist::reduce_op_name(op));
  }
  // An output inside the input is an overlapping write (PyTorch's NCCL takes it in place).
  Tensor whole = loom::cat(blocks, 0);
  Tensor mine = whole.narrow(0, r * count, count);
  expect_error([&] { dist::reduce_scatter_tensor(mine, whole); },
               "refer to the same memory location");
}

// The profiler shows a collective with the bytes of its tensors.
void profiled() {
  Tensor t = filled({1000}, 1, loom::ScalarType::Float32);
  loom::profiler::Profiler p;
  dist::all_reduce(t);
  p.stop();
  bool found = false;
  for (const loom::profiler::Event& e : p.events()) {
    if (e.name == "loom::all_reduce_") {
      expect(e.bytes == 4000,
             "the profiled all_reduce_ moved " + std::to_string(e.bytes) + " bytes, expected 4000");
      found = true;
    }
  }
  expect(found, "the profile has the all_reduce_");
}

// Rank 0 calls all_reduce on 4 elements, the others on 8: every rank refuses, naming
// both calls, and the group stays usable.
void mismatch() {
  Tensor t = filled({g_rank == 0 ? 4 : 8}, 1, loom::ScalarType::Float32);
  expect_error([&] { dist::all_reduce(t); }, "ranks called different collectives");
  expect(all_equal(t, 1), "a refused collective wrote nothing");
  Tensor ok = filled({2}, 1, loom::ScalarType::Float32);
  dist::all_reduce(ok);
  expect(all_equal(ok, g_size), "the group works after a refused collective");
  std::printf("mismatch refused\n");
}

// Rank 1 never joins rank 0's all_reduce (it waits for a message nobody sends): rank 0
// times out first (its timeout is 2 s, rank 1's 6 s) naming rank 1 and writing its
// flight record; rank 1's receive then fails as rank 0 leaves.
void timeout() {
  Tensor t = filled({4}, 1, loom::ScalarType::Float32);
  if (g_rank == 1) {
    expect_error([&] { dist::recv(t, 0, {}, 99); }, "recv(float32[4], tag=99) #0 failed");
  } else {
    expect_error([&] { dist::all_reduce(t); }, "rank 1 never joined collective #0");
    expect_error([&] { dist::all_reduce(t); }, "can no longer be used after an earlier failure");
    expect(dist::flight_record().find("\"state\": \"failed\"") != std::string::npos,
           "the flight record shows the failed collective: " + dist::flight_record());
  }
  std::printf("timed out as expected\n");
}

// Rank 1 dies mid-job: the launcher reports it and stops the others.
void killed() {
  Tensor t = filled({4}, 1, loom::ScalarType::Float32);
  dist::all_reduce(t);
  if (g_rank == 1) std::raise(SIGKILL);
  for (;;) dist::all_reduce(t);  // until the broken connection raises
}

void bad_input() {
  Tensor t = filled({4}, 1, loom::ScalarType::Float32);
  expect_error([] { dist::init_process_group({.timeout = std::chrono::milliseconds(30000)}); },
               "init_process_group was called twice");
  std::vector<Tensor> two = {t, t};
  if (g_size != 2) {
    expect_error([&] { dist::all_gather(two, t); }, "expected one output per rank of the group");
  }
  Tensor ints = filled({4}, 1, loom::ScalarType::Int64);
  expect_error([&] { dist::all_reduce(ints, dist::ReduceOp::Avg); },
               "reduce op 'avg' needs a floating-point tensor, found int64");
  expect_error([&] { dist::broadcast(t, g_size); }, "is not in process group 0");
  Tensor strided = filled({4, 4}, 1, loom::ScalarType::Float32).t();
  expect_error([&] { dist::all_reduce(strided); }, "must be contiguous");
  expect_error([&] { dist::all_reduce(t, dist::ReduceOp::Sum, dist::Group{42}); },
               "there is no process group 42");
  Tensor complex = loom::zeros({2}, loom::TensorOptions().dtype(loom::ScalarType::ComplexFloat));
  expect_error([&] { dist::all_reduce(complex); }, "found complex64");
  std::printf("bad input refused\n");
}

bool same(const Tensor& a, const Tensor& b) {
  return loom::eq(a, b).all().item<bool>();
}

// The parameters of every rank, gathered: rank r's copy must equal rank 0's bitwise.
void expect_same_on_every_rank(const std::vector<Tensor>& params, const std::string& when) {
  Tensor flat = loom::cat(std::vector<Tensor>(params.begin(), params.end()), 0);
  Tensor all = loom::zeros({flat.numel() * g_size});
  dist::all_gather_into_tensor(all, flat);
  for (int r = 0; r < g_size; ++r) {
    expect(same(all.narrow(0, r * flat.numel(), flat.numel()), flat),
           "parameters differ between ranks " + when);
  }
}

std::vector<Tensor> flat_params(loom::nn::Module& m) {
  std::vector<Tensor> out;
  for (const Tensor& p : m.parameters()) out.push_back(p.detach().reshape({-1}));
  return out;
}

// The average of each rank's local gradients of `params` for `loss` (undefined where the
// rank's loss does not use a parameter): what DDP must leave in .grad.
std::vector<Tensor> averaged_local_gradients(const Tensor& loss,
                                             const std::vector<Tensor>& params) {
  std::vector<Tensor> local = loom::autograd::grad({loss}, params, {}, std::nullopt, false,
                                                   /*allow_unused=*/true);
  std::vector<Tensor> out;
  for (size_t k = 0; k < params.size(); ++k) {
    Tensor g = local[k].defined() ? local[k].clone() : loom::zeros_like(params[k]);
    dist::all_reduce(g);
    out.push_back(g / static_cast<double>(g_size));
  }
  return out;
}

// find_unused_parameters: even ranks take a branch odd ranks skip, and one layer is used
// by no rank. The branch's gradient is the average with the skipping ranks' zeros (a
// .grad made where a rank had none); the idle layer keeps no .grad on any rank.
void ddp_unused_parameters() {
  namespace nn = loom::nn;
  loom::manual_seed(11);
  nn::Linear a(6, 3), branch(3, 3), idle(3, 3);
  nn::Sequential holder(a, branch, idle);
  bool takes_branch = g_rank % 2 == 0;
  auto forward = [&](const Tensor& x) {
    Tensor h = a(x);
    return takes_branch ? branch(h) : h;
  };
  // Tiny buckets: the idle layer's and the branch's are launched by the sink alone.
  auto ddp = std::make_shared<nn::DistributedDataParallelImpl>(
      holder.ptr(), forward,
      nn::DistributedDataParallelOptions{.bucket_cap_mb = 1e-5, .find_unused_parameters = true});
  std::vector<Tensor> params = holder->parameters();
  for (int step = 0; step < 3; ++step) {
    loom::autograd::clear_grads(params);
    loom::manual_seed(20 + step + g_rank);
    Tensor x = loom::randn({2, 6});
    std::vector<Tensor> want =
        averaged_local_gradients(loom::mse_loss(forward(x), loom::zeros({2, 3})), params);
    loom::mse_loss(ddp->forward(x), loom::zeros({2, 3})).backward();
    const std::string when = " at step " + std::to_string(step);
    for (size_t k = 0; k < 4; ++k) {  // a's and the branch's weight and bias
      expect(params[k].grad().defined(), "parameter " + std::to_string(k) + " has a .grad" + when);
      expect((params[k].grad() - want[k]).abs().max().item<double>() < 1e-6,
             "parameter " + std::to_string(k) + " got the average" + when);
    }
    expect(!params[4].grad().defined() && !params[5].grad().defined(),
           "a layer no rank uses keeps no .grad" + when);
    expect_same_on_every_rank({params[0].grad().reshape({-1}), params[2].grad().reshape({-1})},
                              "in their gradients" + when);
  }
  // no_sync, then a synced step: every rank takes the branch in the first, only even ranks
  // in the second, so on odd ranks the sink reduces the branch's accumulated gradient.
  {
    loom::autograd::clear_grads(params);
    loom::manual_seed(40 + g_rank);
    Tensor x1 = loom::randn({2, 6}), x2 = loom::randn({2, 6});
    takes_branch = true;
    Tensor local = loom::mse_loss(forward(x1), loom::zeros({2, 3}));
    {
      auto guard = ddp->no_sync();
      loom::mse_loss(ddp->forward(x1), loom::zeros({2, 3})).backward();
    }
    takes_branch = g_rank % 2 == 0;
    local = local + loom::mse_loss(forward(x2), loom::zeros({2, 3}));
    std::vector<Tensor> want = averaged_local_gradients(local, params);
    loom::mse_loss(ddp->forward(x2), loom::zeros({2, 3})).backward();
    for (size_t k = 0; k < 4; ++k) {
      expect((params[k].grad() - want[k]).abs().max().item<double>() < 1e-6,
             "parameter " + std::to_string(k) + " got the average of what no_sync accumulated");
    }
    expect(!params[4].grad().defined(), "the idle layer still has no .grad after no_sync");
  }
  // The loss using the idle layer directly, recorded before the forward: its gradient
  // comes after the sink reduced it as unused, and is refused. (Every rank takes the branch
  // here, so that all stop at the same collective, as a real job's ranks would not.)
  takes_branch = true;
  {
    Tensor reg = idle->weight.sum();
    Tensor loss = loom::mse_loss(ddp->forward(loom::ones({2, 6})), loom::zeros({2, 3})) + reg;
    expect_error([&] { loss.backward(); }, "2.weight got a gradient after backward passed");
  }
  // A backward that does not pass through the output still leaves the reduction undone.
  loom::mse_loss(a(loom::ones({2, 6})), loom::zeros({2, 3})).backward();
  expect_error([&] { ddp->forward(loom::ones({2, 6})); }, "(it is set: was the backward");
}

// DDP around other forwards of its module: loom::compile(ddp) (the module's forward
// compiled; the captured graph run op by op here, the "eager" backend builds no kernels)
// and a non-reentrant checkpoint; gradients equal plain DDP's, parameters
// bitwise equal on every rank.
void ddp_compiled_and_checkpointed() {
  namespace nn = loom::nn;
  auto make = [] {
    loom::manual_seed(12);
    return nn::Sequential(nn::Linear(6, 8), nn::Tanh(), nn::Linear(8, 8), nn::Tanh(),
                          nn::Linear(8, 3));
  };
  nn::Sequential eager_model = make(), compiled_model = make(), checkpointed_model = make();
  nn::DistributedDataParallel eager(eager_model, {.bucket_cap_mb = 1e-4});
  nn::DistributedDataParallel wrapped(compiled_model, {.bucket_cap_mb = 1e-4});
  auto compiled = loom::compile(wrapped, {.backend = "eager"});
  int runs = 0;  // of the checkpointed function: its forward, then backward's recomputation
  auto checkpointed = std::make_shared<nn::DistributedDataParallelImpl>(
      checkpointed_model.ptr(),
      [&](const Tensor& x) {
        auto counted = [&](const Tensor& in) { return ++runs, checkpointed_model(in); };
        return nn::checkpoint(counted, x, {.use_reentrant = false});
      },
      nn::DistributedDataParallelOptions{.bucket_cap_mb = 1e-4});
  std::vector<nn::Sequential> models{eager_model, compiled_model, checkpointed_model};
  std::vector<std::unique_ptr<loom::optim::SGD>> optimizers;
  for (auto& m : models)
    optimizers.push_back(
        std::make_unique<loom::optim::SGD>(m->parameters(), loom::optim::SGDOptions(0.1)));
  const char* names[] = {"plain", "compiled", "checkpointed"};
  for (int step = 0; step < 3; ++step) {
    loom::manual_seed(30 + step + g_rank);
    Tensor x = loom::randn({4, 6}), y = loom::randn({4, 3});
    for (auto& o : optimizers) o->zero_grad();
    loom::mse_loss(eager(x), y).backward();
    loom::mse_loss(compiled(x), y).backward();
    runs = 0;
    loom::mse_loss(checkpointed->forward(x), y).backward();
    expect(runs == 2, "the checkpointed forward ran again in backward");
    auto want = eager_model->parameters();
    for (size_t m = 1; m < models.size(); ++m) {
      auto got = models[m]->parameters();
      for (size_t k = 0; k < got.size(); ++k) {
        expect(
            (got[k].grad() - want[k].grad()).abs().max().item<double>() < 1e-6,
            std::string(names[m]) + " DDP's gradient " + std::to_string(k) + " equals plain DDP's");
      }
    }
    for (auto& o : optimizers) o->step();
    for (size_t m = 1; m < models.size(); ++m) {
      expect_same_on_every_rank(flat_params(*models[m].ptr()),
                                std::string(names[m]) + " at step " + std::to_string(step));
    }
  }
  expect(compiled.explanation().compiles == 1, "compiled once");
}

// DDP: parameters bitwise equal on every rank after each step, and n ranks with 1/n of
// the batch each end where one process with the whole batch ends (float tolerance).
void ddp() {
  namespace nn = loom::nn;
  loom::manual_seed(100 + g_rank);  // different on each rank: DDP broadcasts rank 0's
  nn::Sequential model(nn::Linear(6, 16), nn::ReLU(), nn::Linear(16, 16), nn::Tanh(),
                       nn::Linear(16, 3));
  // Small buckets, so that a backward launches several.
  nn::DistributedDataParallel net(model, {.bucket_cap_mb = 0.001});
  expect(net->buckets().size() > 1, "several buckets");
  expect(net->buckets().front().front() == "4.bias", "the first bucket holds the last layer");
  expect_same_on_every_rank(flat_params(*model.ptr()), "after construction");
  // The reference: one process, the whole batch, the same start.
  nn::Sequential reference(nn::Linear(6, 16), nn::ReLU(), nn::Linear(16, 16), nn::Tanh(),
                           nn::Linear(16, 3));
  {
    loom::NoGradGuard no_grad;
    auto src = model->parameters();
    auto dst = reference->parameters();
    for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  }
  loom::optim::SGD opt(model->parameters(), loom::optim::SGDOptions(0.1));
  loom::optim::SGD ref_opt(reference->parameters(), loom::optim::SGDOptions(0.1));
  const int64_t per_rank = 4, global = per_rank * g_size;
  for (int step = 0; step < 5; ++step) {
    loom::manual_seed(7 + step);  // the same global batch on every rank
    Tensor x = loom::randn({global, 6});
    Tensor y = loom::randn({global, 3});
    Tensor mine_x = x.narrow(0, g_rank * per_rank, per_rank);
    Tensor mine_y = y.narrow(0, g_rank * per_rank, per_rank);
    opt.zero_grad();
    loom::mse_loss(net(mine_x), mine_y).backward();
    opt.step();
    expect_same_on_every_rank(flat_params(*model.ptr()), "after step " + std::to_string(step));
    ref_opt.zero_grad();
    loom::mse_loss(reference(x), y).backward();
    ref_opt.step();
  }
  auto got = model->parameters(), want = reference->parameters();
  for (size_t i = 0; i < got.size(); ++i) {
    expect((got[i] - want[i]).abs().max().item<double>() < 1e-5,
           "DDP with " + std::to_string(g_size) + " ranks differs from one process");
  }
  // The profile of a backward: bucket all-reduces start while backward nodes still run.
  {
    loom::profiler::Profiler p;
    opt.zero_grad();
    loom::mse_loss(net(loom::ones({per_rank, 6})), loom::zeros({per_rank, 3})).backward();
    p.stop();
    int64_t first_reduce = INT64_MAX, last_node = 0;
    for (const loom::profiler::Event& e : p.events()) {
      if (e.name == "loom::all_reduce_") first_reduce = std::min(first_reduce, e.start_ns);
      if (e.kind == loom::profiler::EventKind::BackwardNode)
        last_node = std::max(last_node, e.start_ns);
    }
    expect(first_reduce < last_node, "a bucket's all-reduce overlaps the rest of backward");
  }
  // no_sync: gradients stay local (they differ between ranks with different data).
  if (g_size > 1) {
    opt.zero_grad();
    {
      auto guard = net->no_sync();
      loom::mse_loss(net(loom::full({2, 6}, g_rank + 1.0)), loom::zeros({2, 3})).backward();
    }
    Tensor g = model->parameters().back().grad().clone();
    Tensor all = loom::zeros({g.numel() * g_size});
    dist::all_gather_into_tensor(all, g.reshape({-1}));
    expect(!same(all.narrow(0, 0, g.numel()), all.narrow(0, g.numel(), g.numel())),
           "no_sync kept the gradients local");
  }
  // A parameter the loss does not use is refused at the next forward, naming it.
  auto unused_model = nn::Linear(6, 3);
  nn::Sequential holder(unused_model, nn::Linear(3, 3));
  nn::DistributedDataParallel skip(holder);
  // The second backward reaches only the first layer.
  Tensor in = loom::ones({2, 6});
  loom::mse_loss(skip(in), loom::zeros({2, 3})).backward();          // uses both: fine
  loom::mse_loss(unused_model(in), loom::zeros({2, 3})).backward();  // the second layer idle
  expect_error([&] { skip(in); }, "produced no gradient for parameter(s) 1.weight, 1.bias");
  ddp_unused_parameters();
  ddp_compiled_and_checkpointed();
  // float16 compression: the ranks still agree bitwise; the step is close to one process's.
  for (auto hook : {nn::CommHook::FP16Compress, nn::CommHook::BF16Compress}) {
    loom::manual_seed(5 + g_rank);
    nn::Linear fc(6, 3);
    nn::DistributedDataParallel compressed(fc,
                                           nn::DistributedDataParallelOptions{.comm_hook = hook});
    loom::manual_seed(9);
    Tensor x = loom::randn({2 * g_size, 6});
    loom::mse_loss(compressed(x.narrow(0, 2 * g_rank, 2)), loom::zeros({2, 3})).backward();
    std::vector<Tensor> grads;
    for (const Tensor& p : fc->parameters()) grads.push_back(p.grad().reshape({-1}));
    expect_same_on_every_rank(grads, "after a compressed all-reduce");
    Tensor w = fc->weight.detach().clone().requires_grad_();
    Tensor b = fc->bias.detach().clone().requires_grad_();
    loom::mse_loss(loom::linear(x, w, b), loom::zeros({2 * g_size, 3})).backward();
    expect((w.grad() - fc->weight.grad()).abs().max().item<double>() < 2e-2,
           "the compressed gradient is close to the exact one");
  }
  // ZeRO-1: Adam's state sharded over the ranks ends where plain Adam ends, bitwise
  // equal on every rank.
  {
    loom::manual_seed(3);
    nn::Sequential a(nn::Linear(6, 16), nn::ReLU(), nn::Linear(16, 3));
    nn::Sequential b(nn::Linear(6, 16), nn::ReLU(), nn::Linear(16, 3));
    {
      loom::NoGradGuard no_grad;
      auto pa = a->parameters(), pb = b->parameters();
      for (size_t i = 0; i < pa.size(); ++i) pb[i].copy_(pa[i]);
    }
    nn::DistributedDataParallel da(a), db(b);
    auto adam = [](std::vector<Tensor> p) {
      return std::make_unique<loom::optim::Adam>(p, loom::optim::AdamOptions(1e-2));
    };
    loom::optim::ZeroRedundancyOptimizer zero(a->parameters(), adam);
    loom::optim::Adam plain(b->parameters(), loom::optim::AdamOptions(1e-2));
    size_t owned = 0;
    for (size_t i = 0; i < a->parameters().size(); ++i) owned += zero.owner(i) == g_rank;
    if (g_size > 1) expect(owned < a->parameters().size(), "each rank owns a part");
    for (int step = 0; step < 3; ++step) {
      loom::manual_seed(20 + step);
      Tensor x = loom::randn({4, 6});
      zero.zero_grad();
      plain.zero_grad();
      loom::mse_loss(da(x), loom::zeros({4, 3})).backward();
      loom::mse_loss(db(x), loom::zeros({4, 3})).backward();
      zero.step();
      plain.step();
    }
    expect_same_on_every_rank(flat_params(*a.ptr()), "after ZeRO steps");
    auto pa = a->parameters(), pb = b->parameters();
    for (size_t i = 0; i < pa.size(); ++i) {
      expect((pa[i] - pb[i]).abs().max().item<double>() < 1e-6, "ZeRO differs from plain Adam");
    }
    // The consolidated state is plain Adam's, on the rank it went to (Note [Consolidated
    // ZeRO state]); it loads into a new ZeRO optimizer, which then steps as plain Adam.
    const int to = g_size - 1;
    zero.consolidate_state_dict(to);
    if (g_rank == to) {
      const loom::optim::NamedTensors whole = zero.state_dict(), expected = plain.state_dict();
      expect(whole.size() == expected.size(),
             "the consolidated state has " + std::to_string(whole.size()) + " entries, " +
                 "plain Adam's " + std::to_string(expected.size()));
      for (size_t e = 0; e < whole.size() && e < expected.size(); ++e) {
        expect(whole[e].first == expected[e].first,
               "consolidated key " + whole[e].first + ", plain " + expected[e].first);
        const double gap = (whole[e].second.to(loom::ScalarType::Float64) -
                            expected[e].second.to(loom::ScalarType::Float64))
                               .abs()
                               .max()
                               .item<double>();
        expect(gap < 1e-6, whole[e].first + " differs from plain Adam's by " + std::to_string(gap));
      }
    } else {
      expect_error([&] { zero.state_dict(); }, "call consolidate_state_dict(to) on every rank");
    }
    loom::optim::ZeroRedundancyOptimizer again(a->parameters(), adam);
    again.load_state_dict(plain.state_dict());
    loom::manual_seed(30);
    Tensor x = loom::randn({4, 6});
    again.zero_grad();
    plain.zero_grad();
    loom::mse_loss(da(x), loom::zeros({4, 3})).backward();
    loom::mse_loss(db(x), loom::zeros({4, 3})).backward();
    again.step();
    plain.step();
    for (size_t i = 0; i < pa.size(); ++i) {
      expect((pa[i] - pb[i]).abs().max().item<double>() < 1e-6,
             "a loaded ZeRO optimizer steps as plain Adam");
    }
    expect_error(
        [&] {
          again.load_state_dict({{"state.0.99.exp_avg", loom::zeros({1})}});
        },
        "names parameter 99; the optimizer has 4");
    expect_error(
        [&] {
          again.load_state_dict({{"state.1.0.exp_avg", loom::zeros({1})}});
        },
        "expected the one parameter group 0");
    expect_error(
        [&] {
          again.load_state_dict({{"state.0.0.exp_avg", loom::zeros({7})}});
        },
        "(its parameter's), found float32 [7]");
    // A field the optimizer does not have is refused by the parameter's owner, and so on
    // every rank: nothing is loaded anywhere.
    loom::optim::NamedTensors bogus = plain.state_dict();
    bogus.emplace_back("state.0.0.bogus", pa[0].detach().clone());
    expect_error([&] { again.load_state_dict(bogus); }, "refused");
  }
  // ZeRO over fewer parameters than ranks: a rank that owns none still has the learning
  // rate, steps (receiving the parameter) and consolidates.
  {
    Tensor w = loom::ones({3}).requires_grad_();
    loom::optim::ZeroRedundancyOptimizer lone({w}, [](std::vector<Tensor> p) {
      return std::make_unique<loom::optim::Adam>(p, loom::optim::AdamOptions(0.5));
    });
    expect(lone.lr() == 0.5, "every rank reads the learning rate");
    (w * 2).sum().backward();
    lone.step();
    expect((w - 0.5).abs().max().item<double>() < 1e-6, "the owner's step reached every rank");
    lone.consolidate_state_dict(0);
    if (g_rank == 0) expect(lone.state_dict().size() == 4, "lr, step, exp_avg, exp_avg_sq");
  }
  std::printf("ddp ok\n");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: distributed_rank SCENARIO [BACKEND [INIT_METHOD]]\n");
    return 2;
  }
  const std::string scenario = argv[1];
  write_stack_on_fatal_signals();
  if (const char* rank = std::getenv("LOOM_RANK")) g_rank = std::atoi(rank);  // until init says
  setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 0);
  try {
    loom::Runtime runtime = load_runtime(argc > 2 ? argv[2] : "");
    dist::InitOptions options;
    if (argc > 2) options.backend = argv[2];
    g_backend = options.backend;
    g_policy_before_init = sched_getscheduler(0);
    g_batch_threads_before_init = batch_threads();
    if (argc > 3) options.init_method = argv[3];
    if (scenario == "timeout") {
      const char* rank = std::getenv("LOOM_RANK");
      if (rank == nullptr) rank = std::getenv("OMPI_COMM_WORLD_RANK");  // under mpirun
      options.timeout =
          std::chrono::milliseconds(rank != nullptr && std::string(rank) == "1" ? 6000 : 2000);
    }
    if (scenario == "before_init") {
      Tensor t = filled({4}, 1, loom::ScalarType::Float32);
      expect_error([&] { dist::all_reduce(t); }, "the default process group is not initialized");
      expect_error([&] { dist::init_process_group({.backend = "carrier-pigeon"}); },
                   "unknown backend 'carrier-pigeon'");
      return 0;
    }
    dist::init_process_group(options);
    g_rank = dist::get_rank();
    g_size = dist::get_world_size();
    if (options.backend == "nccl") {
      const char* local = std::getenv("LOOM_LOCAL_RANK");
      g_device = "cuda:" + std::to_string((local ? std::atoi(local) : 0) %
                                          std::max<int64_t>(loom::device_count("cuda"), 1));
    }
    static const std::map<std::string, void (*)()> scenarios = {{"collectives", &collectives},
                                                                {"mismatch", &mismatch},
                                                                {"timeout", &timeout},
                                                                {"killed", &killed},
                                                                {"bad_input", &bad_input},
                                                                {"ddp", &ddp},
                                                                {"ring", &ring}};
    auto it = scenarios.find(scenario);
    if (it == scenarios.end()) fail("unknown scenario " + scenario);
    it->second();
    if (scenario != "timeout") dist::destroy_process_group();
    std::printf("rank %d of %d ok\n", g_rank, g_size);
  } catch (const loom::Error& e) {
    fail(e.what());
  }
  return 0;
}
