// A hand-written lexer and recursive-descent parser that turns schema text into a
// FunctionSchema (see Note [Schema grammar]).
#include "loom/dispatcher/function_schema.h"

#include "loom/core/error.h"
#include "loom/core/memory_format.h"

#include "absl/strings/str_cat.h"

#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::dispatch {
namespace {

// Note [Schema grammar]
// ~~~~~~~~~~~~~~~~~~~~~
// The PyTorch operator schema grammar, as far as loom uses it:
//
//   schema    := opname '(' args? ')' '->' returns END
//   opname    := IDENT '::' IDENT ('.' IDENT)?           namespace, name, overload
//   args      := item (',' item)*
//   item      := '*'                                     later arguments are keyword-only;
//                                                        allowed once
//              | type IDENT ('=' default)?
//   returns   := '(' (ret (',' ret)*)? ')'               '-> ()' returns nothing
//              | ret
//   ret       := type IDENT?                             returns may be unnamed
//   type      := BASE alias? suffix*
//   BASE      := Tensor | int | SymInt | float | bool | str | Scalar | ScalarType | Device
//              | Generator | Layout | MemoryFormat       SymInt reads as int, SymFloat
//              | SymInt | SymFloat | SymBool             as float, SymBool as bool
//   alias     := '(' SET '!'? ('->' SET)? ')'            Tensor only; the part after '->'
//   SET       := IDENT | '*'                             is accepted and dropped
//   suffix    := '?'                                     optional (never twice in a row)
//              | '[' INT? ']'                            list, or fixed-size list
//   default   := '-'? (INT | FLOAT | 'inf' | 'nan')
//              | 'True' | 'False' | 'None' | STRING
//              | MEMORY_FORMAT                           contiguous_format, channels_last,
//                                                        channels_last_3d, preserve_format
//              | '[' (default (',' default)*)? ']'
//
// Tokens are separated by optional whitespace. IDENT is [A-Za-z_][A-Za-z0-9_]*; INT is a run
// of digits; FLOAT is digits with a fraction ('1.', '0.5') and/or an exponent ('1e-05');
// STRING is quoted with ' or " and takes backslash escapes (\n, \t, anything else verbatim).
//
// A default must fit its type: None only for optional types; int defaults for int and the
// int-coded enums (ScalarType, Layout, MemoryFormat), and a memory format's name for
// MemoryFormat (stored as its code, Note [Memory format codes]); int or float for float (stored as
// a double); True/False for bool; strings for str and Device; int, float or bool for Scalar; lists
// of matching elements for int[], float[], bool[] (and only [] for other lists). A single value
// fills a fixed-size list: `int[2] stride=1` stores {1, 1}, and a list literal given to a
// fixed-size list must be empty or have exactly that many elements.
//
// Errors report the 1-based column (byte offset + 1) of the offending token.

enum class Tok {
  Ident,
  Int,
  Float,
  String,
  ColonColon,
  LParen,
  RParen,
  LBracket,
  RBracket,
  Comma,
  Star,
  Question,
  Bang,
  Equals,
  Arrow,
  Dot,
  Minus,
  End,
};

struct Token {
  Tok kind = Tok::End;
  std::string_view text;  // Spelling in the source.
  size_t offset = 0;      // Byte offset of the first character.
  std::string value;      // Decoded contents, for String tokens.
};

// A default value as written, before it is checked against the argument's type.
struct Literal {
  enum class Kind { None, Int, Float, Bool, Str, List, MemoryFormat };
  Kind kind = Kind::None;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<Literal> items;
  size_t begin = 0;  // Source span [begin, end).
  size_t end = 0;
};

// The type part of an argument or return, with its alias annotation.
struct AnnotatedType {
  SchemaType type;
  std::optional<AliasInfo> alias;
};

using Kind = SchemaType::Kind;

std::optional<Kind> base_kind(std::string_view name) {
  static constexpr std::pair<std::string_view, Kind> kBases[] = {
      {"Tensor", Kind::Tensor},  {"int", Kind::Int},
      {"SymInt", Kind::Int},     {"float", Kind::Float},
      {"SymFloat", Kind::Float}, {"SymBool", Kind::Bool},
      {"bool", Kind::Bool},      {"str", Kind::Str},
      {"Scalar", Kind::Scalar},  {"ScalarType", Kind::ScalarType},
      {"Device", Kind::Device},  {"Generator", Kind::Generator},
      {"Layout", Kind::Layout},  {"MemoryFormat", Kind::MemoryFormat},
  };
  for (const auto& [spelling, kind] : kBases) {
    if (spelling == name) return kind;
  }
  return std::nullopt;
}

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}

// The largest fixed-size list a single default value may fill (`int[N] x=1`), so that a
// schema cannot ask for an absurd allocation.
constexpr int64_t kMaxFilledSize = int64_t{1} << 16;

// Repeat a scalar default to fill a fixed-size list.
DefaultValue repeat(const DefaultValue& v, int64_t n) {
  size_t count = static_cast<size_t>(n);
  if (const auto* i = std::get_if<int64_t>(&v)) return std::vector<int64_t>(count, *i);
  if (const auto* d = std::get_if<double>(&v)) return std::vector<double>(count, *d);
  return std::vector<bool>(count, std::get<bool>(v));
}

// Note [Nesting limits]
// ~~~~~~~~~~~~~~~~~~~~~
// Types nest through suffixes (`Tensor?[]`) and defaults through brackets (`[[1]]`), and
// both are parsed, compared, printed and destroyed recursively. A schema string may come
// from a plugin or a file, so nesting is capped (real schemas use at most two levels):
// thousands of '[' would otherwise exhaust the stack (found by tests/fuzz/fuzz_schema).
constexpr int kMaxNesting = 8;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) { cur_ = lex(); }

  FunctionSchema schema() {
    FunctionSchema out;
    out.name = operator_name();
    expect(Tok::LParen, "'('");
    out.arguments = arguments();
    expect(Tok::Arrow, "'->'");
    out.returns = returns();
    expect_end("end of schema");
    return out;
  }

  OperatorName operator_name() {
    OperatorName out;
    out.ns = std::string(expect(Tok::Ident, "a namespace name").text);
    expect(Tok::ColonColon, "'::'");
    out.name = std::string(expect(Tok::Ident, "an operator name").text);
    if (accept(Tok::Dot)) out.overload = std::string(expect(Tok::Ident, "an overload name").text);
    return out;
  }

  void expect_end(std::string_view what) {
    if (cur_.kind != Tok::End) expected(what, cur_);
  }

 private:
  // ---- Errors ----

  [[noreturn]] void fail_at(size_t offset, const std::string& detail) const {
    loom::fail("schema", "column ", offset + 1, ": ", detail, " in '", std::string(text_), "'");
  }

  static std::string describe(const Token& t) {
    if (t.kind == Tok::End) return "end of input";
    return absl::StrCat("'", std::string(t.text), "'");
  }

  [[noreturn]] void expected(std::string_view what, const Token& found) const {
    fail_at(found.offset,
            absl::StrCat("expected ", std::string(what), " but found ", describe(found)));
  }

  std::string source(const Literal& lit) const {
    return std::string(text_.substr(lit.begin, lit.end - lit.begin));
  }

  // ---- Lexer ----

  Token make(Tok kind, size_t begin, size_t end) {
    Token t;
    t.kind = kind;
    t.offset = begin;
    t.text = text_.substr(begin, end - begin);
    pos_ = end;
    return t;
  }

  Token lex() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
    const size_t start = pos_;
    if (start >= text_.size()) return make(Tok::End, start, start);
    const char c = text_[start];
    auto at = [&](size_t i) { return i < text_.size() ? text_[i] : '\0'; };

    if (is_ident_start(c)) {
      size_t end = start + 1;
      while (is_ident_char(at(end))) ++end;
      return make(Tok::Ident, start, end);
    }
    if (is_digit(c)) {
      size_t end = start;
      bool is_float = false;
      while (is_digit(at(end))) ++end;
      if (at(end) == '.') {
        is_float = true;
        ++end;
        while (is_digit(at(end))) ++end;
      }
      if (at(end) == 'e' || at(end) == 'E') {
        size_t exp = end + 1;
        if (at(exp) == '+' || at(exp) == '-') ++exp;
        if (is_digit(at(exp))) {
          is_float = true;
          end = exp;
          while (is_digit(at(end))) ++end;
        }
      }
      return make(is_float ? Tok::Float : Tok::Int, start, end);
    }
    if (c == '"' || c == '\'') return lex_string(start);

    switch (c) {
      case ':':
        if (at(start + 1) != ':') {
          fail_at(start, absl::StrCat("expected '::' but found '",
                                      std::string(text_.substr(start, 2)), "'"));
        }
        return make(Tok::ColonColon, start, start + 2);
      case '-':
        if (at(start + 1) == '>') return make(Tok::Arrow, start, start + 2);
        return make(Tok::Minus, start, start + 1);
      case '(':
        return make(Tok::LParen, start, start + 1);
      case ')':
        return make(Tok::RParen, start, start + 1);
      case '[':
        return make(Tok::LBracket, start, start + 1);
      case ']':
        return make(Tok::RBracket, start, start + 1);
      case ',':
        return make(Tok::Comma, start, start + 1);
      case '*':
        return make(Tok::Star, start, start + 1);
      case '?':
        return make(Tok::Question, start, start + 1);
      case '!':
        return make(Tok::Bang, start, start + 1);
      case '=':
        return make(Tok::Equals, start, start + 1);
      case '.':
        return make(Tok::Dot, start, start + 1);
      default:
        break;
    }
    fail_at(start, absl::StrCat("expected a schema token but found '", std::string(1, c), "'"));
  }

  Token lex_string(size_t start) {
    const char quote = text_[start];
    std::string value;
    size_t i = start + 1;
    for (;;) {
      if (i >= text_.size() || (text_[i] == '\\' && i + 1 >= text_.size())) {
        fail_at(start, absl::StrCat("expected a closing ", std::string(1, quote),
                                    " but found end of input (unterminated string)"));
      }
      const char c = text_[i];
      if (c == quote) break;
      if (c == '\\') {
        const char e = text_[i + 1];
        value += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        i += 2;
      } else {
        value += c;
        ++i;
      }
    }
    Token t = make(Tok::String, start, i + 1);
    t.value = std::move(value);
    return t;
  }

  // ---- Token stream ----

  Token take() {
    Token t = std::move(cur_);
    last_end_ = t.offset + t.text.size();
    cur_ = lex();
    return t;
  }

  bool accept(Tok kind) {
    if (cur_.kind != kind) return false;
    take();
    return true;
  }

  Token expect(Tok kind, std::string_view what) {
    if (cur_.kind != kind) expected(what, cur_);
    return take();
  }

  // ---- Types ----

  AnnotatedType type() {
    std::optional<Kind> base;
    if (cur_.kind == Tok::Ident) base = base_kind(cur_.text);
    if (!base) expected("a type name", cur_);
    const Token name = take();

    AnnotatedType out;
    out.type = SchemaType::of(*base);
    int wrappers = 0;  // '?' and '[]' suffixes (Note [Nesting limits])
    if (cur_.kind == Tok::LParen) {
      if (*base != Kind::Tensor) {
        fail_at(cur_.offset, absl::StrCat("expected an alias annotation only after Tensor but "
                                          "found '(' after '",
                                          std::string(name.text), "'"));
      }
      out.alias = alias_annotation();
    }
    for (;;) {
      if ((cur_.kind == Tok::Question || cur_.kind == Tok::LBracket) && ++wrappers > kMaxNesting) {
        fail_at(cur_.offset, absl::StrCat("expected at most ", kMaxNesting,
                                          " '?' and '[]' suffixes on a type but found more"));
      }
      if (cur_.kind == Tok::Question) {
        if (out.type.is_optional())
          fail_at(cur_.offset, "expected a single '?' but found a second '?'");
        take();
        out.type = SchemaType::optional_of(std::move(out.type));
      } else if (cur_.kind == Tok::LBracket) {
        take();
        std::optional<int64_t> size;
        if (cur_.kind == Tok::Int) {
          int64_t n = 0;
          const std::string_view digits = cur_.text;
          auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
          if (ec != std::errc() || n <= 0) expected("a positive list size", cur_);
          size = n;
          take();
        }
        expect(Tok::RBracket, size ? "']'" : "a list size or ']'");
        out.type = SchemaType::list_of(std::move(out.type), size);
      } else {
        return out;
      }
    }
  }

  AliasInfo alias_annotation() {
    expect(Tok::LParen, "'('");
    AliasInfo out;
    if (cur_.kind != Tok::Ident && cur_.kind != Tok::Star) expected("an alias set name", cur_);
    out.set = std::string(take().text);
    out.is_write = accept(Tok::Bang);
    if (accept(Tok::Arrow)) {
      if (cur_.kind != Tok::Ident && cur_.kind != Tok::Star) {
        expected("an alias set name after '->'", cur_);
      }
      take();
      expect(Tok::RParen, "')'");
    } else {
      expect(Tok::RParen, out.is_write ? "'->' or ')'" : "'!', '->' or ')'");
    }
    return out;
  }

  // ---- Arguments and returns ----

  std::vector<Argument> arguments() {
    std::vector<Argument> out;
    if (accept(Tok::RParen)) return out;
    std::set<std::string, std::less<>> names;
    bool kwarg_only = false;
    for (;;) {
      if (cur_.kind == Tok::Star) {
        if (kwarg_only) {
          fail_at(cur_.offset,
                  "expected an argument but found a second '*' (the keyword-only "
                  "marker may appear once)");
        }
        take();
        kwarg_only = true;
      } else {
        out.push_back(argument(kwarg_only, names));
      }
      if (accept(Tok::Comma)) continue;
      expect(Tok::RParen, "',' or ')'");
      return out;
    }
  }

  Argument argument(bool kwarg_only, std::set<std::string, std::less<>>& names) {
    Argument out;
    AnnotatedType t = type();
    out.type = std::move(t.type);
    out.alias = std::move(t.alias);
    out.kwarg_only = kwarg_only;
    const Token name = expect(Tok::Ident, "an argument name");
    check_unique(name, names);
    out.name = std::string(name.text);
    if (accept(Tok::Equals)) out.default_value = convert(literal(), out.type);
    return out;
  }

  std::vector<Argument> returns() {
    std::vector<Argument> out;
    std::set<std::string, std::less<>> names;
    if (!accept(Tok::LParen)) {
      out.push_back(return_value(names));
      return out;
    }
    if (accept(Tok::RParen)) return out;
    for (;;) {
      out.push_back(return_value(names));
      if (accept(Tok::Comma)) continue;
      expect(Tok::RParen, "',' or ')'");
      return out;
    }
  }

  Argument return_value(std::set<std::string, std::less<>>& names) {
    Argument out;
    AnnotatedType t = type();
    out.type = std::move(t.type);
    out.alias = std::move(t.alias);
    if (cur_.kind == Tok::Ident) {
      const Token name = take();
      check_unique(name, names);
      out.name = std::string(name.text);
    }
    return out;
  }

  void check_unique(const Token& name, std::set<std::string, std::less<>>& names) const {
    if (!names.emplace(name.text).second) {
      fail_at(name.offset, absl::StrCat("expected a unique name but found a second '",
                                        std::string(name.text), "'"));
    }
  }

  // ---- Defaults ----

  Literal literal(int depth = 0) {
    Literal out;
    out.begin = cur_.offset;
    switch (cur_.kind) {
      case Tok::Minus:
        take();
        number(out, /*negative=*/true);
        break;
      case Tok::Int:
      case Tok::Float:
        number(out, /*negative=*/false);
        break;
      case Tok::String:
        out.kind = Literal::Kind::Str;
        out.s = take().value;
        break;
      case Tok::Ident:
        if (cur_.text == "True" || cur_.text == "False") {
          out.kind = Literal::Kind::Bool;
          out.b = cur_.text == "True";
          take();
        } else if (cur_.text == "None") {
          out.kind = Literal::Kind::None;
          take();
        } else if (cur_.text == "inf" || cur_.text == "nan") {
          number(out, /*negative=*/false);
        } else if (std::optional<int64_t> code = memory_format_code_of(cur_.text)) {
          out.kind = Literal::Kind::MemoryFormat;
          out.i = *code;
          take();
        } else {
          expected("a default value", cur_);
        }
        break;
      case Tok::LBracket:
        if (depth == kMaxNesting) {
          fail_at(cur_.offset, absl::StrCat("expected at most ", kMaxNesting,
                                            " nested lists in a default value but found more"));
        }
        take();
        out.kind = Literal::Kind::List;
        if (!accept(Tok::RBracket)) {
          for (;;) {
            out.items.push_back(literal(depth + 1));
            if (accept(Tok::Comma)) continue;
            expect(Tok::RBracket, "',' or ']'");
            break;
          }
        }
        break;
      default:
        expected("a default value", cur_);
    }
    out.end = last_end_;
    return out;
  }

  // Reads INT, FLOAT, inf or nan into `out`; a leading '-' (already taken) negates it.
  void number(Literal& out, bool negative) {
    const Token& t = cur_;
    const std::string_view s = t.text;
    auto spelled = [&] {
      return std::string(text_.substr(out.begin, t.offset + s.size() - out.begin));
    };
    if (t.kind == Tok::Int) {
      uint64_t magnitude = 0;
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), magnitude);
      const uint64_t limit =
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
      if (ec != std::errc() || magnitude > limit) {
        fail_at(out.begin, absl::StrCat("expected an integer that fits in 64 bits but found '",
                                        spelled(), "'"));
      }
      out.kind = Literal::Kind::Int;
      out.i = static_cast<int64_t>(negative ? 0 - magnitude : magnitude);
    } else if (t.kind == Tok::Float) {
      double v = 0;
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || ptr != s.data() + s.size()) {
        fail_at(out.begin,
                absl::StrCat("expected a float that fits in a double but found '", spelled(), "'"));
      }
      out.kind = Literal::Kind::Float;
      out.f = negative ? -v : v;
    } else if (t.kind == Tok::Ident && (s == "inf" || s == "nan")) {
      const double v = s == "inf" ? std::numeric_limits<double>::infinity()
                                  : std::numeric_limits<double>::quiet_NaN();
      out.kind = Literal::Kind::Float;
      out.f = negative ? -v : v;
    } else {
      expected("a number after '-'", t);
    }
    take();
  }

  [[noreturn]] void mismatch(const Literal& lit, const SchemaType& type) const {
    fail_at(lit.begin, absl::StrCat("expected a default value of type ", type.to_string(),
                                    " but found '", source(lit), "'"));
  }

  // The value `lit` stands for as a (non-list) `kind`, if it fits.
  static std::optional<DefaultValue> scalar_value(const Literal& lit, Kind kind) {
    using L = Literal::Kind;
    switch (kind) {
      case Kind::MemoryFormat:
        if (lit.kind == L::MemoryFormat) return lit.i;
        [[fallthrough]];
      case Kind::Int:
      case Kind::ScalarType:
      case Kind::Layout:
        if (lit.kind == L::Int) return lit.i;
        break;
      case Kind::Float:
        if (lit.kind == L::Int) return static_cast<double>(lit.i);
        if (lit.kind == L::Float) return lit.f;
        break;
      case Kind::Bool:
        if (lit.kind == L::Bool) return lit.b;
        break;
      case Kind::Str:
      case Kind::Device:
        if (lit.kind == L::Str) return lit.s;
        break;
      case Kind::Scalar:
        if (lit.kind == L::Int) return lit.i;
        if (lit.kind == L::Float) return lit.f;
        if (lit.kind == L::Bool) return lit.b;
        break;
      default:
        break;
    }
    return std::nullopt;
  }

  DefaultValue convert(const Literal& lit, const SchemaType& type) const {
    const SchemaType* t = &type;
    if (lit.kind == Literal::Kind::None) {
      if (type.is_optional()) return std::monostate{};
      fail_at(lit.begin, absl::StrCat("expected a default value of type ", type.to_string(),
                                      " but found 'None' (only optional types default to None)"));
    }
    if (t->is_optional()) t = t->elem.get();
    if (t->is_list()) return convert_list(lit, type, *t);
    if (auto v = scalar_value(lit, t->kind)) return *std::move(v);
    mismatch(lit, type);
  }

  DefaultValue convert_list(const Literal& lit, const SchemaType& type,
                            const SchemaType& list) const {
    const Kind elem = list.elem->kind;
    const bool numeric_elem = elem == Kind::Int || elem == Kind::Float || elem == Kind::Bool;
    if (lit.kind != Literal::Kind::List) {
      // A single value fills a fixed-size list: `int[2] stride=1` is [1, 1].
      if (list.fixed_size && numeric_elem) {
        if (auto v = scalar_value(lit, elem)) {
          if (*list.fixed_size > kMaxFilledSize) {
            fail_at(lit.begin,
                    absl::StrCat("expected a list size of at most ", kMaxFilledSize,
                                 " to fill from a single value but found type ", type.to_string()));
          }
          return repeat(*v, *list.fixed_size);
        }
      }
      mismatch(lit, type);
    }
    if (list.fixed_size && !lit.items.empty() &&
        static_cast<int64_t>(lit.items.size()) != *list.fixed_size) {
      fail_at(lit.begin,
              absl::StrCat("expected a list of ", *list.fixed_size, " elements for type ",
                           type.to_string(), " but found '", source(lit), "'"));
    }
    if (!numeric_elem) {
      if (!lit.items.empty()) {
        fail_at(lit.begin, absl::StrCat("expected an empty list default for type ",
                                        type.to_string(), " but found '", source(lit), "'"));
      }
      return std::vector<int64_t>{};
    }
    std::vector<DefaultValue> values;
    for (const Literal& item : lit.items) {
      std::optional<DefaultValue> v = scalar_value(item, elem);
      if (!v) {
        fail_at(item.begin,
                absl::StrCat("expected a list element of type ", std::string(kind_name(elem)),
                             " but found '", source(item), "'"));
      }
      values.push_back(*std::move(v));
    }
    switch (elem) {
      case Kind::Int: {
        std::vector<int64_t> out;
        for (const auto& v : values) out.push_back(std::get<int64_t>(v));
        return out;
      }
      case Kind::Float: {
        std::vector<double> out;
        for (const auto& v : values) out.push_back(std::get<double>(v));
        return out;
      }
      default: {
        std::vector<bool> out;
        for (const auto& v : values) out.push_back(std::get<bool>(v));
        return out;
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;       // Next character for the lexer.
  size_t last_end_ = 0;  // End offset of the last token taken.
  Token cur_;            // One token of lookahead.
};

}  // namespace

FunctionSchema parse_schema(std::string_view text) {
  return Parser(text).schema();
}

OperatorName parse_operator_name(std::string_view text) {
  Parser parser(text);
  OperatorName out = parser.operator_name();
  parser.expect_end("end of operator name");
  return out;
}

}  // namespace loom::dispatch
