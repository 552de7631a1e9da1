// 2-D convolution on CPU tensors (NCHW, row-major or channels last): forward (also with
// an activation, _conv2d_activation), backward data and backward weights. float32 on
// oneDNN's convolution primitives, bfloat16 on its bfloat16 ones where the CPU has them
// (Note [bfloat16 convolutions on oneDNN]), float16 and other bfloat16 through float32,
// float64 by a direct loop.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../kernels.h"
#include "../onednn_util.h"
#include "../scalar_types.h"
#include "loom/sdk/ops.hpp"

namespace loom::cpu {
namespace {

using dnnl::memory;

// The geometry of one convolution: input [n, c, h, w], weight [oc, c / groups, kh, kw],
// output [n, oc, oh, ow].
struct ConvGeometry {
  int64_t n, c, h, w, oc, kh, kw, oh, ow;
  int64_t stride[2], padding[2], dilation[2], groups;
};

std::array<int64_t, 2> pair_of(std::span<const int64_t> v) {
  if (v.size() == 1) return {v[0], v[0]};
  return {v[0], v[1]};
}

ConvGeometry geometry(std::span<const int64_t> input, std::span<const int64_t> weight,
                      std::span<const int64_t> output, std::span<const int64_t> stride,
                      std::span<const int64_t> padding, std::span<const int64_t> dilation,
                      int64_t groups) {
  // an unbatched [c, h, w] input is a batch of one
  size_t b = input.size() == 3 ? 0 : 1;
  ConvGeometry g{b ? input[0] : 1,
                 input[b],
                 input[b + 1],
                 input[b + 2],
                 weight[0],
                 weight[2],
                 weight[3],
                 output[output.size() - 2],
                 output[output.size() - 1],
                 {},
                 {},
                 {},
                 groups};
  auto s = pair_of(stride), p = pair_of(padding), d = pair_of(dilation);
  for (int i = 0; i < 2; ++i) {
    g.stride[i] = s[i];
    g.padding[i] = p[i];
    g.dilation[i] = d[i];
  }
  return g;
}

// --- float64: a direct loop over every (output, kernel tap) pair ---

// Calls f(input_index, weight_index, output_index) for every multiply of the convolution
// (contiguous NCHW / OIHW layouts), skipping taps that fall in the padding.
template <typename F>
void for_each_tap(const ConvGeometry& g, F&& f) {
  int64_t cg = g.c / g.groups, ocg = g.oc / g.groups;
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oc = 0; oc < g.oc; ++oc) {
      int64_t group = oc / ocg;
      for (int64_t ic = 0; ic < cg; ++ic) {
        int64_t c = group * cg + ic;
        for (int64_t y = 0; y < g.oh; ++y) {
          for (int64_t x = 0; x < g.ow; ++x) {
            int64_t out_index = ((n * g.oc + oc) * g.oh + y) * g.ow + x;
            for (int64_t i = 0; i < g.kh; ++i) {
              int64_t iy = y * g.stride[0] - g.padding[0] + i * g.dilation[0];
              if (iy < 0 || iy >= g.h) continue;
              for (int64_t j = 0; j < g.kw; ++j) {
                int64_t ix = x * g.stride[1] - g.padding[1] + j * g.dilation[1];
                if (ix < 0 || ix >= g.w) continue;
                f(((n * g.c + c) * g.h + iy) * g.w + ix, ((oc * cg + ic) * g.kh + i) * g.kw + j,
                  out_index);
              }
            }
          }
        }
      }
    }
  }
}

// --- float32 on oneDNN ---

memory::dims dims_of(std::initializer_list<int64_t> v) {
  return memory::dims(v.begin(), v.end());
}

struct OnednnConv {
  memory::dims src, weights, dst, bias, strides, dilates, padding;
};

OnednnConv onednn_dims(const ConvGeometry& g) {
  OnednnConv d;
  d.src = dims_of({g.n, g.c, g.h, g.w});
  d.dst = dims_of({g.n, g.oc, g.oh, g.ow});
  d.weights = g.groups == 1 ? dims_of({g.oc, g.c, g.kh, g.kw})
                            : dims_of({g.groups, g.oc / g.groups, g.c / g.groups, g.kh, g.kw});
  d.bias = dims_of({g.oc});
  d.strides = dims_of({g.stride[0], g.stride[1]});
  d.dilates = dims_of({g.dilation[0] - 1, g.dilation[1] - 1});  // oneDNN counts the gaps
  d.padding = dims_of({g.padding[0], g.padding[1]});
  return d;
}

// Note [bfloat16 convolutions on oneDNN]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// When every operand of a call is a dense bfloat16 tensor and the CPU has bfloat16
// instructions (onednn_has_bfloat16: AVX512-BF16 or AMX), the primitives take the
// tensors as they are, in bfloat16 (oneDNN multiplies and sums in float32 and rounds the
// result once, to nearest even, as store_as does); the layouts are measured and cached
// per dtype like float32's (Note [Convolution layouts by measurement]). Elsewhere
// bfloat16 goes through float32 copies as float16 does: two conversions and twice the
// memory traffic around float32 kernels, which made autocast's bfloat16 CNN step slower
// than its float32 one.

// An operand of a convolution as the caller's tensor holds it (float32 or bfloat16):
// row-major, or channels last ([N, C, H, W] stored as NHWC; a weight [OC, IC, kH, kW] as
// OHWI).
struct Operand {
  void* data;
  bool channels_last;
  memory::data_type type = memory::data_type::f32;
};

// The layout of a user buffer of `dims`: 1-D (bias), 4-D (activations, weights) or 5-D
// (grouped weights [G, OC/G, IC/G, kH, kW], channels last keeping IC/G innermost).
memory::desc plain(const memory::dims& dims, bool channels_last, memory::data_type type) {
  using tag = memory::format_tag;
  memory::format_tag t = dims.size() == 1   ? tag::a
                         : dims.size() == 4 ? (channels_last ? tag::acdb : tag::abcd)
                                            : (channels_last ? tag::abdec : tag::abcde);
  return memory::desc(dims, type, t);
}

memory::desc any(const memory::dims& dims, memory::data_type type) {
  return memory::desc(dims, type, memory::format_tag::any);
}

// Which of a call's three operands (the input or its gradient, the weight or its
// gradient, the output or its gradient) are channels last, and their dtype.
struct ConvLayouts {
  bool src, weights, dst;
  memory::data_type type = memory::data_type::f32;
};

PrimitiveKey conv_key(const char* kind, const ConvGeometry& g, bool bias,
                      const ConvLayouts& layouts) {
  PrimitiveKey key(kind);
  for (int64_t v :
       {g.n, g.c, g.h, g.w, g.oc, g.kh, g.kw, g.oh, g.ow, g.stride[0], g.stride[1], g.padding[0],
        g.padding[1], g.dilation[0], g.dilation[1], g.groups, int64_t{bias}}) {
    key.add(v);
  }
  for (bool channels_last : {layouts.src, layouts.weights, layouts.dst}) {
    key.add(int64_t{channels_last});
  }
  key.add(static_cast<int64_t>(layouts.type));
  return key;
}

// One argument of a convolution primitive: its user layout and data, and whether the
// primitive writes it.
struct ConvArg {
  int id;
  memory::dims dims;
  Operand operand;
  bool output;
};

// Runs `prim` whose arguments want the layouts `wanted`, reordering plain user buffers into
// (and out of) the primitive's layouts where they differ. The staging buffers come from
// the device allocator, like tensors (its host cache reuses their pages from call to
// call); oneDNN's own allocation would map and fault in fresh pages on every call.
void execute(const dnnl::primitive& prim, const std::vector<ConvArg>& args,
             const std::vector<memory::desc>& wanted) {
  dnnl::engine& eng = onednn_engine();
  dnnl::stream& strm = onednn_stream();
  std::unordered_map<int, memory> bound;
  std::vector<std::pair<memory, memory>> write_back;  // (primitive's, user's)
  std::vector<sdk::Tensor> staging;
  for (size_t i = 0; i < args.size(); ++i) {
    memory user(plain(args[i].dims, args[i].operand.channels_last, args[i].operand.type), eng,
                args[i].operand.data);
    if (wanted[i] == user.get_desc()) {
      bound.emplace(args[i].id, user);
      continue;
    }
    const int64_t floats = static_cast<int64_t>((wanted[i].get_size() + 3) / 4);
    staging.push_back(sdk::empty({floats}, LOOM_DTYPE_FLOAT32, LoomDevice{LOOM_DEVICE_CPU, -1}));
    memory staged(wanted[i], eng, staging.back().data<float>());
    if (args[i].output) {
      write_back.emplace_back(staged, user);
    } else {
      dnnl::reorder(user, staged).execute(strm, user, staged);
    }
    bound.emplace(args[i].id, staged);
  }
  prim.execute(strm, bound);
  for (auto& [staged, user] : write_back) dnnl::reorder(staged, user).execute(strm, staged, user);
  strm.wait();
}

// Note [Convolution layouts by measurement]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Tensors are NCHW, row-major or channels last. A primitive that takes them as they are
// (plain activations) runs oneDNN's im2col + GEMM kernel on row-major ones and its direct
// JIT kernels on channels-last ones, which vectorise over channels like the blocked
// layouts; one that takes oneDNN's blocked layouts (nChw16c) runs its direct JIT kernels,
// at the price of reordering the activations in and the result out on every call. Which
// is faster depends on the shape and the machine: on the 2-core Intel VM (AVX-512) the
// blocked kernels with their reorders are 1.9-2.3x faster than im2col for 64x32x14x14
// 32->64 and 8x64x56x56 64->64 3x3 in all three directions, while for a one-channel input
// the plain GEMM computes the input's gradient 4.5x faster; on an earlier AMD VM plain
// GEMM won for 8x64x56x56. So the first call of each geometry, layout and direction
// creates both candidates and runs each on the call's own buffers (one warm-up run, then
// the best of two), and keeps the faster: plain unless blocked is at least 10% faster, so
// near ties keep the layout without reorders. A candidate oneDNN only has a reference
// implementation for is not taken when the other exists. LOOM_CPU_CONV_LAYOUT=plain|blocked
// pins the choice (the results of the two may differ in the last bits, so a run that must
// repeat bit for bit across processes pins it).

enum class ConvLayout { measure, plain, blocked };

ConvLayout& conv_layout_setting() {
  static ConvLayout setting = ConvLayout::measure;
  return setting;
}

template <typename Pd>
bool is_reference(const Pd& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

// A convolution primitive of one direction and the descriptor it was created from.
template <typename Primitive>
struct ConvPrimitive {
  typename Primitive::primitive_desc pd;
  Primitive prim;
  bool plain_layout;  // on the caller's layouts (else oneDNN's, with reorders)
};

// Seconds of the best of `runs` calls of run().
template <typename Run>
double best_time(Run&& run, int runs) {
  double best = 0;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = i == 0 ? t : std::min(best, t);
  }
  return best;
}

// The primitive for one geometry and direction (Note [Convolution layouts by
// measurement]): make_pd(plain_layout) creates a descriptor, run(conv) executes a
// candidate on the call's buffers.
template <typename Primitive, typename MakePd, typename Run>
std::shared_ptr<ConvPrimitive<Primitive>> create_conv(MakePd&& make_pd, Run&& run) {
  using Conv = ConvPrimitive<Primitive>;
  auto make = [](const typename Primitive::primitive_desc& pd, bool plain_layout) {
    return std::make_shared<Conv>(Conv{pd, Primitive(pd), plain_layout});
  };
  const ConvLayout setting = conv_layout_setting();
  std::shared_ptr<Conv> plain;
  if (setting != ConvLayout::blocked) {
    try {
      auto pd = make_pd(true);
      if (!is_reference(pd)) plain = make(pd, true);
    } catch (const dnnl::error&) {
      // no implementation for plain activations
    }
  }
  if (plain != nullptr && setting == ConvLayout::plain) return plain;
  if (plain == nullptr) return make(make_pd(false), false);
  std::shared_ptr<Conv> blocked;
  try {
    blocked = make(make_pd(false), false);
  } catch (const dnnl::error&) {
    return plain;  // no implementation for oneDNN's own layouts
  }
  if (is_reference(blocked->pd)) return plain;
  run(*plain);
  run(*blocked);
  const double plain_time = best_time([&] { run(*plain); }, 2);
  const double blocked_time = best_time([&] { run(*blocked); }, 2);
  return blocked_time < 0.9 * plain_time ? blocked : plain;
}

// Activation descriptors: the caller's layout, or oneDNN's choice.
memory::desc activation(const memory::dims& dims, bool plain_layout, bool channels_last,
                        memory::data_type type) {
  return plain_layout ? plain(dims, channels_last, type) : any(dims, type);
}

dnnl::convolution_forward::primitive_desc forward_pd(const ConvGeometry& g, bool bias,
                                                     dnnl::prop_kind kind, bool plain_layout,
                                                     const ConvLayouts& layouts,
                                                     const dnnl::primitive_attr& attr = {}) {
  OnednnConv d = onednn_dims(g);
  const memory::data_type type = layouts.type;
  memory::desc src = activation(d.src, plain_layout, layouts.src, type),
               dst = activation(d.dst, plain_layout, layouts.dst, type);
  auto desc = bias ? dnnl::convolution_forward::desc(kind, dnnl::algorithm::convolution_direct, src,
                                                     any(d.weights, type), any(d.bias, type), dst,
                                                     d.strides, d.dilates, d.padding, d.padding)
                   : dnnl::convolution_forward::desc(kind, dnnl::algorithm::convolution_direct, src,
                                                     any(d.weights, type), dst, d.strides,
                                                     d.dilates, d.padding, d.padding);
  return dnnl::convolution_forward::primitive_desc(desc, attr, onednn_engine());
}

// The forward convolution into dst. With `activation` (an eltwise algorithm, Note [conv2d
// with an activation]) it is applied to each output block as oneDNN writes it, unless the
// convolution runs as a gemm: then the call returns false and the caller applies it.
// bias: null, or oc values of src's dtype.
bool onednn_forward(const ConvGeometry& g, Operand src, Operand weights, void* bias, Operand dst,
                    const char* op, std::optional<dnnl::algorithm> activation = std::nullopt) {
  using Forward = ConvPrimitive<dnnl::convolution_forward>;
  static PrimitiveCache<std::shared_ptr<Forward>> cache;
  bool activated = false;
  with_onednn_errors(op, [&] {
    const OnednnConv d = onednn_dims(g);
    const ConvLayouts layouts{src.channels_last, weights.channels_last, dst.channels_last,
                              src.type};
    auto run = [&](const Forward& conv) {
      std::vector<ConvArg> args = {{DNNL_ARG_SRC, d.src, src, false},
                                   {DNNL_ARG_WEIGHTS, d.weights, weights, false},
                                   {DNNL_ARG_DST, d.dst, dst, true}};
      std::vector<memory::desc> wanted = {conv.pd.src_desc(), conv.pd.weights_desc(),
                                          conv.pd.dst_desc()};
      if (bias != nullptr) {
        args.push_back({DNNL_ARG_BIAS, d.bias, {bias, false, src.type}, false});
        wanted.push_back(conv.pd.bias_desc());
      }
      execute(conv.prim, args, wanted);
    };
    const PrimitiveKey key = conv_key("conv_fwd", g, bias != nullptr, layouts);
    auto conv = cache.get(key, [&] {
      return create_conv<dnnl::convolution_forward>(
          [&](bool plain_layout) {
            return forward_pd(g, bias != nullptr, dnnl::prop_kind::forward_inference, plain_layout,
                              layouts);
          },
          run);
    });
    const bool gemm = std::string_view(conv->pd.impl_info_str()).find("gemm") != std::string::npos;
    if (activation && !gemm) {
      PrimitiveKey fused_key = key;
      fused_key.add(static_cast<int64_t>(*activation));
      conv = cache.get(fused_key, [&] {
        dnnl::primitive_attr attr;
        dnnl::post_ops post;
        post.append_eltwise(1.0f, *activation, 0.0f, 0.0f);
        attr.set_post_ops(post);
        auto pd = forward_pd(g, bias != nullptr, dnnl::prop_kind::forward_inference,
                             conv->plain_layout, layouts, attr);
        return std::make_shared<Forward>(
            Forward{pd, dnnl::convolution_forward(pd), conv->plain_layout});
      });
      activated = true;
    }
    run(*conv);
  });
  return activated;
}

// A backward convolution primitive (convolution_backward_data or _weights) for g, created
// once per geometry with the forward primitive of the same layouts as its hint; run(conv)
// executes a candidate on the call's buffers.
template <typename Primitive, typename Run>
std::shared_ptr<ConvPrimitive<Primitive>> backward_primitive(const ConvGeometry& g,
                                                             const char* kind,
                                                             const ConvLayouts& layouts,
                                                             Run&& run) {
  static PrimitiveCache<std::shared_ptr<ConvPrimitive<Primitive>>> cache;
  return cache.get(conv_key(kind, g, false, layouts), [&] {
    const OnednnConv d = onednn_dims(g);
    return create_conv<Primitive>(
        [&](bool plain_layout) {
          auto hint =
              forward_pd(g, false, dnnl::prop_kind::forward_training, plain_layout, layouts);
          typename Primitive::desc desc(dnnl::algorithm::convolution_direct,
                                        activation(d.src, plain_layout, layouts.src, layouts.type),
                                        any(d.weights, layouts.type),
                                        activation(d.dst, plain_layout, layouts.dst, layouts.type),
                                        d.strides, d.dilates, d.padding, d.padding);
          return typename Primitive::primitive_desc(desc, onednn_engine(), hint);
        },
        run);
  });
}

// Note [Input gradient as a forward convolution]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With stride 1, the input's gradient is a forward convolution of grad_output by the
// weight flipped in both spatial dims, with its input and output channels swapped within
// each group, padded by dilation * (k - 1) - padding on each side:
//   grad_in[n, c, y, x] = sum over o, i, j of grad_out[n, o, y + p - i d, x + p - j d]
//                                            * w[o, c, i, j]
// and with i' = k - 1 - i the row read is y - (d (k - 1) - p) + i' d. Debian's oneDNN
// (2.7) has its brgemm kernels for the forward direction only: for channels-last tensors
// its direct backward-data kernel takes 6.1-6.3 ms on [8, 64, 56, 56] 64->64 3x3 where
// the forward one takes 5.3-5.5 (2-core Intel VM); oneDNN 3, PyTorch 2.x's, computes its
// backward-data the same way. So a channels-last input gradient with stride 1 (and
// padding at most the dilated kernel's reach) runs as that forward convolution, the
// flipped weight made per call (OC x IC x kH x kW floats). Row-major tensors keep the
// measured backward primitive, which is as fast as their forward.

// Whether g's input gradient can be a forward convolution (stride 1, padding within the
// dilated kernel).
bool input_gradient_as_forward(const ConvGeometry& g) {
  return g.stride[0] == 1 && g.stride[1] == 1 && g.padding[0] <= g.dilation[0] * (g.kh - 1) &&
         g.padding[1] <= g.dilation[1] * (g.kw - 1);
}

// The forward convolution that computes g's input gradient: grad_output is its input.
ConvGeometry flipped_geometry(const ConvGeometry& g) {
  ConvGeometry f = g;
  f.c = g.oc;
  f.h = g.oh;
  f.w = g.ow;
  f.oc = g.c;
  f.oh = g.h;
  f.ow = g.w;
  const int64_t kernel[2] = {g.kh, g.kw};
  for (int i = 0; i < 2; ++i) f.padding[i] = g.dilation[i] * (kernel[i] - 1) - g.padding[i];
  return f;
}

// The weight of flipped_geometry(g), row-major [C, OC / groups, kH, kW], into `flipped`:
// w[o, c, i, j] (row-major [OC, C / groups, kH, kW] or channels last) flipped in i and j,
// o and c swapped within each group. E: the elements' bits (float32 or bfloat16).
template <typename E>
void flip_weight(const ConvGeometry& g, Operand w, E* flipped) {
  const E* from_data = static_cast<const E*>(w.data);
  const int64_t ocg = g.oc / g.groups, icg = g.c / g.groups, kh = g.kh, kw = g.kw;
  for (int64_t o = 0; o < g.oc; ++o) {
    const int64_t group = o / ocg, o_in_group = o % ocg;
    for (int64_t c = 0; c < icg; ++c) {
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) {
          const int64_t from = w.channels_last ? ((o * kh + i) * kw + j) * icg + c
                                               : ((o * icg + c) * kh + i) * kw + j;
          const int64_t to =
              (((group * icg + c) * ocg + o_in_group) * kh + (kh - 1 - i)) * kw + (kw - 1 - j);
          flipped[to] = from_data[from];
        }
      }
    }
  }
}

void onednn_backward_data(const ConvGeometry& g, Operand grad_out, Operand weights, Operand grad_in,
                          const char* op) {
  using BackwardData = ConvPrimitive<dnnl::convolution_backward_data>;
  if ((grad_out.channels_last || grad_in.channels_last) && input_gradient_as_forward(g)) {
    const bool bfloat16 = weights.type == memory::data_type::bf16;
    sdk::Tensor flipped = sdk::empty({g.oc * (g.c / g.groups) * g.kh * g.kw},
                                     bfloat16 ? LOOM_DTYPE_BFLOAT16 : LOOM_DTYPE_FLOAT32,
                                     LoomDevice{LOOM_DEVICE_CPU, -1});
    if (bfloat16) {
      flip_weight(g, weights, flipped.data<uint16_t>());
    } else {
      flip_weight(g, weights, flipped.data<float>());
    }
    onednn_forward(flipped_geometry(g), grad_out, {flipped.data(), false, weights.type}, nullptr,
                   grad_in, op);
    return;
  }
  with_onednn_errors(op, [&] {
    const OnednnConv d = onednn_dims(g);
    auto run = [&](const BackwardData& conv) {
      execute(conv.prim,
              {{DNNL_ARG_DIFF_DST, d.dst, grad_out, false},
               {DNNL_ARG_WEIGHTS, d.weights, weights, false},
               {DNNL_ARG_DIFF_SRC, d.src, grad_in, true}},
              {conv.pd.diff_dst_desc(), conv.pd.weights_desc(), conv.pd.diff_src_desc()});
    };
    const ConvLayouts layouts{grad_in.channels_last, weights.channels_last, grad_out.channels_last,
                              weights.type};
    run(*backward_primitive<dnnl::convolution_backward_data>(g, "conv_bwd_data", layouts, run));
  });
}

void onednn_backward_weights(const ConvGeometry& g, Operand grad_out, Operand src,
                             Operand grad_weights, const char* op) {
  using BackwardWeights = ConvPrimitive<dnnl::convolution_backward_weights>;
  with_onednn_errors(op, [&] {
    const OnednnConv d = onednn_dims(g);
    auto run = [&](const BackwardWeights& conv) {
      execute(conv.prim,
              {{DNNL_ARG_DIFF_DST, d.dst, grad_out, false},
               {DNNL_ARG_SRC, d.src, src, false},
               {DNNL_ARG_DIFF_WEIGHTS, d.weights, grad_weights, true}},
              {conv.pd.diff_dst_desc(), conv.pd.src_desc(), conv.pd.diff_weights_desc()});
    };
    const ConvLayouts layouts{src.channels_last, grad_weights.channels_last, grad_out.channels_last,
                              src.type};
    run(*backward_primitive<dnnl::convolution_backward_weights>(g, "conv_bwd_weights", layouts,
                                                                run));
  });
}

// --- staging: dense float32 inputs and output for oneDNN ---

// Whether a float32 tensor can be handed to oneDNN as it is, and in which layout: dense
// row-major, or dense channels last (a tensor that is both counts as row-major).
std::optional<bool> dense_layout(const sdk::Tensor& t) {
  if (t.dtype() != LOOM_DTYPE_FLOAT32) return std::nullopt;
  if (t.is_contiguous()) return false;
  if (t.is_channels_last()) return true;
  return std::nullopt;
}

// The data of `t` as a dense float32 operand (the tensor itself when it already is one,
// else a row-major float32 copy).
struct F32Input {
  std::vector<float> storage;
  Operand operand;
};

F32Input f32_input(const sdk::Tensor& t) {
  if (std::optional<bool> channels_last = dense_layout(t)) {
    return {{}, {t.data(), *channels_last}};
  }
  F32Input in{gather_as<float>(t), {nullptr, false}};
  in.operand.data = in.storage.data();
  return in;
}

// Note [bfloat16 convolutions on oneDNN]: the call's tensors as bfloat16 operands when
// they all are dense bfloat16 tensors and the CPU runs bfloat16 natively, else nothing
// (the float32 path). Null tensors (no bias) are skipped.
std::optional<std::vector<Operand>> bfloat16_operands(
    std::initializer_list<const sdk::Tensor*> tensors) {
  if (!onednn_has_bfloat16()) return std::nullopt;
  std::vector<Operand> operands;
  for (const sdk::Tensor* t : tensors) {
    if (t == nullptr) {
      operands.push_back({nullptr, false, memory::data_type::bf16});
      continue;
    }
    if (t->dtype() != LOOM_DTYPE_BFLOAT16) return std::nullopt;
    const bool row_major = t->is_contiguous();
    if (!row_major && !t->is_channels_last()) return std::nullopt;
    operands.push_back({t->data(), !row_major, memory::data_type::bf16});
  }
  return operands;
}

// Runs `compute(operand)` into `out`: directly when out is dense float32, else into a
// row-major float32 buffer stored into out after.
template <typename F>
void with_f32_output(const sdk::Tensor& out, F&& compute) {
  if (std::optional<bool> channels_last = dense_layout(out)) {
    compute(Operand{out.data(), *channels_last});
    return;
  }
  std::vector<float> staged(static_cast<size_t>(out.numel()));
  compute(Operand{staged.data(), false});
  store_as(staged, out);
}

sdk::Tensor conv2d_out(const sdk::Tensor& input, const sdk::Tensor& weight,
                       const std::optional<sdk::Tensor>& bias, std::span<const int64_t> stride,
                       std::span<const int64_t> padding, std::span<const int64_t> dilation,
                       int64_t groups, const sdk::Tensor& out) {
  if (out.numel() == 0) return out;
  ConvGeometry g =
      geometry(input.sizes(), weight.sizes(), out.sizes(), stride, padding, dilation, groups);
  if (out.dtype() == LOOM_DTYPE_FLOAT64) {
    std::vector<double> x = gather_as<double>(input), w = gather_as<double>(weight);
    std::vector<double> y(static_cast<size_t>(out.numel()), 0.0);
    for_each_tap(g, [&](int64_t i, int64_t k, int64_t o) { y[o] += x[i] * w[k]; });
    if (bias) {
      std::vector<double> b = gather_as<double>(*bias);
      int64_t plane = g.oh * g.ow;
      for (size_t o = 0; o < y.size(); ++o) y[o] += b[(o / plane) % g.oc];
    }
    store_as(y, out);
    return out;
  }
  if (auto native = bfloat16_operands({&input, &weight, bias ? &*bias : nullptr, &out})) {
    const std::vector<Operand>& o = *native;
    onednn_forward(g, o[0], o[1], o[2].data, o[3], "conv2d");
    return out;
  }
  F32Input x = f32_input(input), w = f32_input(weight);
  std::optional<F32Input> b;
  if (bias) b = f32_input(*bias);
  with_f32_output(out, [&](Operand y) {
    onednn_forward(g, x.operand, w.operand, b ? b->operand.data : nullptr, y, "conv2d");
  });
  return out;
}

// Note [conv2d with an activation]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// _conv2d_activation (the compiler's fused conv2d + relu / sigmoid / tanh) on float32
// tensors is one oneDNN convolution with an eltwise post-op: the activation runs on each
// block of the output while oneDNN still holds it in cache, so the activation's own pass
// over the output (a read and a write of every element) is gone. The post-op joins the
// primitive conv2d itself would run (same layouts, Note [Convolution layouts by
// measurement]), except a gemm-based one: oneDNN 2.6's gemm convolution applies
// post-ops slowly (the CNN's first convolution, [64, 1, 28, 28] -> 32 channels: 3.8 ms
// with relu as a post-op, 0.4 ms without, 2-core Xeon), so there the activation runs
// after it in place. Any other case (another dtype, an input conv2d refuses) is conv2d
// and the activation in place, through the dispatcher: its errors are conv2d's messages.

// The eltwise algorithm of a _conv2d_activation activation name.
dnnl::algorithm eltwise_of(std::string_view activation) {
  if (activation == "relu") return dnnl::algorithm::eltwise_relu;
  if (activation == "sigmoid") return dnnl::algorithm::eltwise_logistic;
  if (activation == "tanh") return dnnl::algorithm::eltwise_tanh;
  throw sdk::Error(
      "[loom::_conv2d_activation] expected activation \"relu\", \"sigmoid\" or \"tanh\", "
      "found \"" +
      std::string(activation) + "\"");
}

// The activation in place, as its own op (the path without a post-op).
void apply_activation(const sdk::Tensor& out, std::string_view activation) {
  if (activation == "relu") {
    sdk::op::relu_(out);
  } else if (activation == "sigmoid") {
    sdk::op::sigmoid_(out);
  } else {
    sdk::op::tanh_(out);
  }
}

// The output sizes of a batched row-major float32 conv2d that oneDNN computes directly,
// or nullopt when the call must take conv2d's own path (and its checks and layout rule).
std::optional<std::vector<int64_t>> post_op_output_sizes(
    const sdk::Tensor& input, const sdk::Tensor& weight, const std::optional<sdk::Tensor>& bias,
    std::span<const int64_t> stride, std::span<const int64_t> padding,
    std::span<const int64_t> dilation, int64_t groups) {
  // row-major float32 operands (conv2d's output is then row-major too; a channels-last
  // operand, or one that is both, leaves the output's layout to conv2d's own rule)
  auto f32 = [&](const sdk::Tensor& t) {
    return t.dtype() == LOOM_DTYPE_FLOAT32 && t.is_contiguous() && !t.is_channels_last();
  };
  auto valid_pair = [](std::span<const int64_t> v, int64_t least) {
    return (v.size() == 1 || v.size() == 2) && v[0] >= least && v.back() >= least;
  };
  if (!f32(input) || !f32(weight) || (bias && !f32(*bias)) || input.dim() != 4 ||
      weight.dim() != 4 || groups < 1 || !valid_pair(stride, 1) || !valid_pair(padding, 0) ||
      !valid_pair(dilation, 1)) {
    return std::nullopt;
  }
  const int64_t oc = weight.sizes()[0];
  if (oc % groups != 0 || weight.sizes()[1] * groups != input.sizes()[1] ||
      (bias && (bias->dim() != 1 || bias->sizes()[0] != oc))) {
    return std::nullopt;
  }
  std::vector<int64_t> sizes{input.sizes()[0], oc};
  const auto s = pair_of(stride), p = pair_of(padding), d = pair_of(dilation);
  for (int i = 0; i < 2; ++i) {
    const int64_t padded = input.sizes()[2 + i] + 2 * p[i];
    const int64_t reach = d[i] * (weight.sizes()[2 + i] - 1) + 1;
    if (padded < reach) return std::nullopt;
    sizes.push_back((padded - reach) / s[i] + 1);
  }
  if (input.numel() == 0 || weight.numel() == 0) return std::nullopt;  // conv2d's edge cases
  return sizes;
}

sdk::Tensor conv2d_activation(const sdk::Tensor& input, const sdk::Tensor& weight,
                              const std::optional<sdk::Tensor>& bias,
                              std::span<const int64_t> stride, std::span<const int64_t> padding,
                              std::span<const int64_t> dilation, int64_t groups,
                              std::string_view activation) {
  const dnnl::algorithm eltwise = eltwise_of(activation);
  std::optional<std::vector<int64_t>> sizes =
      post_op_output_sizes(input, weight, bias, stride, padding, dilation, groups);
  if (!sizes) {
    sdk::Tensor out = sdk::op::conv2d(input, weight, bias, stride, padding, dilation, groups);
    apply_activation(out, activation);
    return out;
  }
  sdk::Tensor out = sdk::empty(*sizes, LOOM_DTYPE_FLOAT32, input.device());
  ConvGeometry g =
      geometry(input.sizes(), weight.sizes(), out.sizes(), stride, padding, dilation, groups);
  F32Input x = f32_input(input), w = f32_input(weight);
  std::optional<F32Input> b;
  if (bias) b = f32_input(*bias);
  if (!onednn_forward(g, x.operand, w.operand, b ? b->operand.data : nullptr,
                      Operand{out.data(), false}, "_conv2d_activation", eltwise)) {
    apply_activation(out, activation);
  }
  return out;
}

// A backward convolution into `out` from grad_output and `other` (the weight for the
// input's gradient, the input for the weight's): float64 by the reference loop, where
// tap(result, other, grad, i, k, o) adds one product; the other dtypes by oneDNN in
// float32, onednn(grad, other, result), or zeros when no gradient flows.
template <typename Tap, typename Onednn>
sdk::Tensor backward_out(const sdk::Tensor& grad_output, const sdk::Tensor& other,
                         const sdk::Tensor& out, const ConvGeometry& g, bool no_gradient, Tap tap,
                         Onednn onednn) {
  if (out.dtype() == LOOM_DTYPE_FLOAT64) {
    std::vector<double> go = gather_as<double>(grad_output), ot = gather_as<double>(other);
    std::vector<double> result(static_cast<size_t>(out.numel()), 0.0);
    for_each_tap(g, [&](int64_t i, int64_t k, int64_t o) { tap(result, ot, go, i, k, o); });
    store_as(result, out);
    return out;
  }
  if (auto native = bfloat16_operands({&grad_output, &other, &out})) {
    const std::vector<Operand>& o = *native;
    if (no_gradient) {
      std::memset(o[2].data, 0, static_cast<size_t>(out.numel()) * sizeof(uint16_t));
    } else {
      onednn(o[0], o[1], o[2]);
    }
    return out;
  }
  F32Input go = f32_input(grad_output), ot = f32_input(other);
  with_f32_output(out, [&](Operand result) {
    if (no_gradient) {
      float* data = static_cast<float*>(result.data);
      std::fill(data, data + out.numel(), 0.0f);
      return;
    }
    onednn(go.operand, ot.operand, result);
  });
  return out;
}

using Values64 = std::vector<double>;

sdk::Tensor conv2d_backward_input_out(const sdk::Tensor& grad_output, const sdk::Tensor& weight,
                                      std::span<const int64_t> input_size,
                                      std::span<const int64_t> stride,
                                      std::span<const int64_t> padding,
                                      std::span<const int64_t> dilation, int64_t groups,
                                      const sdk::Tensor& out) {
  if (out.numel() == 0) return out;
  ConvGeometry g =
      geometry(input_size, weight.sizes(), grad_output.sizes(), stride, padding, dilation, groups);
  return backward_out(
      grad_output, weight, out, g, grad_output.numel() == 0,
      [](Values64& gi, const Values64& w, const Values64& go, int64_t i, int64_t k, int64_t o) {
        gi[i] += w[k] * go[o];
      },
      [&](Operand go, Operand w, Operand gi) {
        onednn_backward_data(g, go, w, gi, "conv2d_backward_input");
      });
}

sdk::Tensor conv2d_backward_weight_out(const sdk::Tensor& grad_output, const sdk::Tensor& input,
                                       std::span<const int64_t> weight_size,
                                       std::span<const int64_t> stride,
                                       std::span<const int64_t> padding,
                                       std::span<const int64_t> dilation, int64_t groups,
                                       const sdk::Tensor& out) {
  if (out.numel() == 0) return out;
  ConvGeometry g =
      geometry(input.sizes(), weight_size, grad_output.sizes(), stride, padding, dilation, groups);
  return backward_out(
      grad_output, input, out, g, /*an empty batch contributes nothing*/ g.n == 0,
      [](Values64& gw, const Values64& x, const Values64& go, int64_t i, int64_t k, int64_t o) {
        gw[k] += x[i] * go[o];
      },
      [&](Operand go, Operand x, Operand gw) {
        onednn_backward_weights(g, go, x, gw, "conv2d_backward_weight");
      });
}

}  // namespace

void register_conv_kernels(sdk::Registrar& r) {
  const char* raw = std::getenv("LOOM_CPU_CONV_LAYOUT");
  const std::string requested = raw != nullptr ? raw : "";
  ConvLayout& setting = conv_layout_setting();
  if (requested.empty() || requested == "measure") {
    setting = ConvLayout::measure;
  } else if (requested == "plain") {
    setting = ConvLayout::plain;
  } else if (requested == "blocked") {
    setting = ConvLayout::blocked;
  } else {
    throw sdk::Error("[cpu] LOOM_CPU_CONV_LAYOUT must be one of measure, plain, blocked, found '" +
                     requested + "'");
  }
  r.attribute("conv_layout", requested.empty() ? "measure" : requested.c_str());
  r.impl<&conv2d_out>("loom::conv2d.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&conv2d_activation>("loom::_conv2d_activation", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&conv2d_backward_input_out>("loom::conv2d_backward_input.out", LOOM_KEY_CPU,
                                     sdk::dtypes::floating);
  r.impl<&conv2d_backward_weight_out>("loom::conv2d_backward_weight.out", LOOM_KEY_CPU,
                                      sdk::dtypes::floating);
}

}  // namespace loom::cpu
