// The kernels of the distributed op family (ops/schemas/distributed.def), for CPU
// tensors (gloo, mpi) and CUDA tensors (nccl): each checks its arguments, describes the collective
// (its fingerprint and the engine call) and hands it to the process group, which numbers, matches
// and runs it (Note [Collective fingerprints], Note [Asynchronous collectives]). An op returns 0
// when it ran to completion, or with async_op=true a work id for loom.distributed's
// work_wait.
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../world.h"
#include "loom/sdk/float16.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/stream.hpp"

namespace loom::distributed {
namespace {

using sdk::Tensor;
using std::chrono::milliseconds;

[[noreturn]] void refuse(const char* op, const std::string& what) {
  throw sdk::Error(std::string("[") + op + "] " + what);
}

ElementType element_type(const char* op, LoomDType dtype) {
  switch (dtype) {
    case LOOM_DTYPE_FLOAT32:
      return ElementType::kFloat32;
    case LOOM_DTYPE_FLOAT64:
      return ElementType::kFloat64;
    case LOOM_DTYPE_FLOAT16:
      return ElementType::kFloat16;
    case LOOM_DTYPE_BFLOAT16:
      return ElementType::kBFloat16;
    case LOOM_DTYPE_INT8:
      return ElementType::kInt8;
    case LOOM_DTYPE_UINT8:
      return ElementType::kUInt8;
    case LOOM_DTYPE_INT16:
      return ElementType::kInt16;
    case LOOM_DTYPE_INT32:
      return ElementType::kInt32;
    case LOOM_DTYPE_INT64:
      return ElementType::kInt64;
    case LOOM_DTYPE_BOOL:
      return ElementType::kBool;
    default:
      refuse(op, std::string("collectives take bool, integer and floating-point tensors, found ") +
                     sdk::dtype_name(dtype));
  }
}

bool is_floating(ElementType t) {
  return t == ElementType::kFloat32 || t == ElementType::kFloat64 || t == ElementType::kFloat16 ||
         t == ElementType::kBFloat16;
}

ReduceOp reduce_op(const char* op, std::string_view name, ElementType type) {
  static const char* names[] = {"sum", "product", "min", "max", "avg"};
  for (int i = 0; i < 5; ++i) {
    if (name == names[i]) {
      auto r = static_cast<ReduceOp>(i);
      if (r == ReduceOp::kAvg && !is_floating(type)) {
        refuse(op, std::string("reduce op 'avg' needs a floating-point tensor, found ") +
                       element_type_name(type));
      }
      return r;
    }
  }
  refuse(op,
         "unknown reduce op '" + std::string(name) + "' (expected sum, product, min, max or avg)");
}

// A tensor where the group's engine works (host memory, or its CUDA device) whose
// elements are one dense block.
void check_dense(const char* op, const ProcessGroup& g, const Tensor& t, const char* what) {
  const int device = g.cuda_device();
  const bool on_cpu = t.device().type == LOOM_DEVICE_CPU;
  if (device < 0 && !on_cpu) {
    refuse(op, std::string(what) + " must be a CPU tensor for the " + g.backend() +
                   " backend (nccl takes CUDA tensors), found one on a device (type " +
                   std::to_string(t.device().type) + ", index " + std::to_string(t.device().index) +
                   ")");
  }
  if (device >= 0 && (on_cpu || t.device().index != device)) {
    refuse(op, std::string(what) + " must be a CUDA tensor on this rank's device cuda:" +
                   std::to_string(device) + " for the " + g.backend() + " backend, found " +
                   (on_cpu ? std::string("a CPU tensor")
                           : "one on device index " + std::to_string(t.device().index)));
  }
  if (!t.is_contiguous()) {
    refuse(op, std::string(what) + " must be contiguous (call .contiguous() first)");
  }
}

void check_type(const char* op, const ProcessGroup& g, ElementType type) {
  if (!g.supports(type)) {
    refuse(op, "the " + g.backend() + " backend has no collectives for " + element_type_name(type) +
                   " tensors");
  }
}

// The stream a device engine queues the collective on: the caller's current stream of
// the tensor's device type.
void* stream_of(const Tensor& t) {
  return t.device().type == LOOM_DEVICE_CPU ? nullptr : sdk::current_stream(t.device().type);
}

size_t byte_size(const Tensor& t) {
  return static_cast<size_t>(t.numel()) *
         ((t.view().dl.dtype.bits * t.view().dl.dtype.lanes + 7) / 8);
}

Fingerprint fingerprint_of(CollectiveKind kind, const Tensor& t, ElementType type) {
  Fingerprint fp;
  fp.kind = static_cast<uint8_t>(kind);
  fp.type = static_cast<uint8_t>(type);
  fp.numel = t.numel();
  fp.ndim = static_cast<uint8_t>(std::min<int64_t>(t.dim(), 255));
  for (int64_t d = 0; d < t.dim() && d < 8; ++d) fp.shape[d] = t.sizes()[d];
  return fp;
}

std::shared_ptr<void> keep(const Tensor& t) {
  return std::make_shared<Tensor>(t);
}

// The group's rank of a world rank, or an error naming both.
int local_rank(const char* op, const ProcessGroup& g, int64_t global, const char* what) {
  const auto& ranks = g.global_ranks();
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == global) return static_cast<int>(i);
  }
  refuse(op, std::string(what) + " rank " + std::to_string(global) + " is not in process group " +
                 std::to_string(g.id()) + " (its ranks: " + std::to_string(ranks.front()) + ".." +
                 std::to_string(ranks.back()) + ")");
}

void divide(void* data, size_t count, ElementType type, int n) {
  // Averages: the sum divided once by the group size (floating types only).
  switch (type) {
    case ElementType::kFloat32:
      for (size_t i = 0; i < count; ++i) static_cast<float*>(data)[i] /= static_cast<float>(n);
      return;
    case ElementType::kFloat64:
      for (size_t i = 0; i < count; ++i) static_cast<double*>(data)[i] /= n;
      return;
    case ElementType::kFloat16:
    case ElementType::kBFloat16: {
      auto* h = static_cast<uint16_t*>(data);
      const bool half = type == ElementType::kFloat16;
      for (size_t i = 0; i < count; ++i) {
        float v = half ? sdk::half_bits_to_float(h[i]) : sdk::bfloat16_bits_to_float(h[i]);
        h[i] = half ? sdk::float_to_half_bits(v / n) : sdk::float_to_bfloat16_bits(v / n);
      }
      return;
    }
    default:
      return;
  }
}

int64_t submit(const std::shared_ptr<ProcessGroup>& g, Collective c, bool async_op) {
  try {
    auto work = g->submit(std::move(c), async_op);
    return async_op ? remember_work(g, std::move(work)) : 0;
  } catch (const std::runtime_error& e) {
    throw sdk::Error(e.what(), LOOM_STATUS_INTERNAL);
  }
}

std::shared_ptr<ProcessGroup> group(int64_t id, const char* op) {
  try {
    return group_for_op(id, op);
  } catch (const std::runtime_error& e) {
    throw sdk::Error(e.what(), LOOM_STATUS_FAILED_PRECONDITION);
  }
}

// The `count` elements at byte `offset` of every rank's inline payload (Note [Collective
// fingerprints]) reduced in rank order, so that every rank's result is bitwise the same,
// into `out`; kAvg divides by the ranks.
void reduce_inline_payloads(const std::vector<std::span<const char>>& peers, size_t offset,
                            size_t count, ElementType type, ReduceOp rop, char* out) {
  const size_t bytes = count * element_size(type);
  std::vector<char> acc(peers[0].begin() + offset, peers[0].begin() + offset + bytes);
  for (size_t r = 1; r < peers.size(); ++r) {
    reduce_into(acc.data(), peers[r].data() + offset, count, type, rop);
  }
  if (rop == ReduceOp::kAvg) divide(acc.data(), count, type, static_cast<int>(peers.size()));
  copy_bytes(out, acc.data(), bytes);
}

// Scratch memory of a collective's body, held by the collective (its keep_alive), so that
// a failed collective's buffers outlive the failure (Note [Failed groups]). Only the body
// allocates, on the one thread that runs it.
class Scratch {
 public:
  std::shared_ptr<char> allocate(Engine& e, size_t bytes) {
    buffers_.push_back(e.allocate(bytes));
    return buffers_.back();
  }

 private:
  std::vector<std::shared_ptr<char>> buffers_;
};

std::shared_ptr<Scratch> scratch_of(Collective& c) {
  auto scratch = std::make_shared<Scratch>();
  c.keep_alive.push_back(scratch);
  return scratch;
}

// --- the ops ---

int64_t all_reduce_(const Tensor& self, std::string_view op_name, int64_t group_id, bool async_op) {
  constexpr const char* op = "loom::all_reduce_";
  const ElementType type = element_type(op, self.dtype());
  const ReduceOp rop = reduce_op(op, op_name, type);
  auto g = group(group_id, op);
  check_dense(op, *g, self, "the tensor");
  check_type(op, *g, type);
  Collective c;
  c.stream = stream_of(self);
  c.fingerprint = fingerprint_of(CollectiveKind::kAllReduce, self, type);
  c.fingerprint.reduce = static_cast<uint8_t>(rop);
  char* data = self.data<char>();
  const size_t count = static_cast<size_t>(self.numel());
  const size_t bytes = byte_size(self);
  const int n = g->size();
  if (bytes <= kInlineBytes && g->cuda_device() < 0) {
    c.make_payload = [=] { return std::vector<char>(data, data + bytes); };
    c.body = [=](Engine&, const std::vector<std::span<const char>>& peers, milliseconds, uint32_t) {
      reduce_inline_payloads(peers, 0, count, type, rop, data);
    };
  } else {
    c.body = [=](Engine& e, const std::vector<std::span<const char>>&, milliseconds timeout,
                 uint32_t tag) {
      e.all_reduce(data, count, type, rop, tag, timeout);
      if (rop == ReduceOp::kAvg && !e.averages()) divide(data, count, type, n);
    };
  }
  c.keep_alive.push_back(keep(self));
  return submit(g, std::move(c), async_op);
}

int64_t broadcast_(const Tensor& self, int64_t src, int64_t group_id, bool async_op) {
  constexpr const char* op = "loom::broadcast_";
  const ElementType type = element_type(op, self.dtype());
  auto g = group(group_id, op);
  check_dense(op, *g, self, "the tensor");
  check_type(op, *g, type);
  const int root = local_rank(op, *g, src, "the source");
  Collective c;
  c.stream = stream_of(self);
  c.fingerprint = fingerprint_of(CollectiveKind::kBroadcast, self, type);
  c.fingerprint.root = static_cast<int32_t>(src);
  char* data = self.data<char>();
  const size_t bytes = byte_size(self);
  c.body = [=](Engine& e, const std::vector<std::span<const char>>&, milliseconds timeout,
               uint32_t tag) { e.broadcast(data, bytes, root, tag, timeout); };
  c.keep_alive.push_back(keep(self));
  return submit(g, std::move(c), async_op);
}

int64_t reduce_(const Tensor& self, int64_t dst, std::string_view op_name, int64_t group_id,
                bool async_op) {
  constexpr const char* op = "loom::reduce_";
  const ElementType type = element_type(op, self.dtype());
  const ReduceOp rop = reduce_op(op, op_name, type);
  auto g = group(group_id, op);
  check_dense(op, *g, self, "the tensor");
  check_type(op, *g, type);
  const int root = local_rank(op, *g, dst, "the destination");
  Collective c;
  c.stream = stream_of(self);
  c.fingerprint = fingerprint_of(CollectiveKind::kReduce, self, type);
  c.fingerprint.reduce = static_cast<uint8_t>(rop);
  c.fingerprint.root = static_cast<int32_t>(dst);
  char* data = self.data<char>();
  const size_t count = static_cast<size_t>(self.numel());
  const int n = g->size(), me = g->rank();
  c.body = [=](Engine& e, const std::vector<std::span<const char>>&, milliseconds timeout,
               uint32_t tag) {
    e.reduce(data, count, type, rop, root, tag, timeout);
    if (rop == ReduceOp::kAvg && me == root && !e.averages()) divide(data, count, type, n);
  };
  c.keep_alive.push_back(keep(self));
  return submit(g, std::move(c), async_op);
}

// Checks that `t` has the dtype and element count of `like`.
void check_like(const char* op, const ProcessGroup& g, const Tensor& t, const Tensor& like,
                int64_t numel, const std::string& what) {
  check_dense(op, g, t, what.c_str());
  if (t.dtype() != like.dtype()) {
    refuse(op, what + " must have the input's dtype " + sdk::dtype_name(like.dtype()) + ", found " +
                   sdk::dtype_name(t.dtype()));
  }
  if (t.numel() != numel) {
    refuse(op, what + " must have " + std::to_string(numel) + " elements, found " +
                   std::to_string(t.numel()));
  }
}

int64_t all_gather_into_tensor_(const Tensor& output, const Tensor& self, int64_t group_id,
                                bool async_op) {
  constexpr const char* op = "loom::all_gather_into_tensor_";
  const ElementType type = element_type(op, self.dtype());
  auto g = group(group_id, op);
  check_dense(op, *g, self, "the input");
  check_type(op, *g, type);
  check_like(op, *g, output, self, self.numel() * g->size(), "the output");
  Collective c;
  c.stream = stream_of(self);
  c.fingerprint = fingerprint_of(CollectiveKind::kAllGather, self, type);
  const char* in = self.data<char>();
  char* out = output.data<char>();
  const size_t bytes = byte_size(self);
  c.body = [=](Engine& e, const std::vector<std::span<const char>>&, milliseconds timeout,
               uint32_t tag) { e.all_gather(in, bytes, out, tag, timeout); };
  c.keep_alive = {keep(self), keep(output)};
  return submit(g, std::move(c), async_op);
}

int64_t all_gather_(const std::vector<Tensor>& outputs, const Tensor& self, int64_t group_id,
                    bool async_op) {
  constexpr const char* op = "loom::all_gather_";
  const ElementType type = element_type(op, self.dtype());
  auto g = group(group_id, op);
  check_dense(op, *g, self, "the input");
  check_type(op, *g, type);
  if (static_cast<int>(outputs.size()) != g->size()) {
    refuse(op, "expected one output per rank of the group (" + std::to_string(g->size()) +
                   "), found " + std::to_string(outputs.size()));
  }
  std::vector<char*> outs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    check_like(op, *g, outputs[i], self, self.numel(), "output " + std::to_string(i));
    outs.push_back(outputs[i].data<char>());
  }
  Collective c;
  c.fingerprint = fingerprint_of(CollectiveKind::kAllGather, self, type);
  c.stream = stream_of(self);
  const char* in = self.data<char>();
  const size_t bytes = byte_size(self);
  std::shared_ptr<Scratch> scratch = scratch_of(c);
  c.body = [=](Engine& e, const std::vector<std::span<const char>>&, milliseconds timeout,
               uint32_t tag) {
    std::shared_ptr<char> all = scratch->allocate(e, bytes * outs.size());
    e.all_gather(in, bytes, all.get(), tag, timeout);
    for (size_t r = 0; r < outs.size(); ++r) e.copy(outs[r], all.get() + r * bytes, bytes);
  };
  c.keep_alive.push_back(keep(self));
  for (const Tensor& t : outputs) c.keep_alive.push_back(keep(t));
  return submit(g, std::move(c), async_op);
}

// reduce_scatter of `n` blocks, one per rank, joined into one buffer first when they are
// not already adjacent. On a host engine, one whose blocks come to at most kInlineBytes
// travels with its fingerprint, as a small all_reduce does (Note [Collective
// fingerprints]), and each rank reduces its block of every rank's input in rank order.
Collective reduce_scatter_collective(const Tensor& output, std::vector<const char*> blocks,
                                     ElementType type, ReduceOp rop, const ProcessGroup& g) {
  const int n = g.size(), me = g.rank();
  Collective c;
  c.fingerprint = fingerprint_of(CollectiveKind::kReduceScatter, output, type);
  c.fingerprint.reduce = static_cast<uint8_t>(rop);
  c.stream = stream_of(output);
  char* out = output.data<char>();
  const size_t count = static_cast<size_t>(output.numel());
  const size_t bytes = byte_size(output);
  if (bytes * n <= kInlineBytes && g.cuda_device() < 0) {
    c.make_payload = [=] {
      std::vector<char> payload(bytes * n);
      for (int r = 0; r < n; ++r) copy_bytes(payload.data() + r * bytes, blocks[r], bytes);
      return payload;
    };
    c.body = [=](Engine&, const std::vector<std::span<const char>>& peers, milliseconds, uint32_t) {
      reduce_inline_payloads(peers, me * bytes, count, type, rop, out);
    };
    return c;
  }
  // The engine reads the blocks as one buffer: blocks apart are joined first. (An output
  // inside the input is refused before this, as an overlapping write.)
  bool join = false;
  for (int r = 1; r < n; ++r) join = join || blocks[r] != blocks[0] + r * bytes;
  std::shared_ptr<Scratch> scratch = scratch_of(c);
  c.body = [=](Engine& e, const std::vector<std::span<const char>>&, milliseconds timeout,
               uint32_t tag) {
    const char* in = blocks[0];
    if (join) {
      std::shared_ptr<char> joined = scratch->allocate(e, bytes * n);
      for (int r = 0; r < n; ++r) e.copy(joined.get() + r * bytes, blocks[r], bytes);
      in = joined.get();
    }
    e.reduce_scatter(in, out, count, type, rop, me, n, tag, timeout);
    if (rop == ReduceOp::kAvg && !e.averages()) divide(out, count, type, n);
  };
  return c;
}

int64_t reduce_scatter_(const Tensor& output, const std::vector<Tensor>& inputs,
                        std::string_view op_name, int64_t group_id, bool async_op) {
  constexpr const char* op = "loom::reduce_scatter_";
  const ElementType type = element_type(op, output.dtype());
  const ReduceOp rop = reduce_op(op, op_name, type);
  auto g = group(group_id, op);
  check_dense(op, *g, output, "the output");
  check_type(op, *g, type);
  if (static_cast<int>(inputs.size()) != g->size()) {
    refuse(op, "expected one input per rank of the group (" + std::to_string(g->size()) +
                   "), found " + std::to_string(inputs.size()));
  }
  std::vector<const char*> blocks;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_like(op, *g, inputs[i], output, output.numel(), "input " + std::to_string(i));
    blocks.push_back(inputs[i].data<char>());
  }
  Collective c = reduce_scatter_collective(output, blocks, type, rop, *g);
  c.keep_alive.push_back(keep(output));
  for (const Tensor& t : inputs) c.keep_alive.push_back(keep(t));
  return submit(g, std::move(c), async_op);
}

int64_t reduce_scatter_tensor_(const Tensor& output, const Tensor& self, std::string_view op_name,
                               int64_t group_id, bool async_op) {
  constexpr const char* op = "loom::reduce_scatter_tensor_";
  const ElementType type = element_type(op, output.dtype());
  const ReduceOp rop = reduce_op(op, op_name, type);
  auto g = group(group_id, op);
  check_dense(op, *g, output, "the output");
  check_type(op, *g, type);
  check_like(op, *g, self, output, output.numel() * g->size(), "the input");
  std::vector<const char*> blocks;
  for (int r = 0; r < g->size(); ++r) blocks.push_back(self.data<char>() + r * byte_size(output));
  Collective c = reduce_scatter_collective(output, blocks, type, rop, *g);
  c.keep_alive = {keep(output), keep(self)};
  return submit(g, std::move(c), async_op);
}

// all_to_all: the byte counts travel with the fingerprints, and every rank checks the
// whole matrix (what i sends to j is what j expects from i) before data moves.
Collective all_to_all_collective(const char* op, ElementType type, const Tensor& shape_of,
                                 std::vector<const char*> ins, std::vector<size_t> in_bytes,
                                 std::vector<char*> outs, std::vector<size_t> out_bytes,
                                 const std::vector<int>& global_ranks) {
  Collective c;
  c.fingerprint = fingerprint_of(CollectiveKind::kAllToAll, shape_of, type);
  c.stream = stream_of(shape_of);
  const size_t n = in_bytes.size();
  c.inline_payload.resize(2 * n * sizeof(int64_t));
  for (size_t r = 0; r < n; ++r) {
    const int64_t counts[2] = {static_cast<int64_t>(in_bytes[r]),
                               static_cast<int64_t>(out_bytes[r])};
    copy_bytes(c.inline_payload.data() + (2 * r) * sizeof(int64_t), counts, sizeof counts);
  }
  const size_t elem = element_size(type);
  std::string name = op;
  std::shared_ptr<Scratch> scratch = scratch_of(c);
  c.body = [=](Engine& e, const std::vector<std::span<const char>>& peers, milliseconds timeout,
               uint32_t tag) {
    auto count = [&](size_t from, size_t to, int which) {
      int64_t v = -1;
      if (peers[from].size() >= 2 * n * sizeof(int64_t)) {
        copy_bytes(&v, peers[from].data() + (2 * to + which) * sizeof(int64_t), sizeof v);
      }
      return v;
    };
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) {
        if (count(i, j, 0) != count(j, i, 1)) {
          throw std::runtime_error(
              "rank " + std::to_string(global_ranks[i]) + " sends " +
              std::to_string(count(i, j, 0) / static_cast<int64_t>(elem)) + " elements to rank " +
              std::to_string(global_ranks[j]) + ", which expects " +
              std::to_string(count(j, i, 1) / static_cast<int64_t>(elem)) + " from it");
        }
      }
    }
    size_t total_in = 0, total_out = 0;
    for (size_t r = 0; r < n; ++r) total_in += in_bytes[r], total_out += out_bytes[r];
    std::shared_ptr<char> in = scratch->allocate(e, total_in);
    std::shared_ptr<char> out = scratch->allocate(e, total_out);
    for (size_t r = 0, at = 0; r < n; at += in_bytes[r], ++r)
      e.copy(in.get() + at, ins[r], in_bytes[r]);
    e.all_to_all(in.get(), in_bytes, out.get(), out_bytes, tag, timeout);
    for (size_t r = 0, at = 0; r < n; at += out_bytes[r], ++r)
      e.copy(outs[r], out.get() + at, out_bytes[r]);
  };
  return c;
}

int64_t all_to_all_(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                    int64_t group_id, bool async_op) {
  constexpr const char* op = "loom::all_to_all_";
  auto g = group(group_id, op);
  const size_t n = static_cast<size_t>(g->size());
  if (outputs.size() != n || inputs.size() != n) {
    refuse(op, "expected one input and one output per rank of the group (" + std::to_string(n) +
                   "), found " + std::to_string(inputs.size()) + " inputs and " +
                   std::to_string(outputs.size()) + " outputs");
  }
  const ElementType type = element_type(op, inputs[0].dtype());
  check_type(op, *g, type);
  std::vector<const char*> ins;
  std::vector<char*> outs;
  std::vector<size_t> in_bytes, out_bytes;
  for (size_t r = 0; r < n; ++r) {
    check_like(op, *g, outputs[r], inputs[0], outputs[r].numel(), "output " + std::to_string(r));
    check_like(op, *g, inputs[r], inputs[0], inputs[r].numel(), "input " + std::to_string(r));
    ins.push_back(inputs[r].data<char>());
    outs.push_back(outputs[r].data<char>());
    in_bytes.push_back(byte_size(inputs[r]));
    out_bytes.push_back(byte_size(outputs[r]));
  }
  Collective c =
      all_to_all_collective(op, type, inputs[0], ins, in_bytes, outs, out_bytes, g->global_ranks());
  for (const Tensor& t : inputs) c.keep_alive.push_back(keep(t));
  for (const Tensor& t : outputs) c.keep_alive.push_back(keep(t));
  return submit(g, std::move(c), async_op);
}

// Splits dim 0 of `t` into `splits` rows per rank (empty: equal parts).
std::vector<size_t> split_bytes(const char* op, const Tensor& t, std::span<const int64_t> splits,
                                size_t n, const char* what) {
  const int64_t rows = t.dim() == 0 ? 1 : t.sizes()[0];
  const size_t row_bytes = rows == 0 ? 0 : byte_size(t) / static_cast<size_t>(rows);
  std::vector<size_t> out;
  if (splits.empty()) {
    if (rows % static_cast<int64_t>(n) != 0) {
      refuse(op, std::string("without split sizes, dim 0 of ") + what + " (" +
                     std::to_string(rows) + ") must divide by the group size " + std::to_string(n));
    }
    out.assign(n, row_bytes * static_cast<size_t>(rows / static_cast<int64_t>(n)));
    return out;
  }
  if (splits.size() != n) {
    refuse(op, std::string("expected ") + std::to_string(n) + " " + what + " split sizes, found " +
                   std::to_string(splits.size()));
  }
  int64_t total = 0;
  for (int64_t s : splits) {
    if (s < 0) refuse(op, std::string(what) + " split sizes must be non-negative");
    total += s;
    out.push_back(static_cast<size_t>(s) * row_bytes);
  }
  if (total != rows) {
    refuse(op, std::string(what) + " split sizes add up to " + std::to_string(total) +
                   ", but dim 0 has " + std::to_string(rows) + " rows");
  }
  return out;
}

int64_t all_to_all_single_(const Tensor& output, const Tensor& self,
                           std::span<const int64_t> output_split_sizes,
                           std::span<const int64_t> input_split_sizes, int64_t group_id,
                           bool async_op) {
  constexpr const char* op = "loom::all_to_all_single_";
  const ElementType type = element_type(op, self.dtype());
  auto g = group(group_id, op);
  check_dense(op, *g, self, "the input");
  check_type(op, *g, type);
  check_like(op, *g, output, self, output.numel(), "the output");
  const size_t n = static_cast<size_t>(g->size());
  std::vector<size_t> in_bytes = split_bytes(op, self, input_split_sizes, n, "input");
  std::vector<size_t> out_bytes = split_bytes(op, output, output_split_sizes, n, "output");
  std::vector<const char*> ins;
  std::vector<char*> outs;
  size_t at_in = 0, at_out = 0;
  for (size_t r = 0; r < n; ++r) {
    ins.push_back(self.data<char>() + at_in);
    outs.push_back(output.data<char>() + at_out);
    at_in += in_bytes[r];
    at_out += out_bytes[r];
  }
  Collective c =
      all_to_all_collective(op, type, self, ins, in_bytes, outs, out_bytes, g->global_ranks());
  c.keep_alive = {keep(self), keep(output)};
  return submit(g, std::move(c), async_op);
}

int64_t barrier(int64_t group_id, bool async_op) {
  auto g = group(group_id, "loom::barrier");
  Collective c;
  c.fingerprint.kind = static_cast<uint8_t>(CollectiveKind::kBarrier);
  c.body = [](Engine&, const std::vector<std::span<const char>>&, milliseconds, uint32_t) {};
  return submit(g, std::move(c), async_op);
}

Collective point_to_point(const char* op, CollectiveKind kind, const Tensor& t, int64_t peer,
                          int64_t tag, const ProcessGroup& g) {
  const ElementType type = element_type(op, t.dtype());
  check_dense(op, g, t, "the tensor");
  check_type(op, g, type);
  Collective c;
  c.stream = stream_of(t);
  c.peer =
      local_rank(op, g, peer, kind == CollectiveKind::kSend ? "the destination" : "the source");
  if (c.peer == g.rank()) refuse(op, "a rank cannot send to or receive from itself");
  if (tag < 0 || tag > INT32_MAX)
    refuse(op, "the tag must be in 0..2^31-1, found " + std::to_string(tag));
  c.fingerprint = fingerprint_of(kind, t, type);
  c.fingerprint.root = static_cast<int32_t>(tag);
  char* data = t.data<char>();
  const size_t bytes = byte_size(t);
  const int p = c.peer;
  c.body = [=](Engine& e, const std::vector<std::span<const char>>&, milliseconds timeout,
               uint32_t wire_tag) {
    if (kind == CollectiveKind::kSend) {
      e.send(data, bytes, p, wire_tag, timeout);
    } else {
      e.recv(data, bytes, p, wire_tag, timeout);
    }
  };
  c.keep_alive.push_back(keep(t));
  return c;
}

int64_t send(const Tensor& self, int64_t dst, int64_t group_id, int64_t tag, bool async_op) {
  auto g = group(group_id, "loom::send");
  return submit(g, point_to_point("loom::send", CollectiveKind::kSend, self, dst, tag, *g),
                async_op);
}

int64_t recv_(const Tensor& self, int64_t src, int64_t group_id, int64_t tag, bool async_op) {
  auto g = group(group_id, "loom::recv_");
  return submit(g, point_to_point("loom::recv_", CollectiveKind::kRecv, self, src, tag, *g),
                async_op);
}

}  // namespace

void register_distributed_kernels(sdk::Registrar& r) {
  // CPU tensors go to gloo and mpi groups, CUDA tensors to nccl groups; each kernel
  // checks its tensors against the group's engine.
  for (const uint32_t key : {uint32_t{LOOM_KEY_CPU}, uint32_t{LOOM_KEY_CUDA}}) {
    r.impl<&all_reduce_>("loom::all_reduce_", key);
    r.impl<&broadcast_>("loom::broadcast_", key);
    r.impl<&reduce_>("loom::reduce_", key);
    r.impl<&all_gather_>("loom::all_gather_", key);
    r.impl<&all_gather_into_tensor_>("loom::all_gather_into_tensor_", key);
    r.impl<&reduce_scatter_>("loom::reduce_scatter_", key);
    r.impl<&reduce_scatter_tensor_>("loom::reduce_scatter_tensor_", key);
    r.impl<&all_to_all_>("loom::all_to_all_", key);
    r.impl<&all_to_all_single_>("loom::all_to_all_single_", key);
    r.impl<&barrier>("loom::barrier", key);
    r.impl<&send>("loom::send", key);
    r.impl<&recv_>("loom::recv_", key);
  }
}

}  // namespace loom::distributed
