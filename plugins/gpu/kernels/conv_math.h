// The index math of loom's own convolution (kernels/conv.cu, Note [Implicit-GEMM
// convolution]): each pass of a 2-D convolution read as one batched GEMM over matrices
// that are never built, only addressed. Plain arithmetic compiled into device code and
// unit-tested on the host against direct loops (tests/gpu/conv_math_test.cc).
#pragma once

#include <cstdint>

#include "gemm_math.h"

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
// the accumulator before the one rounding to the output's dtype. Not tuned yet: no
// tensor cores, no vectorised loads, and the weight gradient sums its N * P terms in one
// block per output tile (a split over blocks would spread a small layer's long sum).
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
  const int64_t tile = kGemmTile;
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

}  // namespace loom::gpu
