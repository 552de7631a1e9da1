// The graph IR (loom/graph.h): building and printing a graph, the checks of validate,
// the protobuf round trip and its refusals, the interpreter (values, symbolic sizes,
// input checks, builtins, how each node is served) and metadata propagation.
#include <gtest/gtest.h>

#include "../frontend/frontend_test_util.h"
#include "loom/graph.h"
#include "loom/graph_interpreter.h"
#include "loom/graph_proto.h"
#include "loom/loom.h"

namespace loom::graph {
namespace {

using test::expect_error;
using test::values;

class GraphTest : public test::LoadedRuntimeTest {};

TensorMeta meta_of(ScalarType dtype, std::vector<SymSize> sizes) {
  return TensorMeta{dtype, std::move(sizes), Device{}};
}

// x: float32[n, 3] (n in [1, 64]), w: float32[3, 4] parameter "fc.weight";
// y = relu(mm(x, w)); n = sym_size(x, 0); m = n * 2; z = view(y, [m, 2]); returns (z, y).
Graph small_graph() {
  Graph g;
  ValueId x = g.add_value("x", ValueType::Tensor,
                          meta_of(ScalarType::Float32, {SymSize{5, "n"}, SymSize{3, ""}}));
  ValueId w = g.add_value("w", ValueType::Tensor,
                          meta_of(ScalarType::Float32, {SymSize{3, ""}, SymSize{4, ""}}));
  g.add_input(x, InputRole::UserInput);
  g.add_input(w, InputRole::Parameter, "fc.weight");
  g.add_symbol(SymbolRange{"n", 1, 64});
  ValueId mm = g.add_value("mm", ValueType::Tensor);
  g.add_node(Node{
      "loom::mm", "", {Argument::of_value("self", x), Argument::of_value("mat2", w)}, {mm}, false});
  ValueId y = g.add_value("y", ValueType::Tensor);
  g.add_node(Node{"loom::relu", "", {Argument::of_value("self", mm)}, {y}, false});
  ValueId n = g.add_value("n", ValueType::SymInt);
  g.add_node(Node{"loom::sym_size.int",
                  "",
                  {Argument::of_value("self", x), Argument::of_constant("dim", int64_t{0})},
                  {n},
                  false});
  ValueId m = g.add_value("m", ValueType::SymInt);
  g.add_node(Node{"sym::mul",
                  "",
                  {Argument::of_value("a", n), Argument::of_constant("b", int64_t{2})},
                  {m},
                  false});
  ValueId z = g.add_value("z", ValueType::Tensor);
  g.add_node(Node{"loom::view",
                  "",
                  {Argument::of_value("self", y),
                   Argument::of_list("size", {ListItem{m, 0}, ListItem{kNoValue, 2}})},
                  {z},
                  false});
  g.add_output(z);
  g.add_output(y);
  return g;
}

TEST_F(GraphTest, RunsPrintsAndChecksItsInputs) {
  Graph g = small_graph();
  EXPECT_EQ(g.to_text(),
            "graph(%x: float32[n, 3],\n"
            "      %w: float32[3, 4] parameter \"fc.weight\"):\n"
            "  %mm = loom::mm(self=%x, mat2=%w)\n"
            "  %y = loom::relu(self=%mm)\n"
            "  %n: SymInt = loom::sym_size.int(self=%x, dim=0)\n"
            "  %m: SymInt = sym::mul(a=%n, b=2)\n"
            "  %z = loom::view(self=%y, size=[%m, 2])\n"
            "  return (%z, %y)\n"
            "n in [1, 64]\n");
  Interpreter run(g, Device{});
  Tensor x = arange(-6, 6).to(ScalarType::Float32).view({4, 3});
  Tensor w = ones({3, 4});
  std::vector<Tensor> out = run(std::vector<Tensor>{x, w});
  ASSERT_EQ(out.size(), 2u);
  Tensor eager = relu(mm(x, w));
  EXPECT_EQ(values(out[1]), values(eager));
  EXPECT_EQ(std::vector<int64_t>(out[0].sizes().begin(), out[0].sizes().end()),
            (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(values(out[0]), values(eager));

  // Inputs are checked against the metadata and the symbol's range.
  expect_error([&] { run(std::vector<Tensor>{x}); }, "graph", {"takes 2 inputs, found 1"});
  expect_error(
      [&] {
        run(std::vector<Tensor>{x.to(ScalarType::Float64), w});
      },
      "graph", {"input %x expects dtype float32, found float64"});
  expect_error(
      [&] {
        run(std::vector<Tensor>{x.view({12}), w});
      },
      "graph", {"input %x expects float32[n, 3], found a 1-dim tensor"});
  expect_error(
      [&] {
        run(std::vector<Tensor>{x, ones({4, 4})});
      },
      "graph", {"input %w expects float32[3, 4], found size 4 at dimension 0"});
  expect_error(
      [&] {
        run(std::vector<Tensor>{zeros({65, 3}), w});
      },
      "graph", {"input %x has size 65 at dimension 0, outside n's range [1, 64]"});
}

TEST_F(GraphTest, AFailingNodeNamesItself) {
  Graph g;
  ValueId x = g.add_value("x", ValueType::Tensor);
  g.add_input(x, InputRole::UserInput);
  ValueId v = g.add_value("v", ValueType::Tensor);
  g.add_node(
      Node{"loom::view",
           "",
           {Argument::of_value("self", x), Argument::of_constant("size", std::vector<int64_t>{7})},
           {v},
           false});
  g.add_output(v);
  Interpreter run(g, Device{});
  expect_error(
      [&] {
        run(std::vector<Tensor>{zeros({2, 3})});
      },
      "graph", {"node 'v' (loom::view): [loom::view]"});
}

TEST_F(GraphTest, SymbolsBindConsistentlyAcrossInputs) {
  Graph g;
  auto sym = [](const char* s) { return SymSize{2, s}; };
  ValueId a =
      g.add_value("a", ValueType::Tensor, meta_of(ScalarType::Float32, {sym("b"), sym("k")}));
  ValueId c =
      g.add_value("c", ValueType::Tensor, meta_of(ScalarType::Float32, {sym("b"), sym("k")}));
  g.add_input(a, InputRole::UserInput);
  g.add_input(c, InputRole::UserInput);
  ValueId sum = g.add_value("sum", ValueType::Tensor);
  g.add_node(Node{"loom::add.Tensor",
                  "",
                  {Argument::of_value("self", a), Argument::of_value("other", c),
                   Argument::of_constant("alpha", int64_t{1})},
                  {sum},
                  false});
  g.add_output(sum);
  Interpreter run(g, Device{});
  std::unordered_map<std::string, int64_t> bound =
      run.bind_symbols(std::vector<Tensor>{zeros({3, 5}), zeros({3, 5})});
  EXPECT_EQ(bound.at("b"), 3);
  EXPECT_EQ(bound.at("k"), 5);
  expect_error(
      [&] {
        run(std::vector<Tensor>{zeros({3, 5}), zeros({4, 5})});
      },
      "graph", {"input %c has size 4 at dimension 0 where b is 3 already"});
}

TEST_F(GraphTest, ValidateNamesTheFirstProblem) {
  auto with_node = [](Node node) {
    Graph g;
    ValueId x = g.add_value("x", ValueType::Tensor);
    g.add_input(x, InputRole::UserInput);
    ValueId out = g.add_value("out", ValueType::Tensor);
    node.outputs = {out};
    for (Argument& a : node.arguments) {
      if (a.kind == Argument::Kind::Value && a.value == 0) a.value = x;
    }
    g.add_node(std::move(node));
    g.add_output(out);
    return g;
  };
  expect_error(
      [&] {
        with_node(Node{"loom::frobnicate", "", {}, {}, false}).validate();
      },
      "graph", {"node 'out' (loom::frobnicate): unknown operator 'loom::frobnicate'"});
  expect_error(
      [&] {
        with_node(Node{"loom::relu", "", {Argument::of_value("input", 0)}, {}, false}).validate();
      },
      "graph", {"argument 0 is 'self' in the schema, found 'input'"});
  expect_error(
      [&] {
        with_node(Node{"loom::relu", "", {Argument::of_constant("self", "text")}, {}, false})
            .validate();
      },
      "graph", {"argument 'self' expects Tensor, found str \"text\""});
  expect_error(
      [&] {
        with_node(Node{"loom::relu", "", {}, {}, false}).validate();
      },
      "graph", {"the schema has 1 arguments, the node 0"});
  // A value read before it is defined.
  Graph g;
  ValueId x = g.add_value("x", ValueType::Tensor);
  ValueId later = g.add_value("later", ValueType::Tensor);
  g.add_input(x, InputRole::UserInput);
  ValueId y = g.add_value("y", ValueType::Tensor);
  g.add_node(Node{"loom::relu", "", {Argument::of_value("self", later)}, {y}, false});
  g.add_node(Node{"loom::relu", "", {Argument::of_value("self", x)}, {later}, false});
  g.add_output(y);
  expect_error([&] { g.validate(); }, "graph",
               {"node 'y' (loom::relu): argument 'self' reads %later before it is defined"});
  expect_error([&] { g.add_value("x", ValueType::Tensor); }, "graph",
               {"value 'x' is defined twice"});
  Graph no_target;
  no_target.add_input(no_target.add_value("p", ValueType::Tensor), InputRole::Parameter);
  expect_error([&] { no_target.validate(); }, "graph", {"parameter %p has no target name"});
}

TEST_F(GraphTest, ProtobufRoundTripAndRefusals) {
  Graph g = small_graph();
  std::string bytes = serialize_graph(g);
  Graph back = parse_graph(bytes, "small.pb");
  EXPECT_EQ(back.to_text(), g.to_text());
  Interpreter run(back, Device{});
  Tensor x = ones({2, 3});
  EXPECT_EQ(values(run(std::vector<Tensor>{x, ones({3, 4})})[1]), std::vector<double>(8, 3.0));

  expect_error([&] { parse_graph("not a protobuf message \xff\xff", "junk.pb"); }, "graph proto",
               {"junk.pb: not a loom graph"});
  expect_error([&] { parse_graph(bytes.substr(0, bytes.size() / 2), "cut.pb"); }, "graph proto",
               {"cut.pb"});
  std::string no_version = bytes;
  no_version[1] = 9;  // field 1 (format_version) varint: 1 -> 9
  expect_error([&] { parse_graph(no_version, "v9.pb"); }, "graph proto",
               {"v9.pb: format version 9 is not one this loom reads (1 to 1)"});
}

TEST_F(GraphTest, SupportSaysHowEachNodeRuns) {
  Graph g = small_graph();
  Interpreter run(g, Device{});
  std::vector<NodeSupport> rows = run.support();
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].node, "mm");
  EXPECT_EQ(rows[0].how, "kernel");
  EXPECT_EQ(rows[0].provider, "cpu");
  EXPECT_EQ(rows[2].how, "decomposition");  // sym_size.int
  EXPECT_EQ(rows[3].how, "builtin");        // sym::mul
}

TEST_F(GraphTest, MetadataPropagatesThroughTheMetaDevice) {
  Graph g = small_graph();
  propagate_metadata(g);
  const ValueInfo& mm = g.value(*g.find_value("mm"));
  ASSERT_TRUE(mm.meta.has_value());
  EXPECT_EQ(meta_to_string(*mm.meta), "float32[5, 4]");
  EXPECT_EQ(meta_to_string(*g.value(*g.find_value("z")).meta), "float32[10, 2]");
  // Known metadata (symbolic sizes) stays.
  EXPECT_EQ(meta_to_string(*g.value(*g.find_value("x")).meta), "float32[n, 3]");
}

TEST_F(GraphTest, SymbolicBuiltinsFollowPython) {
  auto eval = [](const char* op, Value a, Value b, ValueType type = ValueType::SymInt) {
    Graph g;
    ValueId x = g.add_value("x", ValueType::Tensor);
    g.add_input(x, InputRole::UserInput);
    ValueId r = g.add_value("r", type);
    std::vector<Argument> args = {Argument::of_constant("a", a)};
    if (std::string(op) != "sym::neg") args.push_back(Argument::of_constant("b", b));
    g.add_node(Node{op, "", args, {r}, false});
    g.add_output(r);
    Interpreter run(g, Device{});
    return run(std::vector<Tensor>{zeros({1})})[0];
  };
  EXPECT_EQ(eval("sym::floordiv", int64_t{-7}, int64_t{2}).item<int64_t>(), -4);
  EXPECT_EQ(eval("sym::mod", int64_t{-7}, int64_t{2}).item<int64_t>(), 1);
  EXPECT_EQ(eval("sym::neg", int64_t{5}, Value()).item<int64_t>(), -5);
  EXPECT_EQ(eval("sym::max", int64_t{3}, int64_t{9}).item<int64_t>(), 9);
  EXPECT_TRUE(eval("sym::lt", int64_t{3}, int64_t{9}, ValueType::SymBool).item<bool>());
  EXPECT_DOUBLE_EQ(eval("sym::truediv", int64_t{7}, int64_t{2}, ValueType::SymFloat).item<double>(),
                   3.5);
  expect_error([&] { eval("sym::floordiv", int64_t{1}, int64_t{0}); }, "graph",
               {"node 'r' (sym::floordiv): division by zero"});
}

}  // namespace
}  // namespace loom::graph
