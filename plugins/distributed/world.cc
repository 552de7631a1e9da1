// The distributed plugin's world: rendezvous, process groups and engine modules.
//
// Note [Engine modules]
// ~~~~~~~~~~~~~~~~~~~~~
// The plugin links no engine: each lives in a module beside it
// (libloom_distributed_gloo.so, linked to Debian's libgloo) that it opens with dlopen
// when a process group first asks for that backend. So the plugin always loads, and a
// backend whose library is missing is refused by init_process_group with the loader's
// reason, never a failed plugin load. A module exports one factory
// (LOOM_DISTRIBUTED_ENGINE_FACTORY) that connects a group's engine through the store;
// modules stay loaded for the life of the process (a failed engine is never destroyed,
// Note [Failed groups]).
//
// Rendezvous: every rank publishes its world size under its rank in the store, claims
// its rank with an atomic add (a rank claimed twice is refused) and checks rank 0's
// world size at once, then waits for all ranks; a timeout names the ranks that never
// arrived. The world's engine then connects with the store keys under "g0/", a new
// group's under "g<id>/", and every member waits for all to be connected (Note
// [Connected together]).
#include "world.h"

#include <dlfcn.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>

#include "store.h"

namespace loom::distributed {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kDefaultTimeout{300000};

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("[distributed] " + what);
}

struct WorldState {
  std::mutex mutex;
  bool initialized = false;
  std::string backend;
  int rank = 0, size = 1;
  milliseconds timeout = kDefaultTimeout;
  Rendezvous rendezvous;
  std::unique_ptr<Store> root_store;
  std::unique_ptr<Store> store;  // root_store under "loom/"
  EngineOptions engine_options;
  LoomDistributedEngineFactory factory = nullptr;
  std::map<int64_t, std::shared_ptr<ProcessGroup>> groups;
  std::map<int64_t, LoomDistributedGroupInfo> infos;
  std::map<int64_t, std::vector<int64_t>> members;  // world ranks of every group
  int64_t next_group = 1;
  std::map<int64_t, std::pair<std::shared_ptr<ProcessGroup>, std::shared_ptr<WorkState>>> works;
  int64_t next_work = 1;
};

WorldState& world() {
  static WorldState* w = new WorldState;  // never destroyed: engines may outlive exit
  return *w;
}

const std::vector<std::string>& known_backends() {
  static const std::vector<std::string> names = {"gloo", "mpi", "nccl"};
  return names;
}

std::filesystem::path plugin_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&plugin_directory), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  return std::filesystem::path(info.dli_fname).parent_path();
}

struct EngineModule {
  LoomDistributedEngineFactory factory = nullptr;
  void* handle = nullptr;
};

// Opens the engine module of a backend; a null factory with *why when it cannot.
EngineModule load_engine(const std::string& backend, std::string* why) {
  static std::mutex mutex;
  static std::map<std::string, EngineModule> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(backend);
  if (it != loaded.end()) return it->second;
  const std::string file = "libloom_distributed_" + backend + ".so";
  const std::filesystem::path path = plugin_directory() / file;
  if (!std::filesystem::exists(path)) {
    *why = "its engine module " + path.string() + " was not built (" +
           (backend == "gloo"  ? std::string("install libgloo-dev and rebuild")
            : backend == "mpi" ? std::string("install libopenmpi-dev and rebuild")
                               : "this build has no " + backend + " engine yet") +
           ")";
    return {};
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    *why = std::string("its engine module cannot be loaded: ") + dlerror();
    return {};
  }
  auto factory = reinterpret_cast<LoomDistributedEngineFactory>(
      dlsym(handle, LOOM_DISTRIBUTED_ENGINE_FACTORY));
  if (factory == nullptr) {
    *why = path.string() + " has no " LOOM_DISTRIBUTED_ENGINE_FACTORY;
    return {};
  }
  loaded[backend] = {factory, handle};
  return loaded[backend];
}

std::string text(const std::vector<char>& v) {
  return {v.begin(), v.end()};
}
std::vector<char> bytes(const std::string& s) {
  return {s.begin(), s.end()};
}

// Whether `host` resolves to an address that a socket of this machine can bind.
bool binds_here(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  bool usable = false;
  for (addrinfo* a = found; a != nullptr && !usable; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    usable = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0;  // port 0: any
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return usable;
}

// Note [The address gloo listens on]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// LOOM_SOCKET_IFNAME names the interface when set. Otherwise a TCP store gives the local
// address of this rank's connection to it (the one that reaches rank 0), and a file
// store, which has none, gives the hostname, as PyTorch's gloo device does. A hostname
// that does not resolve to an address of this machine (a container or a minimal
// install without /etc/hosts) crashed the ranks with SIGSEGV inside Debian's gloo; like
// PyTorch, the ranks then listen on the loopback, with a warning naming
// LOOM_SOCKET_IFNAME, since ranks on other hosts cannot reach it.
std::string gloo_hostname(const Store& root_store) {
  std::string host = root_store.local_address();
  if (!host.empty()) return host;
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  host = name;
  if (!host.empty() && binds_here(host)) return host;
  std::fprintf(stderr,
               "[distributed] warning: the hostname '%s' does not resolve to an address of "
               "this machine; gloo listens on the loopback 127.0.0.1, which ranks on other "
               "hosts cannot reach (set LOOM_SOCKET_IFNAME to the interface to use)\n",
               host.c_str());
  return "127.0.0.1";
}

// LOOM_SOCKET_IFNAME's interface, checked: gloo's own refusal names neither the variable
// nor the interfaces there are.
std::string socket_interface(const std::string& name) {
  if (::if_nametoindex(name.c_str()) != 0) return name;
  std::string known;
  if (struct if_nameindex* all = ::if_nameindex()) {
    for (struct if_nameindex* i = all; i->if_index != 0; ++i) {
      known += std::string(known.empty() ? "" : ", ") + i->if_name;
    }
    ::if_freenameindex(all);
  }
  fail("LOOM_SOCKET_IFNAME (loom launch --iface) names '" + name +
       "', which is not a network interface of this machine (its interfaces: " + known + ")");
}

std::string ranks_text(const std::vector<int64_t>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out + "]";
}

// Waits until `store` holds prefix + i for every i < ranks.size(); the ranks (ranks[i])
// whose key is still missing when `timeout` passes, none when all came.
std::vector<int64_t> missing_ranks(Store& store, const std::string& prefix,
                                   const std::vector<int64_t>& ranks, milliseconds timeout) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < ranks.size(); ++i) keys.push_back(prefix + std::to_string(i));
  try {
    store.wait(keys, timeout);
    return {};
  } catch (const std::runtime_error&) {
  }
  std::vector<int64_t> missing;  // a store that broke raises its own error here
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!store.check(keys[i])) missing.push_back(ranks[i]);
  }
  return missing;
}

std::unique_ptr<Engine> connect_engine(WorldState& w, Store* store, int rank,
                                       const std::vector<int>& members, int64_t group_id,
                                       milliseconds timeout) {
  EngineOptions o = w.engine_options;
  o.rank = rank;
  o.size = static_cast<int>(members.size());
  o.group_id = static_cast<int>(group_id);
  o.members = members;
  o.prefix = "g" + std::to_string(group_id) + "/";
  o.timeout = timeout;
  std::unique_ptr<Store> group_store = store ? make_prefix_store(*store, o.prefix) : nullptr;
  std::string error;
  Engine* engine = w.factory(group_store.get(), &o, &error);
  if (engine == nullptr) {
    fail("the " + w.backend + " engine could not start on rank " + std::to_string(w.rank) + ": " +
         error);
  }
  if (group_store) {
    // Note [Connected together]
    // ~~~~~~~~~~~~~~~~~~~~~~~~~
    // An engine is up on one rank before it is up on all: gloo's full mesh is connected
    // pair by pair, and a rank whose pairs are done may return, run a job that needs no
    // collective (or only local checks), leave and exit while a peer still reads its
    // side of their pair, which then fails with "connection closed by peer". So each
    // member marks its engine up in the group's store and waits for every other before
    // init_process_group or new_group returns. A member that never comes up is named;
    // the engine, whose peers may still write into it, is then kept (Note [Failed
    // groups]).
    group_store->set("connected/" + std::to_string(rank), bytes("1"));
    const std::vector<int64_t> missing = missing_ranks(
        *group_store, "connected/", std::vector<int64_t>(members.begin(), members.end()), timeout);
    if (!missing.empty()) {
      fail("the " + w.backend + " engine of group " + std::to_string(group_id) + " is up on rank " +
           std::to_string(w.rank) + " but not on ranks " + ranks_text(missing) + " within " +
           std::to_string(timeout.count()) + " ms");
    }
  }
  return std::unique_ptr<Engine>(engine);
}

// The store rendezvous: every rank claims its rank, checks the world size against rank 0's
// and every other rank's, and waits for all (naming the missing at the timeout).
void meet(Store& store, const Rendezvous& rv, milliseconds timeout) {
  const std::string me = std::to_string(rv.rank);
  store.set("world_size/" + me, bytes(std::to_string(rv.world_size)));
  if (store.add("claim/" + me, 1) != 1) {
    fail("rank " + me + " joined twice (two processes with LOOM_RANK=" + me +
         ", or a file store directory left from an earlier job)");
  }
  const std::string root_size = text(store.get("world_size/0", timeout));
  if (root_size != std::to_string(rv.world_size)) {
    fail("the world size does not match across ranks: rank 0 has " + root_size + ", rank " + me +
         " has " + std::to_string(rv.world_size));
  }
  std::vector<int64_t> everyone;
  for (int r = 0; r < rv.world_size; ++r) everyone.push_back(r);
  const std::vector<int64_t> missing = missing_ranks(store, "world_size/", everyone, timeout);
  if (!missing.empty()) {
    fail("init_process_group timed out after " + std::to_string(timeout.count()) +
         " ms: " + std::to_string(rv.world_size - static_cast<int>(missing.size())) + " of " +
         std::to_string(rv.world_size) + " ranks arrived; missing " + ranks_text(missing));
  }
  for (int r = 0; r < rv.world_size; ++r) {
    std::string size = text(store.get("world_size/" + std::to_string(r), timeout));
    if (size != std::to_string(rv.world_size)) {
      fail("the world size does not match across ranks: rank " + me + " has " +
           std::to_string(rv.world_size) + ", rank " + std::to_string(r) + " has " + size);
    }
  }
}

// mpirun did the rendezvous: MPI knows the ranks, and no store is needed.
Rendezvous mpi_rendezvous(const EngineModule& module, const LoomDistributedInitArgs& args) {
  auto mpi_world =
      reinterpret_cast<LoomDistributedMpiWorld>(dlsym(module.handle, LOOM_DISTRIBUTED_MPI_WORLD));
  int rank = 0, size = 0;
  std::string error = "the engine module has no " LOOM_DISTRIBUTED_MPI_WORLD;
  if (mpi_world == nullptr || mpi_world(&rank, &size, &error) != 0) {
    fail("the mpi backend could not initialize MPI: " + error);
  }
  if ((args.world_size >= 0 && args.world_size != size) || (args.rank >= 0 && args.rank != rank)) {
    fail("the mpi backend takes the ranks from mpirun (rank " + std::to_string(rank) + " of " +
         std::to_string(size) + "), found rank " + std::to_string(args.rank) + " of " +
         std::to_string(args.world_size) + " in the options; start the job with mpirun");
  }
  Rendezvous rv;
  rv.rank = rank;
  rv.world_size = size;
  return rv;
}

}  // namespace

void init_world(const LoomDistributedInitArgs& args) {
  WorldState& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (w.initialized) {
    fail("init_process_group was called twice: the default process group (" + w.backend +
         ", rank " + std::to_string(w.rank) + " of " + std::to_string(w.size) +
         ") is already initialized; call destroy_process_group first");
  }
  const std::string backend = args.backend != nullptr ? args.backend : "gloo";
  bool known = false;
  for (const std::string& b : known_backends()) known = known || b == backend;
  if (!known) fail("unknown backend '" + backend + "' (expected gloo, mpi or nccl)");
  std::string why;
  const EngineModule module = load_engine(backend, &why);
  if (module.factory == nullptr) fail("backend '" + backend + "' is unavailable: " + why);

  const milliseconds timeout =
      args.timeout_ms > 0 ? milliseconds(args.timeout_ms) : kDefaultTimeout;
  Rendezvous rv;
  std::unique_ptr<Store> root_store, store;
  if (backend == "mpi") {
    rv = mpi_rendezvous(module, args);
  } else {
    rv = resolve_rendezvous(args.init_method != nullptr ? args.init_method : "",
                            static_cast<int>(args.rank), static_cast<int>(args.world_size));
    root_store = rv.kind == Rendezvous::Kind::kTcp
                     ? make_tcp_store(rv.host, rv.port, rv.rank == 0, timeout)
                     : make_file_store(rv.path);
    store = make_prefix_store(*root_store, "loom/");
    meet(*store, rv, timeout);
  }

  w.factory = module.factory;
  w.engine_options = {};
  if (const char* iface = std::getenv("LOOM_SOCKET_IFNAME"); iface != nullptr && *iface) {
    w.engine_options.iface = socket_interface(iface);
  } else if (root_store) {
    w.engine_options.hostname = gloo_hostname(*root_store);  // Note [The address gloo listens on]
  }
  w.backend = backend;
  w.rank = rv.rank;
  w.size = rv.world_size;
  w.timeout = timeout;
  w.rendezvous = rv;
  std::vector<int> everyone;
  for (int r = 0; r < rv.world_size; ++r) everyone.push_back(r);
  std::unique_ptr<Engine> engine = connect_engine(w, store.get(), rv.rank, everyone, 0, timeout);
  w.groups[0] = std::make_shared<ProcessGroup>(0, rv.rank, rv.world_size, everyone,
                                               std::move(engine), timeout);
  w.infos[0] = {sizeof(LoomDistributedGroupInfo), rv.rank, rv.world_size, timeout.count()};
  w.members[0] = std::vector<int64_t>(everyone.begin(), everyone.end());
  w.root_store = std::move(root_store);
  w.store = std::move(store);
  w.next_group = 1;
  w.initialized = true;
}

void destroy_world() {
  WorldState& w = world();
  std::unique_lock<std::mutex> lock(w.mutex);
  if (!w.initialized) fail("destroy_process_group: there is no process group to destroy");
  // Leave together, so that rank 0's store outlives every rank's last use of it.
  const std::string me = std::to_string(w.rank);
  try {
    if (w.store) {
      w.store->set("left/" + me, bytes("1"));
      if (w.rank == 0) {
        std::vector<std::string> keys;
        for (int r = 0; r < w.size; ++r) keys.push_back("left/" + std::to_string(r));
        w.store->wait(keys, std::min(w.timeout, milliseconds(60000)));
      }
    }
  } catch (const std::runtime_error&) {
    // A rank that died cannot leave; the store closes anyway.
  }
  auto groups = std::move(w.groups);
  w.groups.clear();
  w.infos.clear();
  w.members.clear();
  w.works.clear();
  w.initialized = false;
  lock.unlock();
  groups.clear();  // joins each group's worker
  lock.lock();
  if (w.rank == 0 && w.rendezvous.kind == Rendezvous::Kind::kFile) {
    std::error_code ec;
    std::filesystem::remove_all(w.rendezvous.path, ec);
  }
  w.store.reset();
  w.root_store.reset();
}

bool world_initialized() {
  WorldState& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  return w.initialized;
}

LoomDistributedGroupInfo group_info(int64_t group) {
  WorldState& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (!w.initialized) fail("the default process group is not initialized");
  auto it = w.infos.find(group);
  if (it == w.infos.end()) fail("there is no process group " + std::to_string(group));
  return it->second;
}

int64_t new_group(const std::vector<int64_t>& ranks, milliseconds timeout) {
  WorldState& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (!w.initialized) fail("new_group: the default process group is not initialized");
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= w.size || (i > 0 && ranks[i] <= ranks[i - 1])) {
      fail("new_group expects distinct world ranks in 0.." + std::to_string(w.size - 1) +
           " in increasing order, found " + ranks_text(ranks));
    }
  }
  if (ranks.empty()) fail("new_group expects at least one rank, found none");
  if (timeout.count() <= 0) timeout = w.timeout;
  const int64_t id = w.next_group++;
  const std::string prefix = "g" + std::to_string(id) + "/";
  // Every rank must pass the same ranks: compare with rank 0's (through the store; MPI
  // jobs have none).
  if (w.store) {
    w.store->set(prefix + "ranks/" + std::to_string(w.rank), bytes(ranks_text(ranks)));
    const std::string root_ranks = text(w.store->get(prefix + "ranks/0", w.timeout));
    if (root_ranks != ranks_text(ranks)) {
      fail("new_group #" + std::to_string(id) + " was called with different ranks: rank 0 passed " +
           root_ranks + ", rank " + std::to_string(w.rank) + " passed " + ranks_text(ranks));
    }
  }
  int local = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == w.rank) local = static_cast<int>(i);
  }
  const int size = static_cast<int>(ranks.size());
  w.infos[id] = {sizeof(LoomDistributedGroupInfo), local, size, timeout.count()};
  w.members[id] = ranks;
  if (local >= 0) {
    const std::vector<int> members(ranks.begin(), ranks.end());
    std::unique_ptr<Engine> engine = connect_engine(w, w.store.get(), local, members, id, timeout);
    w.groups[id] = std::make_shared<ProcessGroup>(static_cast<int>(id), local, size, members,
                                                  std::move(engine), timeout);
  }
  return id;
}

std::vector<int64_t> group_ranks(int64_t group) {
  WorldState& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (!w.initialized) fail("the default process group is not initialized");
  auto it = w.members.find(group);
  if (it == w.members.end()) fail("there is no process group " + std::to_string(group));
  return it->second;
}

std::shared_ptr<ProcessGroup> group_for_op(int64_t group, const char* op) {
  WorldState& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (!w.initialized) {
    throw std::runtime_error(std::string("[") + op +
                             "] the default process group is not initialized: call "
                             "loom::distributed::init_process_group first");
  }
  auto it = w.groups.find(group);
  if (it != w.groups.end()) return it->second;
  if (w.infos.count(group)) {
    throw std::runtime_error(std::string("[") + op + "] rank " + std::to_string(w.rank) +
                             " is not a member of process group " + std::to_string(group));
  }
  throw std::runtime_error(std::string("[") + op + "] there is no process group " +
                           std::to_string(group) + " (groups come from new_group)");
}

int64_t remember_work(std::shared_ptr<ProcessGroup> group, std::shared_ptr<WorkState> work) {
  WorldState& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (w.works.size() >= 4096) {  // forget works that ended well and nobody waited for
    for (auto it = w.works.begin(); it != w.works.end();) {
      std::lock_guard<std::mutex> state_lock(it->second.second->mutex);
      bool drop = it->second.second->done && it->second.second->error.empty();
      it = drop ? w.works.erase(it) : std::next(it);
    }
  }
  const int64_t id = w.next_work++;
  w.works[id] = {std::move(group), std::move(work)};
  return id;
}

namespace {
std::pair<std::shared_ptr<ProcessGroup>, std::shared_ptr<WorkState>> find_work(int64_t id,
                                                                               bool forget) {
  WorldState& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  auto it = w.works.find(id);
  if (it == w.works.end()) {
    fail("there is no work " + std::to_string(id) +
         " (already waited for, or from a destroyed process group)");
  }
  auto found = it->second;
  if (forget) w.works.erase(it);
  return found;
}
}  // namespace

void wait_work(int64_t id, int64_t timeout_ms) {
  auto [group, work] = find_work(id, /*forget=*/true);
  group->wait(work, timeout_ms > 0 ? milliseconds(timeout_ms) : group->timeout());
}

bool work_completed(int64_t id) {
  auto [group, work] = find_work(id, /*forget=*/false);
  std::lock_guard<std::mutex> lock(work->mutex);
  if (work->done && !work->error.empty()) throw std::runtime_error(work->error);
  return work->done;
}

std::vector<std::string> describe_backends() {
  std::vector<std::string> out;
  for (const std::string& b : known_backends()) {
    std::string why;
    out.push_back(load_engine(b, &why).factory != nullptr ? b : b + ": " + why);
  }
  return out;
}

std::string flight_record(int64_t group) {
  WorldState& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  auto it = w.groups.find(group);
  if (it == w.groups.end()) fail("there is no process group " + std::to_string(group) + " here");
  return it->second->flight_record();
}

}  // namespace loom::distributed
