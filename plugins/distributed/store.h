// The rendezvous stores of the distributed plugin (Note [Stores] in tcp_store.cc): a TCP
// store hosted by rank 0 and a store in a shared directory, and the parsing of
// init_method URLs (env://, tcp://HOST:PORT, file://PATH).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "engine.h"

namespace loom::distributed {

// Connects to the store at host:port; with `serve` this process first hosts it on port
// (all interfaces). Throws "[distributed] ..." naming the address (a port in use, a
// host that never answers within `timeout`).
std::unique_ptr<Store> make_tcp_store(const std::string& host, int port, bool serve,
                                      std::chrono::milliseconds timeout);

// A store kept as files in `directory` (made when missing), shared by every rank.
std::unique_ptr<Store> make_file_store(const std::string& directory);

// A view of a store whose keys all start with `prefix`.
std::unique_ptr<Store> make_prefix_store(Store& store, std::string prefix);

// Where the ranks meet, from an init_method and the environment.
struct Rendezvous {
  enum class Kind { kTcp, kFile } kind = Kind::kTcp;
  std::string host;  // kTcp
  int port = 0;      // kTcp
  std::string path;  // kFile
  int rank = -1;
  int world_size = -1;
};

// Resolves init_method ("env://" or empty, "tcp://host:port", "file:///path") with the
// explicit rank and world size (-1: from LOOM_RANK / LOOM_WORLD_SIZE) into a Rendezvous,
// or throws naming what is missing or malformed.
Rendezvous resolve_rendezvous(const std::string& init_method, int rank, int world_size);

}  // namespace loom::distributed
