// The interface between the distributed plugin and its engine modules
// (libloom_distributed_<engine>.so, Note [Engine modules]): one Engine per process group,
// made by the module's factory from a rendezvous Store. Engines move bytes and reduce
// numbers; the plugin checks arguments, numbers collectives and matches their
// fingerprints before an engine sees them (Note [Collective fingerprints] in
// process_group.cc). Errors are std::runtime_error (the module is C++ built with the
// plugin, never by a vendor); messages name the peer where one is known.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::distributed {

// PyTorch's ReduceOp names, in the order of the op schemas' strings.
enum class ReduceOp : uint8_t { kSum = 0, kProduct = 1, kMin = 2, kMax = 3, kAvg = 4 };

// The element types an engine reduces (loom's dtypes that map onto them).
enum class ElementType : uint8_t {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kUInt8,
  kInt16,
  kInt32,
  kInt64,
  kBool,
};
size_t element_size(ElementType type);

// Reduces `count` elements of `in` into `inout` (inout[i] = op(inout[i], in[i])); kAvg
// sums (the caller divides). Defined in reductions.cc, compiled into the plugin and into
// each engine module that needs it.
void reduce_into(void* inout, const void* in, size_t count, ElementType type, ReduceOp op);

// Key-value rendezvous shared by the ranks of a job (Note [Stores] in store.cc). get and
// wait block until the keys exist or the timeout passes (then throw naming the keys).
class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<char>& value) = 0;
  virtual std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  virtual bool check(const std::string& key) = 0;
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  // The local address this process reaches the store from ("" when not over a network):
  // where the engines listen unless an interface is named.
  virtual std::string local_address() const { return ""; }
};

// What a message from a peer brought, for Engine::exchange.
struct PeerMessage {
  std::span<const char> bytes;  // what arrived, valid until the next exchange
  bool arrived = false;
  std::string error;  // set when the connection to the peer failed
};

struct EngineOptions {
  int rank = 0;
  int size = 1;
  int group_id = 0;
  std::vector<int> members;  // the group's world ranks, in group-rank order
  std::string prefix;        // the store keys of this group start with it
  std::string iface;         // the network interface to bind (empty: the hostname's address)
  std::string hostname;
  std::chrono::milliseconds timeout{300000};
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;

  // Where the buffers of the engine's calls live: host memory (-1), or the CUDA device
  // of this index (the NCCL engine's); the kernels refuse tensors elsewhere.
  virtual int cuda_device() const { return -1; }
  // Whether the engine moves and reduces this element type (NCCL has no int16).
  virtual bool supports(ElementType type) const { return true; }
  // Whether all_reduce, reduce and reduce_scatter average by themselves with kAvg;
  // otherwise they sum and the caller divides.
  virtual bool averages() const { return false; }
  // A device engine queues its calls on the stream of the caller's kernel (null: the
  // device's default stream), so they follow the work queued before them and the work
  // queued after them sees their results. The group sets it before each collective.
  virtual void set_stream(void* stream) {}

  // Scratch memory and copies where the engine's buffers live (the device, for a
  // device engine: ordered on its stream).
  virtual std::shared_ptr<char> allocate(size_t bytes) {
    return std::shared_ptr<char>(new char[bytes == 0 ? 1 : bytes], std::default_delete<char[]>());
  }
  virtual void copy(void* dst, const void* src, size_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }

  // Host-memory messages between two ranks (the plugin's point-to-point fingerprints):
  // send and recv unless the engine's buffers live on a device.
  virtual void send_message(const void* data, size_t bytes, int peer, uint32_t tag,
                            std::chrono::milliseconds timeout) {
    send(data, bytes, peer, tag, timeout);
  }
  virtual void recv_message(void* data, size_t bytes, int peer, uint32_t tag,
                            std::chrono::milliseconds timeout) {
    recv(data, bytes, peer, tag, timeout);
  }

  // Sends `mine` to every peer and receives every peer's message (at most `capacity`
  // bytes each) under `tag`, until `deadline`. Never throws on a missing or failed
  // peer: `from[r]` says what happened (from[rank] is left empty). The plugin's
  // fingerprint exchange and small all-reduces run on it.
  virtual void exchange(std::span<const char> mine, size_t capacity, uint32_t tag,
                        std::chrono::steady_clock::time_point deadline,
                        std::vector<PeerMessage>& from) = 0;

  virtual void all_reduce(void* data, size_t count, ElementType type, ReduceOp op, uint32_t tag,
                          std::chrono::milliseconds timeout) = 0;
  virtual void broadcast(void* data, size_t bytes, int root, uint32_t tag,
                         std::chrono::milliseconds timeout) = 0;
  // Reduces into `data` on `root` (other ranks' data is left as it was).
  virtual void reduce(void* data, size_t count, ElementType type, ReduceOp op, int root,
                      uint32_t tag, std::chrono::milliseconds timeout) = 0;
  // `in` holds `size` blocks of `count` elements; `out` gets block `rank` reduced over
  // the ranks. Unless the engine has a reduce-scatter of its own: an all-reduce of a
  // copy of `in`, then this rank's block.
  virtual void reduce_scatter(const void* in, void* out, size_t count, ElementType type,
                              ReduceOp op, int rank, int size, uint32_t tag,
                              std::chrono::milliseconds timeout) {
    const size_t bytes = count * element_size(type);
    std::shared_ptr<char> all = allocate(bytes * size);
    copy(all.get(), in, bytes * size);
    all_reduce(all.get(), count * size, type, op, tag, timeout);
    copy(out, all.get() + rank * bytes, bytes);
  }
  // out holds size() blocks of `bytes`, rank order.
  virtual void all_gather(const void* in, size_t bytes, void* out, uint32_t tag,
                          std::chrono::milliseconds timeout) = 0;
  // in_bytes[r] / out_bytes[r]: what goes to / comes from rank r, blocks in rank order.
  virtual void all_to_all(const void* in, std::span<const size_t> in_bytes, void* out,
                          std::span<const size_t> out_bytes, uint32_t tag,
                          std::chrono::milliseconds timeout) = 0;
  virtual void send(const void* data, size_t bytes, int peer, uint32_t tag,
                    std::chrono::milliseconds timeout) = 0;
  virtual void recv(void* data, size_t bytes, int peer, uint32_t tag,
                    std::chrono::milliseconds timeout) = 0;
};

// The C symbol every engine module exports: makes the engine of one group, connecting to
// its peers through the store (every rank of the group calls it with the same prefix;
// the MPI engine gets no store). Returns nullptr and sets *error when it fails. The MPI
// module also exports LOOM_DISTRIBUTED_MPI_WORLD: MPI's rank and world size.
extern "C" {
using LoomDistributedEngineFactory = Engine* (*)(Store* store, const EngineOptions* options,
                                                 std::string* error);
}
#define LOOM_DISTRIBUTED_ENGINE_FACTORY "loom_distributed_make_engine"

// The body of a module's factory: the engine `make` returns, or nullptr with *error set to
// why it could not be made (a factory never lets an exception cross the C boundary).
template <typename Make>
Engine* make_engine_or_report(std::string* error, Make&& make) {
  try {
    return make();
  } catch (const std::exception& e) {
    *error = e.what();
  } catch (...) {
    *error = "unknown error";
  }
  return nullptr;
}
extern "C" {
using LoomDistributedMpiWorld = int (*)(int* rank, int* size, std::string* error);
}
#define LOOM_DISTRIBUTED_MPI_WORLD "loom_distributed_mpi_world"

}  // namespace loom::distributed
