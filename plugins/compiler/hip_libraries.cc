// hiprtc and the HIP runtime through dlopen; their C ABIs declared here (opaque handles,
// int status codes), so no ROCm header is needed to build the plugin.
#include "hip_libraries.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "dynamic_library.h"
#include "loom/sdk/error.hpp"

namespace loom::compiler {
namespace {

using HiprtcProgram = void*;
using HipModule = void*;
using HipFunction = void*;
constexpr int kGcnArchAttribute = 10003;  // hipDeviceAttributeGcnArch (AMD-specific)
constexpr const char* kBuildOnlyArch = "gfx90a";

struct Hip {
  // hiprtc
  const char* (*error_string)(int);
  int (*version)(int*, int*);
  int (*create)(HiprtcProgram*, const char*, const char*, int, const char* const*,
                const char* const*);
  int (*compile)(HiprtcProgram, int, const char* const*);
  int (*log_size)(HiprtcProgram, size_t*);
  int (*log)(HiprtcProgram, char*);
  int (*code_size)(HiprtcProgram, size_t*);
  int (*code)(HiprtcProgram, char*);
  int (*destroy)(HiprtcProgram*);
  // runtime
  int (*device_count)(int*);
  int (*set_device)(int);
  int (*attribute)(int*, int, int);
  const char* (*runtime_error)(int);
  int (*load_data)(HipModule*, const void*);
  int (*get_function)(HipFunction*, HipModule, const char*);
  int (*launch)(HipFunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                void*, void**, void**);
  std::string description;
  int devices = 0;
};

const Hip& hip() {
  static std::mutex mutex;
  static std::unique_ptr<Hip> loaded;
  static std::string failure;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded) return *loaded;
  if (!failure.empty()) throw sdk::Error(failure, LOOM_STATUS_UNIMPLEMENTED);
  std::string tried;
  void* h = open_first({"libamdhip64.so.5", "libamdhip64.so.6", "libamdhip64.so"}, &tried);
  if (h == nullptr) {
    failure = "[compiler] HIP kernels need hiprtc: none of " + tried + " could be loaded";
    throw sdk::Error(failure, LOOM_STATUS_UNIMPLEMENTED);
  }
  auto x = std::make_unique<Hip>();
  bind(h, "hiprtcGetErrorString", &x->error_string, "libamdhip64");
  bind(h, "hiprtcVersion", &x->version, "libamdhip64");
  bind(h, "hiprtcCreateProgram", &x->create, "libamdhip64");
  bind(h, "hiprtcCompileProgram", &x->compile, "libamdhip64");
  bind(h, "hiprtcGetProgramLogSize", &x->log_size, "libamdhip64");
  bind(h, "hiprtcGetProgramLog", &x->log, "libamdhip64");
  bind(h, "hiprtcGetCodeSize", &x->code_size, "libamdhip64");
  bind(h, "hiprtcGetCode", &x->code, "libamdhip64");
  bind(h, "hiprtcDestroyProgram", &x->destroy, "libamdhip64");
  bind(h, "hipGetDeviceCount", &x->device_count, "libamdhip64");
  bind(h, "hipSetDevice", &x->set_device, "libamdhip64");
  bind(h, "hipDeviceGetAttribute", &x->attribute, "libamdhip64");
  bind(h, "hipGetErrorString", &x->runtime_error, "libamdhip64");
  bind(h, "hipModuleLoadData", &x->load_data, "libamdhip64");
  bind(h, "hipModuleGetFunction", &x->get_function, "libamdhip64");
  bind(h, "hipModuleLaunchKernel", &x->launch, "libamdhip64");
  int major = 0, minor = 0;
  x->version(&major, &minor);
  x->description = "hiprtc " + std::to_string(major) + "." + std::to_string(minor);
  if (x->device_count(&x->devices) != 0) x->devices = 0;  // no driver: building only
  loaded = std::move(x);
  return *loaded;
}

void check_runtime(const Hip& x, int r, const std::string& what) {
  if (r == 0) return;
  throw sdk::Error("[compiler] " + what + ": " + x.runtime_error(r), LOOM_STATUS_INTERNAL);
}

}  // namespace

std::string hiprtc_version() {
  return hip().description;
}

std::string hip_target() {
  const Hip& x = hip();
  int arch = 0;
  if (x.devices > 0 && x.attribute(&arch, kGcnArchAttribute, 0) == 0) {
    return "gcnArch " + std::to_string(arch);
  }
  return kBuildOnlyArch;
}

std::string hiprtc_compile(const std::string& source, const std::string& name) {
  const Hip& x = hip();
  HiprtcProgram program = nullptr;
  if (int r = x.create(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr); r != 0) {
    throw sdk::Error("[compiler] hiprtc could not create " + name + ": " + x.error_string(r),
                     LOOM_STATUS_INTERNAL);
  }
  struct Destroy {
    const Hip& x;
    HiprtcProgram* p;
    ~Destroy() { x.destroy(p); }
  } destroy{x, &program};
  // with a device, hiprtc builds for the current one; without, for a named architecture
  std::vector<const char*> options = {"-std=c++17"};
  const std::string arch = std::string("--offload-arch=") + kBuildOnlyArch;
  if (x.devices > 0) {
    check_runtime(x, x.set_device(0), "hipSetDevice");
  } else {
    options.push_back(arch.c_str());
  }
  const int compiled = x.compile(program, static_cast<int>(options.size()), options.data());
  if (compiled != 0) {
    size_t size = 0;
    x.log_size(program, &size);
    std::string log(size, '\0');
    if (size > 0) x.log(program, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    throw sdk::Error("[compiler] hiprtc could not compile " + name + " (" +
                         x.error_string(compiled) + "): " + log,
                     LOOM_STATUS_INTERNAL);
  }
  size_t size = 0;
  x.code_size(program, &size);
  std::string image(size, '\0');
  x.code(program, image.data());
  return image;
}

void* hip_load_function(const std::string& image, int index, const char* symbol) {
  const Hip& x = hip();
  check_runtime(x, x.set_device(std::max(index, 0)), "hipSetDevice");
  HipModule module = nullptr;
  check_runtime(x, x.load_data(&module, image.data()), "hipModuleLoadData");
  HipFunction function = nullptr;
  check_runtime(x, x.get_function(&function, module, symbol), "hipModuleGetFunction");
  return function;
}

void hip_launch(void* function, int index, void* stream, int64_t numel, void** params) {
  const Hip& x = hip();
  check_runtime(x, x.set_device(std::max(index, 0)), "hipSetDevice");
  constexpr int64_t kThreads = 256;
  // the grid-stride loop covers what a bounded grid does not
  const int64_t blocks = std::clamp<int64_t>((numel + kThreads - 1) / kThreads, 1, 65536);
  check_runtime(x,
                x.launch(function, static_cast<unsigned>(blocks), 1, 1, kThreads, 1, 1, 0, stream,
                         params, nullptr),
                "hipModuleLaunchKernel");
}

}  // namespace loom::compiler
