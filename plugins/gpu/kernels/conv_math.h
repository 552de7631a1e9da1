// The index math of loom's own convolution (kernels/conv.cu, Note [Implicit-GEMM
// convolution]): each pass of a 2-D convolution read as one batched GEMM over matrices
// that are never built, only addressed. Plain arithmetic compiled into device code and
// unit-tested on the host against direct loops (tests/gpu/conv_math_test.cc).
#pragma once

#include <cstdint>

#include "gemm_math.h"
#include "index_math.h"

namespace loom::gpu {

// Note [Implicit-GEMM convolution]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The ROCm plugin has no MIOpen (Debian ships none), so convolution runs on loom's tiled
// GEMM kernel (Note [Tiled GEMM]) with operands that are views of packed NCHW tensors:
// the im2col matrix of a pass is addressed element by element as the kernel stages its
// tiles, so no column buffer is ever allocated. With groups G, a group's input channels
// Cg = C / G, its output channels Og = O / G, patch K = Cg * KH * KW and output plane
// P = OH * OW:
// - forward, batch z = (n, g): y[n, g, o, p] = sum over k = (c, kh, kw) of
//   w[g, o, k] * x[n, g, c, oh * sh - ph + kh * dh, ow * sw - pw + kw * dw]
//   (zero outside the input): [Og, K] @ [K, P].
// - input gradient, batch z = (n, g): dx[n, g, c, q = (ih, iw)] = sum over
//   j = (o, kh, kw) of w[g, o, c, kh, kw] * dy[n, g, o, oh, ow] where oh * sh - ph +
//   kh * dh = ih and ow likewise (zero where no output position reads ih, iw):
//   [Cg, Og * KH * KW] @ [Og * KH * KW, H * W]. Each input element gathers its own sum,
//   so there are no atomics and the order is fixed.
// - weight gradient, batch z = g: dw[g, o, k] = sum over r = (n, p) of dy[n, g, o, p] *
//   x[n, g, c, ...] (the forward's patch element, transposed): [Og, N * P] @ [N * P, K].
// Every sum runs in the GEMM's fixed order: deterministic (the CUDA plugin's cuDNN path
// prefers deterministic algorithms but falls back to others). Conv2d's bias is added to
// the accumulator before the one rounding to the output's dtype. The kernel reads the
// matrices through cursors in 32-bit arithmetic where the tensors allow (Note [32-bit
// convolution addressing]); a small layer's long weight-gradient sum is split over blocks
// (Note [Split weight gradient]). Not done: vectorised global loads of the patches.
struct ConvGeometry {
  int64_t batch = 0, channels = 0, height = 0, width = 0;  // input [N, C, H, W]
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0;    // weight [O, C / G, KH, KW]
  int64_t out_h = 0, out_w = 0;                            // output [N, O, OH, OW]
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;

  LOOM_GPU_HD int64_t group_channels() const { return channels / groups; }
  LOOM_GPU_HD int64_t group_out_channels() const { return out_channels / groups; }
  LOOM_GPU_HD int64_t taps() const { return kernel_h * kernel_w; }
  LOOM_GPU_HD int64_t patch() const { return group_channels() * taps(); }
  LOOM_GPU_HD int64_t in_plane() const { return height * width; }
  LOOM_GPU_HD int64_t out_plane() const { return out_h * out_w; }
};

// What is wrong with a geometry (its sizes disagree with each other), or null: the
// kernels rely on it, so the host checks it before each launch.
inline const char* conv_geometry_error(const ConvGeometry& g) {
  if (g.groups <= 0 || g.channels <= 0 || g.out_channels <= 0 || g.kernel_h <= 0 ||
      g.kernel_w <= 0) {
    return "expected positive channels, kernel sizes and groups";
  }
  if (g.channels % g.groups != 0 || g.out_channels % g.groups != 0) {
    return "expected channels and output channels divisible by groups";
  }
  if (g.stride_h <= 0 || g.stride_w <= 0 || g.dilation_h <= 0 || g.dilation_w <= 0 || g.pad_h < 0 ||
      g.pad_w < 0) {
    return "expected positive stride and dilation and non-negative padding";
  }
  const int64_t reach_h = g.height + 2 * g.pad_h - g.dilation_h * (g.kernel_h - 1) - 1;
  const int64_t reach_w = g.width + 2 * g.pad_w - g.dilation_w * (g.kernel_w - 1) - 1;
  if (reach_h < 0 || reach_w < 0 || g.out_h != reach_h / g.stride_h + 1 ||
      g.out_w != reach_w / g.stride_w + 1) {
    return "the output size does not follow from the input, kernel, stride, padding and "
           "dilation";
  }
  return nullptr;
}

// Each pass addresses its GEMM's operands: a(z, row, k) and b(z, k, col) are element
// offsets into the packed tensors the pass reads (-1 for a zero of the padding, or a
// position no output reads), c(z, row, col) the offset of the result it writes.

// Input element (ih, iw) of output position p and tap (kh, kw), or -1 in the padding.
LOOM_GPU_HD int64_t patch_offset(const ConvGeometry& g, int64_t n, int64_t channel, int64_t tap,
                                 int64_t p) {
  const int64_t kh = tap / g.kernel_w, kw = tap % g.kernel_w;
  const int64_t oh = p / g.out_w, ow = p % g.out_w;
  const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
  const int64_t iw = ow * g.stride_w - g.pad_w + kw * g.dilation_w;
  if (ih < 0 || ih >= g.height || iw < 0 || iw >= g.width) return -1;
  return ((n * g.channels + channel) * g.height + ih) * g.width + iw;
}

// Forward: weight [Og, K] @ input patches [K, P] into output [Og, P], z = n * G + grp.
struct ConvForwardMatrices {
  static constexpr bool kForward = true;  // its rows take conv2d's bias
  ConvGeometry g;

  GemmDims dims() const {
    return {g.group_out_channels(), g.out_plane(), g.patch(), g.batch * g.groups};
  }
  LOOM_GPU_HD int64_t a(int64_t z, int64_t o, int64_t k) const {
    return ((z % g.groups) * g.group_out_channels() + o) * g.patch() + k;
  }
  LOOM_GPU_HD int64_t b(int64_t z, int64_t k, int64_t p) const {
    const int64_t grp = z % g.groups, c = k / g.taps();
    return patch_offset(g, z / g.groups, grp * g.group_channels() + c, k % g.taps(), p);
  }
  // The output channel of row o (its bias).
  LOOM_GPU_HD int64_t channel(int64_t z, int64_t o) const {
    return (z % g.groups) * g.group_out_channels() + o;
  }
  LOOM_GPU_HD int64_t c(int64_t z, int64_t o, int64_t p) const {
    return ((z / g.groups) * g.out_channels + channel(z, o)) * g.out_plane() + p;
  }
};

// Input gradient: transposed weight [Cg, Og * KH * KW] @ gathered grad_output
// [Og * KH * KW, H * W] into grad_input [Cg, H * W], z = n * G + grp.
struct ConvInputGradMatrices {
  static constexpr bool kForward = false;
  ConvGeometry g;

  GemmDims dims() const {
    return {g.group_channels(), g.in_plane(), g.group_out_channels() * g.taps(),
            g.batch * g.groups};
  }
  LOOM_GPU_HD int64_t a(int64_t z, int64_t c, int64_t j) const {
    const int64_t o = (z % g.groups) * g.group_out_channels() + j / g.taps();
    return (o * g.group_channels() + c) * g.taps() + j % g.taps();
  }
  // grad_output[n, o, oh, ow] where output (oh, ow) reads input q through tap j's (kh,
  // kw); -1 where the stride skips q or the position falls outside the output.
  LOOM_GPU_HD int64_t b(int64_t z, int64_t j, int64_t q) const {
    const int64_t tap = j % g.taps(), kh = tap / g.kernel_w, kw = tap % g.kernel_w;
    const int64_t ih = q / g.width, iw = q % g.width;
    const int64_t sh = ih + g.pad_h - kh * g.dilation_h, sw = iw + g.pad_w - kw * g.dilation_w;
    if (sh < 0 || sw < 0 || sh % g.stride_h != 0 || sw % g.stride_w != 0) return -1;
    const int64_t oh = sh / g.stride_h, ow = sw / g.stride_w;
    if (oh >= g.out_h || ow >= g.out_w) return -1;
    const int64_t o = (z % g.groups) * g.group_out_channels() + j / g.taps();
    return (((z / g.groups) * g.out_channels + o) * g.out_h + oh) * g.out_w + ow;
  }
  LOOM_GPU_HD int64_t c(int64_t z, int64_t c, int64_t q) const {
    const int64_t channel = (z % g.groups) * g.group_channels() + c;
    return ((z / g.groups) * g.channels + channel) * g.in_plane() + q;
  }
};

// Weight gradient: grad_output [Og, N * P] @ input patches transposed [N * P, K] into
// grad_weight [Og, K], its N * P terms split into `splits` chunks of `chunk` (Note
// [Split weight gradient]): z = split * G + grp; split s sums terms [s * chunk, (s + 1) *
// chunk) into slice s of [splits, O, K] (grad_weight itself when there is one split).
struct ConvWeightGradMatrices {
  static constexpr bool kForward = false;
  ConvGeometry g;
  int64_t splits = 1, chunk = 0;  // chunk 0: the whole sum in one split

  int64_t terms() const { return g.batch * g.out_plane(); }
  GemmDims dims() const {
    return {g.group_out_channels(), g.patch(), chunk > 0 ? chunk : terms(), splits * g.groups};
  }
  // Term r of split z / G as a position of the whole sum, or -1 past its end.
  LOOM_GPU_HD int64_t term(int64_t z, int64_t r) const {
    const int64_t at = (z / g.groups) * chunk + r;
    return at < g.batch * g.out_plane() ? at : -1;
  }
  LOOM_GPU_HD int64_t a(int64_t z, int64_t o, int64_t r) const {
    const int64_t t = term(z, r);
    if (t < 0) return -1;
    const int64_t n = t / g.out_plane(), p = t % g.out_plane();
    const int64_t grp = z % g.groups;
    return (n * g.out_channels + grp * g.group_out_channels() + o) * g.out_plane() + p;
  }
  LOOM_GPU_HD int64_t b(int64_t z, int64_t r, int64_t k) const {
    const int64_t t = term(z, r);
    if (t < 0) return -1;
    const int64_t c = (z % g.groups) * g.group_channels() + k / g.taps();
    return patch_offset(g, t / g.out_plane(), c, k % g.taps(), t % g.out_plane());
  }
  LOOM_GPU_HD int64_t c(int64_t z, int64_t o, int64_t k) const {
    const int64_t slice = (z / g.groups) * g.out_channels * g.patch();
    return slice + ((z % g.groups) * g.group_out_channels() + o) * g.patch() + k;
  }
};

// Note [Split weight gradient]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The weight gradient has few outputs (O * K) and a long sum (N * OH * OW terms): a
// first layer's 32 x 9 outputs are one GEMM tile, so one block would walk 200,000 terms
// while the rest of the GPU idles. Its sum is cut into equal chunks, enough of them to
// give about kWeightGradTargetBlocks blocks but no more than one per kWeightGradMinChunk
// terms; each chunk's partial sums go to their slice of a workspace (in the
// accumulation type) and a second kernel adds the slices in order, so the result does
// not depend on the launch: deterministic.
inline constexpr int64_t kWeightGradMinChunk = 2048;
inline constexpr int64_t kWeightGradTargetBlocks = 512;

inline ConvWeightGradMatrices plan_weight_grad(const ConvGeometry& g) {
  ConvWeightGradMatrices m{g};
  const int64_t terms = m.terms();
  const int64_t tile = SmallGemmTile::kRows;  // the tile a small layer's gradient takes
  const int64_t blocks =
      ((g.group_out_channels() + tile - 1) / tile) * ((g.patch() + tile - 1) / tile) * g.groups;
  int64_t splits = (kWeightGradTargetBlocks + blocks - 1) / blocks;
  const int64_t most = (terms + kWeightGradMinChunk - 1) / kWeightGradMinChunk;
  splits = splits < most ? splits : most;
  if (splits <= 1) return m;
  m.chunk = (terms + splits - 1) / splits;
  m.splits = (terms + m.chunk - 1) / m.chunk;
  return m;
}

// Note [32-bit convolution addressing]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The matrices above address an element from scratch with six or more 64-bit divisions,
// which cost more than the multiply-adds they feed. The kernel asks for cursors (Note
// [GEMM operand cursors]): the part of an address a k step does not change is worked out
// once per tile. When every tensor of the pass has fewer than 2^30 elements
// (conv_fits_int32: room for the chunked weight gradient's terms and the padding's
// negative offsets), the *Matrices32 forms below do that in 32-bit arithmetic, each
// division by a geometry size through an IntDivider (Note [Division by invariant
// integers]): a forward k step decomposes k = (c, kh, kw) with two multiply-highs, the
// output position having been decomposed once. Larger tensors take the 64-bit matrices
// through ElementCursors (a cursor is just (z, row)). Both forms give the same offsets
// (tests/gpu/conv_math_test.cc compares them element by element); the outputs' offsets
// (c, channel), written once per tile, stay 64-bit.
// Also bounds the padded extents, strides and dilated kernel spans (each below 2^30, so
// the patch positions' arithmetic stays in 32 bits) and needs a non-empty input plane
// (the divisions by its width; an empty padded input takes the 64-bit matrices).
inline bool conv_fits_int32(const ConvGeometry& g) {
  constexpr int64_t kLimit = int64_t{1} << 30;
  const bool extents = g.height >= 1 && g.width >= 1 && g.height + 2 * g.pad_h < kLimit &&
                       g.width + 2 * g.pad_w < kLimit && g.stride_h < kLimit &&
                       g.stride_w < kLimit && g.dilation_h * (g.kernel_h - 1) < kLimit &&
                       g.dilation_w * (g.kernel_w - 1) < kLimit;
  return extents && g.batch * g.channels * g.in_plane() < kLimit &&
         g.batch * g.out_channels * g.out_plane() < kLimit && g.out_channels * g.patch() < kLimit &&
         g.batch * g.groups < kLimit;
}

// A cursor of the 64-bit matrices: batch z and the row or column.
struct GemmAt {
  int64_t z, i;
};

template <typename Matrices>
struct ElementCursors {
  static constexpr bool kForward = Matrices::kForward;
  Matrices m;

  GemmDims dims() const { return m.dims(); }
  LOOM_GPU_HD GemmAt a_row(int64_t z, int64_t row) const { return {z, row}; }
  LOOM_GPU_HD int64_t a(const GemmAt& at, int64_t k) const { return m.a(at.z, at.i, k); }
  LOOM_GPU_HD GemmAt b_col(int64_t z, int64_t col) const { return {z, col}; }
  LOOM_GPU_HD int64_t b(const GemmAt& at, int64_t k) const { return m.b(at.z, k, at.i); }
  LOOM_GPU_HD int64_t channel(int64_t z, int64_t row) const { return m.channel(z, row); }
  LOOM_GPU_HD int64_t c(int64_t z, int64_t row, int64_t col) const { return m.c(z, row, col); }
};

// The geometry's sizes as 32-bit numbers and divisors (valid under conv_fits_int32).
struct ConvSizes32 {
  IntDivider by_groups, by_taps, by_kernel_w, by_out_w, by_out_plane, by_width, by_stride_h,
      by_stride_w;
  int32_t channels, height, width, out_channels, out_h, out_w, in_plane, out_plane;
  int32_t group_channels, group_out_channels, taps, patch, kernel_w;
  int32_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;

  explicit ConvSizes32(const ConvGeometry& g)
      : by_groups(static_cast<uint32_t>(g.groups)),
        by_taps(static_cast<uint32_t>(g.taps())),
        by_kernel_w(static_cast<uint32_t>(g.kernel_w)),
        by_out_w(static_cast<uint32_t>(g.out_w)),
        by_out_plane(static_cast<uint32_t>(g.out_plane())),
        by_width(static_cast<uint32_t>(g.width)),
        by_stride_h(static_cast<uint32_t>(g.stride_h)),
        by_stride_w(static_cast<uint32_t>(g.stride_w)),
        channels(static_cast<int32_t>(g.channels)),
        height(static_cast<int32_t>(g.height)),
        width(static_cast<int32_t>(g.width)),
        out_channels(static_cast<int32_t>(g.out_channels)),
        out_h(static_cast<int32_t>(g.out_h)),
        out_w(static_cast<int32_t>(g.out_w)),
        in_plane(static_cast<int32_t>(g.in_plane())),
        out_plane(static_cast<int32_t>(g.out_plane())),
        group_channels(static_cast<int32_t>(g.group_channels())),
        group_out_channels(static_cast<int32_t>(g.group_out_channels())),
        taps(static_cast<int32_t>(g.taps())),
        patch(static_cast<int32_t>(g.patch())),
        kernel_w(static_cast<int32_t>(g.kernel_w)),
        stride_h(static_cast<int32_t>(g.stride_h)),
        stride_w(static_cast<int32_t>(g.stride_w)),
        pad_h(static_cast<int32_t>(g.pad_h)),
        pad_w(static_cast<int32_t>(g.pad_w)),
        dilation_h(static_cast<int32_t>(g.dilation_h)),
        dilation_w(static_cast<int32_t>(g.dilation_w)) {}

  // z = image * groups + group (or split * groups + group)
  struct Batch {
    int32_t outer, group;
  };
  LOOM_GPU_HD Batch batch(int64_t z) const {
    const int32_t outer = static_cast<int32_t>(by_groups.div(static_cast<uint32_t>(z)));
    return {outer, static_cast<int32_t>(z) - outer * static_cast<int32_t>(by_groups.divisor)};
  }
  // k = (channel, tap) and tap = (kh, kw)
  struct Tap {
    int32_t channel, kh, kw;
  };
  LOOM_GPU_HD Tap tap_of(int64_t k) const {
    const uint32_t c = by_taps.div(static_cast<uint32_t>(k));
    const int32_t tap = static_cast<int32_t>(k) - static_cast<int32_t>(c) * taps;
    const int32_t kh = static_cast<int32_t>(by_kernel_w.div(static_cast<uint32_t>(tap)));
    return {static_cast<int32_t>(c), kh, tap - kh * kernel_w};
  }
};

// Forward (ConvForwardMatrices): a row's cursor is its weight row's offset; a column's is
// its image and the input position its patch starts at.
struct ConvForwardMatrices32 {
  static constexpr bool kForward = true;
  struct Patch {
    int32_t image, ih0, iw0;  // image: the offset of the group's first input channel
  };
  ConvForwardMatrices wide;
  ConvSizes32 s;

  explicit ConvForwardMatrices32(const ConvForwardMatrices& m) : wide(m), s(m.g) {}
  GemmDims dims() const { return wide.dims(); }
  LOOM_GPU_HD int32_t a_row(int64_t z, int64_t o) const {
    return (s.batch(z).group * s.group_out_channels + static_cast<int32_t>(o)) * s.patch;
  }
  LOOM_GPU_HD int32_t a(int32_t row, int64_t k) const { return row + static_cast<int32_t>(k); }
  LOOM_GPU_HD Patch b_col(int64_t z, int64_t p) const {
    const ConvSizes32::Batch at = s.batch(z);
    const int32_t oh = static_cast<int32_t>(s.by_out_w.div(static_cast<uint32_t>(p)));
    const int32_t ow = static_cast<int32_t>(p) - oh * s.out_w;
    return {(at.outer * s.channels + at.group * s.group_channels) * s.in_plane,
            oh * s.stride_h - s.pad_h, ow * s.stride_w - s.pad_w};
  }
  LOOM_GPU_HD int32_t b(const Patch& at, int64_t k) const {
    const ConvSizes32::Tap tap = s.tap_of(k);
    const int32_t ih = at.ih0 + tap.kh * s.dilation_h, iw = at.iw0 + tap.kw * s.dilation_w;
    if (ih < 0 || ih >= s.height || iw < 0 || iw >= s.width) return -1;
    return at.image + (tap.channel * s.height + ih) * s.width + iw;
  }
  LOOM_GPU_HD int64_t channel(int64_t z, int64_t o) const { return wide.channel(z, o); }
  LOOM_GPU_HD int64_t c(int64_t z, int64_t o, int64_t p) const { return wide.c(z, o, p); }
};

// Input gradient (ConvInputGradMatrices): a row's cursor is the offset of input channel
// c's weights in the group's first output channel; a column's is its grad_output image
// and the padded input position (ih + pad_h, iw + pad_w).
struct ConvInputGradMatrices32 {
  static constexpr bool kForward = false;
  struct Position {
    int32_t image, ih, iw;
  };
  ConvInputGradMatrices wide;
  ConvSizes32 s;

  explicit ConvInputGradMatrices32(const ConvInputGradMatrices& m) : wide(m), s(m.g) {}
  GemmDims dims() const { return wide.dims(); }
  LOOM_GPU_HD int32_t a_row(int64_t z, int64_t c) const {
    const int32_t first = s.batch(z).group * s.group_out_channels;
    return (first * s.group_channels + static_cast<int32_t>(c)) * s.taps;
  }
  LOOM_GPU_HD int32_t a(int32_t row, int64_t j) const {
    const int32_t o = static_cast<int32_t>(s.by_taps.div(static_cast<uint32_t>(j)));
    return row + o * s.group_channels * s.taps + (static_cast<int32_t>(j) - o * s.taps);
  }
  LOOM_GPU_HD Position b_col(int64_t z, int64_t q) const {
    const ConvSizes32::Batch at = s.batch(z);
    const int32_t ih = static_cast<int32_t>(s.by_width.div(static_cast<uint32_t>(q)));
    const int32_t iw = static_cast<int32_t>(q) - ih * s.width;
    const int32_t first = at.outer * s.out_channels + at.group * s.group_out_channels;
    return {first * s.out_plane, ih + s.pad_h, iw + s.pad_w};
  }
  LOOM_GPU_HD int32_t b(const Position& at, int64_t j) const {
    const ConvSizes32::Tap tap = s.tap_of(j);  // tap.channel: the output channel in the group
    const int32_t sh = at.ih - tap.kh * s.dilation_h, sw = at.iw - tap.kw * s.dilation_w;
    if (sh < 0 || sw < 0) return -1;
    const int32_t oh = static_cast<int32_t>(s.by_stride_h.div(static_cast<uint32_t>(sh)));
    const int32_t ow = static_cast<int32_t>(s.by_stride_w.div(static_cast<uint32_t>(sw)));
    if (oh * s.stride_h != sh || ow * s.stride_w != sw || oh >= s.out_h || ow >= s.out_w) {
      return -1;
    }
    return at.image + (tap.channel * s.out_h + oh) * s.out_w + ow;
  }
  LOOM_GPU_HD int64_t c(int64_t z, int64_t c, int64_t q) const { return wide.c(z, c, q); }
};

// Weight gradient (ConvWeightGradMatrices): both cursors hold their split's first term;
// a row's also the offset of its output channel's plane, a column's the offset of its
// input channel's plane and its tap's shift.
struct ConvWeightGradMatrices32 {
  static constexpr bool kForward = false;
  struct Channel {
    int32_t first_term, plane;
  };
  struct Tap {
    int32_t first_term, plane, dh, dw;
  };
  ConvWeightGradMatrices wide;
  ConvSizes32 s;
  int32_t terms, chunk;

  explicit ConvWeightGradMatrices32(const ConvWeightGradMatrices& m)
      : wide(m),
        s(m.g),
        terms(static_cast<int32_t>(m.terms())),
        chunk(static_cast<int32_t>(m.chunk)) {}
  GemmDims dims() const { return wide.dims(); }
  LOOM_GPU_HD int32_t image_of(int32_t t, int32_t* p) const {
    const int32_t n = static_cast<int32_t>(s.by_out_plane.div(static_cast<uint32_t>(t)));
    *p = t - n * s.out_plane;
    return n;
  }
  LOOM_GPU_HD Channel a_row(int64_t z, int64_t o) const {
    const ConvSizes32::Batch at = s.batch(z);
    const int32_t channel = at.group * s.group_out_channels + static_cast<int32_t>(o);
    return {at.outer * chunk, channel * s.out_plane};
  }
  LOOM_GPU_HD int32_t a(const Channel& at, int64_t r) const {
    const int32_t t = at.first_term + static_cast<int32_t>(r);
    if (t >= terms) return -1;
    int32_t p;
    const int32_t n = image_of(t, &p);
    return n * s.out_channels * s.out_plane + at.plane + p;
  }
  LOOM_GPU_HD Tap b_col(int64_t z, int64_t k) const {
    const ConvSizes32::Batch at = s.batch(z);
    const ConvSizes32::Tap tap = s.tap_of(k);
    const int32_t channel = at.group * s.group_channels + tap.channel;
    return {at.outer * chunk, channel * s.in_plane, tap.kh * s.dilation_h - s.pad_h,
            tap.kw * s.dilation_w - s.pad_w};
  }
  LOOM_GPU_HD int32_t b(const Tap& at, int64_t r) const {
    const int32_t t = at.first_term + static_cast<int32_t>(r);
    if (t >= terms) return -1;
    int32_t p;
    const int32_t n = image_of(t, &p);
    const int32_t oh = static_cast<int32_t>(s.by_out_w.div(static_cast<uint32_t>(p)));
    const int32_t ih = oh * s.stride_h + at.dh, iw = (p - oh * s.out_w) * s.stride_w + at.dw;
    if (ih < 0 || ih >= s.height || iw < 0 || iw >= s.width) return -1;
    return n * s.channels * s.in_plane + at.plane + ih * s.width + iw;
  }
  LOOM_GPU_HD int64_t c(int64_t z, int64_t o, int64_t k) const { return wide.c(z, o, k); }
};

}  // namespace loom::gpu
