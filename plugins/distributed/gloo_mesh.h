// A gloo full mesh of one process group's ranks, connected through the group's store:
// the transport of the gloo engine's collectives, and the plugin's exchanges and
// host-memory messages for every engine built with gloo (the gloo engine, and the NCCL
// engine, whose own transport only moves device memory).
#pragma once

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/device.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine.h"

namespace loom::distributed {

// Rethrows gloo's exceptions as the engine's, with the operation's name.
template <typename F>
void gloo_call(const char* what, F&& body) {
  try {
    body();
  } catch (const gloo::Exception& e) {
    throw std::runtime_error(std::string("gloo ") + what + " failed: " + e.what());
  }
}

class GlooMesh {
 public:
  // The TCP device of an engine: on options.iface when named, else on the address that
  // reaches the store (options.hostname).
  static std::shared_ptr<gloo::transport::Device> make_device(const EngineOptions& options);

  // Connects every rank of the group to every other, under the store keys `key_prefix`.
  GlooMesh(Store& store, const EngineOptions& options,
           std::shared_ptr<gloo::transport::Device> device, const std::string& key_prefix);

  // Buffers of an operation that did not complete stay alive as long as the mesh: gloo's
  // transport may still write into them (Note [Failed groups] in process_group.cc).
  ~GlooMesh() = default;

  const std::shared_ptr<gloo::rendezvous::Context>& context() const { return context_; }

  // Engine::exchange on this mesh.
  void exchange(std::span<const char> mine, size_t capacity, uint32_t tag,
                std::chrono::steady_clock::time_point deadline, std::vector<PeerMessage>& from);

  // Engine::reduce_scatter on this mesh: a ring of n - 1 steps, each rank sending one
  // block to the next and reducing the one it receives from the previous (Note [A ring
  // reduce-scatter]).
  void reduce_scatter(const void* in, void* out, size_t count, ElementType type, ReduceOp op,
                      uint32_t tag, std::chrono::milliseconds timeout);

  // Keeps memory that a failed operation's transport may still use, for as long as the
  // mesh (Note [Failed groups]).
  void keep_after_failure(std::vector<char> bytes);

  // A message to or from one peer, on a slot of its own.
  void send(const void* data, size_t bytes, int peer, uint32_t tag,
            std::chrono::milliseconds timeout);
  void recv(void* data, size_t bytes, int peer, uint32_t tag, std::chrono::milliseconds timeout);

 private:
  int rank_;
  int size_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::vector<std::vector<char>> inbox_;  // exchange receive buffers, one per peer
  std::vector<char> ring_scratch_;        // reduce_scatter's partials
  // Moves buffers and memory of a failed operation to the graveyard (point-to-point
  // messages and collectives may fail at once, on different threads).
  void bury(std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> buffers,
            std::vector<std::vector<char>> bytes);
  std::mutex graveyard_mutex_;
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> graveyard_buffers_;
  std::vector<std::vector<char>> graveyard_bytes_;
};

}  // namespace loom::distributed
