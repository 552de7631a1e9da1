// The NCCL engine module (libloom_distributed_nccl.so, Note [Engine modules]): process
// groups of CUDA tensors over NCCL from the CUDA toolkit, one device per rank.
//
// Note [NCCL without hangs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// NCCL moves device memory only and names no culprit when a peer is missing: a
// collective whose peer never joins spins on the GPU forever. So the plugin's
// fingerprints and point-to-point headers travel over a gloo mesh of the same ranks
// (gloo_mesh.h): a mismatch or a missing rank is found and named on the host before any
// NCCL call is made. The communicator is non-blocking (ncclConfig_t::blocking = 0), and
// every call is queued on the caller's stream and then waited for on the host, polling
// an event and the communicator's asynchronous error until the group's deadline; past it
// the communicator is aborted (ncclCommAbort) and the collective fails, which fails the
// group (Note [Failed groups] in process_group.cc). A collective therefore returns once
// it completed on the device, as on the host engines; collectives and compute share the
// caller's stream (no overlap of the two on one rank).
//
// The device is cuda:(LOOM_LOCAL_RANK mod the device count), torchrun's convention; the
// kernels refuse tensors on any other device. Calls are serialised by a mutex (a
// communicator is not thread-safe, and asynchronous sends and receives run on threads
// of their own); a rank whose asynchronous send and receive to the same peer wait on
// each other finds the timeout, not a hang.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "gloo_mesh.h"

namespace loom::distributed {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The stream of the collective running on this thread (Engine::set_stream).
thread_local cudaStream_t t_stream = nullptr;

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA ") + what +
                             " failed: " + cudaGetErrorString(status));
  }
}

ncclDataType_t nccl_type(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return ncclFloat32;
    case ElementType::kFloat64:
      return ncclFloat64;
    case ElementType::kFloat16:
      return ncclFloat16;
    case ElementType::kBFloat16:
      return ncclBfloat16;
    case ElementType::kInt8:
      return ncclInt8;
    case ElementType::kUInt8:
    case ElementType::kBool:
      return ncclUint8;
    case ElementType::kInt32:
      return ncclInt32;
    case ElementType::kInt64:
      return ncclInt64;
    case ElementType::kInt16:
      break;
  }
  throw std::runtime_error("NCCL has no 16-bit integer type");
}

// bool reduces as bytes of 0 and 1: sum and max are logical or, product and min logical
// and (reductions.cc's meaning on every engine).
ncclRedOp_t nccl_op(ReduceOp op, ElementType type) {
  if (type == ElementType::kBool) {
    return op == ReduceOp::kSum || op == ReduceOp::kMax ? ncclMax : ncclMin;
  }
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kProduct:
      return ncclProd;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kAvg:
      return ncclAvg;
  }
  return ncclSum;
}

// The device of this rank: cuda:(LOOM_LOCAL_RANK mod the device count).
int choose_device() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    throw std::runtime_error(
        std::string("the nccl backend needs a CUDA device, and this machine has none (") +
        (status != cudaSuccess ? cudaGetErrorString(status) : "no devices") + ")");
  }
  const char* local = std::getenv("LOOM_LOCAL_RANK");
  const int local_rank = local != nullptr ? std::atoi(local) : 0;
  return (local_rank < 0 ? 0 : local_rank) % count;
}

class NcclEngine final : public Engine {
 public:
  NcclEngine(distributed::Store& store, const EngineOptions& o)
      : rank_(o.rank),
        size_(o.size),
        timeout_(o.timeout),
        device_(choose_device()),
        control_(store, o, GlooMesh::make_device(o), "control/") {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id;
    if (rank_ == 0) {
      check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      const char* raw = reinterpret_cast<const char*>(&id);
      store.set("nccl_unique_id", std::vector<char>(raw, raw + sizeof id));
    } else {
      const std::vector<char> raw = store.get("nccl_unique_id", timeout_);
      if (raw.size() != sizeof id) {
        throw std::runtime_error("rank 0 published an NCCL id of " + std::to_string(raw.size()) +
                                 " bytes, expected " + std::to_string(sizeof id));
      }
      std::memcpy(&id, raw.data(), sizeof id);
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    check_nccl(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config), "ncclCommInitRankConfig");
    settle("ncclCommInitRankConfig", Clock::now() + timeout_);
  }

  ~NcclEngine() override {
    if (comm_ != nullptr) {
      bool clean = ncclCommFinalize(comm_) == ncclSuccess || last_state() == ncclInProgress;
      const Clock::time_point deadline = Clock::now() + std::min(timeout_, milliseconds(60000));
      while (clean && last_state() == ncclInProgress && Clock::now() < deadline) {
        std::this_thread::yield();
      }
      clean = clean && last_state() == ncclSuccess;
      if (clean) {
        ncclCommDestroy(comm_);
      } else {
        ncclCommAbort(comm_);
      }
    }
  }

  std::string name() const override { return "nccl"; }
  int cuda_device() const override { return device_; }
  bool supports(ElementType type) const override { return type != ElementType::kInt16; }
  bool averages() const override { return true; }
  void set_stream(void* stream) override { t_stream = static_cast<cudaStream_t>(stream); }

  std::shared_ptr<char> allocate(size_t bytes) override {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    void* p = nullptr;
    cudaStream_t stream = t_stream;
    check_cuda(cudaMallocAsync(&p, bytes == 0 ? 1 : bytes, stream), "cudaMallocAsync");
    return std::shared_ptr<char>(static_cast<char*>(p),
                                 [stream](char* q) { cudaFreeAsync(q, stream); });
  }

  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, t_stream),
               "cudaMemcpyAsync");
  }

  void exchange(std::span<const char> mine, size_t capacity, uint32_t tag,
                Clock::time_point deadline, std::vector<PeerMessage>& from) override {
    control_.exchange(mine, capacity, tag, deadline, from);
  }

  void send_message(const void* data, size_t bytes, int peer, uint32_t tag,
                    milliseconds timeout) override {
    control_.send(data, bytes, peer, tag, timeout);
  }

  void recv_message(void* data, size_t bytes, int peer, uint32_t tag,
                    milliseconds timeout) override {
    control_.recv(data, bytes, peer, tag, timeout);
  }

  void all_reduce(void* data, size_t count, ElementType type, ReduceOp op, uint32_t,
                  milliseconds timeout) override {
    if (count == 0) return;
    run("all_reduce", timeout, [&](cudaStream_t s) {
      return ncclAllReduce(data, data, count, nccl_type(type), nccl_op(op, type), comm_, s);
    });
  }

  void broadcast(void* data, size_t bytes, int root, uint32_t, milliseconds timeout) override {
    if (bytes == 0) return;
    run("broadcast", timeout, [&](cudaStream_t s) {
      return ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, s);
    });
  }

  void reduce(void* data, size_t count, ElementType type, ReduceOp op, int root, uint32_t,
              milliseconds timeout) override {
    if (count == 0) return;
    run("reduce", timeout, [&](cudaStream_t s) {
      return ncclReduce(data, data, count, nccl_type(type), nccl_op(op, type), root, comm_, s);
    });
  }

  void reduce_scatter(const void* in, void* out, size_t count, ElementType type, ReduceOp op, int,
                      int, uint32_t, milliseconds timeout) override {
    if (count == 0) return;
    run("reduce_scatter", timeout, [&](cudaStream_t s) {
      return ncclReduceScatter(in, out, count, nccl_type(type), nccl_op(op, type), comm_, s);
    });
  }

  void all_gather(const void* in, size_t bytes, void* out, uint32_t,
                  milliseconds timeout) override {
    if (bytes == 0) return;
    run("all_gather", timeout,
        [&](cudaStream_t s) { return ncclAllGather(in, out, bytes, ncclUint8, comm_, s); });
  }

  void all_to_all(const void* in, std::span<const size_t> in_bytes, void* out,
                  std::span<const size_t> out_bytes, uint32_t, milliseconds timeout) override {
    const char* src = static_cast<const char*>(in);
    char* dst = static_cast<char*>(out);
    std::vector<size_t> in_at(size_, 0), out_at(size_, 0);
    for (int r = 1; r < size_; ++r) {
      in_at[r] = in_at[r - 1] + in_bytes[r - 1];
      out_at[r] = out_at[r - 1] + out_bytes[r - 1];
    }
    copy(dst + out_at[rank_], src + in_at[rank_], in_bytes[rank_]);
    run("all_to_all", timeout, [&](cudaStream_t s) {
      ncclGroupStart();
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        if (in_bytes[r] > 0) ncclSend(src + in_at[r], in_bytes[r], ncclUint8, r, comm_, s);
        if (out_bytes[r] > 0) ncclRecv(dst + out_at[r], out_bytes[r], ncclUint8, r, comm_, s);
      }
      return ncclGroupEnd();
    });
  }

  void send(const void* data, size_t bytes, int peer, uint32_t, milliseconds timeout) override {
    if (bytes == 0) return;
    run("send", timeout,
        [&](cudaStream_t s) { return ncclSend(data, bytes, ncclUint8, peer, comm_, s); });
  }

  void recv(void* data, size_t bytes, int peer, uint32_t, milliseconds timeout) override {
    if (bytes == 0) return;
    run("recv", timeout,
        [&](cudaStream_t s) { return ncclRecv(data, bytes, ncclUint8, peer, comm_, s); });
  }

 private:
  void check_nccl(ncclResult_t result, const char* what) const {
    if (result == ncclSuccess || result == ncclInProgress) return;
    std::string detail = comm_ != nullptr ? ncclGetLastError(comm_) : "";
    throw std::runtime_error(std::string("NCCL ") + what + " failed: " +
                             ncclGetErrorString(result) + (detail.empty() ? "" : ": " + detail));
  }

  ncclResult_t last_state() const {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return ncclInternalError;
    return state;
  }

  // Aborts the communicator and raises: the group is unusable after this. Called with
  // mutex_ held.
  [[noreturn]] void abort(const std::string& why) {
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
    throw std::runtime_error(why);
  }

  // Waits while the communicator's state is ncclInProgress (a non-blocking call still
  // being issued); raises its error or the deadline.
  void settle(const char* what, Clock::time_point deadline) {
    ncclResult_t state;
    while ((state = last_state()) == ncclInProgress) {
      if (Clock::now() > deadline) {
        abort(std::string("NCCL ") + what + " did not finish within " +
              std::to_string(timeout_.count()) + " ms; the communicator was aborted");
      }
      std::this_thread::yield();
    }
    check_nccl(state, what);
  }

  // Queues `call` on the collective's stream, then waits on the host until it completed
  // on the device, the communicator failed, or `timeout` passed (Note [NCCL without
  // hangs]).
  template <typename Call>
  void run(const char* what, milliseconds timeout, Call&& call) {
    const Clock::time_point deadline = Clock::now() + timeout;
    std::unique_ptr<CUevent_st, cudaError_t (*)(cudaEvent_t)> done(nullptr, &cudaEventDestroy);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      check_alive();
      check_cuda(cudaSetDevice(device_), "cudaSetDevice");
      check_nccl(call(t_stream), what);
      settle(what, deadline);
      cudaEvent_t event = nullptr;
      check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
      done.reset(event);
      check_cuda(cudaEventRecord(event, t_stream), "cudaEventRecord");
    }
    for (int spins = 0;; ++spins) {
      if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
      const cudaError_t status = cudaEventQuery(done.get());
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) check_cuda(status, what);
      std::lock_guard<std::mutex> lock(mutex_);
      check_alive();
      const ncclResult_t state = last_state();
      if (state != ncclSuccess && state != ncclInProgress) {
        const std::string detail = ncclGetLastError(comm_);
        abort(std::string("NCCL ") + what + " failed: " + ncclGetErrorString(state) +
              (detail.empty() ? "" : ": " + detail) + "; the communicator was aborted");
      }
      if (Clock::now() > deadline) {
        abort(std::string("NCCL ") + what + " did not complete on the device within " +
              std::to_string(timeout.count()) +
              " ms (a peer stopped taking part); the communicator was aborted");
      }
    }
  }

  void check_alive() const {
    if (comm_ == nullptr) {
      throw std::runtime_error("the NCCL communicator was aborted by an earlier failure");
    }
  }

  const int rank_;
  const int size_;
  const milliseconds timeout_;
  const int device_;
  GlooMesh control_;  // fingerprints and point-to-point headers
  ncclComm_t comm_ = nullptr;
  std::mutex mutex_;  // comm_ and the calls on it
};

}  // namespace
}  // namespace loom::distributed

extern "C" __attribute__((visibility("default"))) loom::distributed::Engine*
loom_distributed_make_engine(loom::distributed::Store* store,
                             const loom::distributed::EngineOptions* options, std::string* error) {
  return loom::distributed::make_engine_or_report(error, [&] {
    if (store == nullptr) throw std::runtime_error("the nccl engine needs a rendezvous store");
    return new loom::distributed::NcclEngine(*store, *options);
  });
}
