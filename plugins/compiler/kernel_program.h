// A fused kernel's program (Note [Fused kernel programs] in loom/compiler_api.h), parsed
// and checked: every value defined once before it is read, dtypes and layouts known.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/plugin.h"

namespace loom::compiler {

enum class Layout : uint8_t { Dense, Scalar, Strided };

// Where a kernel's code runs: the CPU (C++ built by the system compiler), a CUDA GPU
// (CUDA C++ built by NVRTC: cuda_codegen.h) or an AMD GPU (the same source, built by
// hiprtc). A program's `target` line; CPU without one.
enum class Target : uint8_t { Cpu, Cuda, Hip };

struct ProgramInput {
  LoomDType dtype = LOOM_DTYPE_FLOAT32;
  Layout layout = Layout::Dense;
};

// One argument of a statement: a value (an input or an earlier statement), or a constant.
struct Operand {
  enum class Kind : uint8_t { Value, Int, Double, Bool, None, String };
  Kind kind = Kind::None;
  int32_t value = -1;  // Kind::Value: the slot (inputs first, then statements in order)
  int64_t i = 0;       // Int, Bool
  double d = 0;        // Double
  std::string text;    // String
};

struct Statement {
  LoomDType dtype = LOOM_DTYPE_FLOAT32;    // of the result
  LoomDType compute = LOOM_DTYPE_FLOAT32;  // what the operation computes in
  std::string op;                          // "loom::mul.Tensor"
  std::vector<Operand> args;
};

struct Program {
  Target target = Target::Cpu;
  std::vector<ProgramInput> inputs;   // slots 0 .. inputs.size() - 1
  std::vector<Statement> statements;  // slot inputs.size() + i
  std::vector<int32_t> outputs;       // slots
  std::vector<int32_t> output_into;   // per output: the input slot it is written into, or -1
  LoomDType slot_dtype(int32_t slot) const {
    return slot < static_cast<int32_t>(inputs.size()) ? inputs[slot].dtype
                                                      : statements[slot - inputs.size()].dtype;
  }
};

// Parses a program; throws sdk::Error "[compiler] kernel program line N: ..." naming what
// was expected and what was found.
Program parse_program(std::string_view text);

// A dtype by its loom name ("float32"); false when unknown.
bool dtype_from_name(std::string_view name, LoomDType* out);

}  // namespace loom::compiler
