// oneDNN's int8 matmul and convolution with cached primitives and packed weights
// (Note [Integer products on oneDNN] in onednn_int8.h).
#include "onednn_int8.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "loom/sdk/extension.hpp"
#include "loom/sdk/plugin.hpp"

namespace loom::quantization {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// Primitives by a key naming everything they were made for; bounded (shapes repeat).
template <typename P>
class Int8PrimitiveCache {
 public:
  P get(const std::string& key, const std::function<P()>& create) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = map_.find(key);
      if (it != map_.end()) return it->second;
    }
    P p = create();
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_.size() >= 128) map_.clear();
    map_.emplace(key, p);
    return p;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, P> map_;
};

std::string key_of(const char* kind, std::initializer_list<int64_t> values) {
  std::string k = kind;
  for (int64_t v : values) k += "," + std::to_string(v);
  return k;
}

// The weights reordered for a primitive, kept on the weight tensor (an extension slot)
// for as long as its version stays the same.
struct PackedWeights {
  uint64_t version = 0;
  std::vector<std::pair<memory::desc, memory>> packed;
};

std::mutex& packing_mutex() {
  static std::mutex m;
  return m;
}

memory packed_weights(const sdk::Tensor& weight, const memory::desc& wanted,
                      const memory::desc& given) {
  static const int32_t slot = sdk::slot_of("quantization.packed_weights");
  std::lock_guard<std::mutex> lock(packing_mutex());
  const uint64_t version = sdk::version(weight);
  auto* cache = static_cast<PackedWeights*>(sdk::slot_value(weight, slot));
  if (cache == nullptr || cache->version != version) {
    cache = new PackedWeights{version, {}};
    sdk::set_slot_value(weight, slot, cache,
                        [](void* p) { delete static_cast<PackedWeights*>(p); });
  }
  for (const auto& [desc, mem] : cache->packed) {
    if (desc == wanted) return mem;
  }
  memory user(given, int8_engine(), const_cast<int8_t*>(weight.data<int8_t>()));
  memory out(wanted, int8_engine());
  dnnl::reorder(user, out).execute(int8_stream(), user, out);
  int8_stream().wait();
  cache->packed.emplace_back(wanted, out);
  return out;
}

memory zero_point_memory(int32_t* zp) {
  return memory({{1}, dt::s32, tag::x}, int8_engine(), zp);
}

dnnl::primitive_attr with_src_zero_point() {
  dnnl::primitive_attr attr;
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  return attr;
}

}  // namespace

dnnl::engine& int8_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

bool int8_products_are_exact_for_full_range() {
  // dnnl_cpu_isa_t is a bit mask: 0x40 marks AVX-512 VNNI, 0x400 AVX-VNNI.
  static const bool exact = [] {
    const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    return (isa & 0x40u) != 0 || (isa & 0x400u) != 0;
  }();
  return exact;
}

dnnl::stream& int8_stream() {
  thread_local dnnl::stream stream(int8_engine());
  return stream;
}

void int8_matmul(const uint8_t* src, int64_t m, int64_t k, int32_t src_zp,
                 const sdk::Tensor& weight, int32_t* acc, int64_t n) {
  static Int8PrimitiveCache<dnnl::matmul::primitive_desc> cache;
  const memory::desc src_md({m, k}, dt::u8, tag::ab);
  const memory::desc dst_md({m, n}, dt::s32, tag::ab);
  const memory::desc given_weights({k, n}, dt::s8, tag::ba);  // stored [n, k]
  dnnl::matmul::primitive_desc pd = cache.get(key_of("matmul", {m, k, n}), [&] {
    const memory::desc any_weights({k, n}, dt::s8, tag::any);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, any_weights, dst_md),
                                        with_src_zero_point(), int8_engine());
  });
  memory weights = packed_weights(weight, pd.weights_desc(), given_weights);
  memory src_mem(src_md, int8_engine(), const_cast<uint8_t*>(src));
  memory dst_mem(dst_md, int8_engine(), acc);
  int32_t zp = src_zp;
  memory zp_mem = zero_point_memory(&zp);
  dnnl::matmul(pd).execute(int8_stream(), {{DNNL_ARG_SRC, src_mem},
                                           {DNNL_ARG_WEIGHTS, weights},
                                           {DNNL_ARG_DST, dst_mem},
                                           {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_mem}});
  int8_stream().wait();
}

void int8_conv2d(const uint8_t* src, const ConvShape& s, int32_t src_zp, const sdk::Tensor& weight,
                 const ConvOutput& output, void* dst) {
  static Int8PrimitiveCache<dnnl::convolution_forward::primitive_desc> cache;
  const dt dst_type = output.is_signed ? dt::s8 : dt::u8;
  const memory::desc src_md({s.batch, s.in_channels, s.height, s.width}, dt::u8, tag::nhwc);
  const memory::desc dst_md({s.batch, s.out_channels, s.out_h, s.out_w}, dst_type, tag::nhwc);
  const memory::desc bias_md({s.out_channels}, dt::f32, tag::x);
  const bool has_bias = !output.bias.empty();
  const bool grouped = s.groups > 1;
  const memory::dims weight_dims =
      grouped ? memory::dims{s.groups, s.out_channels / s.groups, s.in_channels / s.groups,
                             s.kernel_h, s.kernel_w}
              : memory::dims{s.out_channels, s.in_channels, s.kernel_h, s.kernel_w};
  const memory::desc given_weights(weight_dims, dt::s8, grouped ? tag::goihw : tag::oihw);
  // oneDNN 2.x takes a convolution's output scales when the primitive is made (only
  // matmul takes them at run time): they are part of its key, bit for bit.
  std::string key =
      key_of("conv", {s.batch, s.in_channels, s.height, s.width, s.out_channels, s.kernel_h,
                      s.kernel_w, s.stride_h, s.stride_w, s.pad_h, s.pad_w, s.dilation_h,
                      s.dilation_w, s.groups, has_bias, output.relu, output.is_signed});
  key.append(reinterpret_cast<const char*>(output.scales.data()),
             output.scales.size() * sizeof(float));
  dnnl::convolution_forward::primitive_desc pd = cache.get(key, [&] {
    const memory::desc any_weights(weight_dims, dt::s8, tag::any);
    dnnl::primitive_attr attr = with_src_zero_point();
    attr.set_output_scales(1 << 1, output.scales);
    attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    if (output.relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    // oneDNN counts dilation from 0 (1 in PyTorch means none).
    const memory::dims strides{s.stride_h, s.stride_w},
        dilation{s.dilation_h - 1, s.dilation_w - 1}, padding{s.pad_h, s.pad_w};
    auto desc = has_bias
                    ? dnnl::convolution_forward::desc(
                          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                          src_md, any_weights, bias_md, dst_md, strides, dilation, padding, padding)
                    : dnnl::convolution_forward::desc(
                          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                          src_md, any_weights, dst_md, strides, dilation, padding, padding);
    return dnnl::convolution_forward::primitive_desc(desc, attr, int8_engine());
  });
  memory weights = packed_weights(weight, pd.weights_desc(), given_weights);
  memory src_mem(src_md, int8_engine(), const_cast<uint8_t*>(src));
  memory dst_mem(dst_md, int8_engine(), dst);
  int32_t zp = src_zp, dst_zp = output.zero_point;
  memory zp_mem = zero_point_memory(&zp), dst_zp_mem = zero_point_memory(&dst_zp);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src_mem},
                                          {DNNL_ARG_WEIGHTS, weights},
                                          {DNNL_ARG_DST, dst_mem},
                                          {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_mem},
                                          {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, dst_zp_mem}};
  if (has_bias) {
    args.emplace(DNNL_ARG_BIAS,
                 memory(bias_md, int8_engine(), const_cast<float*>(output.bias.data())));
  }
  dnnl::convolution_forward(pd).execute(int8_stream(), args);
  int8_stream().wait();
}

}  // namespace loom::quantization
