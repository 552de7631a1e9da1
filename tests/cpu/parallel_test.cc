// The CPU plugin's thread pool and ISA dispatch: large operands (above the parallel grain)
// in contiguous, transposed, sliced and broadcast layouts against references, errors
// raised on worker threads, the plugin attributes, and, in child processes with other
// LOOM_NUM_THREADS / LOOM_CPU_ISA values, bit-identical results (sum included) and the
// errors for invalid values. tests/CMakeLists.txt also reruns CpuParallel.* under
// LOOM_NUM_THREADS=1, 2, 3 and each LOOM_CPU_ISA level.
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string_view>

#include "cpu_test_util.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/loom.h"
#include "loom/ops/standard_library.h"

extern char** environ;

namespace loom::testing {
namespace {

// Well above the plugin's grain (32768 elements) and not a multiple of any chunking.
constexpr int64_t kRows = 613, kCols = 541;

// float32 rounding of a double computation, for references of float32 results.
double f32(double v) {
  return static_cast<float>(v);
}

// Pseudo-random float32 values near a grid of 1/1000, in [lo, lo + span].
Values grid_values(int64_t n, uint32_t seed, double lo, double span) {
  Values v;
  v.reserve(static_cast<size_t>(n));
  uint32_t state = seed;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    v.push_back(f32(lo + std::fmod((state >> 8) / 1000.0, span)));
  }
  return v;
}

// The operands every test uses: x, y (float32 [kRows, kCols], y > 0), a row to broadcast.
struct Operands {
  Values xv = grid_values(kRows * kCols, 1, -10, 20);
  Values yv = grid_values(kRows * kCols, 2, 0.25, 8);
  Values rowv = grid_values(kCols, 3, 0.5, 4);
  Tensor x = make(ScalarType::Float32, {kRows, kCols}, xv);
  Tensor y = make(ScalarType::Float32, {kRows, kCols}, yv);
  Tensor row = make(ScalarType::Float32, {kCols}, rowv);
};

Tensor sum_of(const Tensor& t) {
  return call("loom::sum", {box(t), dispatch::none()});
}

// sum over one dim
Tensor sum_over(const Tensor& t, int64_t dim) {
  const int64_t dims[] = {dim};
  return call("loom::sum.dim_IntList",
              {box(t), box(IntArrayRef(dims, 1)), box(false), dispatch::none()});
}

void copy_into(const Tensor& dst, const Tensor& src) {
  call("loom::copy_", {box(dst), box(src), box(false)});
}

class CpuParallel : public CpuPointwise {};

TEST_F(CpuParallel, ReportsThreadsAndIsa) {
  ops::load_standard_library();
  const auto info = dispatch::PluginHost::instance().load(std::string(LOOM_PLUGIN_DIR) +
                                                          "/libloom_plugin_cpu.so");
  const char* threads = std::getenv("LOOM_NUM_THREADS");
  cpu_set_t cpus;
  ASSERT_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
  const std::string want_threads =
      threads != nullptr && *threads != '\0' ? threads : std::to_string(CPU_COUNT(&cpus));
  EXPECT_EQ(info.attributes.at("num_threads"), want_threads);
  const char* isa = std::getenv("LOOM_CPU_ISA");
  const std::string best = cpu_runs_isa("avx512") ? "avx512"
                           : cpu_runs_isa("avx2") ? "avx2"
                                                  : "generic";
  EXPECT_EQ(info.attributes.at("isa"), isa != nullptr && *isa != '\0' ? isa : best);
}

TEST_F(CpuParallel, LargeContiguous) {
  Operands o;
  Values want;
  for (size_t i = 0; i < o.xv.size(); ++i) want.push_back(o.xv[i] + 2 * o.yv[i]);
  expect_values(call("loom::add.Tensor", {box(o.x), box(o.y), box(int64_t{2})}), want, "add");
  want.clear();
  for (size_t i = 0; i < o.xv.size(); ++i) want.push_back(o.xv[i] / o.yv[i]);
  expect_values(call("loom::div.Tensor", {box(o.x), box(o.y)}), want, "div");
  want.clear();
  for (double v : o.xv) want.push_back(std::tanh(v));
  expect_values(call("loom::tanh", {box(o.x)}), want, "tanh");
  // in place: out is an input
  Tensor z = make(ScalarType::Float32, {kRows, kCols}, o.xv);
  call("loom::mul_.Tensor", {box(z), box(o.y)});
  want.clear();
  for (size_t i = 0; i < o.xv.size(); ++i) want.push_back(o.xv[i] * o.yv[i]);
  expect_values(z, want, "mul_");
}

TEST_F(CpuParallel, LargeTransposedAndSliced) {
  Operands o;
  // out follows the transposed input's layout; the other input is walked across it
  Tensor s = call("loom::sub.Tensor", {box(o.x.t()), box(o.y.t()), box(int64_t{1})});
  Values want;
  for (int64_t j = 0; j < kCols; ++j) {
    for (int64_t i = 0; i < kRows; ++i) want.push_back(o.xv[i * kCols + j] - o.yv[i * kCols + j]);
  }
  expect_values(s, want, "sub transposed");
  // transposed with contiguous: mixed strides on the inner dim
  Tensor square = make(ScalarType::Float32, {kCols, kCols}, grid_values(kCols * kCols, 4, -3, 6));
  Values sq = values(square);
  Tensor m = call("loom::mul.Tensor", {box(square), box(square.t())});
  want.clear();
  for (int64_t i = 0; i < kCols; ++i) {
    for (int64_t j = 0; j < kCols; ++j) want.push_back(sq[i * kCols + j] * sq[j * kCols + i]);
  }
  expect_values(m, want, "mul with transposed");
  // every other column: a strided inner dim
  Tensor odd = o.x.slice(1, 1, std::nullopt, 2);
  Values oddv = values(odd);
  want.clear();
  for (double v : oddv) want.push_back(std::exp(v / 4));
  Tensor quarter = make(ScalarType::Float32, {}, {0.25});
  expect_values(call("loom::exp", {box(call("loom::mul.Tensor", {box(odd), box(quarter)}))}), want,
                "exp of sliced");
}

TEST_F(CpuParallel, LargeBroadcast) {
  Operands o;
  // a row broadcast over rows (stride 0 on the outer dim)
  Values want;
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) want.push_back(o.xv[i * kCols + j] / o.rowv[j]);
  }
  expect_values(call("loom::div.Tensor", {box(o.x), box(o.row)}), want, "div by row");
  // a column against a row: both inputs broadcast
  Tensor column = make(ScalarType::Float32, {kRows, 1}, grid_values(kRows, 5, -1, 2));
  Values colv = values(column);
  want.clear();
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) want.push_back(std::max(colv[i], o.rowv[j]));
  }
  expect_values(call("loom::maximum", {box(column), box(o.row)}), want, "maximum outer");
  // short rows the row repeats (Note [Periodic runs]): the parallel chunks start inside
  // a tile of rows
  const int64_t rows = 4999, period = 67;
  const Values xs = grid_values(rows * period, 6, -10, 20);
  const Values short_row = grid_values(period, 7, 0.5, 4);
  want.clear();
  for (int64_t i = 0; i < rows * period; ++i) want.push_back(xs[i] - short_row[i % period]);
  expect_values(call("loom::sub.Tensor",
                     {box(make(ScalarType::Float32, {rows, period}, xs)),
                      box(make(ScalarType::Float32, {period}, short_row)), box(int64_t{1})}),
                want, "x - short row");
  // 0-dim operands on either side (the scalar-broadcast loops)
  Tensor scalar = make(ScalarType::Float32, {}, {1.75});
  want.clear();
  for (double v : o.xv) want.push_back(v * 1.75);
  expect_values(call("loom::mul.Tensor", {box(o.x), box(scalar)}), want, "tensor * scalar");
  want.clear();
  for (double v : o.xv) want.push_back(1.75 - v);
  expect_values(call("loom::sub.Tensor", {box(scalar), box(o.x), box(int64_t{1})}), want,
                "scalar - tensor");
}

TEST_F(CpuParallel, LargeIntegerOps) {
  const int64_t n = kRows * kCols;
  Values a, b;
  for (int64_t i = 0; i < n; ++i) {
    a.push_back(static_cast<double>((i * 7919) % 2001 - 1000));
    b.push_back(static_cast<double>((i % 97 + 1) * (i % 2 ? 1 : -1)));
  }
  Tensor x = make(ScalarType::Int32, {n}, a), y = make(ScalarType::Int32, {n}, b);
  Values want;
  for (int64_t i = 0; i < n; ++i) want.push_back(a[i] * b[i] + a[i]);
  Tensor p = call("loom::mul.Tensor", {box(x), box(y)});
  expect_values(call("loom::add.Tensor", {box(p), box(x), box(int64_t{1})}), want, "mul, add");
  want.clear();
  for (int64_t i = 0; i < n; ++i) {
    double r = std::fmod(a[i], b[i]);
    if (r != 0 && ((r < 0) != (b[i] < 0))) r += b[i];
    want.push_back(r);
  }
  expect_values(call("loom::remainder.Tensor", {box(x), box(y)}), want, "remainder");
  // errors found by a worker thread reach the caller
  store(y, n - 5, 0);
  expect_error(
      [&] {
        call("loom::remainder.Tensor", {box(x), box(y)});
      },
      "loom::remainder.Tensor", {"integer division by zero"});
  // integer pow over the threads: wrapping powers, and 0 (or +-1) for negative exponents
  store(y, n - 5, -2);
  b[n - 5] = -2;
  want.clear();
  for (int64_t i = 0; i < n; ++i) {
    const auto base = static_cast<int32_t>(a[i]), exponent = static_cast<int32_t>(b[i]);
    uint32_t power = 1;
    if (exponent < 0) {
      power = base == 1 ? 1u : base == -1 ? (exponent % 2 == 0 ? 1u : ~0u) : 0u;
    } else {
      for (int32_t k = 0; k < exponent; ++k) power *= static_cast<uint32_t>(base);
    }
    want.push_back(static_cast<double>(static_cast<int32_t>(power)));
  }
  expect_values(call("loom::pow.Tensor_Tensor", {box(x), box(y)}), want, "integer pow");
}

TEST_F(CpuParallel, LargeCopyAndFill) {
  Operands o;
  // transposed float32 into a contiguous float64
  Tensor d = empty(Shape{kCols, kRows}, ScalarType::Float64);
  copy_into(d, o.x.t());
  Values want;
  for (int64_t j = 0; j < kCols; ++j) {
    for (int64_t i = 0; i < kRows; ++i) want.push_back(o.xv[i * kCols + j]);
  }
  expect_values(d, want, "copy_ transposed to float64");
  // a broadcast row into every row
  Tensor r = empty(Shape{kRows, kCols}, ScalarType::Float32);
  copy_into(r, o.row);
  want.clear();
  for (int64_t i = 0; i < kRows; ++i) want.insert(want.end(), o.rowv.begin(), o.rowv.end());
  expect_values(r, want, "copy_ broadcast row");
  // float32 into the transposed view of an int32 (truncation)
  Tensor ints = empty(Shape{kCols, kRows}, ScalarType::Int32);
  copy_into(ints.t(), o.x);
  want.clear();
  for (double v : o.xv) want.push_back(std::trunc(v));
  expect_values(ints.t(), want, "copy_ into transposed int32");
  // fill_, contiguous and into a strided view
  call("loom::fill_.Scalar", {box(r), box(2.5)});
  expect_values(r, Values(static_cast<size_t>(kRows * kCols), 2.5), "fill_");
  call("loom::fill_.Scalar", {box(r.slice(1, 0, std::nullopt, 2)), box(int64_t{-1})});
  Values filled = values(r);
  for (int64_t i = 0; i < kRows * kCols; i += 7919) {
    EXPECT_EQ(filled[i], (i % kCols) % 2 == 0 ? -1.0 : 2.5) << i;
  }
}

TEST_F(CpuParallel, LargeSums) {
  Operands o;
  double want = 0;
  for (double v : o.xv) want += f32(v);
  const double tol = std::abs(want) * 1e-6 + 1e-3;  // float32 rounding of the result
  EXPECT_NEAR(values(sum_of(o.x))[0], f32(want), tol);
  EXPECT_NEAR(values(sum_of(o.x.t()))[0], f32(want), tol);
  Tensor every_third_row = o.x.slice(0, 0, std::nullopt, 3);
  double want_rows = 0;
  for (double v : values(every_third_row)) want_rows += v;
  EXPECT_NEAR(values(sum_of(every_third_row))[0], want_rows, std::abs(want_rows) * 1e-6 + 1e-3);
  // over one dim: many short outputs (split by output) and a few long ones (chunked)
  Values col_want(kCols, 0.0);
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) col_want[j] += o.xv[i * kCols + j];
  }
  expect_values(sum_over(o.x, 0), col_want, "sum over dim 0");
  const int64_t length = kRows * kCols / 3;  // 7 chunks of the plugin's reductions
  Tensor long_rows =
      make(ScalarType::Float32, {3, length}, Values(o.xv.begin(), o.xv.begin() + 3 * length));
  Values row_want(3, 0.0);
  for (int64_t i = 0; i < 3 * length; ++i) row_want[i / length] += o.xv[i];
  expect_values(sum_over(long_rows, 1), row_want, "sum of long rows");
  // integers: exact
  const int64_t n = kRows * kCols;
  Values iv;
  int64_t want_int = 0;
  for (int64_t i = 0; i < n; ++i) {
    iv.push_back(static_cast<double>((i * 7919) % 200001 - 100000));
    want_int += (i * 7919) % 200001 - 100000;
  }
  Tensor s = sum_of(make(ScalarType::Int32, {n}, iv));
  EXPECT_EQ(s.dtype(), ScalarType::Int64);
  EXPECT_EQ(s.data<int64_t>()[0], want_int);
}

// ============================== child processes ==============================

// Random values over large tensors from a fixed seed, concatenated.
Tensor random_results() {
  manual_seed(3);
  const Tensor u = rand({kRows, kCols}),
               z = randn({kCols, kRows}, TensorOptions().dtype(ScalarType::Float64));
  const Tensor kept = dropout(ones({kRows * kCols}), 0.5, true);
  return cat({u.flatten(), z.flatten().to(ScalarType::Float32), kept});
}

// The results of a fixed workload on large operands (pointwise in every layout, copy_,
// fill_, sums and the kernels that split lines, planes or chunks), as doubles in logical
// order: equal bits mean equal results.
std::string workload_results() {
  Operands o;
  Tensor scalar = make(ScalarType::Float32, {}, {0.3});
  Tensor xd = make(ScalarType::Float64, {kRows, kCols}, o.xv);
  // magnitudes from 1e-6 to 1e6: a float64 sum whose rounding depends on the grouping
  Values wide_values;
  for (size_t i = 0; i < o.xv.size(); ++i) {
    wide_values.push_back(o.xv[i] * std::pow(10.0, static_cast<double>((i * 7) % 13) - 6) + 0.1);
  }
  Tensor wide = make(ScalarType::Float64, {kRows, kCols}, wide_values);
  Values iv = grid_values(kRows * kCols, 7, -1000, 2000), jv;
  for (double& v : iv) v = std::floor(v);
  for (size_t i = 0; i < iv.size(); ++i) jv.push_back(static_cast<double>(i % 53 + 1));
  Tensor xi = make(ScalarType::Int32, {kRows, kCols}, iv);
  Tensor yi = make(ScalarType::Int32, {kRows, kCols}, jv);
  Values hv;
  for (size_t i = 0; i < o.xv.size(); ++i) hv.push_back(static_cast<double>(i % 256) * 0.25 - 32);
  Tensor xh = make(ScalarType::Float16, {kRows, kCols}, hv);
  Tensor copied = empty(Shape{kCols, kRows}, ScalarType::Float64);
  copy_into(copied, o.x.t());
  Tensor rows = empty(Shape{kRows, kCols}, ScalarType::Float32);
  copy_into(rows, o.row);
  const Tensor results[] = {
      call("loom::add.Tensor", {box(o.x), box(o.y), box(0.3)}),
      call("loom::mul.Tensor", {box(o.x.t()), box(o.y.t())}),
      call("loom::sub.Tensor", {box(o.x.slice(1, 1, std::nullopt, 2)),
                                box(o.y.slice(1, 0, kCols - 1, 2)), box(int64_t{1})}),
      call("loom::div.Tensor", {box(o.x), box(o.row)}),
      call("loom::mul.Tensor", {box(o.x), box(scalar)}),
      call("loom::add.Tensor", {box(scalar), box(o.y), box(int64_t{2})}),
      call("loom::sigmoid", {box(o.x)}),
      call("loom::exp", {box(o.x.t())}),
      call("loom::tanh", {box(xd)}),
      call("loom::maximum", {box(o.x), box(o.y)}),
      call("loom::lt.Tensor", {box(o.x), box(o.y)}),
      call("loom::add.Tensor", {box(xi), box(yi), box(int64_t{3})}),
      call("loom::mul.Tensor", {box(xi), box(yi)}),
      call("loom::remainder.Tensor", {box(xi), box(yi)}),
      call("loom::add.Tensor", {box(xh), box(xh), box(int64_t{1})}),
      copied,
      rows,
      sum_of(o.x),
      sum_of(o.x.t()),
      sum_of(o.x.slice(0, 1, std::nullopt, 3)),
      sum_of(xd),
      sum_of(wide),
      sum_of(wide.t()),
      sum_over(wide, 0),
      sum_over(make(ScalarType::Float64, {3, kRows * kCols / 3},
                    Values(wide_values.begin(), wide_values.begin() + kRows * kCols / 3 * 3)),
               1),
      sum_over(wide.t(), 1),
      sum_of(xi),
      // the kernels that split lines, planes or chunks (parallel_kernels_test.cc)
      softmax(o.x, 0),
      log_softmax(xd.t(), 1),
      cumsum(o.x, 0),
      var(wide),
      var(o.x, IntList{1}),
      amax(wide.t()),
      std::get<0>(sort(o.x, 0)),
      std::get<1>(topk(o.x.t(), 5, 1)),
      std::get<0>(native_layer_norm(o.x, {kCols}, o.row, o.row, 1e-5)),
      std::get<1>(max_pool2d_with_indices(o.x.view({1, 1, kRows, kCols}), {3, 3}, {1, 1}, {1, 1})),
      avg_pool2d(o.x.view({1, 1, kRows, kCols}), {4, 4}),
      gather(o.x, 0, (xi.abs() % Scalar(int64_t{kRows})).to(ScalarType::Int64)),
      random_results(),
  };
  std::string bytes;
  for (const Tensor& t : results) {
    const Values v = values(t);
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  }
  return bytes;
}

// Child mode: loads the plugin under the environment the parent chose and writes the
// workload's results, or "error: <message>" when loading fails, to LOOM_TEST_RESULTS_FILE.
TEST(CpuParallelChild, WriteResults) {
  const char* path = std::getenv("LOOM_TEST_RESULTS_FILE");
  if (path == nullptr) GTEST_SKIP() << "runs only as a child of CpuParallelProcesses tests";
  std::ofstream out(path, std::ios::binary);
  try {
    ops::load_standard_library();
    dispatch::PluginHost::instance().load(std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so");
  } catch (const Error& e) {
    out << "error: " << e.what();
    return;
  }
  out << workload_results();
}

struct ChildRun {
  int exit_status = -1;
  std::string output;  // the results file
  std::string log;     // the child's stdout and stderr
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs this test binary's child mode with `env` replacing LOOM_NUM_THREADS and
// LOOM_CPU_ISA (unset unless given).
ChildRun run_child(const std::vector<std::pair<std::string, std::string>>& env,
                   const std::string& name) {
  const std::string stem =
      ::testing::TempDir() + "loom_cpu_parallel_" + std::to_string(getpid()) + "_" + name;
  const std::string results = stem + ".bin", log = stem + ".log";
  std::remove(results.c_str());
  std::vector<std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    if (var.starts_with("LOOM_NUM_THREADS=") || var.starts_with("LOOM_CPU_ISA=") ||
        var.starts_with("LOOM_TEST_RESULTS_FILE=")) {
      continue;
    }
    vars.emplace_back(var);
  }
  for (const auto& [key, value] : env) vars.push_back(key + "=" + value);
  vars.push_back("LOOM_TEST_RESULTS_FILE=" + results);
  std::vector<char*> envp;
  for (std::string& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", filter = "--gtest_filter=CpuParallelChild.WriteResults";
  char* argv[] = {exe.data(), filter.data(), nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  ChildRun run;
  const int spawned = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "posix_spawn failed: " << spawned;
    return run;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.output = read_file(results);
  run.log = read_file(log);
  std::remove(results.c_str());
  std::remove(log.c_str());
  return run;
}

TEST(CpuParallelProcesses, SameBitsForAnyThreadCountAndIsa) {
  struct Config {
    std::string name;
    std::vector<std::pair<std::string, std::string>> env;
  };
  std::vector<Config> configs = {
      {"threads1", {{"LOOM_NUM_THREADS", "1"}}},
      {"threads2", {{"LOOM_NUM_THREADS", "2"}}},
      {"threads3", {{"LOOM_NUM_THREADS", "3"}}},
      {"generic", {{"LOOM_NUM_THREADS", "2"}, {"LOOM_CPU_ISA", "generic"}}},
  };
  for (const char* isa : {"avx2", "avx512"}) {
    if (cpu_runs_isa(isa)) {
      configs.push_back({isa, {{"LOOM_NUM_THREADS", "2"}, {"LOOM_CPU_ISA", isa}}});
    }
  }
  std::string reference;
  for (const Config& c : configs) {
    SCOPED_TRACE(c.name);
    const ChildRun run = run_child(c.env, c.name);
    ASSERT_EQ(run.exit_status, 0) << run.log;
    ASSERT_FALSE(run.output.empty() || run.output.starts_with("error: ")) << run.output << run.log;
    if (reference.empty()) {
      reference = run.output;
    } else {
      // a mismatch names the first differing result element (as a double index)
      size_t first = 0;
      while (first < reference.size() && first < run.output.size() &&
             reference[first] == run.output[first]) {
        ++first;
      }
      EXPECT_TRUE(run.output == reference)
          << "differs from " << configs[0].name << " at double #" << first / sizeof(double);
    }
  }
}

TEST(CpuParallelProcesses, InvalidThreadCountFailsPluginInit) {
  for (const char* value : {"0", "-2", "abc", "2x", " 2", "1025", "99999999999"}) {
    SCOPED_TRACE(value);
    const ChildRun run = run_child({{"LOOM_NUM_THREADS", value}}, "bad_threads");
    ASSERT_EQ(run.exit_status, 0) << run.log;
    EXPECT_TRUE(run.output.starts_with("error: [plugin-host]")) << run.output;
    EXPECT_NE(run.output.find(std::string("[cpu] LOOM_NUM_THREADS must be a positive integer of at "
                                          "most 1024 (the intra-op thread count), found '") +
                              value + "'"),
              std::string::npos)
        << run.output;
  }
  // empty means unset: the default
  const ChildRun run = run_child({{"LOOM_NUM_THREADS", ""}}, "empty_threads");
  EXPECT_FALSE(run.output.empty() || run.output.starts_with("error: ")) << run.output;
}

TEST(CpuParallelProcesses, InvalidConvLayoutFailsPluginInit) {
  for (const char* value : {"nchw", "Blocked", "any"}) {
    SCOPED_TRACE(value);
    const ChildRun run = run_child({{"LOOM_CPU_CONV_LAYOUT", value}}, "bad_conv_layout");
    ASSERT_EQ(run.exit_status, 0) << run.log;
    EXPECT_NE(run.output.find(std::string("[cpu] LOOM_CPU_CONV_LAYOUT must be one of measure, "
                                          "plain, blocked, found '") +
                              value + "'"),
              std::string::npos)
        << run.output;
  }
}

TEST(CpuParallelProcesses, InvalidIsaFailsPluginInit) {
  for (const char* value : {"sse", "AVX2", "avx"}) {
    SCOPED_TRACE(value);
    const ChildRun run = run_child({{"LOOM_CPU_ISA", value}}, "bad_isa");
    ASSERT_EQ(run.exit_status, 0) << run.log;
    EXPECT_NE(run.output.find(std::string("[cpu] LOOM_CPU_ISA must be one of avx512, avx2, "
                                          "generic, found '") +
                              value + "'"),
              std::string::npos)
        << run.output;
  }
}

TEST(CpuParallelProcesses, ForcingAnIsaTheCpuLacksFailsPluginInit) {
  const char* missing = !cpu_runs_isa("avx2") ? "avx2" : !cpu_runs_isa("avx512") ? "avx512" : "";
  if (*missing == '\0') GTEST_SKIP() << "this CPU runs every level (avx512, avx2, generic)";
  const ChildRun run = run_child({{"LOOM_CPU_ISA", missing}}, "missing_isa");
  ASSERT_EQ(run.exit_status, 0) << run.log;
  EXPECT_NE(run.output.find(std::string("[cpu] LOOM_CPU_ISA=") + missing +
                            " is not supported by this CPU (it supports "),
            std::string::npos)
      << run.output;
}

}  // namespace
}  // namespace loom::testing
