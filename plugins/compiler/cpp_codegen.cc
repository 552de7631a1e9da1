// The C++ generator of fused kernels: the expression of each operator, the loops around
// them, and the declarations that let the compiler vectorise libm's functions.
//
// Note [Vectorised kernel loops]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel's loop is an `omp simd` loop in a function of its own (GCC gives up on a simd
// loop inlined into OpenMP's outlined region: "control flow in loop"), over one piece of
// the elements; pieces of 16384 elements go to OpenMP's threads. libm's functions (sinf,
// expf, tanhf, ...) are declared `omp declare simd notinbranch`, so GCC calls glibc's
// vector variants (libmvec: _ZGVdN8v_sinf on AVX2, within 4 ulp of the exact result)
// instead of one scalar call per element; -fno-math-errno lets it. Every select is a
// blend of bit patterns (lk_sel), not `c ? a : b`: GCC turns a conditional next to a
// vector call into control flow and stops vectorising (and a blend keeps NaN payloads
// and signed zeros, as the eager kernels' selects do: Note [Branch-free selects] in the
// CPU plugin). Each statement computes in its compute dtype and rounds to its own dtype,
// as the eager ops would one by one.
#include "cpp_codegen.h"

#include "kernel_expressions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "loom/sdk/dtype.hpp"
#include "loom/sdk/error.hpp"

namespace loom::compiler {

namespace {

const char* kPrelude = R"src(#include <stdint.h>
struct lk_args {
  const void* const* inputs;
  const int64_t* const* strides;
  void* const* outputs;
  const int64_t* sizes;
  int64_t numel;
  int32_t ndim;
  int32_t threads;
};
static inline float lk_sel(bool c, float a, float b) {
  uint32_t x, y, m = -(uint32_t)c;
  __builtin_memcpy(&x, &a, 4);
  __builtin_memcpy(&y, &b, 4);
  x = (x & m) | (y & ~m);
  float r;
  __builtin_memcpy(&r, &x, 4);
  return r;
}
static inline double lk_sel(bool c, double a, double b) {
  uint64_t x, y, m = -(uint64_t)c;
  __builtin_memcpy(&x, &a, 8);
  __builtin_memcpy(&y, &b, 8);
  x = (x & m) | (y & ~m);
  double r;
  __builtin_memcpy(&r, &x, 8);
  return r;
}
template <typename T>
static inline T lk_sel(bool c, T a, T b) {
  return c ? a : b;
}
)src";

// The prototype of a libm function ("sinf" -> "float sinf(float)").
std::string prototype(const std::string& name) {
  const bool f32 = name.back() == 'f' && name != "erf";
  const std::string t = f32 ? "float" : "double";
  const std::string base = f32 ? name.substr(0, name.size() - 1) : name;
  const bool binary = base == "pow" || base == "atan2";
  return t + " " + name + "(" + t + (binary ? ", " + t : "") + ")";
}

// The generated code that sets offsets[k], each input's element offset at the start of
// row `row` (every dimension but the last), for strided and row kernels.
std::string offsets_code(const std::string& count) {
  return "    for (int k = 0; k < " + count +
         "; ++k) {\n"
         "      int64_t rest = row, off = 0;\n"
         "      for (int32_t d = A->ndim - 2; d >= 0; --d) {\n"
         "        const int64_t idx = rest % A->sizes[d];\n"
         "        rest /= A->sizes[d];\n"
         "        if (A->strides[k] != 0) off += idx * A->strides[k][d];\n"
         "      }\n"
         "      offsets[k] = off;\n"
         "    }\n";
}

// The entry of a kernel that works row by row (lk_rows): rows split into pieces of about
// `grain` elements over the threads.
std::string rows_entry(int64_t grain) {
  const std::string g = std::to_string(grain);
  return R"src(extern "C" __attribute__((visibility("default"))) int loom_kernel_v1(const lk_args* A) {
  if (A->numel == 0) return 0;
  const int64_t n = A->ndim > 0 ? A->sizes[A->ndim - 1] : 1;
  const int64_t rows = A->numel / n;
  const int64_t per_piece = n >= )src" +
         g + " ? 1 : " + g + R"src( / n;
  if (rows <= per_piece || A->threads <= 1) {
    lk_rows(A, 0, rows, n);
    return 0;
  }
  const int64_t pieces = (rows + per_piece - 1) / per_piece;
#pragma omp parallel for num_threads(A->threads) schedule(static)
  for (int64_t c = 0; c < pieces; ++c) {
    const int64_t r0 = c * per_piece;
    lk_rows(A, r0, r0 + per_piece < rows ? r0 + per_piece : rows, n);
  }
  return 0;
}
)src";
}

// --- row kernels ---
//
// Note [Row kernels]
// ~~~~~~~~~~~~~~~~~~
// A program with a row op (softmax, log_softmax, layer_norm, or a sum, mean or amax) over
// the last dimension runs row by row: the kernel's shape is [rows, n], a row's statements
// run in order, each over the whole row into a scratch array of n elements (a row's
// values stay in cache, so the inputs are read and the outputs written once), a row op
// with its reduction loops, a reduction giving one value per row. Each loop is its own
// `omp simd` loop (reductions with a reduction clause); rows are split over the threads.
// Inputs are read through their strides (a bias of shape [n], a value of shape
// [rows, 1]), so every layout is allowed; dense inputs (the kernel's shape, contiguous)
// in unit steps from row * n, which the compiler vectorises.

enum class Rank : uint8_t { Scalar, Row, Full };
}  // namespace
bool reduces_to_row(const std::string& op);
namespace {

const std::set<std::string>& row_ops() {
  static const std::set<std::string> ops = {
      "loom::softmax.int",  "loom::_softmax",          "loom::log_softmax.int",
      "loom::_log_softmax", "loom::native_layer_norm", "loom::sum.dim_IntList",
      "loom::amax",         "loom::mean.dim"};
  return ops;
}

}  // namespace

bool is_row_program(const Program& p) {
  for (const Statement& s : p.statements) {
    if (row_ops().count(s.op)) return true;
  }
  return false;
}

namespace {

// The code of one row op over operand 0 (`x(j)` its element expression) writing the
// scratch array `out` (full results) or the row value `out` (reductions).
std::string row_op_code(const Program& p, const Statement& s, int32_t slot,
                        const std::vector<std::string>& names, std::set<std::string>& math) {
  if (s.compute != LOOM_DTYPE_FLOAT32 && s.compute != LOOM_DTYPE_FLOAT64) {
    throw sdk::Error("[compiler] kernel program: " + s.op + " computes in floats only, found " +
                         sdk::dtype_name(s.compute),
                     LOOM_STATUS_UNIMPLEMENTED);
  }
  Emit e(p, s, math, &names);
  const std::string ct = ctype(s.compute);
  const std::string x = e.arg(0);
  const std::string out = "s" + std::to_string(slot);
  const std::string v = "v" + std::to_string(slot);
  const std::string simd = "    #pragma omp simd\n    for (int64_t j = 0; j < n; ++j) ";
  auto reduce = [&](const char* clause) {
    return std::string("    #pragma omp simd reduction(") + clause +
           ")\n    for (int64_t j = 0; j < n; ++j) ";
  };
  std::string c = "    // " + s.op + "\n";
  if (s.op == "loom::sum.dim_IntList" || s.op == "loom::mean.dim") {
    c += "    " + ct + " " + v + "_acc = 0;\n" + reduce(("+:" + v + "_acc").c_str()) + v +
         "_acc += " + x + ";\n";
    c += "    const " + std::string(ctype(s.dtype)) + " " + v + " = (" + ctype(s.dtype) + ")(" + v +
         "_acc" + (s.op == "loom::mean.dim" ? " / (" + ct + ")n" : std::string()) + ");\n";
    return c;
  }
  if (s.op == "loom::amax") {
    c += "    " + ct + " " + v + "_max = -" + e.lit(INFINITY) + ";\n    int " + v + "_nan = 0;\n" +
         reduce(("max:" + v + "_max) reduction(|:" + v + "_nan").c_str()) + "{ const " + ct +
         " x = " + x + "; " + v + "_nan |= x != x; " + v + "_max = x > " + v + "_max ? x : " + v +
         "_max; }\n";
    c += "    const " + std::string(ctype(s.dtype)) + " " + v + " = " + v + "_nan ? " + e.lit(NAN) +
         " : " + v + "_max;\n";
    return c;
  }
  if (s.op == "loom::native_layer_norm") {
    c += "    " + ct + " " + v + "_mean = 0;\n" + reduce(("+:" + v + "_mean").c_str()) + v +
         "_mean += " + x + ";\n";
    c += "    " + v + "_mean /= (" + ct + ")n;\n    " + ct + " " + v + "_var = 0;\n" +
         reduce(("+:" + v + "_var").c_str()) + "{ const " + ct + " d = " + x + " - " + v +
         "_mean; " + v + "_var += d * d; }\n";
    c += "    const " + ct + " " + v + "_rstd = " + e.lit(1) + " / " + e.builtin("sqrt") + "(" + v +
         "_var / (" + ct + ")n + " + e.arg(4) + ");\n";
    std::string value = "(" + x + " - " + v + "_mean) * " + v + "_rstd";
    if (!e.is_none(2)) value = "(" + value + ") * " + e.arg(2);
    if (!e.is_none(3)) value = "(" + value + ") + " + e.arg(3);
    c += simd + out + "[j] = (" + ctype(s.dtype) + ")(" + value + ");\n";
    return c;
  }
  // softmax and log_softmax: the row's max, then the sum of exponentials
  const bool log = s.op.find("log_softmax") != std::string::npos;
  c += "    " + ct + " " + v + "_max = -" + e.lit(INFINITY) + ";\n" +
       reduce(("max:" + v + "_max").c_str()) + "{ const " + ct + " x = " + x + "; " + v +
       "_max = x > " + v + "_max ? x : " + v + "_max; }\n";
  c += "    " + ct + " " + v + "_sum = 0;\n" + reduce(("+:" + v + "_sum").c_str()) + "{ const " +
       ct + " e = " + e.fn("exp") + "(" + x + " - " + v + "_max); " +
       (log ? "" : out + "[j] = e; ") + v + "_sum += e; }\n";
  if (log) {
    c += "    const " + ct + " " + v + "_shift = " + v + "_max + " + e.fn("log") + "(" + v +
         "_sum);\n";
    c += simd + out + "[j] = (" + ctype(s.dtype) + ")(" + x + " - " + v + "_shift);\n";
  } else {
    c += "    const " + ct + " " + v + "_inv = " + e.lit(1) + " / " + v + "_sum;\n";
    c += simd + out + "[j] *= " + v + "_inv;\n";
  }
  return c;
}

std::string generate_row_cpp(const Program& p, std::string_view key, std::string prelude) {
  std::set<std::string> math;
  const size_t ni = p.inputs.size();
  std::vector<Rank> rank(ni + p.statements.size(), Rank::Full);
  std::vector<std::string> names(rank.size());
  std::string setup, body, scratch;
  for (size_t k = 0; k < ni; ++k) {
    const ProgramInput& in = p.inputs[k];
    const std::string n = std::to_string(k);
    const std::string st = storage_type(in.dtype), ct = ctype(in.dtype);
    const std::string conv = in.dtype == LOOM_DTYPE_BOOL ? " != 0" : "";
    if (in.layout == Layout::Scalar) {
      rank[k] = Rank::Scalar;
      setup += "  const " + ct + " v" + n + " = (" + ct + ")(((const " + st + "*)A->inputs[" + n +
               "])[0]" + conv + ");\n";
      names[k] = "v" + n;
    } else if (in.layout == Layout::Dense) {  // the kernel's shape, contiguous: unit steps
      body += "    const " + st + "* __restrict p" + n + " = (const " + st + "*)A->inputs[" + n +
              "] + row * n;\n";
      names[k] = "(" + ct + ")(p" + n + "[j]" + conv + ")";
    } else {
      body += "    const " + st + "* __restrict p" + n + " = (const " + st + "*)A->inputs[" + n +
              "] + offsets[" + n + "];\n    const int64_t t" + n + " = A->ndim > 0 ? A->strides[" +
              n + "][A->ndim - 1] : 0;\n";
      names[k] = "(" + ct + ")(p" + n + "[j * t" + n + "]" + conv + ")";
    }
  }
  size_t scratch_bytes = 0;
  for (size_t i = 0; i < p.statements.size(); ++i) {
    const Statement& s = p.statements[i];
    const int32_t slot = static_cast<int32_t>(ni + i);
    const std::string t = ctype(s.dtype);
    if (row_ops().count(s.op)) {
      rank[slot] = reduces_to_row(s.op) ? Rank::Row : Rank::Full;
    } else {
      Rank r = Rank::Scalar;
      for (const Operand& o : s.args) {
        if (o.kind == Operand::Kind::Value) r = std::max(r, rank[o.value]);
      }
      rank[slot] = r == Rank::Full ? Rank::Full : Rank::Row;
    }
    if (rank[slot] == Rank::Full) {
      scratch += "  " + t + "* __restrict s" + std::to_string(slot) + " = (" + t + "*)(scratch + " +
                 std::to_string(scratch_bytes) + " * n);\n";
      scratch_bytes += 8;  // 8 bytes per element: any dtype fits
      names[slot] = "s" + std::to_string(slot) + "[j]";
    } else {
      names[slot] = "v" + std::to_string(slot);
    }
    if (row_ops().count(s.op)) {
      body += row_op_code(p, s, slot, names, math);
    } else if (rank[slot] == Rank::Full) {
      body += "    #pragma omp simd\n    for (int64_t j = 0; j < n; ++j) s" + std::to_string(slot) +
              "[j] = (" + t + ")(" + expression(p, s, math, &names) + ");\n";
    } else {
      body += "    const " + t + " v" + std::to_string(slot) + " = (" + t + ")(" +
              expression(p, s, math, &names) + ");\n";
    }
  }
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const int32_t slot = p.outputs[k];
    const std::string st = storage_type(p.slot_dtype(slot));
    const std::string q = "((" + st + "*)A->outputs[" + std::to_string(k) + "])";
    if (rank[slot] == Rank::Full) {
      body += "    #pragma omp simd\n    for (int64_t j = 0; j < n; ++j) " + q +
              "[row * n + j] = (" + st + ")s" + std::to_string(slot) + "[j];\n";
    } else {
      body += "    " + q + "[row] = (" + st + ")" + names[slot] + ";\n";
    }
  }
  std::string src = "// A fused row kernel generated by loom's compiler plugin (cache key " +
                    std::string(key) + "): Note [Row kernels].\n" + prelude +
                    "#include <stdlib.h>\nextern \"C\" {\n";
  for (const std::string& f : math)
    src += "#pragma omp declare simd notinbranch\n" + prototype(f) + ";\n";
  src += "__attribute__((visibility(\"default\"))) extern const char " +
         std::string(kKernelKeySymbol) + "[] = \"" + std::string(key) + "\";\n}\n";
  const std::string count = std::to_string(ni);
  src +=
      "__attribute__((noinline)) static void lk_rows(const lk_args* A, int64_t r0, int64_t r1, "
      "int64_t n) {\n"
      "  char* scratch = (char*)malloc(" +
      std::to_string(scratch_bytes + 8) +
      " * (n + 8));\n"
      "  if (scratch == 0) return;\n" +
      scratch + setup + "  int64_t offsets[" + count +
      " + 1];\n"
      "  for (int64_t row = r0; row < r1; ++row) {\n" +
      offsets_code(count) + body + "  }\n  free(scratch);\n}\n";
  src += rows_entry(4096);
  return src;
}

}  // namespace

bool reduces_to_row(const std::string& op) {
  return op == "loom::sum.dim_IntList" || op == "loom::amax" || op == "loom::mean.dim";
}

std::vector<bool> row_values(const Program& p) {
  std::vector<bool> row(p.inputs.size() + p.statements.size(), false);
  if (!is_row_program(p)) return row;
  for (size_t i = 0; i < p.statements.size(); ++i) {
    const Statement& s = p.statements[i];
    bool full = false;
    for (const Operand& o : s.args) {
      if (o.kind == Operand::Kind::Value) {
        full = full || (o.value < static_cast<int32_t>(p.inputs.size())
                            ? p.inputs[o.value].layout != Layout::Scalar
                            : !row[o.value]);
      }
    }
    row[p.inputs.size() + i] = reduces_to_row(s.op) || (!row_ops().count(s.op) && !full);
  }
  return row;
}

// " __restrict" for an input pointer, unless an output is written into that input (then
// the two pointers alias, and a restrict promise would be false).
std::string restrict_unless_written(const Program& p, size_t input) {
  for (int32_t into : p.output_into) {
    if (into == static_cast<int32_t>(input)) return "";
  }
  return " __restrict";
}

std::string generate_cpp(const Program& p, std::string_view key) {
  if (is_row_program(p)) {
    for (int32_t into : p.output_into) {
      if (into >= 0) {
        throw sdk::Error(
            "[compiler] kernel program: 'out ... into' is for element-wise kernels, "
            "found one in a row kernel",
            LOOM_STATUS_UNIMPLEMENTED);
      }
    }
    check_input_dtypes(p);
    return generate_row_cpp(p, key, kPrelude);
  }
  std::set<std::string> math;
  const int32_t first_statement = static_cast<int32_t>(p.inputs.size());
  std::string body;
  for (size_t i = 0; i < p.statements.size(); ++i) {
    const Statement& s = p.statements[i];
    const int32_t slot = first_statement + static_cast<int32_t>(i);
    body += "    const " + std::string(ctype(s.dtype)) + " v" + std::to_string(slot) + " = (" +
            ctype(s.dtype) + ")(" + expression(p, s, math) + ");\n";
  }
  check_input_dtypes(p);
  bool strided = false;
  for (const ProgramInput& in : p.inputs) strided = strided || in.layout == Layout::Strided;

  std::string src = "// A fused kernel generated by loom's compiler plugin (cache key " +
                    std::string(key) + ").\n";
  src += kPrelude;
  src += "extern \"C\" {\n";
  for (const std::string& f : math) {
    src += "#pragma omp declare simd notinbranch\n" + prototype(f) + ";\n";
  }
  src += "__attribute__((visibility(\"default\"))) extern const char " +
         std::string(kKernelKeySymbol) + "[] = \"" + std::string(key) + "\";\n}\n";

  // The loop over [b, e) of the flat index (dense), or over one row's inner index.
  std::string loads, stores, params;
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    const ProgramInput& in = p.inputs[k];
    const std::string n = std::to_string(k);
    const std::string st = storage_type(in.dtype);
    const std::string ct = ctype(in.dtype);
    const std::string conv = in.dtype == LOOM_DTYPE_BOOL ? " != 0" : "";
    if (in.layout == Layout::Scalar) {
      params += "  const " + ct + " s" + n + " = (" + ct + ")(((const " + st + "*)A->inputs[" + n +
                "])[0]" + conv + ");\n";
      loads += "    const " + ct + " v" + n + " = s" + n + ";\n";
    } else if (strided) {
      params += "  const " + st + "*" + restrict_unless_written(p, k) + " p" + n + " = (const " +
                st + "*)A->inputs[" + n + "] + offsets[" + n + "];\n  const int64_t t" + n +
                " = A->ndim > 0 ? A->strides[" + n + "][A->ndim - 1] : 0;\n";
      loads += "    const " + ct + " v" + n + " = (" + ct + ")(p" + n + "[i * t" + n + "]" + conv +
               ");\n";
    } else {
      params += "  const " + st + "*" + restrict_unless_written(p, k) + " p" + n + " = (const " +
                st + "*)A->inputs[" + n + "];\n";
      loads += "    const " + ct + " v" + n + " = (" + ct + ")(p" + n + "[i]" + conv + ");\n";
    }
  }
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const std::string n = std::to_string(k);
    const std::string st = storage_type(p.slot_dtype(p.outputs[k]));
    params += "  " + st + "*" + (p.output_into[k] >= 0 ? "" : " __restrict") + " q" + n + " = (" +
              st + "*)A->outputs[" + n + "]" + (strided ? " + row * inner" : "") + ";\n";
    stores += "    q" + n + "[i] = (" + st + ")v" + std::to_string(p.outputs[k]) + ";\n";
  }
  const std::string loop =
      "#pragma omp simd\n  for (int64_t i = b; i < e; ++i) {\n" + loads + body + stores + "  }\n";
  if (!strided) {
    src +=
        "__attribute__((noinline)) static void lk_range(const lk_args* A, int64_t b, int64_t e) "
        "{\n" +
        params + loop + "}\n";
    src += R"src(extern "C" __attribute__((visibility("default"))) int loom_kernel_v1(
    const lk_args* A) {
  const int64_t n = A->numel, grain = 16384;
  if (n <= grain || A->threads <= 1) {
    lk_range(A, 0, n);
    return 0;
  }
  const int64_t pieces = (n + grain - 1) / grain;
#pragma omp parallel for num_threads(A->threads) schedule(static)
  for (int64_t c = 0; c < pieces; ++c)
    lk_range(A, c * grain, c * grain + grain < n ? c * grain + grain : n);
  return 0;
}
)src";
    return src;
  }
  // Strided: rows of the innermost dimension, each input at its offset for the row.
  const std::string count = std::to_string(p.inputs.size());
  src +=
      "__attribute__((noinline)) static void lk_row(const lk_args* A, const int64_t* offsets, "
      "int64_t row, int64_t inner) {\n  const int64_t b = 0, e = inner;\n" +
      params + loop + "}\n";
  src +=
      "static void lk_rows(const lk_args* A, int64_t r0, int64_t r1, int64_t inner) {\n"
      "  int64_t offsets[" +
      count +
      "];\n"
      "  for (int64_t row = r0; row < r1; ++row) {\n" +
      offsets_code(count) +
      "    lk_row(A, offsets, row, inner);\n"
      "  }\n}\n";
  src += rows_entry(16384);
  return src;
}

std::vector<std::string> fusible_ops() {
  std::vector<std::string> out;
  for (const auto& [op, entry] : op_table()) {
    std::string kinds;
    if (entry.kinds & kFloat) kinds += 'f';
    if (entry.kinds & kInt) kinds += 'i';
    if (entry.kinds & kBool) kinds += 'b';
    out.push_back(op + ":" + kinds);
  }
  for (const std::string& op : row_ops()) out.push_back(op + ":fr");  // Note [Row kernels]
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace loom::compiler
