// The parser of fused kernel programs (Note [Fused kernel programs]). Programs come from
// the graph library, but the plugin trusts no text it is handed: every line is checked.
#include "kernel_program.h"

#include <charconv>
#include <cmath>
#include <unordered_map>

#include "loom/sdk/dtype.hpp"
#include "loom/sdk/error.hpp"

namespace loom::compiler {
namespace {

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    size_t start = i;
    if (line[i] == '"') {  // a string constant: up to the closing quote
      size_t close = line.find('"', i + 1);
      i = close == std::string_view::npos ? line.size() : close + 1;
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    }
    words.push_back(line.substr(start, i - start));
  }
  return words;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Program run() {
    bool header = false;
    size_t pos = 0;
    while (pos <= text_.size()) {
      size_t end = text_.find('\n', pos);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view line = text_.substr(pos, end - pos);
      ++line_number_;
      pos = end + 1;
      std::vector<std::string_view> words = split_words(line);
      if (words.empty()) continue;
      if (!header) {
        if (words.size() != 2 || words[0] != "loom-kernel" || words[1] != "1") {
          fail("expected the header 'loom-kernel 1', found '" + std::string(line) + "'");
        }
        header = true;
      } else if (words[0] == "target") {
        if (!program_.inputs.empty() || !program_.statements.empty())
          fail("the 'target' line must come before the inputs");
        if (words.size() != 2 || (words[1] != "cpu" && words[1] != "cuda" && words[1] != "hip")) {
          fail("expected 'target cpu', 'target cuda' or 'target hip', found '" + std::string(line) +
               "'");
        }
        program_.target = words[1] == "cuda"  ? Target::Cuda
                          : words[1] == "hip" ? Target::Hip
                                              : Target::Cpu;
      } else if (words[0] == "in") {
        input(words);
      } else if (words[0] == "out") {
        output(words);
      } else {
        statement(words);
      }
    }
    if (!header) fail("the program is empty (expected the header 'loom-kernel 1')");
    if (program_.outputs.empty()) fail("the program has no 'out' line");
    return std::move(program_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw sdk::Error("[compiler] kernel program line " + std::to_string(line_number_) + ": " +
                     what);
  }

  LoomDType dtype(std::string_view word) const {
    LoomDType t;
    if (!dtype_from_name(word, &t)) {
      fail("expected a dtype (bool, uint8, int8, int16, int32, int64, float32, float64), found '" +
           std::string(word) + "'");
    }
    return t;
  }

  void define(std::string_view name) {
    if (!slots_.emplace(std::string(name), next_slot_).second) {
      fail("value '" + std::string(name) + "' is defined twice");
    }
    ++next_slot_;
  }

  void input(const std::vector<std::string_view>& w) {
    if (!program_.statements.empty()) fail("an 'in' line follows a statement");
    if (w.size() != 4) fail("expected 'in NAME DTYPE LAYOUT'");
    ProgramInput in;
    in.dtype = dtype(w[2]);
    if (w[3] == "dense") {
      in.layout = Layout::Dense;
    } else if (w[3] == "scalar") {
      in.layout = Layout::Scalar;
    } else if (w[3] == "strided") {
      in.layout = Layout::Strided;
    } else {
      fail("expected a layout (dense, scalar, strided), found '" + std::string(w[3]) + "'");
    }
    define(w[1]);
    program_.inputs.push_back(in);
  }

  int32_t value(std::string_view name) const {
    auto it = slots_.find(std::string(name));
    if (it == slots_.end())
      fail("value '" + std::string(name) + "' is not defined before it is read");
    return it->second;
  }

  void output(const std::vector<std::string_view>& w) {
    if (w.size() != 2 && (w.size() != 4 || w[2] != "into"))
      fail("expected 'out NAME' or 'out NAME into INPUT'");
    const int32_t slot = value(w[1]);
    int32_t into = -1;
    if (w.size() == 4) {
      into = value(w[3]);
      const std::string target(w[3]);
      if (into >= static_cast<int32_t>(program_.inputs.size()))
        fail("'into " + target + "': expected an input, found a statement's value");
      if (program_.inputs[into].layout != Layout::Dense)
        fail("'into " + target + "': expected a dense input, found another layout");
      if (program_.inputs[into].dtype != program_.slot_dtype(slot))
        fail("'into " + target + "': the input's dtype differs from the value's");
      for (int32_t other : program_.output_into) {
        if (other == into) fail("input " + target + " is written into twice");
      }
    }
    program_.outputs.push_back(slot);
    program_.output_into.push_back(into);
  }

  Operand operand(std::string_view word) const {
    Operand op;
    if (word.front() == '"') {
      if (word.size() < 2 || word.back() != '"') fail("unterminated string " + std::string(word));
      op.kind = Operand::Kind::String;
      op.text = std::string(word.substr(1, word.size() - 2));
      return op;
    }
    if (word.front() != '#') {
      op.kind = Operand::Kind::Value;
      op.value = value(word);
      return op;
    }
    std::string_view c = word.substr(1);
    if (c == "none") return op;
    if (c == "true" || c == "false") {
      op.kind = Operand::Kind::Bool;
      op.i = c == "true";
      return op;
    }
    const char* first = c.data();
    const char* last = c.data() + c.size();
    if (c.find_first_of(".eEn") == std::string_view::npos) {
      op.kind = Operand::Kind::Int;
      auto [p, ec] = std::from_chars(first, last, op.i);
      if (ec == std::errc() && p == last) return op;
    } else {
      op.kind = Operand::Kind::Double;
      auto [p, ec] = std::from_chars(first, last, op.d);
      if (ec == std::errc() && p == last) return op;
    }
    fail("expected a constant (#2, #-1.5, #inf, #true, #none), found '" + std::string(word) + "'");
  }

  // NAME DTYPE COMPUTE = OP ARGS...
  void statement(const std::vector<std::string_view>& w) {
    if (w.size() < 5 || w[3] != "=") fail("expected 'NAME DTYPE COMPUTE_DTYPE = OP ARGS...'");
    Statement s;
    s.dtype = dtype(w[1]);
    s.compute = dtype(w[2]);
    s.op = std::string(w[4]);
    for (size_t i = 5; i < w.size(); ++i) s.args.push_back(operand(w[i]));
    define(w[0]);
    program_.statements.push_back(std::move(s));
  }

  std::string_view text_;
  size_t line_number_ = 0;
  Program program_;
  std::unordered_map<std::string, int32_t> slots_;
  int32_t next_slot_ = 0;
};

}  // namespace

bool dtype_from_name(std::string_view name, LoomDType* out) {
  for (int t = 0; t < LOOM_DTYPE_COUNT; ++t) {
    if (name == sdk::dtype_name(static_cast<LoomDType>(t))) {
      *out = static_cast<LoomDType>(t);
      return true;
    }
  }
  return false;
}

Program parse_program(std::string_view text) {
  return Parser(text).run();
}

}  // namespace loom::compiler
