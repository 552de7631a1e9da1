// Finding the C++ compiler, running it, and the disk cache of the kernels it built.
//
// Note [The kernel cache]
// ~~~~~~~~~~~~~~~~~~~~~~~
// An entry is two files named by the kernel's key (kernel_key: XXH3-128 of the program,
// the generator's version, the compiler's path, version and flags, the CPU's model and
// features, and loom's version): KEY.so and KEY.meta, which holds the library's size and
// XXH64. A build writes both under names of its own in the cache directory and renames
// them into place, the library first, so processes that build the same kernel at once
// each rename a whole file over another (the same bytes), and a reader never finds a
// partial one. A reader trusts an entry only when its meta parses, the library's size
// and hash match it, and the loaded library's loom_kernel_key symbol is the key; an
// entry that fails any of these (truncated, corrupt, from another build) is removed and
// built again. Kernels stay loaded for the life of the process. A GPU kernel's entry is
// KEY.cuda (NVRTC's cubin or PTX) or KEY.hip (hiprtc's code object), its key hashing the
// runtime compiler's version and the architecture too, with the same KEY.meta: the image
// holds no key symbol, so the meta's key, size and hash are what is checked before the
// driver loads it.
#include "toolchain.h"

#include "cuda_libraries.h"
#include "hip_libraries.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "loom/sdk/error.hpp"

extern char** environ;

namespace loom::compiler {
namespace {

namespace fs = std::filesystem;

// Bumped whenever generated code changes for the same program.
constexpr const char* kGeneratorVersion = "cpp-4";
constexpr const char* kGpuGeneratorVersion = "cuda-1";

bool is_executable(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && is_executable(dir + "/" + name)) return dir + "/" + name;
    start = end + 1;
  }
  return "";
}

std::string read_file(const std::string& path, size_t limit = std::string::npos) {
  std::ifstream in(path, std::ios::binary);
  std::string out;
  if (!in) return out;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  if (out.size() > limit) out.resize(limit);
  return out;
}

// Runs argv with stdout and stderr into `log`; returns the exit status (or -signal).
int run(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    throw sdk::Error("[compiler] could not start " + argv[0] + ": " + std::strerror(rc),
                     LOOM_STATUS_INTERNAL);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw sdk::Error("[compiler] waiting for " + argv[0] + " failed", LOOM_STATUS_INTERNAL);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string cpu_identity() {
  std::string info = read_file("/proc/cpuinfo", 1 << 16);
  std::string model, flags;
  std::istringstream lines(info);
  std::string line;
  while (std::getline(lines, line) && (model.empty() || flags.empty())) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line;
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
  }
  return hex64(XXH64((model + flags).data(), model.size() + flags.size(), 0));
}

// A name no other thread or process uses at the same time.
std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

std::string meta_text(const std::string& key, const std::string& library) {
  return "loom-kernel-cache 1\nkey " + key + "\nbytes " + std::to_string(library.size()) +
         "\nxxh64 " + hex64(XXH64(library.data(), library.size(), 0)) + "\n";
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw sdk::Error("[compiler] could not write " + path, LOOM_STATUS_INTERNAL);
}

// dlopens `library` and returns its kernel when its key symbol is `key`; nullptr (and
// nothing loaded) otherwise.
KernelFn load(const std::string& library, const std::string& key, std::string* why) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    *why = e != nullptr ? e : "dlopen failed";
    return nullptr;
  }
  auto* stored_key = static_cast<const char*>(::dlsym(handle, kKernelKeySymbol));
  auto fn = reinterpret_cast<KernelFn>(::dlsym(handle, kKernelSymbol));
  if (stored_key == nullptr || fn == nullptr || key != stored_key) {
    *why = "the library is not the kernel of key " + key;
    ::dlclose(handle);
    return nullptr;
  }
  return fn;  // stays loaded: kernels live as long as the process
}

// A cache entry that passes every check of Note [The kernel cache], loaded; else nullptr.
KernelFn load_entry(const std::string& dir, const std::string& key) {
  const std::string library = dir + "/" + key + ".so";
  const std::string meta = read_file(dir + "/" + key + ".meta", 4096);
  if (meta.empty()) return nullptr;
  const std::string bytes = read_file(library);
  std::string why;
  KernelFn fn = nullptr;
  if (meta == meta_text(key, bytes)) fn = load(library, key, &why);
  if (fn == nullptr) {  // corrupt, truncated or foreign: build it again
    std::error_code ignored;
    fs::remove(dir + "/" + key + ".meta", ignored);
    fs::remove(library, ignored);
  }
  return fn;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

std::string Toolchain::describe() const {
  std::string out = version + " (" + compiler + ")";
  for (const std::string& f : flags) out += " " + f;
  return out;
}

const Toolchain& toolchain() {
  static std::mutex mutex;
  // Every toolchain found stays (a caller may hold one while LOOM_CXX changes).
  static std::vector<std::unique_ptr<Toolchain>> kept;
  static Toolchain* found = nullptr;
  static std::string found_for;  // the LOOM_CXX it was found for
  std::lock_guard<std::mutex> lock(mutex);
  const char* requested = std::getenv("LOOM_CXX");
  const std::string request = requested != nullptr ? requested : "";
  if (found && found_for == request) return *found;
  std::vector<std::string> candidates;
  if (requested != nullptr && *requested != '\0') {
    candidates.push_back(requested);
  } else {
    candidates = {"c++", "g++", "clang++"};
  }
  std::string path;
  for (const std::string& c : candidates) {
    path = find_on_path(c);
    if (!path.empty()) break;
  }
  if (path.empty()) {
    const char* p = std::getenv("PATH");
    std::string looked = requested != nullptr && *requested != '\0'
                             ? "LOOM_CXX='" + std::string(requested) + "'"
                             : std::string("c++, g++ and clang++");
    throw sdk::Error("[compiler] no C++ compiler found: looked for " + looked + " on PATH '" +
                         (p != nullptr ? p : "") +
                         "'; install g++ (or set LOOM_CXX) to compile; eager ops do not need one",
                     LOOM_STATUS_FAILED_PRECONDITION);
  }
  auto t = std::make_unique<Toolchain>();
  t->compiler = path;
  const std::string log =
      fs::temp_directory_path().string() + "/loom-cxx-version." + unique_suffix();
  const int rc = run({path, "--version"}, log);
  const std::string text = read_file(log, 4096);
  std::error_code ignored;
  fs::remove(log, ignored);
  if (rc != 0 || text.empty()) {
    throw sdk::Error("[compiler] " + path + " --version failed (exit " + std::to_string(rc) +
                         "): " + first_line(text),
                     LOOM_STATUS_FAILED_PRECONDITION);
  }
  t->version = first_line(text);
  t->flags = {"-O3",
              "-march=native",
              "-mprefer-vector-width=256",
              "-fno-math-errno",
              "-fno-exceptions",
              "-fno-rtti",
              "-fPIC",
              "-shared",
              "-fopenmp",
              "-std=c++17",
              "-w"};
  t->isa = cpu_identity();
  kept.push_back(std::move(t));
  found = kept.back().get();
  found_for = request;
  return *found;
}

std::string kernel_key(const std::string& program) {
  const Toolchain& t = toolchain();
  const std::string material = std::string(kGeneratorVersion) + "\nloom " + LOOM_COMPILER_VERSION +
                               " abi " + std::to_string(LOOM_ABI_VERSION_MAJOR) + "." +
                               std::to_string(LOOM_ABI_VERSION_MINOR) + "\n" + t.describe() + "\n" +
                               t.isa + "\n" + program;
  XXH128_hash_t h = XXH3_128bits(material.data(), material.size());
  return hex64(h.high64) + hex64(h.low64);
}

std::string default_cache_dir() {
  const char* dir = std::getenv("LOOM_CACHE_DIR");
  if (dir != nullptr && *dir != '\0') return dir;
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return std::string(home) + "/.cache/loom/compile";
  return fs::temp_directory_path().string() + "/loom-compile-cache-" + std::to_string(::getuid());
}

namespace {

// LOOM_COMPILE_DEBUG: the program and its source, named by the key.
void write_debug(const std::string& debug_dir, const std::string& key, const std::string& program,
                 const std::string& source, const char* extension) {
  if (debug_dir.empty()) return;
  std::error_code ec;
  fs::create_directories(debug_dir, ec);
  if (ec)
    throw sdk::Error("[compiler] LOOM_COMPILE_DEBUG: cannot create '" + debug_dir +
                     "': " + ec.message());
  write_file(debug_dir + "/kernel_" + key + ".program", program);
  write_file(debug_dir + "/kernel_" + key + extension, source);
}

}  // namespace

namespace {

// What NVRTC builds for: a cubin for device 0's architecture ("sm_90"), or, without a
// device (building only), PTX ("compute_75") that the driver compiles for whichever
// device loads it. Asked once per process.
const std::string& cuda_target_arch() {
  static const std::string arch = [] {
    try {
      return cuda_device_arch(0);
    } catch (const sdk::Error&) {
      return std::string("compute_75");
    }
  }();
  return arch;
}

// The cache directory, created; the error names LOOM_CACHE_DIR.
void make_cache_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw sdk::Error("[compiler] the kernel cache directory '" + dir + "' cannot be created: " +
                         ec.message() + " (set LOOM_CACHE_DIR to a writable directory)",
                     LOOM_STATUS_FAILED_PRECONDITION);
  }
}

// A GPU entry of the cache: KEY.cuda (the cubin or PTX) or KEY.hip (the code object) and
// KEY.meta, checked as a library's entry (the image holds no key of its own: the meta's
// key, size and hash vouch for it). An entry that fails is removed; returns "" then.
std::string load_image_entry(const std::string& dir, const std::string& key,
                             const std::string& extension) {
  const std::string image = dir + "/" + key + extension;
  const std::string meta = read_file(dir + "/" + key + ".meta", 4096);
  if (meta.empty()) return "";
  std::string bytes = read_file(image);
  if (!bytes.empty() && meta == meta_text(key, bytes)) return bytes;
  std::error_code ignored;
  fs::remove(dir + "/" + key + ".meta", ignored);
  fs::remove(image, ignored);
  return "";
}

// Writes both files under names of their own, then renames them into place, the image
// first (Note [The kernel cache]).
void store_image_entry(const std::string& dir, const std::string& key, const std::string& image,
                       const std::string& extension) {
  const std::string base = dir + "/" + key + "." + unique_suffix();
  write_file(base + extension, image);
  write_file(base + ".meta", meta_text(key, image));
  fs::rename(base + extension, dir + "/" + key + extension);
  fs::rename(base + ".meta", dir + "/" + key + ".meta");
}

}  // namespace

std::string gpu_kernel_key(Target target, const std::string& program) {
  const std::string tools = target == Target::Hip ? hiprtc_version() + " " + hip_target()
                                                  : nvrtc_version() + " " + cuda_target_arch();
  const std::string material = std::string(kGpuGeneratorVersion) + "\nloom " +
                               LOOM_COMPILER_VERSION + "\n" + tools + "\n" + program;
  XXH128_hash_t h = XXH3_128bits(material.data(), material.size());
  return hex64(h.high64) + hex64(h.low64);
}

BuiltKernel build_gpu(Target target, const std::string& key, const std::string& program,
                      const std::string& source, const std::string& cache_dir,
                      const std::string& debug_dir, std::string* image) {
  const auto start = std::chrono::steady_clock::now();
  write_debug(debug_dir, key, program, source, ".cu");
  const std::string extension = target == Target::Hip ? ".hip" : ".cuda";
  if (!cache_dir.empty()) {
    make_cache_dir(cache_dir);
    *image = load_image_entry(cache_dir, key, extension);
    if (!image->empty()) return {nullptr, 2, ms_since(start)};
  }
  const std::string name = "kernel_" + key + ".cu";
  *image = target == Target::Hip ? hiprtc_compile(source, name)
                                 : nvrtc_compile(source, name, cuda_target_arch());
  if (!cache_dir.empty()) store_image_entry(cache_dir, key, *image, extension);
  return {nullptr, 0, ms_since(start)};
}

BuiltKernel build_or_load(const std::string& key, const std::string& program,
                          const std::string& source, const std::string& cache_dir,
                          const std::string& debug_dir) {
  const auto start = std::chrono::steady_clock::now();
  write_debug(debug_dir, key, program, source, ".cc");
  std::string dir = cache_dir;
  bool temporary = false;
  if (!dir.empty()) {
    make_cache_dir(dir);
    if (KernelFn fn = load_entry(dir, key)) return {fn, 2, ms_since(start)};
  } else {
    char tmpl[] = "/tmp/loom-kernel-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr)
      throw sdk::Error("[compiler] mkdtemp failed", LOOM_STATUS_INTERNAL);
    dir = tmpl;
    temporary = true;
  }
  const Toolchain& t = toolchain();
  const std::string base = dir + "/" + key + "." + unique_suffix();
  const std::string cc = base + ".cc", so = base + ".so", log = base + ".log";
  write_file(cc, source);
  std::vector<std::string> argv = {t.compiler};
  argv.insert(argv.end(), t.flags.begin(), t.flags.end());
  argv.insert(argv.end(), {cc, "-o", so, "-lm"});
  const int rc = run(argv, log);
  const std::string output = read_file(log, 2000);
  std::error_code ignored;
  fs::remove(cc, ignored);
  fs::remove(log, ignored);
  if (rc != 0) {
    fs::remove(so, ignored);
    if (temporary) fs::remove_all(dir, ignored);
    throw sdk::Error("[compiler] " + t.compiler + " failed building kernel " + key + " (exit " +
                         std::to_string(rc) + "): " + output,
                     LOOM_STATUS_INTERNAL);
  }
  std::string why;
  KernelFn fn = nullptr;
  if (temporary) {
    fn = load(so, key, &why);
    fs::remove_all(dir, ignored);
  } else {
    const std::string library = dir + "/" + key + ".so";
    const std::string meta_tmp = base + ".meta";
    write_file(meta_tmp, meta_text(key, read_file(so)));
    fs::rename(so, library);
    fs::rename(meta_tmp, dir + "/" + key + ".meta");
    fn = load(library, key, &why);
  }
  if (fn == nullptr)
    throw sdk::Error("[compiler] kernel " + key + " built but did not load: " + why,
                     LOOM_STATUS_INTERNAL);
  return {fn, 0, ms_since(start)};
}

}  // namespace loom::compiler
