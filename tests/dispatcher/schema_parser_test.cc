// Tests for the operator schema parser: valid schemas of every shape, canonical printing and
// round trips, and the column/expected/found messages of invalid ones.
#include "loom/dispatcher/function_schema.h"

#include "loom/core/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace loom::dispatch {

// Readable gtest output for schema comparisons.
void PrintTo(const FunctionSchema& schema, std::ostream* os) {
  *os << schema.to_string();
}
void PrintTo(const SchemaType& type, std::ostream* os) {
  *os << type.to_string();
}
void PrintTo(const OperatorName& name, std::ostream* os) {
  *os << name.qualified();
}

namespace {

using Kind = SchemaType::Kind;

SchemaType base(Kind kind) {
  return SchemaType::of(kind);
}
SchemaType opt(SchemaType t) {
  return SchemaType::optional_of(std::move(t));
}
SchemaType list(SchemaType t, std::optional<int64_t> n = std::nullopt) {
  return SchemaType::list_of(std::move(t), n);
}

// The single argument of "test::f(<arg>) -> ()".
Argument parse_arg(const std::string& arg) {
  FunctionSchema s = parse_schema("test::f(" + arg + ") -> ()");
  EXPECT_EQ(s.arguments.size(), 1u) << arg;
  return s.arguments.empty() ? Argument{} : s.arguments[0];
}

// The default value of the single argument "<arg>".
DefaultValue parse_default(const std::string& arg) {
  Argument a = parse_arg(arg);
  EXPECT_TRUE(a.default_value.has_value()) << arg;
  return a.default_value.value_or(DefaultValue{});
}

// 1-based column of the first occurrence of `needle` in `text`.
size_t col(std::string_view text, std::string_view needle) {
  size_t at = text.find(needle);
  EXPECT_NE(at, std::string_view::npos) << needle << " not in " << text;
  return at + 1;
}

// Parses `text`, expecting a schema error at `column` whose message contains `phrase` and
// quotes the schema.
void expect_error(std::string_view text, size_t column, std::string_view phrase) {
  SCOPED_TRACE(std::string(text));
  EXPECT_THROW(parse_schema(text), loom::Error);
  try {
    parse_schema(text);
  } catch (const loom::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.component(), "schema");
    const std::string prefix = "[schema] column " + std::to_string(column) + ": expected ";
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "message: " << msg << "\nwanted prefix: " << prefix;
    EXPECT_NE(msg.find(phrase), std::string::npos)
        << "message: " << msg << "\nwanted phrase: " << phrase;
    EXPECT_NE(msg.find(" in '" + std::string(text) + "'"), std::string::npos) << msg;
    return;
  }
  ADD_FAILURE() << "no error";
}

void expect_name_error(std::string_view text, size_t column, std::string_view phrase) {
  SCOPED_TRACE(std::string(text));
  EXPECT_THROW(parse_operator_name(text), loom::Error);
  try {
    parse_operator_name(text);
  } catch (const loom::Error& e) {
    const std::string msg = e.what();
    const std::string prefix = "[schema] column " + std::to_string(column) + ": expected ";
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "message: " << msg;
    EXPECT_NE(msg.find(phrase), std::string::npos) << "message: " << msg;
    return;
  }
  ADD_FAILURE() << "no error";
}

// ---- Operator names ----

TEST(OperatorNameTest, Qualified) {
  EXPECT_EQ((OperatorName{"aten", "add", ""}).qualified(), "aten::add");
  EXPECT_EQ((OperatorName{"aten", "add", "Tensor"}).qualified(), "aten::add.Tensor");
}

TEST(OperatorNameTest, ParsesWithAndWithoutOverload) {
  OperatorName a = parse_operator_name("aten::add.Tensor");
  EXPECT_EQ(a.ns, "aten");
  EXPECT_EQ(a.name, "add");
  EXPECT_EQ(a.overload, "Tensor");
  OperatorName b = parse_operator_name("  my_ns::__iand__  ");
  EXPECT_EQ(b, (OperatorName{"my_ns", "__iand__", ""}));
  EXPECT_EQ(parse_operator_name("aten::sum.dim_IntList").overload, "dim_IntList");
}

TEST(OperatorNameTest, RejectsMalformedNames) {
  expect_name_error("aten", 5, "expected '::' but found end of input");
  expect_name_error("aten::add.Tensor(", 17, "expected end of operator name but found '('");
  expect_name_error("::add", 1, "expected a namespace name but found '::'");
  expect_name_error("aten::", 7, "expected an operator name but found end of input");
  expect_name_error("aten::add.", 11, "expected an overload name but found end of input");
  expect_name_error("aten::add.1", 11, "expected an overload name but found '1'");
  expect_name_error("aten::a::b", 8, "expected end of operator name but found '::'");
  expect_name_error("", 1, "expected a namespace name but found end of input");
}

// ---- Whole schemas ----

TEST(SchemaParserTest, SimpleSchema) {
  FunctionSchema s = parse_schema("aten::relu(Tensor self) -> Tensor");
  EXPECT_EQ(s.name, (OperatorName{"aten", "relu", ""}));
  ASSERT_EQ(s.arguments.size(), 1u);
  EXPECT_EQ(s.arguments[0].name, "self");
  EXPECT_EQ(s.arguments[0].type, base(Kind::Tensor));
  EXPECT_FALSE(s.arguments[0].default_value.has_value());
  EXPECT_FALSE(s.arguments[0].kwarg_only);
  EXPECT_FALSE(s.arguments[0].alias.has_value());
  ASSERT_EQ(s.returns.size(), 1u);
  EXPECT_EQ(s.returns[0].name, "");
  EXPECT_EQ(s.returns[0].type, base(Kind::Tensor));
  EXPECT_FALSE(s.is_mutable());
}

TEST(SchemaParserTest, AddTensorWithKeywordOnlyAlpha) {
  const std::string text =
      "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
  FunctionSchema s = parse_schema(text);
  EXPECT_EQ(s.name.qualified(), "aten::add.Tensor");
  ASSERT_EQ(s.arguments.size(), 3u);
  EXPECT_FALSE(s.arguments[0].kwarg_only);
  EXPECT_FALSE(s.arguments[1].kwarg_only);
  EXPECT_TRUE(s.arguments[2].kwarg_only);
  EXPECT_EQ(s.arguments[2].name, "alpha");
  EXPECT_EQ(s.arguments[2].type, base(Kind::Scalar));
  ASSERT_TRUE(s.arguments[2].default_value.has_value());
  EXPECT_EQ(*s.arguments[2].default_value, DefaultValue(int64_t{1}));
  EXPECT_EQ(s.to_string(), text);
}

TEST(SchemaParserTest, EmptyArgumentList) {
  FunctionSchema s = parse_schema("prim::rand() -> Tensor");
  EXPECT_TRUE(s.arguments.empty());
  EXPECT_EQ(s.returns.size(), 1u);
  EXPECT_EQ(s.to_string(), "prim::rand() -> Tensor");
}

TEST(SchemaParserTest, ToleratesWhitespace) {
  FunctionSchema s = parse_schema(
      "  aten::add . Tensor (\n\tTensor  self ,Tensor other,*,Scalar alpha = 1 )->Tensor  ");
  EXPECT_EQ(s.to_string(),
            "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
}

// ---- Types ----

TEST(SchemaTypeTest, EveryBaseType) {
  const std::vector<std::pair<std::string, Kind>> cases = {
      {"Tensor", Kind::Tensor},  {"int", Kind::Int},
      {"SymInt", Kind::Int},     {"float", Kind::Float},
      {"bool", Kind::Bool},      {"str", Kind::Str},
      {"Scalar", Kind::Scalar},  {"ScalarType", Kind::ScalarType},
      {"Device", Kind::Device},  {"Generator", Kind::Generator},
      {"Layout", Kind::Layout},  {"MemoryFormat", Kind::MemoryFormat},
      {"SymFloat", Kind::Float}, {"SymBool", Kind::Bool},
  };
  // The symbolic types read as the plain ones
  const std::map<std::string, std::string> plain = {
      {"SymInt", "int"}, {"SymFloat", "float"}, {"SymBool", "bool"}};
  for (const auto& [spelling, kind] : cases) {
    SCOPED_TRACE(spelling);
    Argument a = parse_arg(spelling + " x");
    EXPECT_EQ(a.type.kind, kind);
    EXPECT_EQ(a.type.elem, nullptr);
    EXPECT_FALSE(a.type.fixed_size.has_value());
    EXPECT_EQ(a.type.to_string(), plain.contains(spelling) ? plain.at(spelling) : spelling);
    EXPECT_EQ(kind_name(kind), a.type.to_string());
  }
}

TEST(SchemaTypeTest, OptionalAndListCombinations) {
  struct Case {
    std::string text;
    SchemaType type;
    std::string printed;
  };
  const std::vector<Case> cases = {
      {"Tensor?", opt(base(Kind::Tensor)), "Tensor?"},
      {"Tensor[]", list(base(Kind::Tensor)), "Tensor[]"},
      {"Tensor?[]", list(opt(base(Kind::Tensor))), "Tensor?[]"},
      {"Tensor[]?", opt(list(base(Kind::Tensor))), "Tensor[]?"},
      {"int[]?", opt(list(base(Kind::Int))), "int[]?"},
      {"int[2]", list(base(Kind::Int), 2), "int[2]"},
      {"int[2]?", opt(list(base(Kind::Int), 2)), "int[2]?"},
      {"SymInt[]", list(base(Kind::Int)), "int[]"},
      {"SymInt[3]", list(base(Kind::Int), 3), "int[3]"},
      {"SymInt?", opt(base(Kind::Int)), "int?"},
      {"float[]?", opt(list(base(Kind::Float))), "float[]?"},
      {"bool[3]", list(base(Kind::Bool), 3), "bool[3]"},
      {"str[]", list(base(Kind::Str)), "str[]"},
      {"Scalar?", opt(base(Kind::Scalar)), "Scalar?"},
      {"ScalarType?", opt(base(Kind::ScalarType)), "ScalarType?"},
      {"Generator?", opt(base(Kind::Generator)), "Generator?"},
      {"int[][]", list(list(base(Kind::Int))), "int[][]"},
      {"int?[]?", opt(list(opt(base(Kind::Int)))), "int?[]?"},
      {"int [ 4 ] ?", opt(list(base(Kind::Int), 4)), "int[4]?"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Argument a = parse_arg(c.text + " x");
    EXPECT_EQ(a.type, c.type);
    EXPECT_EQ(a.type.to_string(), c.printed);
  }
}

TEST(SchemaTypeTest, StructureOfNestedTypes) {
  Argument a = parse_arg("Tensor?[] indices");
  ASSERT_TRUE(a.type.is_list());
  ASSERT_NE(a.type.elem, nullptr);
  EXPECT_TRUE(a.type.elem->is_optional());
  ASSERT_NE(a.type.elem->elem, nullptr);
  EXPECT_EQ(a.type.elem->elem->kind, Kind::Tensor);

  Argument b = parse_arg("int[2]? stride");
  ASSERT_TRUE(b.type.is_optional());
  ASSERT_TRUE(b.type.elem->is_list());
  EXPECT_EQ(b.type.elem->fixed_size, 2);
}

TEST(SchemaTypeTest, EqualityIsDeep) {
  EXPECT_EQ(list(base(Kind::Int)), list(base(Kind::Int)));
  EXPECT_NE(list(base(Kind::Int)), list(base(Kind::Float)));
  EXPECT_NE(list(base(Kind::Int)), list(base(Kind::Int), 2));
  EXPECT_NE(list(base(Kind::Int), 2), list(base(Kind::Int), 3));
  EXPECT_NE(opt(base(Kind::Int)), base(Kind::Int));
  EXPECT_NE(opt(list(base(Kind::Int))), list(opt(base(Kind::Int))));
}

// ---- Defaults ----

TEST(DefaultValueTest, Integers) {
  EXPECT_EQ(parse_default("int x=0"), DefaultValue(int64_t{0}));
  EXPECT_EQ(parse_default("int x=42"), DefaultValue(int64_t{42}));
  EXPECT_EQ(parse_default("int x=-1"), DefaultValue(int64_t{-1}));
  EXPECT_EQ(parse_default("int x=- 7"), DefaultValue(int64_t{-7}));
  EXPECT_EQ(parse_default("int x=9223372036854775807"),
            DefaultValue(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(parse_default("int x=-9223372036854775808"),
            DefaultValue(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(parse_default("SymInt x=3"), DefaultValue(int64_t{3}));
  EXPECT_EQ(parse_default("int? x=5"), DefaultValue(int64_t{5}));
  // The int-coded enums take int defaults.
  EXPECT_EQ(parse_default("ScalarType dtype=6"), DefaultValue(int64_t{6}));
  EXPECT_EQ(parse_default("Layout layout=0"), DefaultValue(int64_t{0}));
  EXPECT_EQ(parse_default("MemoryFormat memory_format=1"), DefaultValue(int64_t{1}));
}

// A memory format's name reads as its torch.export code (Note [Memory format codes]) and
// prints back by name.
TEST(DefaultValueTest, MemoryFormatNames) {
  EXPECT_EQ(parse_default("MemoryFormat memory_format=contiguous_format"),
            DefaultValue(int64_t{1}));
  EXPECT_EQ(parse_default("MemoryFormat? f=channels_last"), DefaultValue(int64_t{2}));
  EXPECT_EQ(parse_default("MemoryFormat f=channels_last_3d"), DefaultValue(int64_t{3}));
  EXPECT_EQ(parse_default("MemoryFormat f=preserve_format"), DefaultValue(int64_t{4}));
  const std::string text =
      "aten::sym_is_contiguous(Tensor self, MemoryFormat memory_format=contiguous_format) -> "
      "bool";
  EXPECT_EQ(parse_schema(text).to_string(), text);
  EXPECT_EQ(parse_arg("MemoryFormat f=3").to_string(), "MemoryFormat f=channels_last_3d");
  EXPECT_EQ(parse_arg("MemoryFormat f=9").to_string(), "MemoryFormat f=9");
}

TEST(DefaultValueTest, Floats) {
  EXPECT_EQ(parse_default("float eps=1e-05"), DefaultValue(1e-05));
  EXPECT_EQ(parse_default("float x=-0.5"), DefaultValue(-0.5));
  EXPECT_EQ(parse_default("float x=2.5E3"), DefaultValue(2500.0));
  EXPECT_EQ(parse_default("float x=1e+2"), DefaultValue(100.0));
  EXPECT_EQ(parse_default("float x=1."), DefaultValue(1.0));
  EXPECT_EQ(parse_default("float x=inf"), DefaultValue(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(parse_default("float x=-inf"), DefaultValue(-std::numeric_limits<double>::infinity()));
  DefaultValue nan = parse_default("float x=nan");
  ASSERT_TRUE(std::holds_alternative<double>(nan));
  EXPECT_TRUE(std::isnan(std::get<double>(nan)));
  // An int default for a float argument is stored as a double.
  DefaultValue widened = parse_default("float x=3");
  ASSERT_TRUE(std::holds_alternative<double>(widened));
  EXPECT_EQ(std::get<double>(widened), 3.0);
  EXPECT_EQ(parse_default("float? x=-2"), DefaultValue(-2.0));
}

TEST(DefaultValueTest, BoolsNoneAndStrings) {
  EXPECT_EQ(parse_default("bool x=True"), DefaultValue(true));
  EXPECT_EQ(parse_default("bool x=False"), DefaultValue(false));
  EXPECT_EQ(parse_default("Tensor? x=None"), DefaultValue(std::monostate{}));
  EXPECT_EQ(parse_default("int[]? x=None"), DefaultValue(std::monostate{}));
  EXPECT_EQ(parse_default("Generator? g=None"), DefaultValue(std::monostate{}));
  EXPECT_EQ(parse_default("str s=\"mean\""), DefaultValue(std::string("mean")));
  EXPECT_EQ(parse_default("str s='mean'"), DefaultValue(std::string("mean")));
  EXPECT_EQ(parse_default("str s=''"), DefaultValue(std::string("")));
  EXPECT_EQ(parse_default("str s='it\\'s'"), DefaultValue(std::string("it's")));
  EXPECT_EQ(parse_default("str s=\"a\\\"b\\\\c\\nd\""), DefaultValue(std::string("a\"b\\c\nd")));
  EXPECT_EQ(parse_default("str s='a,b) -> ('"), DefaultValue(std::string("a,b) -> (")));
  EXPECT_EQ(parse_default("str? mode=\"floor\""), DefaultValue(std::string("floor")));
  EXPECT_EQ(parse_default("Device d=\"cpu\""), DefaultValue(std::string("cpu")));
}

TEST(DefaultValueTest, ScalarKeepsTheLiteralKind) {
  EXPECT_EQ(parse_default("Scalar x=1"), DefaultValue(int64_t{1}));
  EXPECT_EQ(parse_default("Scalar x=1.0"), DefaultValue(1.0));
  EXPECT_EQ(parse_default("Scalar x=-1"), DefaultValue(int64_t{-1}));
  EXPECT_EQ(parse_default("Scalar x=True"), DefaultValue(true));
  EXPECT_EQ(parse_default("Scalar? x=None"), DefaultValue(std::monostate{}));
}

TEST(DefaultValueTest, Lists) {
  EXPECT_EQ(parse_default("int[] x=[1, 2]"), DefaultValue(std::vector<int64_t>{1, 2}));
  EXPECT_EQ(parse_default("int[] x=[]"), DefaultValue(std::vector<int64_t>{}));
  EXPECT_EQ(parse_default("int[] x=[-1]"), DefaultValue(std::vector<int64_t>{-1}));
  EXPECT_EQ(parse_default("SymInt[] x=[0,-3, 4]"), DefaultValue(std::vector<int64_t>{0, -3, 4}));
  EXPECT_EQ(parse_default("int[2] x=[3, 4]"), DefaultValue(std::vector<int64_t>{3, 4}));
  EXPECT_EQ(parse_default("int[1] dim=[]"), DefaultValue(std::vector<int64_t>{}));
  EXPECT_EQ(parse_default("int[]? x=[1]"), DefaultValue(std::vector<int64_t>{1}));
  EXPECT_EQ(parse_default("float[] x=[1, 2.5, -inf]"),
            DefaultValue(std::vector<double>{1.0, 2.5, -std::numeric_limits<double>::infinity()}));
  EXPECT_EQ(parse_default("float[] x=[]"), DefaultValue(std::vector<double>{}));
  EXPECT_EQ(parse_default("bool[3] mask=[True, False, True]"),
            DefaultValue(std::vector<bool>{true, false, true}));
  EXPECT_EQ(parse_default("bool[] mask=[]"), DefaultValue(std::vector<bool>{}));
  EXPECT_EQ(parse_default("Tensor[] xs=[]"), DefaultValue(std::vector<int64_t>{}));
}

TEST(DefaultValueTest, SingleValueFillsFixedSizeList) {
  EXPECT_EQ(parse_default("int[2] stride=1"), DefaultValue(std::vector<int64_t>{1, 1}));
  EXPECT_EQ(parse_default("SymInt[3] padding=0"), DefaultValue(std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(parse_default("int[2]? x=-1"), DefaultValue(std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(parse_default("float[2] scale=0.5"), DefaultValue(std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(parse_default("float[2] scale=2"), DefaultValue(std::vector<double>{2.0, 2.0}));
  EXPECT_EQ(parse_default("bool[3] mask=True"), DefaultValue(std::vector<bool>{true, true, true}));
}

TEST(DefaultValueTest, Printing) {
  EXPECT_EQ(default_value_to_string(std::monostate{}), "None");
  EXPECT_EQ(default_value_to_string(int64_t{-3}), "-3");
  EXPECT_EQ(default_value_to_string(1e-05), "1e-05");
  EXPECT_EQ(default_value_to_string(1.0), "1.0");
  EXPECT_EQ(default_value_to_string(-0.5), "-0.5");
  EXPECT_EQ(default_value_to_string(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(default_value_to_string(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(default_value_to_string(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(default_value_to_string(true), "True");
  EXPECT_EQ(default_value_to_string(std::string("a\"b\\")), "\"a\\\"b\\\\\"");
  EXPECT_EQ(default_value_to_string(std::vector<int64_t>{1, 2}), "[1, 2]");
  EXPECT_EQ(default_value_to_string(std::vector<int64_t>{}), "[]");
  EXPECT_EQ(default_value_to_string(std::vector<double>{1.0, 0.25}), "[1.0, 0.25]");
  EXPECT_EQ(default_value_to_string(std::vector<bool>{true, false}), "[True, False]");
}

// ---- Keyword-only arguments ----

TEST(SchemaParserTest, KeywordOnlyArguments) {
  FunctionSchema s = parse_schema("aten::f(Tensor a, int b, *, int c, bool d=False) -> Tensor");
  ASSERT_EQ(s.arguments.size(), 4u);
  EXPECT_FALSE(s.arguments[0].kwarg_only);
  EXPECT_FALSE(s.arguments[1].kwarg_only);
  EXPECT_TRUE(s.arguments[2].kwarg_only);
  EXPECT_TRUE(s.arguments[3].kwarg_only);

  FunctionSchema all = parse_schema("aten::f(*, int c, int d) -> Tensor");
  ASSERT_EQ(all.arguments.size(), 2u);
  EXPECT_TRUE(all.arguments[0].kwarg_only);
  EXPECT_TRUE(all.arguments[1].kwarg_only);
  EXPECT_EQ(all.to_string(), "aten::f(*, int c, int d) -> Tensor");

  // A trailing '*' introduces no arguments and disappears when printed.
  FunctionSchema trailing = parse_schema("aten::f(Tensor a, *) -> Tensor");
  ASSERT_EQ(trailing.arguments.size(), 1u);
  EXPECT_FALSE(trailing.arguments[0].kwarg_only);
  EXPECT_EQ(trailing.to_string(), "aten::f(Tensor a) -> Tensor");
}

// ---- Alias annotations ----

TEST(AliasTest, ArgumentsAndReturns) {
  FunctionSchema s = parse_schema(
      "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  ASSERT_TRUE(s.arguments[0].alias.has_value());
  EXPECT_EQ(s.arguments[0].alias->set, "a");
  EXPECT_TRUE(s.arguments[0].alias->is_write);
  EXPECT_FALSE(s.arguments[1].alias.has_value());
  ASSERT_TRUE(s.returns[0].alias.has_value());
  EXPECT_EQ(*s.returns[0].alias, (AliasInfo{"a", true}));
  EXPECT_EQ(s.arguments[0].type, base(Kind::Tensor));
  EXPECT_TRUE(s.is_mutable());
}

TEST(AliasTest, ReadOnlyAliasIsNotMutable) {
  FunctionSchema s = parse_schema("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)");
  ASSERT_TRUE(s.arguments[0].alias.has_value());
  EXPECT_EQ(*s.arguments[0].alias, (AliasInfo{"a", false}));
  EXPECT_FALSE(s.is_mutable());
  EXPECT_EQ(s.to_string(), "aten::view(Tensor(a) self, int[] size) -> Tensor(a)");
}

TEST(AliasTest, ArrowFormReadsAsTheSet) {
  FunctionSchema s = parse_schema(
      "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> "
      "Tensor(a)[]");
  ASSERT_TRUE(s.arguments[0].alias.has_value());
  EXPECT_EQ(*s.arguments[0].alias, (AliasInfo{"a", false}));
  ASSERT_EQ(s.returns.size(), 1u);
  EXPECT_EQ(s.returns[0].type, list(base(Kind::Tensor)));
  EXPECT_EQ(*s.returns[0].alias, (AliasInfo{"a", false}));
  EXPECT_EQ(s.to_string(),
            "aten::split.Tensor(Tensor(a) self, int split_size, int dim=0) -> Tensor(a)[]");
  EXPECT_EQ(parse_arg("Tensor(b! -> *) x").alias, (AliasInfo{"b", true}));
}

TEST(AliasTest, AliasOnListAndOptionalTensors) {
  Argument list_arg = parse_arg("Tensor(a!)[] self");
  EXPECT_EQ(list_arg.type, list(base(Kind::Tensor)));
  EXPECT_EQ(list_arg.alias, (AliasInfo{"a", true}));
  EXPECT_EQ(list_arg.to_string(), "Tensor(a!)[] self");

  Argument opt_arg = parse_arg("Tensor(b)? x=None");
  EXPECT_EQ(opt_arg.type, opt(base(Kind::Tensor)));
  EXPECT_EQ(opt_arg.alias, (AliasInfo{"b", false}));
  EXPECT_EQ(opt_arg.to_string(), "Tensor(b)? x=None");

  Argument wildcard = parse_arg("Tensor(*) x");
  EXPECT_EQ(wildcard.alias, (AliasInfo{"*", false}));
  EXPECT_EQ(wildcard.to_string(), "Tensor(*) x");
}

TEST(AliasTest, OutVariantWithSeveralWrites) {
  FunctionSchema s = parse_schema(
      "aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, "
      "Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)");
  ASSERT_EQ(s.arguments.size(), 5u);
  EXPECT_EQ(s.arguments[3].alias, (AliasInfo{"a", true}));
  EXPECT_EQ(s.arguments[4].alias, (AliasInfo{"b", true}));
  EXPECT_TRUE(s.arguments[3].kwarg_only);
  ASSERT_EQ(s.returns.size(), 2u);
  EXPECT_EQ(s.returns[0].name, "values");
  EXPECT_EQ(s.returns[1].name, "indices");
  EXPECT_EQ(s.returns[1].alias, (AliasInfo{"b", true}));
  EXPECT_TRUE(s.is_mutable());
}

// ---- Returns ----

TEST(ReturnsTest, Shapes) {
  FunctionSchema tuple = parse_schema("aten::f(Tensor a) -> (Tensor, Tensor)");
  ASSERT_EQ(tuple.returns.size(), 2u);
  EXPECT_EQ(tuple.returns[0].name, "");
  EXPECT_EQ(tuple.returns[1].name, "");
  EXPECT_EQ(tuple.to_string(), "aten::f(Tensor a) -> (Tensor, Tensor)");

  FunctionSchema named = parse_schema(
      "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
      "Tensor indices)");
  ASSERT_EQ(named.returns.size(), 2u);
  EXPECT_EQ(named.returns[0].name, "values");
  EXPECT_EQ(named.returns[1].name, "indices");

  FunctionSchema none = parse_schema("aten::_foreach_add_.List(Tensor(a!)[] self) -> ()");
  EXPECT_TRUE(none.returns.empty());
  EXPECT_EQ(none.to_string(), "aten::_foreach_add_.List(Tensor(a!)[] self) -> ()");

  FunctionSchema lst = parse_schema("aten::unbind(Tensor self) -> Tensor[]");
  ASSERT_EQ(lst.returns.size(), 1u);
  EXPECT_EQ(lst.returns[0].type, list(base(Kind::Tensor)));
  EXPECT_EQ(lst.to_string(), "aten::unbind(Tensor self) -> Tensor[]");

  FunctionSchema mixed = parse_schema("aten::f(Tensor a) -> (Tensor, int, float[], bool?)");
  ASSERT_EQ(mixed.returns.size(), 4u);
  EXPECT_EQ(mixed.returns[1].type, base(Kind::Int));
  EXPECT_EQ(mixed.returns[2].type, list(base(Kind::Float)));
  EXPECT_EQ(mixed.returns[3].type, opt(base(Kind::Bool)));

  // One parenthesized unnamed return is the same as a bare one.
  EXPECT_EQ(parse_schema("aten::f(Tensor a) -> (Tensor)"),
            parse_schema("aten::f(Tensor a) -> Tensor"));

  // A single named return prints in parentheses.
  FunctionSchema single_named = parse_schema("aten::f(Tensor a) -> Tensor out");
  ASSERT_EQ(single_named.returns.size(), 1u);
  EXPECT_EQ(single_named.returns[0].name, "out");
  EXPECT_EQ(single_named.to_string(), "aten::f(Tensor a) -> (Tensor out)");
}

// ---- Printing and round trips ----

TEST(ToStringTest, CanonicalSpellings) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, "
       "SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
       "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=[1, 1], "
       "int[2] padding=[0, 0], int[2] dilation=[1, 1], int groups=1) -> Tensor"},
      {"aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
       "Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
       "aten::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, "
       "Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor"},
      {"test::f(float a=3, str b='x', Scalar c=2., float[] d=[1,2]) -> ( )",
       "test::f(float a=3.0, str b=\"x\", Scalar c=2.0, float[] d=[1.0, 2.0]) -> ()"},
      {"test::g(float a=-inf, float b=nan, int c=-0) -> (Tensor x, Tensor y)",
       "test::g(float a=-inf, float b=nan, int c=0) -> (Tensor x, Tensor y)"},
  };
  for (const auto& [in, out] : cases) {
    SCOPED_TRACE(in);
    EXPECT_EQ(parse_schema(in).to_string(), out);
  }
}

TEST(ToStringTest, HandBuiltSchema) {
  FunctionSchema s;
  s.name = {"loom", "scale", "out"};
  Argument self;
  self.name = "self";
  self.type = base(Kind::Tensor);
  Argument factor;
  factor.name = "factor";
  factor.type = opt(base(Kind::Float));
  factor.default_value = 0.5;
  factor.kwarg_only = true;
  Argument out;
  out.name = "out";
  out.type = base(Kind::Tensor);
  out.kwarg_only = true;
  out.alias = AliasInfo{"a", true};
  s.arguments = {self, factor, out};
  Argument ret;
  ret.type = base(Kind::Tensor);
  ret.alias = AliasInfo{"a", true};
  s.returns = {ret};
  const std::string text = s.to_string();
  EXPECT_EQ(text,
            "loom::scale.out(Tensor self, *, float? factor=0.5, Tensor(a!) out) -> Tensor(a!)");
  EXPECT_EQ(parse_schema(text), s);
  EXPECT_TRUE(s.is_mutable());
}

TEST(RoundTripTest, RealisticSchemas) {
  const std::vector<std::string> corpus = {
      "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
      "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
      "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> "
      "Tensor(a!)",
      "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, "
      "SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
      "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor "
      "indices)",
      "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
      "aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
      "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
      "aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? "
      "bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
      "aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
      "aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
      "aten::_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()",
      "aten::native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? "
      "running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, "
      "float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
      "aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
      "aten::bernoulli(Tensor self, *, Generator? generator=None) -> Tensor",
      "aten::hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
      "aten::nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> "
      "Tensor",
      "aten::upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
      "float[]? scale_factors) -> Tensor",
      "aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool "
      "copy=False, MemoryFormat? memory_format=None) -> Tensor(a)",
      "aten::mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
      "aten::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, "
      "bool include_self=True) -> Tensor",
      "test::defaults(float a=inf, float b=-inf, float c=nan, float d=-0.5, Scalar e=2.5, "
      "Scalar f=True, str g='it\\'s', str h=\"q\\\"\\n\", float[] i=[1, 2.5, nan], bool[] "
      "j=[True, False], int[] k=[-1, 0, 1], float l=1e300, float m=-0.0, Scalar n=1e-300) -> ()",
      "test::nested(int[][] a, int?[]? b=None, Tensor[]? c=[], Device d='cuda:0') -> "
      "(Tensor(a!)[] x, int y)",
  };
  for (const std::string& text : corpus) {
    SCOPED_TRACE(text);
    FunctionSchema first = parse_schema(text);
    const std::string printed = first.to_string();
    FunctionSchema second = parse_schema(printed);
    EXPECT_EQ(first, second);
    EXPECT_EQ(second.to_string(), printed);  // Printing is a fixed point.
    EXPECT_EQ(first.is_mutable(), second.is_mutable());
  }
}

TEST(RoundTripTest, EqualityNoticesDifferences) {
  const FunctionSchema base_schema = parse_schema("aten::f(Tensor a, int b=1) -> Tensor");
  EXPECT_EQ(base_schema, parse_schema("aten::f(Tensor a, int b=1) -> Tensor"));
  EXPECT_NE(base_schema, parse_schema("aten::f(Tensor a, int b=2) -> Tensor"));
  EXPECT_NE(base_schema, parse_schema("aten::f(Tensor a, int c=1) -> Tensor"));
  EXPECT_NE(base_schema, parse_schema("aten::f(Tensor a, *, int b=1) -> Tensor"));
  EXPECT_NE(base_schema, parse_schema("aten::f(Tensor a, int b) -> Tensor"));
  EXPECT_NE(base_schema, parse_schema("aten::f(Tensor(a) a, int b=1) -> Tensor"));
  EXPECT_NE(base_schema, parse_schema("aten::f(Tensor a, float b=1) -> Tensor"));
  EXPECT_NE(base_schema, parse_schema("aten::f.x(Tensor a, int b=1) -> Tensor"));
  EXPECT_NE(base_schema, parse_schema("aten::f(Tensor a, int b=1) -> Tensor b"));
  EXPECT_NE(base_schema, parse_schema("aten::f(Tensor a, int b=1) -> ()"));
  // Scalar defaults keep int vs float apart.
  EXPECT_NE(parse_schema("aten::g(Scalar s=1) -> ()"), parse_schema("aten::g(Scalar s=1.0) -> ()"));
  // NaN defaults compare equal to themselves.
  EXPECT_EQ(parse_schema("aten::g(float s=nan) -> ()"), parse_schema("aten::g(float s=nan) -> ()"));
}

// ---- Errors ----

TEST(SchemaErrorTest, ExactMessageForUnknownType) {
  const std::string text = "aten::add(Tensor self, Tensr other) -> Tensor";
  EXPECT_THROW(parse_schema(text), loom::Error);
  try {
    parse_schema(text);
    FAIL() << "no error";
  } catch (const loom::Error& e) {
    EXPECT_EQ(e.component(), "schema");
    EXPECT_STREQ(e.what(),
                 "[schema] column 24: expected a type name but found 'Tensr' in "
                 "'aten::add(Tensor self, Tensr other) -> Tensor'");
  }
}

TEST(SchemaErrorTest, UnknownTypes) {
  expect_error("aten::f(tensor x) -> Tensor", 9, "expected a type name but found 'tensor'");
  expect_error("aten::f(Tensor x) -> Tnsor", 22, "expected a type name but found 'Tnsor'");
  expect_error("aten::f(Tensor x) -> (Tensor, Foo)", 31, "expected a type name but found 'Foo'");
  expect_error("aten::f(int32 x) -> Tensor", 9, "expected a type name but found 'int32'");
  expect_error("aten::f(1 x) -> Tensor", 9, "expected a type name but found '1'");
}

TEST(SchemaErrorTest, MalformedNames) {
  expect_error("relu(Tensor self) -> Tensor", 5, "expected '::' but found '('");
  expect_error("aten::(Tensor self) -> Tensor", 7, "expected an operator name but found '('");
  expect_error("::relu(Tensor self) -> Tensor", 1, "expected a namespace name but found '::'");
  expect_error("aten::add.(Tensor self) -> Tensor", 11, "expected an overload name but found '('");
  expect_error("aten:relu(Tensor self) -> Tensor", 5, "expected '::' but found ':r'");
  expect_error("", 1, "expected a namespace name but found end of input");
  expect_error("   ", 4, "expected a namespace name but found end of input");
  expect_error("aten::relu Tensor self) -> Tensor", 12, "expected '(' but found 'Tensor'");
}

TEST(SchemaErrorTest, MissingArrowAndTrailingGarbage) {
  expect_error("aten::relu(Tensor self) Tensor", 25, "expected '->' but found 'Tensor'");
  expect_error("aten::relu(Tensor self)", 24, "expected '->' but found end of input");
  expect_error("aten::relu(Tensor self) - Tensor", 25, "expected '->' but found '-'");
  expect_error("aten::relu(Tensor self) -> Tensor out extra", 39,
               "expected end of schema but found 'extra'");
  expect_error("aten::relu(Tensor self) -> Tensor)", 34, "expected end of schema but found ')'");
  expect_error("aten::relu(Tensor self) -> (Tensor) -> Tensor", 37,
               "expected end of schema but found '->'");
  expect_error("aten::relu(Tensor self) -> Tensor @", 35, "expected a schema token but found '@'");
  expect_error("aten::relu(Tensor self) ->", 27, "expected a type name but found end of input");
}

TEST(SchemaErrorTest, UnbalancedParens) {
  const std::string a = "aten::f(Tensor a -> Tensor";
  expect_error(a, col(a, "->"), "expected ',' or ')' but found '->'");
  const std::string b = "aten::f(Tensor a)) -> Tensor";
  expect_error(b, 18, "expected '->' but found ')'");
  const std::string c = "aten::f(Tensor a) -> (Tensor, Tensor";
  expect_error(c, c.size() + 1, "expected ',' or ')' but found end of input");
  const std::string d = "aten::f((Tensor a) -> Tensor";
  expect_error(d, 9, "expected a type name but found '('");
  const std::string e = "aten::f(Tensor a";
  expect_error(e, e.size() + 1, "expected ',' or ')' but found end of input");
  const std::string f = "aten::f(Tensor a) -> (Tensor x Tensor y)";
  expect_error(f, col(f, "Tensor y"), "expected ',' or ')' but found 'Tensor'");
}

TEST(SchemaErrorTest, ArgumentListShape) {
  const std::string missing_name = "aten::f(Tensor) -> Tensor";
  expect_error(missing_name, 15, "expected an argument name but found ')'");
  const std::string trailing_comma = "aten::f(Tensor a,) -> Tensor";
  expect_error(trailing_comma, 18, "expected a type name but found ')'");
  const std::string leading_comma = "aten::f(, Tensor a) -> Tensor";
  expect_error(leading_comma, 9, "expected a type name but found ','");
  const std::string two_stars = "aten::f(Tensor a, *, int b, *, int c) -> Tensor";
  expect_error(two_stars, col(two_stars, "*, int c"), "found a second '*'");
  const std::string star_star = "aten::f(*, *) -> Tensor";
  expect_error(star_star, 12, "found a second '*'");
  const std::string star_name = "aten::f(* x) -> Tensor";
  expect_error(star_name, 11, "expected ',' or ')' but found 'x'");
  const std::string missing_comma = "aten::f(Tensor a Tensor b) -> Tensor";
  expect_error(missing_comma, 18, "expected ',' or ')' but found 'Tensor'");
}

TEST(SchemaErrorTest, DuplicateNames) {
  const std::string args = "aten::f(Tensor self, int x, Tensor self) -> Tensor";
  expect_error(args, col(args, "self)"), "expected a unique name but found a second 'self'");
  const std::string kw = "aten::f(Tensor self, *, int self=1) -> Tensor";
  expect_error(kw, col(kw, "self=1"), "found a second 'self'");
  const std::string rets = "aten::f(Tensor a) -> (Tensor x, Tensor x)";
  expect_error(rets, col(rets, "x)"), "expected a unique name but found a second 'x'");
  // Unnamed returns and a return named like an argument are fine.
  EXPECT_NO_THROW(parse_schema("aten::f(Tensor a) -> (Tensor, Tensor)"));
  EXPECT_NO_THROW(parse_schema("aten::f(Tensor(a!) out) -> Tensor(a!) out"));
}

TEST(SchemaErrorTest, UnterminatedStrings) {
  const std::string dq = "aten::f(str s=\"abc) -> Tensor";
  expect_error(dq, 15, "expected a closing \" but found end of input");
  const std::string sq = "aten::f(str s='abc) -> Tensor";
  expect_error(sq, 15, "expected a closing ' but found end of input");
  const std::string mixed = "aten::f(str s='abc\") -> Tensor";
  expect_error(mixed, 15, "unterminated string");
  const std::string escaped = "aten::f(str s='abc\\')";
  expect_error(escaped, 15, "expected a closing '");
  const std::string backslash = "aten::f(str s='abc\\";
  expect_error(backslash, 15, "expected a closing '");
}

TEST(SchemaErrorTest, TypeSyntax) {
  expect_error("aten::f(int?? x) -> Tensor", 13, "expected a single '?' but found a second '?'");
  expect_error("aten::f(int[-1] x) -> Tensor", 13, "expected a list size or ']' but found '-'");
  expect_error("aten::f(int[0] x) -> Tensor", 13, "expected a positive list size but found '0'");
  expect_error("aten::f(int[99999999999999999999] x) -> Tensor", 13,
               "expected a positive list size but found '99999999999999999999'");
  expect_error("aten::f(int[2 x) -> Tensor", 15, "expected ']' but found 'x'");
  expect_error("aten::f(int[x] y) -> Tensor", 13, "expected a list size or ']' but found 'x'");
  expect_error("aten::f(int[1.5] y) -> Tensor", 13, "expected a list size or ']' but found '1.5'");
  expect_error("aten::f(int(a) x) -> Tensor", 12,
               "expected an alias annotation only after Tensor but found '(' after 'int'");
  expect_error("aten::f(Tensor x) -> int(a)", 25, "alias annotation only after Tensor");
  expect_error("aten::f(Tensor() x) -> Tensor", 16, "expected an alias set name but found ')'");
  expect_error("aten::f(Tensor(a x) -> Tensor", 18, "expected '!', '->' or ')' but found 'x'");
  expect_error("aten::f(Tensor(a! x) -> Tensor", 19, "expected '->' or ')' but found 'x'");
  expect_error("aten::f(Tensor(a -> ) x) -> Tensor", 21,
               "expected an alias set name after '->' but found ')'");
  expect_error("aten::f(Tensor(a -> b x) -> Tensor", 23, "expected ')' but found 'x'");
  expect_error("aten::f(Tensor(a!)(b!) x) -> Tensor", 19,
               "expected an argument name but found '('");
}

TEST(SchemaErrorTest, DefaultTypeMismatch) {
  expect_error("aten::f(bool x=3) -> Tensor", 16,
               "expected a default value of type bool but found '3'");
  expect_error("aten::f(int x=None) -> Tensor", 15,
               "expected a default value of type int but found 'None' (only optional types");
  expect_error("aten::f(int[] x=None) -> Tensor", 17, "type int[] but found 'None'");
  expect_error("aten::f(Tensor x=None) -> Tensor", 18, "type Tensor but found 'None'");
  expect_error("aten::f(int x=1.5) -> Tensor", 15,
               "expected a default value of type int but found '1.5'");
  expect_error("aten::f(int x=1e3) -> Tensor", 15, "type int but found '1e3'");
  expect_error("aten::f(int? x=-2.5) -> Tensor", 16, "type int? but found '-2.5'");
  expect_error("aten::f(float x=True) -> Tensor", 17, "type float but found 'True'");
  expect_error("aten::f(float x='1.0') -> Tensor", 17, "type float but found ''1.0''");
  expect_error("aten::f(str s=1) -> Tensor", 15, "type str but found '1'");
  expect_error("aten::f(bool b=\"True\") -> Tensor", 16, "type bool but found '\"True\"'");
  expect_error("aten::f(Tensor t=1) -> Tensor", 18, "type Tensor but found '1'");
  expect_error("aten::f(Generator? g=0) -> Tensor", 22, "type Generator? but found '0'");
  expect_error("aten::f(ScalarType t=1.0) -> Tensor", 22, "type ScalarType but found '1.0'");
  expect_error("aten::f(Scalar s='x') -> Tensor", 18, "type Scalar but found ''x''");
  expect_error("aten::f(int x=[1]) -> Tensor", 15, "type int but found '[1]'");
  expect_error("aten::f(int[] x=1) -> Tensor", 17, "type int[] but found '1'");
  expect_error("aten::f(int[2] x=True) -> Tensor", 18, "type int[2] but found 'True'");
  expect_error("aten::f(bool[2] x=1) -> Tensor", 19, "type bool[2] but found '1'");
  expect_error("aten::f(Device d=0) -> Tensor", 18, "type Device but found '0'");
  expect_error("aten::f(int x=channels_last) -> Tensor", 15, "type int but found 'channels_last'");
  expect_error("aten::f(MemoryFormat x=strided) -> Tensor", 24,
               "expected a default value but found 'strided'");
  expect_error("aten::f(int[100000000000] x=1) -> Tensor", 29,
               "expected a list size of at most 65536 to fill from a single value but found type "
               "int[100000000000]");
}

TEST(SchemaErrorTest, ListDefaultMismatch) {
  const std::string mixed = "aten::f(int[] x=[1, 2.5]) -> Tensor";
  expect_error(mixed, col(mixed, "2.5"), "expected a list element of type int but found '2.5'");
  const std::string bools = "aten::f(bool[] x=[True, 0]) -> Tensor";
  expect_error(bools, col(bools, "0]"), "expected a list element of type bool but found '0'");
  const std::string nested = "aten::f(int[] x=[[1]]) -> Tensor";
  expect_error(nested, 18, "expected a list element of type int but found '[1]'");
  const std::string none_elem = "aten::f(float[] x=[None]) -> Tensor";
  expect_error(none_elem, 20, "expected a list element of type float but found 'None'");
  const std::string too_many = "aten::f(int[2] x=[1, 2, 3]) -> Tensor";
  expect_error(too_many, 18, "expected a list of 2 elements for type int[2] but found '[1, 2, 3]'");
  const std::string tensors = "aten::f(Tensor[] x=[1]) -> Tensor";
  expect_error(tensors, 20, "expected an empty list default for type Tensor[] but found '[1]'");
  const std::string unclosed = "aten::f(int[] x=[1, 2) -> Tensor";
  expect_error(unclosed, 22, "expected ',' or ']' but found ')'");
  const std::string trailing = "aten::f(int[] x=[1,]) -> Tensor";
  expect_error(trailing, 20, "expected a default value but found ']'");
}

TEST(SchemaErrorTest, MalformedDefaults) {
  expect_error("aten::f(int x=) -> Tensor", 15, "expected a default value but found ')'");
  expect_error("aten::f(int x=abc) -> Tensor", 15, "expected a default value but found 'abc'");
  expect_error("aten::f(bool x=true) -> Tensor", 16, "expected a default value but found 'true'");
  expect_error("aten::f(int x=-True) -> Tensor", 16,
               "expected a number after '-' but found 'True'");
  expect_error("aten::f(int x=--1) -> Tensor", 16, "expected a number after '-' but found '-'");
  expect_error("aten::f(int x=9223372036854775808) -> Tensor", 15,
               "expected an integer that fits in 64 bits but found '9223372036854775808'");
  expect_error("aten::f(int x=-9223372036854775809) -> Tensor", 15,
               "fits in 64 bits but found '-9223372036854775809'");
  expect_error("aten::f(float x=1e999) -> Tensor", 17,
               "expected a float that fits in a double but found '1e999'");
  expect_error("aten::f(int x=1 2) -> Tensor", 17, "expected ',' or ')' but found '2'");
  expect_error("aten::f(int x=12abc) -> Tensor", 17, "expected ',' or ')' but found 'abc'");
  expect_error("aten::f(Tensor x) -> Tensor y=1", 30, "expected end of schema but found '='");
  expect_error("aten::f(Tensor x) -> (Tensor y=1)", 31, "expected ',' or ')' but found '='");
}

TEST(SchemaErrorTest, ReturnShape) {
  expect_error("aten::f(Tensor a) -> (Tensor,)", 30, "expected a type name but found ')'");
  expect_error("aten::f(Tensor a) -> *", 22, "expected a type name but found '*'");
  expect_error("aten::f(Tensor a) -> (,)", 23, "expected a type name but found ','");
  expect_error("aten::f(Tensor a) -> ((Tensor))", 23, "expected a type name but found '('");
}

TEST(SchemaErrorTest, ErrorsAreLoomErrorsWithSchemaComponent) {
  EXPECT_THROW(parse_schema("aten::f(Tensr a) -> Tensor"), loom::Error);
  EXPECT_THROW(parse_schema("aten::f(Tensr a) -> Tensor"), std::runtime_error);
  EXPECT_THROW(parse_operator_name("aten::"), loom::Error);
  try {
    parse_schema("aten::f(Tensor a) ->");
    FAIL() << "no error";
  } catch (const loom::Error& e) {
    EXPECT_EQ(e.component(), "schema");
    EXPECT_EQ(std::string(e.what()).rfind("[schema] column 21: ", 0), 0u) << e.what();
  }
}

// Note [Nesting limits]: deep nesting is refused with a message, not parsed recursively
// until the stack runs out.
TEST(SchemaErrorTest, NestingIsBounded) {
  std::string eight;
  for (int i = 0; i < 8; ++i) eight += "[]";
  EXPECT_NO_THROW(parse_schema("ns::f(int" + eight + " x) -> ()"));
  const std::string nine_suffixes = "ns::f(int" + eight + "[] x) -> ()";
  expect_error(nine_suffixes, 10 + 16, "at most 8 '?' and '[]' suffixes on a type");

  const std::string deep_default = "ns::f(int[] x=" + std::string(100000, '[') + ") -> ()";
  expect_error(deep_default, 15 + 8, "at most 8 nested lists in a default value");
  const std::string deep_type = "ns::f(int" + std::string(100000, '[') + " x) -> ()";
  EXPECT_THROW(parse_schema(deep_type), loom::Error);
}

}  // namespace
}  // namespace loom::dispatch
