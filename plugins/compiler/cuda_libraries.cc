// NVRTC and the CUDA driver through dlopen. Their C ABIs are declared here (opaque
// handles, int status codes), so no CUDA header is needed to build the plugin.
#include "cuda_libraries.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "dynamic_library.h"
#include "loom/sdk/error.hpp"

namespace loom::compiler {
namespace {

using NvrtcProgram = void*;
using CuResult = int;
using CuDevice = int;
using CuContext = void*;
using CuModule = void*;
using CuFunction = void*;
constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kComputeCapabilityMinor = 76;
constexpr int kMultiprocessorCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT

struct Nvrtc {
  const char* (*error_string)(int);
  int (*version)(int*, int*);
  int (*create)(NvrtcProgram*, const char*, const char*, int, const char* const*,
                const char* const*);
  int (*compile)(NvrtcProgram, int, const char* const*);
  int (*log_size)(NvrtcProgram, size_t*);
  int (*log)(NvrtcProgram, char*);
  int (*cubin_size)(NvrtcProgram, size_t*);
  int (*cubin)(NvrtcProgram, char*);
  int (*ptx_size)(NvrtcProgram, size_t*);
  int (*ptx)(NvrtcProgram, char*);
  int (*destroy)(NvrtcProgram*);
  std::string description;
};

// Note [NVRTC's builtins]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// NVRTC opens libnvrtc-builtins.so.<major>.<minor> by name when it compiles, so the
// dynamic loader must find it. A toolkit that no ld.so.conf entry names (a fresh machine
// with /usr/local/cuda unpacked or mounted, no cuda-*.conf) has it only beside libnvrtc,
// which loom opened by its path, and every compile failed with "failed to open
// libnvrtc-builtins.so.13.0". So it is loaded first from libnvrtc's directory when the
// loader cannot find it: NVRTC's own dlopen then finds it loaded (matched by its soname).
// A failure here is left to NVRTC's error, which names the file.
void load_nvrtc_builtins(void* nvrtc_symbol, int major, int minor) {
  const std::string name =
      "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor);
  if (::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr) return;  // kept loaded
  Dl_info info{};
  if (::dladdr(nvrtc_symbol, &info) == 0 || info.dli_fname == nullptr) return;
  const std::filesystem::path beside = std::filesystem::path(info.dli_fname).parent_path() / name;
  ::dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);
}

const Nvrtc& nvrtc() {
  static std::mutex mutex;
  static std::unique_ptr<Nvrtc> loaded;
  static std::string failure;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded) return *loaded;
  if (!failure.empty()) throw sdk::Error(failure, LOOM_STATUS_UNIMPLEMENTED);
  std::string tried;
  void* h = open_first(
      {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13",
       "/usr/local/cuda/lib64/libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"},
      &tried);
  if (h == nullptr) {
    failure = "[compiler] CUDA kernels need NVRTC: none of " + tried + " could be loaded";
    throw sdk::Error(failure, LOOM_STATUS_UNIMPLEMENTED);
  }
  auto n = std::make_unique<Nvrtc>();
  bind(h, "nvrtcGetErrorString", &n->error_string, "NVRTC");
  bind(h, "nvrtcVersion", &n->version, "NVRTC");
  bind(h, "nvrtcCreateProgram", &n->create, "NVRTC");
  bind(h, "nvrtcCompileProgram", &n->compile, "NVRTC");
  bind(h, "nvrtcGetProgramLogSize", &n->log_size, "NVRTC");
  bind(h, "nvrtcGetProgramLog", &n->log, "NVRTC");
  bind(h, "nvrtcGetCUBINSize", &n->cubin_size, "NVRTC");
  bind(h, "nvrtcGetCUBIN", &n->cubin, "NVRTC");
  bind(h, "nvrtcGetPTXSize", &n->ptx_size, "NVRTC");
  bind(h, "nvrtcGetPTX", &n->ptx, "NVRTC");
  bind(h, "nvrtcDestroyProgram", &n->destroy, "NVRTC");
  int major = 0, minor = 0;
  n->version(&major, &minor);
  n->description = "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
  load_nvrtc_builtins(reinterpret_cast<void*>(n->version), major, minor);
  loaded = std::move(n);
  return *loaded;
}

struct Driver {
  CuResult (*init)(unsigned);
  CuResult (*error_string)(CuResult, const char**);
  CuResult (*device_get)(CuDevice*, int);
  CuResult (*attribute)(int*, int, CuDevice);
  CuResult (*primary_context)(CuContext*, CuDevice);
  CuResult (*set_current)(CuContext);
  CuResult (*load_data)(CuModule*, const void*);
  CuResult (*get_function)(CuFunction*, CuModule, const char*);
  CuResult (*launch)(CuFunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, void*, void**, void**);
  std::vector<CuContext> contexts;  // per device index, once retained
  std::vector<int> multiprocessors;
  std::mutex mutex;
};

Driver& driver() {
  static std::mutex mutex;
  static std::unique_ptr<Driver> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded) return *loaded;
  std::string tried;
  void* h = open_first({"libcuda.so.1", "libcuda.so"}, &tried);
  if (h == nullptr) {
    throw sdk::Error(
        "[compiler] CUDA kernels need the CUDA driver: none of " + tried + " could be loaded",
        LOOM_STATUS_UNIMPLEMENTED);
  }
  auto d = std::make_unique<Driver>();
  bind(h, "cuInit", &d->init, "the CUDA driver");
  bind(h, "cuGetErrorString", &d->error_string, "the CUDA driver");
  bind(h, "cuDeviceGet", &d->device_get, "the CUDA driver");
  bind(h, "cuDeviceGetAttribute", &d->attribute, "the CUDA driver");
  bind(h, "cuDevicePrimaryCtxRetain", &d->primary_context, "the CUDA driver");
  bind(h, "cuCtxSetCurrent", &d->set_current, "the CUDA driver");
  bind(h, "cuModuleLoadData", &d->load_data, "the CUDA driver");
  bind(h, "cuModuleGetFunction", &d->get_function, "the CUDA driver");
  bind(h, "cuLaunchKernel", &d->launch, "the CUDA driver");
  if (CuResult r = d->init(0); r != 0) {
    throw sdk::Error(
        "[compiler] the CUDA driver did not start (cuInit returned " + std::to_string(r) + ")",
        LOOM_STATUS_UNIMPLEMENTED);
  }
  loaded = std::move(d);
  return *loaded;
}

void check_driver(Driver& d, CuResult r, const std::string& what) {
  if (r == 0) return;
  const char* text = nullptr;
  d.error_string(r, &text);
  throw sdk::Error("[compiler] " + what + ": " + (text != nullptr ? text : std::to_string(r)),
                   LOOM_STATUS_INTERNAL);
}

// Makes device `index`'s primary context (the one the CUDA plugin's runtime uses) current.
void make_current(Driver& d, int index) {
  std::lock_guard<std::mutex> lock(d.mutex);
  if (index < 0) index = 0;
  if (d.contexts.size() <= static_cast<size_t>(index)) {
    d.contexts.resize(index + 1, nullptr);
    d.multiprocessors.resize(index + 1, 0);
  }
  if (d.contexts[index] == nullptr) {
    CuDevice device = 0;
    check_driver(d, d.device_get(&device, index), "no CUDA device " + std::to_string(index));
    check_driver(d, d.primary_context(&d.contexts[index], device), "cuDevicePrimaryCtxRetain");
    check_driver(d, d.attribute(&d.multiprocessors[index], kMultiprocessorCount, device),
                 "cuDeviceGetAttribute");
  }
  check_driver(d, d.set_current(d.contexts[index]), "cuCtxSetCurrent");
}

}  // namespace

std::string nvrtc_version() {
  return nvrtc().description;
}

std::string nvrtc_compile(const std::string& source, const std::string& name,
                          const std::string& arch) {
  const Nvrtc& n = nvrtc();
  NvrtcProgram program = nullptr;
  if (int r = n.create(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr); r != 0) {
    throw sdk::Error(
        std::string("[compiler] NVRTC could not create ") + name + ": " + n.error_string(r),
        LOOM_STATUS_INTERNAL);
  }
  struct Destroy {
    const Nvrtc& n;
    NvrtcProgram* p;
    ~Destroy() { n.destroy(p); }
  } destroy{n, &program};
  const std::string arch_option = "--gpu-architecture=" + arch;
  const char* options[] = {arch_option.c_str(), "--std=c++17",
                           "--device-as-default-execution-space"};
  const int compiled = n.compile(program, 3, options);
  if (compiled != 0) {
    size_t size = 0;
    n.log_size(program, &size);
    std::string log(size, '\0');
    if (size > 0) n.log(program, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    throw sdk::Error("[compiler] NVRTC could not compile " + name + " for " + arch + " (" +
                         n.error_string(compiled) + "): " + log,
                     LOOM_STATUS_INTERNAL);
  }
  const bool cubin = arch.rfind("sm_", 0) == 0;
  size_t size = 0;
  (cubin ? n.cubin_size : n.ptx_size)(program, &size);
  std::string image(size, '\0');
  (cubin ? n.cubin : n.ptx)(program, image.data());
  return image;
}

std::string cuda_device_arch(int index) {
  Driver& d = driver();
  CuDevice device = 0;
  check_driver(d, d.device_get(&device, index), "no CUDA device " + std::to_string(index));
  int major = 0, minor = 0;
  check_driver(d, d.attribute(&major, kComputeCapabilityMajor, device), "cuDeviceGetAttribute");
  check_driver(d, d.attribute(&minor, kComputeCapabilityMinor, device), "cuDeviceGetAttribute");
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

void* cuda_load_function(const std::string& image, int index, const char* symbol_name) {
  Driver& d = driver();
  make_current(d, index);
  CuModule module = nullptr;
  check_driver(d, d.load_data(&module, image.data()), "cuModuleLoadData");
  CuFunction function = nullptr;
  check_driver(d, d.get_function(&function, module, symbol_name), "cuModuleGetFunction");
  return function;
}

void cuda_launch(void* function, int index, void* stream, int64_t numel, void** params) {
  Driver& d = driver();
  make_current(d, index);
  constexpr int64_t kThreads = 256;
  const int64_t sms = std::max(1, d.multiprocessors[std::max(index, 0)]);
  // enough blocks to fill every multiprocessor several times over; the loop covers the rest
  const int64_t blocks = std::clamp<int64_t>((numel + kThreads - 1) / kThreads, 1, sms * 32);
  check_driver(d,
               d.launch(function, static_cast<unsigned>(blocks), 1, 1, kThreads, 1, 1, 0, stream,
                        params, nullptr),
               "cuLaunchKernel");
}

}  // namespace loom::compiler
