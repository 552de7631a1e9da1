// The gloo engine module (libloom_distributed_gloo.so, Note [Engine modules]): process
// groups over gloo's TCP transport. Every rank connects to every other through the
// group's store (gloo's full mesh, gloo_mesh.h), twice: one mesh for the collectives,
// which are gloo's algorithms with loom's reduction functions (so every dtype and reduce
// op reduces the same way on every engine), and one for the plugin's exchanges.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/broadcast.h>
#include <gloo/reduce.h>

#include <cstring>
#include <stdexcept>

#include "gloo_mesh.h"

namespace loom::distributed {
namespace {

// gloo's reduction callback: c = a op b, where c may be a.
gloo::AllreduceOptions::Func reduction(ElementType type, ReduceOp op) {
  return [type, op](void* c, const void* a, const void* b, size_t n) {
    const size_t bytes = n * element_size(type);
    if (c == b) {
      reduce_into(c, a, n, type, op);
      return;
    }
    if (c != a) std::memmove(c, a, bytes);
    reduce_into(c, b, n, type, op);
  };
}

class GlooEngine final : public Engine {
 public:
  GlooEngine(distributed::Store& store, const EngineOptions& o)
      : rank_(o.rank),
        size_(o.size),
        device_(GlooMesh::make_device(o)),
        data_(store, o, device_, "data/"),
        control_(store, o, device_, "control/") {}

  std::string name() const override { return "gloo"; }

  void exchange(std::span<const char> mine, size_t capacity, uint32_t tag,
                std::chrono::steady_clock::time_point deadline,
                std::vector<PeerMessage>& from) override {
    control_.exchange(mine, capacity, tag, deadline, from);
  }

  void all_reduce(void* data, size_t count, ElementType type, ReduceOp op, uint32_t tag,
                  std::chrono::milliseconds timeout) override {
    if (count == 0) return;
    gloo_call("all_reduce", [&] {
      gloo::AllreduceOptions opts(data_.context());
      set_output(opts, data, count, type);
      opts.setReduceFunction(reduction(type, op));
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::allreduce(opts);
    });
  }

  void broadcast(void* data, size_t bytes, int root, uint32_t tag,
                 std::chrono::milliseconds timeout) override {
    if (bytes == 0) return;
    gloo_call("broadcast", [&] {
      gloo::BroadcastOptions opts(data_.context());
      opts.setOutput(static_cast<char*>(data), bytes);
      opts.setRoot(root);
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::broadcast(opts);
    });
  }

  void reduce(void* data, size_t count, ElementType type, ReduceOp op, int root, uint32_t tag,
              std::chrono::milliseconds timeout) override {
    if (count == 0) return;
    // gloo uses the output as scratch on every rank: other ranks reduce a copy.
    std::vector<char> scratch;
    void* target = data;
    if (rank_ != root) {
      scratch.assign(static_cast<char*>(data),
                     static_cast<char*>(data) + count * element_size(type));
      target = scratch.data();
    }
    try {
      gloo_call("reduce", [&] {
        gloo::ReduceOptions opts(data_.context());
        set_output(opts, target, count, type);
        opts.setRoot(root);
        opts.setReduceFunction(reduction(type, op));
        opts.setTag(tag);
        opts.setTimeout(timeout);
        gloo::reduce(opts);
      });
    } catch (...) {
      data_.keep_after_failure(std::move(scratch));  // gloo may still write into it
      throw;
    }
  }

  void reduce_scatter(const void* in, void* out, size_t count, ElementType type, ReduceOp op, int,
                      int, uint32_t tag, std::chrono::milliseconds timeout) override {
    data_.reduce_scatter(in, out, count, type, op, tag, timeout);
  }

  void all_gather(const void* in, size_t bytes, void* out, uint32_t tag,
                  std::chrono::milliseconds timeout) override {
    if (bytes == 0) return;
    gloo_call("all_gather", [&] {
      gloo::AllgatherOptions opts(data_.context());
      opts.setInput(const_cast<char*>(static_cast<const char*>(in)), bytes);
      opts.setOutput(static_cast<char*>(out), bytes * size_);
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::allgather(opts);
    });
  }

  void all_to_all(const void* in, std::span<const size_t> in_bytes, void* out,
                  std::span<const size_t> out_bytes, uint32_t tag,
                  std::chrono::milliseconds timeout) override {
    gloo_call("all_to_all", [&] {
      gloo::AlltoallvOptions opts(data_.context());
      std::vector<int64_t> ins(in_bytes.begin(), in_bytes.end());
      std::vector<int64_t> outs(out_bytes.begin(), out_bytes.end());
      opts.setInput(const_cast<char*>(static_cast<const char*>(in)), ins);
      opts.setOutput(static_cast<char*>(out), outs);
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::alltoallv(opts);
    });
  }

  void send(const void* data, size_t bytes, int peer, uint32_t tag,
            std::chrono::milliseconds timeout) override {
    data_.send(data, bytes, peer, tag, timeout);
  }

  void recv(void* data, size_t bytes, int peer, uint32_t tag,
            std::chrono::milliseconds timeout) override {
    data_.recv(data, bytes, peer, tag, timeout);
  }

 private:
  template <typename Options>
  static void set_output(Options& opts, void* data, size_t count, ElementType type) {
    switch (element_size(type)) {
      case 8:
        return opts.setOutput(static_cast<int64_t*>(data), count);
      case 4:
        return opts.setOutput(static_cast<int32_t*>(data), count);
      case 2:
        return opts.setOutput(static_cast<int16_t*>(data), count);
      default:
        return opts.setOutput(static_cast<int8_t*>(data), count);
    }
  }

  int rank_;
  int size_;
  std::shared_ptr<gloo::transport::Device> device_;
  GlooMesh data_;     // collectives and point to point
  GlooMesh control_;  // the plugin's exchanges
};

}  // namespace
}  // namespace loom::distributed

extern "C" __attribute__((visibility("default"))) loom::distributed::Engine*
loom_distributed_make_engine(loom::distributed::Store* store,
                             const loom::distributed::EngineOptions* options, std::string* error) {
  return loom::distributed::make_engine_or_report(
      error, [&] { return new loom::distributed::GlooEngine(*store, *options); });
}
