// The MPI engine module (libloom_distributed_mpi.so, Note [Engine modules]): process
// groups over MPI for jobs started by mpirun. MPI itself did the rendezvous, so the
// plugin asks it for the rank and world size (loom_distributed_mpi_world) and needs no
// store. Every call is non-blocking MPI polled until the group's deadline (MPI's blocking
// calls cannot time out); standard types reduce with MPI's own operations, float16,
// bfloat16 and bool with loom's (reductions.cc) as user operations. The plugin's
// exchanges use a communicator of their own, duplicated from the group's.
#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "engine.h"

namespace loom::distributed {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExchangeTag = 1;
constexpr int kPointToPointTagBase = 16;

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

void check(int code, const char* what) {
  if (code != MPI_SUCCESS)
    throw std::runtime_error(std::string("MPI ") + what + ": " + mpi_error(code));
}

// MPI_Init_thread once per process (MPI_THREAD_MULTIPLE: groups run collectives on their
// worker threads and async point-to-point messages on threads of their own), finalized
// at exit.
void ensure_initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return;
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "init");
    if (provided < MPI_THREAD_MULTIPLE) {
      throw std::runtime_error("this MPI library does not support MPI_THREAD_MULTIPLE");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
  });
}

// Polls one request until it completes or the deadline passes (then throws).
void wait_until(MPI_Request& request, Clock::time_point deadline, const char* what) {
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (Clock::now() >= deadline) {
      throw std::runtime_error(std::string("MPI ") + what + " timed out");
    }
    std::this_thread::yield();
  }
}

MPI_Datatype builtin_type(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return MPI_FLOAT;
    case ElementType::kFloat64:
      return MPI_DOUBLE;
    case ElementType::kInt8:
      return MPI_INT8_T;
    case ElementType::kUInt8:
      return MPI_UINT8_T;
    case ElementType::kInt16:
      return MPI_INT16_T;
    case ElementType::kInt32:
      return MPI_INT32_T;
    case ElementType::kInt64:
      return MPI_INT64_T;
    default:
      return MPI_DATATYPE_NULL;  // float16, bfloat16, bool: loom's own reduction
  }
}

MPI_Op builtin_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return MPI_SUM;
    case ReduceOp::kProduct:
      return MPI_PROD;
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kMax:
      return MPI_MAX;
  }
  return MPI_SUM;
}

// A user operation for the types MPI lacks: one per (type, op), made once.
template <ElementType Type, ReduceOp Op>
void user_reduction(void* in, void* inout, int* length, MPI_Datatype*) {
  reduce_into(inout, in, static_cast<size_t>(*length), Type, Op);
}

struct Reduction {
  MPI_Datatype type;
  MPI_Op op;
};

template <ElementType Type>
MPI_Op user_op(ReduceOp op) {
  static MPI_Op ops[5] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  static std::once_flag once;
  std::call_once(once, [] {
    MPI_Op_create(&user_reduction<Type, ReduceOp::kSum>, 1, &ops[0]);
    MPI_Op_create(&user_reduction<Type, ReduceOp::kProduct>, 1, &ops[1]);
    MPI_Op_create(&user_reduction<Type, ReduceOp::kMin>, 1, &ops[2]);
    MPI_Op_create(&user_reduction<Type, ReduceOp::kMax>, 1, &ops[3]);
    ops[4] = ops[0];
  });
  return ops[static_cast<int>(op)];
}

MPI_Datatype bytes_type(size_t size) {
  static MPI_Datatype types[3] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < 3; ++i) {
      MPI_Type_contiguous(1 << i, MPI_BYTE, &types[i]);
      MPI_Type_commit(&types[i]);
    }
  });
  return types[size == 1 ? 0 : size == 2 ? 1 : 2];
}

Reduction reduction(ElementType type, ReduceOp op) {
  MPI_Datatype t = builtin_type(type);
  if (t != MPI_DATATYPE_NULL) return {t, builtin_op(op)};
  switch (type) {
    case ElementType::kFloat16:
      return {bytes_type(2), user_op<ElementType::kFloat16>(op)};
    case ElementType::kBFloat16:
      return {bytes_type(2), user_op<ElementType::kBFloat16>(op)};
    default:
      return {bytes_type(1), user_op<ElementType::kBool>(op)};
  }
}

int int_count(size_t n, const char* what) {
  if (n > static_cast<size_t>(INT_MAX)) {
    throw std::runtime_error(std::string("MPI ") + what + ": " + std::to_string(n) +
                             " elements exceed MPI's int counts");
  }
  return static_cast<int>(n);
}

class MpiEngine final : public Engine {
 public:
  explicit MpiEngine(const EngineOptions& o) : rank_(o.rank), size_(o.size) {
    ensure_initialized();
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (static_cast<int>(o.members.size()) == world) {
      check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "comm_dup");
    } else {
      MPI_Group world_group, group;
      MPI_Comm_group(MPI_COMM_WORLD, &world_group);
      check(
          MPI_Group_incl(world_group, static_cast<int>(o.members.size()), o.members.data(), &group),
          "group_incl");
      check(MPI_Comm_create_group(MPI_COMM_WORLD, group, o.group_id, &comm_), "comm_create_group");
      MPI_Group_free(&group);
      MPI_Group_free(&world_group);
    }
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(comm_, &control_), "comm_dup");
    timeout_ = o.timeout;
  }

  std::string name() const override { return "mpi"; }

  void exchange(std::span<const char> mine, size_t capacity, uint32_t, Clock::time_point deadline,
                std::vector<PeerMessage>& from) override {
    from.assign(size_, {});
    inbox_.resize(size_);
    std::vector<MPI_Request> recvs(size_, MPI_REQUEST_NULL), sends(size_, MPI_REQUEST_NULL);
    std::vector<char> out(mine.begin(), mine.end());
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      if (inbox_[r].size() < capacity) inbox_[r].resize(capacity);
      check(MPI_Irecv(inbox_[r].data(), int_count(capacity, "exchange"), MPI_BYTE, r, kExchangeTag,
                      control_, &recvs[r]),
            "irecv");
      check(MPI_Isend(out.data(), int_count(out.size(), "exchange"), MPI_BYTE, r, kExchangeTag,
                      control_, &sends[r]),
            "isend");
    }
    bool lost = false;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      try {
        wait_until(recvs[r], deadline, "exchange");
        from[r].arrived = true;
        from[r].bytes = {inbox_[r].data(), capacity};
      } catch (const std::exception& e) {
        if (std::string(e.what()).find("timed out") == std::string::npos) from[r].error = e.what();
        lost = true;
      }
    }
    for (int r = 0; r < size_ && !lost; ++r) {
      if (r == rank_) continue;
      try {
        wait_until(sends[r], deadline, "exchange");
      } catch (const std::exception&) {
        lost = true;
      }
    }
    if (lost) {  // pending requests may still write or read these
      for (auto& v : inbox_) graveyard_.push_back(std::move(v));
      inbox_.clear();
      graveyard_.push_back(std::move(out));
    }
  }

  void all_reduce(void* data, size_t count, ElementType type, ReduceOp op, uint32_t,
                  std::chrono::milliseconds timeout) override {
    if (count == 0) return;
    const Reduction r = reduction(type, op);
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, int_count(count, "all_reduce"), r.type, r.op, comm_,
                         &request),
          "all_reduce");
    wait_until(request, Clock::now() + timeout, "all_reduce");
  }

  void broadcast(void* data, size_t bytes, int root, uint32_t,
                 std::chrono::milliseconds timeout) override {
    if (bytes == 0) return;
    MPI_Request request;
    check(MPI_Ibcast(data, int_count(bytes, "broadcast"), MPI_BYTE, root, comm_, &request),
          "broadcast");
    wait_until(request, Clock::now() + timeout, "broadcast");
  }

  void reduce(void* data, size_t count, ElementType type, ReduceOp op, int root, uint32_t,
              std::chrono::milliseconds timeout) override {
    if (count == 0) return;
    const Reduction r = reduction(type, op);
    MPI_Request request;
    check(MPI_Ireduce(rank_ == root ? MPI_IN_PLACE : data, rank_ == root ? data : nullptr,
                      int_count(count, "reduce"), r.type, r.op, root, comm_, &request),
          "reduce");
    wait_until(request, Clock::now() + timeout, "reduce");
  }

  void reduce_scatter(const void* in, void* out, size_t count, ElementType type, ReduceOp op, int,
                      int, uint32_t, std::chrono::milliseconds timeout) override {
    if (count == 0) return;
    const Reduction r = reduction(type, op);
    MPI_Request request;
    check(MPI_Ireduce_scatter_block(in, out, int_count(count, "reduce_scatter"), r.type, r.op,
                                    comm_, &request),
          "reduce_scatter");
    wait_until(request, Clock::now() + timeout, "reduce_scatter");
  }

  void all_gather(const void* in, size_t bytes, void* out, uint32_t,
                  std::chrono::milliseconds timeout) override {
    if (bytes == 0) return;
    MPI_Request request;
    const int n = int_count(bytes, "all_gather");
    check(MPI_Iallgather(in, n, MPI_BYTE, out, n, MPI_BYTE, comm_, &request), "all_gather");
    wait_until(request, Clock::now() + timeout, "all_gather");
  }

  void all_to_all(const void* in, std::span<const size_t> in_bytes, void* out,
                  std::span<const size_t> out_bytes, uint32_t,
                  std::chrono::milliseconds timeout) override {
    std::vector<int> in_counts, in_displs, out_counts, out_displs;
    size_t at_in = 0, at_out = 0;
    for (int r = 0; r < size_; ++r) {
      in_counts.push_back(int_count(in_bytes[r], "all_to_all"));
      in_displs.push_back(int_count(at_in, "all_to_all"));
      out_counts.push_back(int_count(out_bytes[r], "all_to_all"));
      out_displs.push_back(int_count(at_out, "all_to_all"));
      at_in += in_bytes[r];
      at_out += out_bytes[r];
    }
    MPI_Request request;
    check(MPI_Ialltoallv(in, in_counts.data(), in_displs.data(), MPI_BYTE, out, out_counts.data(),
                         out_displs.data(), MPI_BYTE, comm_, &request),
          "all_to_all");
    wait_until(request, Clock::now() + timeout, "all_to_all");
  }

  void send(const void* data, size_t bytes, int peer, uint32_t tag,
            std::chrono::milliseconds timeout) override {
    MPI_Request request;
    check(MPI_Isend(data, int_count(bytes, "send"), MPI_BYTE, peer, wire_tag(tag), comm_, &request),
          "send");
    wait_until(request, Clock::now() + timeout, "send");
  }

  void recv(void* data, size_t bytes, int peer, uint32_t tag,
            std::chrono::milliseconds timeout) override {
    MPI_Request request;
    check(MPI_Irecv(data, int_count(bytes, "recv"), MPI_BYTE, peer, wire_tag(tag), comm_, &request),
          "recv");
    wait_until(request, Clock::now() + timeout, "recv");
  }

 private:
  // MPI guarantees tags up to 32767: point-to-point messages cycle through them (MPI
  // keeps the order of messages with the same tag, so a reused tag still matches).
  static int wire_tag(uint32_t tag) { return kPointToPointTagBase + static_cast<int>(tag % 32000); }

  int rank_, size_;
  MPI_Comm comm_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL;
  std::chrono::milliseconds timeout_;
  std::vector<std::vector<char>> inbox_;
  std::vector<std::vector<char>> graveyard_;
};

}  // namespace
}  // namespace loom::distributed

extern "C" __attribute__((visibility("default"))) loom::distributed::Engine*
loom_distributed_make_engine(loom::distributed::Store*,
                             const loom::distributed::EngineOptions* options, std::string* error) {
  return loom::distributed::make_engine_or_report(
      error, [&] { return new loom::distributed::MpiEngine(*options); });
}

// This process's rank and the world's size as MPI knows them (mpirun started it).
extern "C" __attribute__((visibility("default"))) int loom_distributed_mpi_world(
    int* rank, int* size, std::string* error) {
  try {
    loom::distributed::ensure_initialized();
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return 0;
  } catch (const std::exception& e) {
    *error = e.what();
    return 1;
  }
}
