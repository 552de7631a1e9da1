// Recording: what the profiler keeps of each op call, range, device activity and
// allocation.
//
// Note [Profiler records]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Every thread appends to its own buffer, so recording never contends: the buffer's
// mutex is taken by its thread for each record and by the reader only after recording
// stopped. A record is opened when an op enters the Profiler key (or a range begins) and
// closed when it returns; the thread's stack of open records gives each new record its
// parent, which is how `linear` nests over `addmm`, a decomposition over its pieces and
// autograd's backward ops under their node. Allocations while profile_memory is on add to
// every record open on the allocating thread (so an op's bytes include its children's)
// and become MEMORY records for the counters. Record ids are the buffer's ordinal in the
// high 24 bits and a per-buffer count below, unique without any shared counter. Clearing
// bumps the buffer's generation: an op that was open then closes nothing when it returns.
#include "recorder.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>

#include "call_stack.h"
#include "loom/sdk/dtype.hpp"
#include "loom/sdk/host.hpp"

namespace loom::profiler {
namespace {

thread_local ThreadBuffer* t_buffer = nullptr;

// The last key set seen on this thread and its backend key (ops on a thread mostly share
// one key set, so the host is asked once).
thread_local uint64_t t_key_set = ~uint64_t{0};
thread_local uint32_t t_backend_key = LOOM_KEY_UNDEFINED;

uint32_t backend_key_of(uint64_t key_set) {
  if (key_set == t_key_set) return t_backend_key;
  LoomKeySetArgs a{};
  a.struct_size = sizeof(a);
  a.key_set = key_set;
  LoomError* err = sdk::host().key_set_backend(&a);
  if (err != nullptr) {
    err->destroy(err);
    return LOOM_KEY_UNDEFINED;
  }
  t_key_set = key_set;
  t_backend_key = a.out_backend_key;
  return t_backend_key;
}

// Appends "[2, 3]" for `t` ("[]" for a null or unreadable tensor) and returns its dtype
// (-1 when there is none).
int32_t append_sizes(std::string& out, LoomTensor* t) {
  LoomTensorView view{};
  view.struct_size = sizeof(view);
  LoomError* err = t == nullptr ? nullptr : sdk::host().tensor_view(t, &view);
  if (t == nullptr || err != nullptr) {
    if (err != nullptr) err->destroy(err);
    out += "[]";
    return -1;
  }
  out += '[';
  for (int32_t d = 0; d < view.dl.ndim; ++d) {
    if (d > 0) out += ", ";
    out += std::to_string(view.dl.shape[d]);
  }
  out += ']';
  return view.dtype;
}

// Input shapes and dtypes as PyTorch's profiler lists them: a tensor's sizes and dtype,
// [] and "Scalar" for a number, [] and "" for anything else.
void describe_inputs(const LoomKernelCall* call, std::string& shapes, std::string& dtypes) {
  shapes = "[";
  dtypes = "[";
  for (size_t i = 0; i < call->num_args; ++i) {
    if (i > 0) {
      shapes += ", ";
      dtypes += ", ";
    }
    const LoomValue& v = call->args[i];
    if (v.tag == LOOM_VALUE_TENSOR) {
      const int32_t dtype = append_sizes(shapes, v.u.tensor);
      if (dtype >= 0) dtypes += sdk::dtype_name(static_cast<LoomDType>(dtype));
    } else if (v.tag == LOOM_VALUE_TENSOR_LIST) {
      shapes += '[';
      for (uint32_t k = 0; k < v.length; ++k) {
        if (k > 0) shapes += ", ";
        append_sizes(shapes, v.u.tensors[k]);
      }
      shapes += ']';
      dtypes += "TensorList";
    } else {
      shapes += "[]";
      if (v.tag == LOOM_VALUE_INT || v.tag == LOOM_VALUE_DOUBLE || v.tag == LOOM_VALUE_BOOL) {
        dtypes += "Scalar";
      }
    }
  }
  shapes += ']';
  dtypes += ']';
}

// The bytes of a call's tensor arguments (lists included): what a collective of the
// distributed family moves, shown with it in a profile.
int64_t tensor_bytes(const LoomKernelCall* call) {
  int64_t total = 0;
  auto add = [&](LoomTensor* t) {
    LoomTensorView view{};
    view.struct_size = sizeof(view);
    LoomError* err = t == nullptr ? nullptr : sdk::host().tensor_view(t, &view);
    if (err != nullptr) err->destroy(err);
    if (t != nullptr && err == nullptr) {
      total += view.numel * ((view.dl.dtype.bits * view.dl.dtype.lanes + 7) / 8);
    }
  };
  for (size_t i = 0; i < call->num_args; ++i) {
    const LoomValue& v = call->args[i];
    if (v.tag == LOOM_VALUE_TENSOR) add(v.u.tensor);
    if (v.tag == LOOM_VALUE_TENSOR_LIST) {
      for (uint32_t k = 0; k < v.length; ++k) add(v.u.tensors[k]);
    }
  }
  return total;
}

// Whether an op is a collective (the distributed family: loom::all_reduce_, ...), by its
// name once per operator and thread.
bool is_collective(const LoomOperator* op, const char* name) {
  static thread_local std::unordered_map<const LoomOperator*, bool> known;
  auto it = known.find(op);
  if (it != known.end()) return it->second;
  static const char* const kCollectives[] = {"loom::all_reduce_",
                                             "loom::broadcast_",
                                             "loom::reduce_",
                                             "loom::all_gather_",
                                             "loom::all_gather_into_tensor_",
                                             "loom::reduce_scatter_",
                                             "loom::reduce_scatter_tensor_",
                                             "loom::all_to_all_",
                                             "loom::all_to_all_single_",
                                             "loom::send",
                                             "loom::recv_"};
  bool found = false;
  for (const char* c : kCollectives)
    found = found || (name != nullptr && std::strcmp(name, c) == 0);
  known.emplace(op, found);
  return found;
}

uint64_t os_thread_id() {
  return static_cast<uint64_t>(syscall(SYS_gettid));
}

constexpr uint64_t token_of(uint32_t generation, size_t index) {
  return (uint64_t{generation} << 32) | static_cast<uint32_t>(index);
}

}  // namespace

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Recorder& Recorder::instance() {
  static Recorder recorder;
  return recorder;
}

ThreadBuffer& Recorder::buffer() {
  if (t_buffer != nullptr) [[likely]]
    return *t_buffer;
  auto b = std::make_unique<ThreadBuffer>();
  b->os_thread_id = os_thread_id();
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  b->ordinal = buffers_.size();
  t_buffer = b.get();
  buffers_.push_back(std::move(b));
  return *t_buffer;
}

void Recorder::reset(const Options& options) {
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  options_ = options;
  for (auto& b : buffers_) {
    std::lock_guard<std::mutex> buffer_lock(b->mutex);
    b->records.clear();
    b->open.clear();
    ++b->generation;
  }
}

size_t Recorder::open_record(ThreadBuffer& b, int32_t kind) {
  const size_t index = b.records.size();
  Record& r = b.records.emplace_back();
  r.kind = kind;
  r.id = (b.ordinal << 40) | b.next_local_id++;
  r.parent_id = b.open.empty() ? 0 : b.records[b.open.back()].id;
  b.open.push_back(index);
  return index;
}

void Recorder::close_record(ThreadBuffer& b, size_t index, int64_t end_ns) {
  if (index >= b.records.size()) return;
  b.records[index].end_ns = end_ns;
  // Ranges normally close innermost first; one closed out of order leaves the others open.
  for (size_t k = b.open.size(); k-- > 0;) {
    if (b.open[k] == index) {
      b.open.erase(b.open.begin() + static_cast<std::ptrdiff_t>(k));
      break;
    }
  }
}

uint64_t Recorder::op_begin(const LoomKernelCall* call) {
  ThreadBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  const size_t index = open_record(b, LOOM_PROFILER_OP);
  Record& r = b.records[index];
  r.static_name = sdk::host().op_name(call->op);
  r.dispatch_key = backend_key_of(call->key_set);
  if (options_.record_shapes) describe_inputs(call, r.input_shapes, r.input_dtypes);
  if (is_collective(call->op, r.static_name)) r.bytes = tensor_bytes(call);
  if (options_.with_stack && b.open.size() == 1) r.stack = capture_call_stack(3);
  r.start_ns = now_ns();  // last, so the bookkeeping above is not the op's time
  return token_of(b.generation, index);
}

void Recorder::op_end(uint64_t token) {
  const int64_t end = now_ns();
  ThreadBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (static_cast<uint32_t>(token >> 32) != b.generation) return;
  close_record(b, static_cast<uint32_t>(token), end);
}

uint64_t Recorder::range_begin(const char* name, int32_t kind, uint64_t sequence_nr) {
  ThreadBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  const size_t index = open_record(
      b, kind == LOOM_TRACE_BACKWARD_NODE ? LOOM_PROFILER_BACKWARD_NODE : LOOM_PROFILER_USER_RANGE);
  Record& r = b.records[index];
  r.name = name;
  if (kind == LOOM_TRACE_BACKWARD_NODE) {
    r.sequence_nr = sequence_nr;
    r.has_sequence_nr = true;
  }
  r.start_ns = now_ns();
  return r.id;
}

void Recorder::range_end(uint64_t id) {
  const int64_t end = now_ns();
  ThreadBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  for (size_t k = b.open.size(); k-- > 0;) {
    if (b.records[b.open[k]].id == id) {
      close_record(b, b.open[k], end);
      return;
    }
  }
}

void Recorder::sequence(uint64_t sequence_nr) {
  ThreadBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (b.open.empty()) return;
  Record& r = b.records[b.open.back()];
  r.sequence_nr = sequence_nr;
  r.has_sequence_nr = true;
}

uint64_t Recorder::correlation_id() {
  ThreadBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  return b.open.empty() ? 0 : b.records[b.open.back()].id;
}

void Recorder::device_event(const LoomTraceDeviceEventArgs& e) {
  ThreadBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  Record& r = b.records.emplace_back();
  r.kind = LOOM_PROFILER_DEVICE_KERNEL + (e.kind - LOOM_TRACE_DEVICE_KERNEL);
  r.name = e.name;
  r.id = (b.ordinal << 40) | b.next_local_id++;
  r.start_ns = e.start_ns;
  r.end_ns = e.end_ns;
  r.device = e.device;
  r.stream = e.stream;
  r.bytes = e.bytes;
  r.correlation_id =
      e.correlation_id != 0 ? e.correlation_id : (b.open.empty() ? 0 : b.records[b.open.back()].id);
}

void Recorder::memory_event(const LoomAllocationEvent& e) {
  const int64_t now = now_ns();
  ThreadBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  const int64_t nbytes = static_cast<int64_t>(e.nbytes);
  for (size_t index : b.open) {
    if (e.is_free) {
      b.records[index].bytes_freed += nbytes;
    } else {
      b.records[index].bytes_allocated += nbytes;
    }
  }
  Record& r = b.records.emplace_back();
  r.kind = LOOM_PROFILER_MEMORY;
  r.start_ns = r.end_ns = now;
  r.parent_id = b.open.empty() ? 0 : b.records[b.open.back()].id;
  r.device = e.device;
  r.bytes = e.is_free ? -nbytes : nbytes;
}

void Recorder::visit(void* ctx, LoomProfilerVisitFn visit) {
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  for (auto& b : buffers_) {
    std::lock_guard<std::mutex> buffer_lock(b->mutex);
    for (size_t i = 0; i < b->records.size(); ++i) {
      const Record& r = b->records[i];
      LoomProfilerEvent e{};
      e.struct_size = sizeof(e);
      e.kind = r.kind;
      e.name = r.static_name != nullptr ? r.static_name : r.name.c_str();
      e.start_ns = r.start_ns;
      e.end_ns = r.end_ns >= 0 ? r.end_ns : std::max(r.start_ns, stop_ns_);  // open at stop
      e.id = r.id;
      e.parent_id = r.parent_id;
      e.thread_id = b->os_thread_id;
      e.dispatch_key = r.dispatch_key;
      e.input_shapes = r.input_shapes.c_str();
      e.input_dtypes = r.input_dtypes.c_str();
      e.bytes_allocated = r.bytes_allocated;
      e.bytes_freed = r.bytes_freed;
      e.sequence_nr = r.sequence_nr;
      e.has_sequence_nr = r.has_sequence_nr ? 1 : 0;
      e.device = r.device;
      e.stream = r.stream;
      e.bytes = r.bytes;
      e.correlation_id = r.correlation_id;
      e.stack = r.stack.c_str();
      visit(ctx, &e);
    }
  }
}

}  // namespace loom::profiler
