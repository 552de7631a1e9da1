// The emulator's kernel launch: every block of the grid in turn, its threads as
// Boost.Context fibers on the launching host thread.
//
// Note [The GPU emulator]
// ~~~~~~~~~~~~~~~~~~~~~~~
// The GPU plugin's kernels are checked against the CPU by the CUDA plugin's tests, which
// need a GPU; most machines that build loom have none, and the ROCm plugin's own GEMM and
// convolution never meet an AMD GPU in CI. So the same tree builds a third time, for the
// host: LOOM_GPU_EMULATED makes runtime/gpu_runtime.h map the gpu* API to
// emulated_runtime.cc (device memory is host memory, a stream runs its work when it is
// queued) and CUDA's kernel language to kernel_language.h, and each .cu file is compiled
// by g++ as C++. The plugin, libloom_plugin_cuda_emulated.so, registers as "cuda" and
// multiplies and convolves on loom's kernels as the ROCm plugin does, so the CUDA plugin's
// family tests run on it unchanged (gpu_emulated_tests).
//
// A launch runs each block's threads as fibers that switch only where a GPU's threads
// must meet: at __syncthreads and in a warp exchange, a shuffle or an MFMA (every live
// lane offers its value, then reads its partners'). A barrier opens when every thread of
// the block (or warp) that has not exited has reached it, as on a GPU. What a GPU would
// hang on, or run with undefined results, fails the launch with a message saying who
// waits where: a barrier that only part of a block reaches, or an exchange that only part
// of a warp reaches (every mask is taken as the full warp). A misaligned 16-byte access,
// a "misaligned address" error on a GPU, may end the process here (g++ may read an
// aligned type with an aligned SSE load). A launch past CUDA's limits is refused as
// cudaErrorInvalidConfiguration. Dynamic shared memory starts as all-ones bytes (NaN,
// -1), and LOOM_GPU_EMULATOR_ORDER=reverse runs a block's threads last to first, so that
// a read before the barrier that orders it meets garbage in one of the two orders.
//
// Matrix units: CUDA's WMMA fragments (emulated_wmma.h) are held whole in every lane, and
// AMD's MFMA instructions are wavefront-wide exchanges here (matrix_core_product_16x16x16)
// that use the instructions' own lane layout (Note [MFMA fragments] in
// kernels/gemm_math.h), so the ROCm plugin's matrix-core GEMM is checked lane by lane.
//
// It checks what a kernel computes, not how fast: the timings are the host's. Warps are
// 32 lanes, or 64 for a kernel written for AMD's wavefronts (launch_kernel<64>, the MFMA
// GEMM); diverged lanes cannot be told apart, so non-sync shuffles are not emulated.
#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "emulated_runtime.h"

namespace loom::gpu::emu {

thread_local const ThreadView* g_thread = nullptr;

namespace {

namespace ctx = boost::context;

constexpr unsigned int kMaxThreadsPerBlock = 1024;
constexpr size_t kMaxDynamicShared = 48 * 1024;  // more needs an opt-in loom never makes
constexpr size_t kStackBytes = 256 * 1024;

// Fiber stacks with a guard page below each, kept for the next block (most launches have
// the same block size, so a launch allocates none after the first).
class StackPool {
 public:
  ctx::stack_context allocate() {
    if (!free_.empty()) {
      ctx::stack_context stack = free_.back();
      free_.pop_back();
      return stack;
    }
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* base = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    mprotect(base, page, PROT_NONE);
    ctx::stack_context stack;
    stack.size = kStackBytes;
    stack.sp = static_cast<char*>(base) + page + kStackBytes;
    return stack;
  }
  void deallocate(ctx::stack_context& stack) noexcept { free_.push_back(stack); }

 private:
  std::vector<ctx::stack_context> free_;
};

struct PooledStack {
  StackPool* pool;
  ctx::stack_context allocate() { return pool->allocate(); }
  void deallocate(ctx::stack_context& stack) noexcept { pool->deallocate(stack); }
};

enum class Wait { None, Block, Warp };

struct EmulatedThread {
  ThreadView view;
  unsigned int linear = 0;
  ctx::fiber fiber;      // the thread while it is suspended
  ctx::fiber scheduler;  // the scheduler while the thread runs
  Wait wait = Wait::None;
  uint64_t generation = 0;  // of the barrier it waits at
  bool started = false;
  bool done = false;
};

struct Barrier {
  unsigned int arrived = 0;
  uint64_t generation = 0;  // advances each time the barrier opens
};

struct Block {
  unsigned int warp_size = 32;  // lanes a warp (64: an AMD wavefront)
  std::vector<EmulatedThread> threads;
  Barrier block;
  std::vector<Barrier> warps;
  std::vector<unsigned int> warp_live;
  unsigned int live = 0;
  std::vector<std::array<unsigned char, 32>> slots;  // each thread's offer in an exchange
  std::string failure;                               // an exception a thread threw
};

std::mutex g_launch_mutex;
StackPool g_stacks;  // under g_launch_mutex
alignas(256) unsigned char g_dynamic_shared[kMaxDynamicShared];
thread_local Block* g_block = nullptr;
thread_local EmulatedThread* g_current = nullptr;

// LOOM_GPU_EMULATOR_ORDER=reverse runs the threads of a block from the last to the first
// between barriers, so that a read of what another thread has not yet written (a missing
// barrier) meets the garbage in one of the two orders.
bool reverse_order() {
  static const bool reverse = [] {
    const char* order = std::getenv("LOOM_GPU_EMULATOR_ORDER");
    return order != nullptr && std::string(order) == "reverse";
  }();
  return reverse;
}

void suspend(EmulatedThread& t) {
  t.scheduler = std::move(t.scheduler).resume();
}

// Arrives at `barrier` of `participants` threads: opens it when this is the last one,
// else waits for it to open.
void arrive(Barrier& barrier, unsigned int participants, Wait kind) {
  EmulatedThread& t = *g_current;
  if (++barrier.arrived == participants) {
    barrier.arrived = 0;
    ++barrier.generation;
    return;
  }
  t.wait = kind;
  t.generation = barrier.generation;
  suspend(t);
}

void arrive_in_warp() {
  const unsigned int warp = g_current->linear / g_block->warp_size;
  arrive(g_block->warps[warp], g_block->warp_live[warp], Wait::Warp);
}

bool runnable(const Block& b, const EmulatedThread& t) {
  switch (t.wait) {
    case Wait::None:
      return true;
    case Wait::Block:
      return b.block.generation != t.generation;
    case Wait::Warp:
      return b.warps[t.linear / b.warp_size].generation != t.generation;
  }
  return false;
}

// A thread exited: the barriers it will never reach open when the rest have.
void exited(Block& b, const EmulatedThread& t) {
  const unsigned int warp = t.linear / b.warp_size;
  --b.live;
  --b.warp_live[warp];
  if (b.block.arrived > 0 && b.block.arrived == b.live) {
    b.block.arrived = 0;
    ++b.block.generation;
  }
  Barrier& w = b.warps[warp];
  if (w.arrived > 0 && w.arrived == b.warp_live[warp]) {
    w.arrived = 0;
    ++w.generation;
  }
}

// "(x, y, z)" of a dim3 or uint3.
template <typename Dims>
std::string describe(const Dims& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

// Why no thread of the block can run: who waits at which barrier.
std::string deadlock_message(const Block& b) {
  unsigned int at_block = 0, at_warp = 0, exited_threads = 0;
  for (const EmulatedThread& t : b.threads) {
    if (t.done) {
      ++exited_threads;
    } else if (t.wait == Wait::Block) {
      ++at_block;
    } else {
      ++at_warp;
    }
  }
  return "[gpu emulator] block " + describe(b.threads.front().view.block_idx) + " of " +
         std::to_string(b.threads.size()) + " threads never finishes: " + std::to_string(at_block) +
         " wait at __syncthreads, " + std::to_string(at_warp) +
         " at a warp exchange (a shuffle or an MFMA), " + std::to_string(exited_threads) +
         " have exited (a barrier that not every live thread of the block or warp reaches)";
}

// Runs one block's threads to the end; false (with the error recorded) when they deadlock
// or one throws.
bool run_block(Block& b, void (*body)(void*), void* closure) {
  const size_t n = b.threads.size();
  b.live = static_cast<unsigned int>(n);
  for (size_t w = 0; w < b.warps.size(); ++w) {
    b.warps[w] = Barrier{};
    b.warp_live[w] = static_cast<unsigned int>(std::min<size_t>(b.warp_size, n - w * b.warp_size));
  }
  b.block = Barrier{};
  for (EmulatedThread& t : b.threads) {
    t.wait = Wait::None;
    t.started = false;
    t.done = false;
  }
  size_t remaining = n;
  while (remaining > 0) {
    bool progressed = false;
    for (size_t k = 0; k < n; ++k) {
      EmulatedThread& t = b.threads[reverse_order() ? n - 1 - k : k];
      if (t.done || !runnable(b, t)) continue;
      t.wait = Wait::None;
      g_current = &t;
      g_thread = &t.view;
      if (!t.started) {
        t.started = true;
        t.fiber = ctx::fiber(std::allocator_arg, PooledStack{&g_stacks},
                             [&t, &b, body, closure](ctx::fiber&& scheduler) {
                               t.scheduler = std::move(scheduler);
                               try {
                                 body(closure);
                               } catch (const std::exception& e) {
                                 b.failure = e.what();
                               }
                               t.done = true;
                               return std::move(t.scheduler);
                             });
      }
      t.fiber = std::move(t.fiber).resume();
      progressed = true;
      if (t.done) {
        --remaining;
        exited(b, t);
      }
    }
    if (!b.failure.empty() || !progressed) {
      record_error(gpuErrorLaunchFailure,
                   b.failure.empty() ? deadlock_message(b)
                                     : "[gpu emulator] a kernel thread threw: " + b.failure);
      for (EmulatedThread& t : b.threads) t.fiber = ctx::fiber{};  // unwinds the waiting
      return false;
    }
  }
  return true;
}

// CUDA's limits on a launch (compute capability 7.0 and later).
std::string bad_configuration(const LaunchConfig& c) {
  const uint64_t threads = uint64_t{c.block.x} * c.block.y * c.block.z;
  if (threads == 0 || threads > kMaxThreadsPerBlock || c.block.z > 64) {
    return "a block of " + describe(c.block) + " threads (at most 1024, and z at most 64)";
  }
  if (c.grid.x == 0 || c.grid.y == 0 || c.grid.z == 0 || c.grid.x > 0x7fffffffu ||
      c.grid.y > 65535 || c.grid.z > 65535) {
    return "a grid of " + describe(c.grid) + " blocks (each at least 1, y and z at most 65535)";
  }
  if (c.warp_size != 32 && c.warp_size != 64) {
    return "warps of " + std::to_string(c.warp_size) + " lanes (32, or 64 for AMD's wavefronts)";
  }
  if (c.shared_bytes > kMaxDynamicShared) {
    return std::to_string(c.shared_bytes) + " bytes of dynamic shared memory (at most 49152)";
  }
  return {};
}

}  // namespace

void sync_block() {
  arrive(g_block->block, g_block->live, Wait::Block);
}

unsigned char* dynamic_shared() {
  return g_dynamic_shared;
}

void shuffle_bytes(const void* mine, void* out, size_t bytes, Shuffle kind, int operand,
                   int width) {
  Block& b = *g_block;
  const EmulatedThread& t = *g_current;
  std::memcpy(b.slots[t.linear].data(), mine, bytes);
  arrive_in_warp();  // every live lane has offered its value
  const int lane = static_cast<int>(t.linear % b.warp_size);
  const int segment = lane / width * width;
  int source = kind == Shuffle::Down ? lane + operand : lane ^ operand;
  if (source < segment || source >= segment + width) source = lane;
  const size_t from = t.linear - static_cast<size_t>(lane) + static_cast<size_t>(source);
  const bool offered = from < b.threads.size() && !b.threads[from].done;
  std::memcpy(out, b.slots[offered ? from : t.linear].data(), bytes);
  arrive_in_warp();  // every lane has read before any offers again
}

// v_mfma_f32_16x16x16f16 / _bf16_1k as AMD documents the instruction: lane l holds
// A[l % 16][4 (l / 16) + e], B[4 (l / 16) + e][l % 16] and the accumulator's
// C[4 (l / 16) + e][l % 16], e = 0..3. Every lane offers its A and B elements, then adds
// the sums over k for its own accumulator elements.
void matrix_core_product_16x16x16(const float a[4], const float b[4], float c[4]) {
  Block& block = *g_block;
  const EmulatedThread& t = *g_current;
  if (block.warp_size != 64) {
    throw std::runtime_error(
        "an MFMA instruction in a kernel launched with 32-lane warps (launch_kernel<64> runs "
        "it in wavefronts)");
  }
  std::memcpy(block.slots[t.linear].data(), a, 4 * sizeof(float));
  std::memcpy(block.slots[t.linear].data() + 4 * sizeof(float), b, 4 * sizeof(float));
  arrive_in_warp();  // every live lane has offered its elements
  const unsigned int wave = t.linear / 64;
  if (block.warp_live[wave] != 64) {
    throw std::runtime_error("an MFMA instruction that only " +
                             std::to_string(block.warp_live[wave]) +
                             " of its wavefront's 64 lanes reach");
  }
  const unsigned int first = wave * 64, lane = t.linear % 64;
  auto element = [&](unsigned int holder, int index) {  // index 0-3: A, 4-7: B
    float v;
    std::memcpy(&v, block.slots[first + holder].data() + index * sizeof(float), sizeof(float));
    return v;
  };
  const unsigned int col = lane % 16;
  for (int e = 0; e < 4; ++e) {
    const unsigned int row = 4 * (lane / 16) + e;
    float sum = c[e];
    for (unsigned int k = 0; k < 16; ++k) {
      sum += element(row + 16 * (k / 4), k % 4) * element(col + 16 * (k / 4), 4 + k % 4);
    }
    c[e] = sum;
  }
  arrive_in_warp();  // every lane has read before any offers again
}

void run_grid(const LaunchConfig& config, void (*thread_body)(void*), void* closure) {
  const std::string bad = bad_configuration(config);
  if (!bad.empty()) {
    record_error(gpuErrorInvalidConfiguration, "[gpu emulator] a launch with " + bad);
    return;
  }
  std::lock_guard<std::mutex> lock(g_launch_mutex);
  const unsigned int n = config.block.x * config.block.y * config.block.z;
  Block b;
  b.threads.resize(n);
  b.slots.resize(n);
  b.warp_size = config.warp_size;
  b.warps.resize((n + b.warp_size - 1) / b.warp_size);
  b.warp_live.resize(b.warps.size());
  for (unsigned int i = 0; i < n; ++i) {
    EmulatedThread& t = b.threads[i];
    t.linear = i;
    t.view.thread_idx = {i % config.block.x, i / config.block.x % config.block.y,
                         i / (config.block.x * config.block.y)};
    t.view.block_dim = config.block;
    t.view.grid_dim = config.grid;
  }
  g_block = &b;
  bool ok = true;
  for (unsigned int z = 0; ok && z < config.grid.z; ++z) {
    for (unsigned int y = 0; ok && y < config.grid.y; ++y) {
      for (unsigned int x = 0; ok && x < config.grid.x; ++x) {
        for (EmulatedThread& t : b.threads) t.view.block_idx = {x, y, z};
        // Shared memory starts as garbage on a GPU: all-ones bytes read as NaN or -1.
        std::memset(g_dynamic_shared, 0xff, config.shared_bytes);
        ok = run_block(b, thread_body, closure);
      }
    }
  }
  g_block = nullptr;
  g_current = nullptr;
  g_thread = nullptr;
}

}  // namespace loom::gpu::emu
