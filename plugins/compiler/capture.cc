// The recorder behind capture_begin / capture_end.
//
// Note [Capturing op calls]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// capture_begin adds the Tracer key to the calling thread's dispatches (local_keys_push),
// so every op that thread calls reaches capture_op first, above autograd and every other
// functionality: the op is recorded as the caller made it (add.Tensor, not the kernels
// below it) and then runs below the key, so the captured function computes its real
// results. Calls made from inside an op (a decomposition's ops, a kernel calling another
// op) reach the fallback too and are recorded with their parent, so the graph builder
// can take a decomposition's ops instead of the op (what autograd records too). Ops
// that autograd's engine runs for a backward are top-level calls of the thread. A record
// keeps its arguments and returns as the op saw them, every tensor retained, so a
// tensor is known by its handle until capture_end visits the records and drops them.
#include "capture.h"

#include <memory>
#include <string>
#include <vector>

#include "loom/sdk/error.hpp"
#include "loom/sdk/host.hpp"

namespace loom::compiler {
namespace {

// A LoomValue with everything it points to owned (tensors retained).
class OwnedValue {
 public:
  explicit OwnedValue(const LoomValue& v) : tag_(v.tag), scalar_(v) {
    switch (v.tag) {
      case LOOM_VALUE_TENSOR:
        if (v.u.tensor != nullptr) sdk::host().tensor_retain(v.u.tensor);
        break;
      case LOOM_VALUE_STRING:
        text_.assign(v.u.str, v.length);
        break;
      case LOOM_VALUE_INT_LIST:
        ints_.assign(v.u.ints, v.u.ints + v.length);
        break;
      case LOOM_VALUE_DOUBLE_LIST:
        doubles_.assign(v.u.doubles, v.u.doubles + v.length);
        break;
      case LOOM_VALUE_BOOL_LIST:
        bools_.assign(v.u.bools, v.u.bools + v.length);
        break;
      case LOOM_VALUE_TENSOR_LIST:
        tensors_.assign(v.u.tensors, v.u.tensors + v.length);
        for (LoomTensor* t : tensors_) {
          if (t != nullptr) sdk::host().tensor_retain(t);
        }
        break;
      default:
        break;
    }
  }
  OwnedValue(OwnedValue&& o) noexcept
      : tag_(o.tag_),
        scalar_(o.scalar_),
        text_(std::move(o.text_)),
        ints_(std::move(o.ints_)),
        doubles_(std::move(o.doubles_)),
        bools_(std::move(o.bools_)),
        tensors_(std::move(o.tensors_)) {
    o.tag_ = LOOM_VALUE_NONE;
    o.tensors_.clear();
  }
  OwnedValue(const OwnedValue&) = delete;
  OwnedValue& operator=(const OwnedValue&) = delete;
  OwnedValue& operator=(OwnedValue&&) = delete;
  ~OwnedValue() {
    if (tag_ == LOOM_VALUE_TENSOR && scalar_.u.tensor != nullptr)
      sdk::host().tensor_release(scalar_.u.tensor);
    for (LoomTensor* t : tensors_) {
      if (t != nullptr) sdk::host().tensor_release(t);
    }
  }

  // The value, pointing into this object (valid while it lives and is not moved).
  LoomValue view() const {
    LoomValue v = scalar_;
    switch (tag_) {
      case LOOM_VALUE_STRING:
        v.u.str = text_.c_str();
        break;
      case LOOM_VALUE_INT_LIST:
        v.u.ints = ints_.data();
        break;
      case LOOM_VALUE_DOUBLE_LIST:
        v.u.doubles = doubles_.data();
        break;
      case LOOM_VALUE_BOOL_LIST:
        v.u.bools = bools_.data();
        break;
      case LOOM_VALUE_TENSOR_LIST:
        v.u.tensors = tensors_.data();
        break;
      default:
        break;
    }
    return v;
  }

 private:
  uint32_t tag_;
  LoomValue scalar_;
  std::string text_;
  std::vector<int64_t> ints_;
  std::vector<double> doubles_;
  std::vector<uint8_t> bools_;
  std::vector<LoomTensor*> tensors_;
};

struct Record {
  const LoomOperator* op = nullptr;
  std::vector<OwnedValue> args;
  std::vector<OwnedValue> returns;
  int64_t parent = -1;
  int64_t num_children = 0;
};

struct Capture {
  std::vector<Record> records;
  LoomLocalKeysArgs saved{};
  bool failed = false;  // out of memory recording: the capture is incomplete
};

// Plain initial-exec data: one %fs-relative load in this dlopen'ed module.
thread_local Capture* t_capture __attribute__((tls_model("initial-exec"))) = nullptr;
// The record of the call running on this thread, -1 outside any.
thread_local int64_t t_current __attribute__((tls_model("initial-exec"))) = -1;

LoomError* run_below(const LoomKernelCall* call) {
  return sdk::host().redispatch(call->op, call->key_set, call->args, call->num_args, call->returns,
                                call->num_returns);
}

}  // namespace

LoomError* capture_op(void*, const LoomKernelCall* call) {
  Capture* capture = t_capture;
  if (capture == nullptr || capture->failed) return run_below(call);
  // the record is made when the call begins (before the calls inside it) and gets its
  // returns when it ends
  int64_t index = -1;
  try {
    Record r;
    r.op = call->op;
    r.parent = t_current;
    r.args.reserve(call->num_args);
    for (size_t i = 0; i < call->num_args; ++i) r.args.emplace_back(call->args[i]);
    capture->records.push_back(std::move(r));
    index = static_cast<int64_t>(capture->records.size()) - 1;
    if (t_current >= 0) ++capture->records[t_current].num_children;
  } catch (...) {
    capture->failed = true;
    return run_below(call);
  }
  const int64_t outer = t_current;
  t_current = index;
  LoomError* err = run_below(call);
  t_current = outer;
  if (err != nullptr) return err;
  try {
    Record& r = capture->records[index];
    r.returns.reserve(call->num_returns);
    for (size_t i = 0; i < call->num_returns; ++i) r.returns.emplace_back(call->returns[i]);
  } catch (...) {
    capture->failed = true;
  }
  return nullptr;
}

LoomError* capture_begin() {
  return sdk::catch_all([] {
    if (t_capture != nullptr) {
      throw sdk::Error(
          "[compiler] capture_begin: this thread is capturing already (captures do not nest)",
          LOOM_STATUS_FAILED_PRECONDITION);
    }
    auto capture = std::make_unique<Capture>();
    static const uint32_t kTracer = LOOM_KEY_TRACER;
    capture->saved.struct_size = sizeof(LoomLocalKeysArgs);
    capture->saved.include = &kTracer;
    capture->saved.num_include = 1;
    sdk::check(sdk::host().local_keys_push(&capture->saved));
    t_current = -1;
    t_capture = capture.release();
  });
}

LoomError* capture_end(void* ctx, LoomCaptureVisitFn visit) {
  return sdk::catch_all([&] {
    std::unique_ptr<Capture> capture(t_capture);
    if (!capture) {
      throw sdk::Error(
          "[compiler] capture_end: this thread is not capturing (call capture_begin first)",
          LOOM_STATUS_FAILED_PRECONDITION);
    }
    t_capture = nullptr;
    sdk::check(sdk::host().local_keys_restore(&capture->saved));
    if (capture->failed) {
      throw sdk::Error(
          "[compiler] capture_end: out of memory while recording; the capture is incomplete",
          LOOM_STATUS_RESOURCE_EXHAUSTED);
    }
    if (visit == nullptr) return;
    std::vector<LoomValue> args, returns;
    for (size_t i = 0; i < capture->records.size(); ++i) {
      const Record& r = capture->records[i];
      args.clear();
      returns.clear();
      for (const OwnedValue& v : r.args) args.push_back(v.view());
      for (const OwnedValue& v : r.returns) returns.push_back(v.view());
      LoomCapturedCall c{sizeof(LoomCapturedCall),
                         r.op,
                         args.data(),
                         args.size(),
                         returns.data(),
                         returns.size(),
                         static_cast<int64_t>(i),
                         r.parent,
                         r.num_children};
      visit(ctx, &c);
    }
  });
}

}  // namespace loom::compiler
