// The graph IR to and from protobuf (loom/graph_proto.h).
#include "loom/graph_proto.h"

#include <fstream>
#include <sstream>

#include "graph.pb.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"

namespace loom::graph {
namespace {

constexpr std::string_view kComponent = "graph proto";

void write_device(const Device& d, proto::Device* out) {
  out->set_type(DeviceTypeRegistry::instance().name(d.type));
  out->set_index(d.index);
}

void write_constant(const Value& v, proto::Constant* out) {
  switch (v.kind()) {
    case Value::Kind::None:
      out->set_none(true);
      break;
    case Value::Kind::Int:
      out->set_int_value(v.to_int());
      break;
    case Value::Kind::Double:
      out->set_double_value(v.to_double());
      break;
    case Value::Kind::Bool:
      out->set_bool_value(v.to_bool());
      break;
    case Value::Kind::String:
      out->set_string_value(v.to_string());
      break;
    case Value::Kind::Dtype:
      out->set_dtype(static_cast<int32_t>(v.to_dtype()));
      break;
    case Value::Kind::Device:
      write_device(v.to_device(), out->mutable_device());
      break;
    case Value::Kind::IntList:
      for (int64_t i : v.to_int_list()) out->mutable_ints()->add_values(i);
      break;
    case Value::Kind::DoubleList:
      for (double d : v.to_double_list()) out->mutable_doubles()->add_values(d);
      break;
    case Value::Kind::BoolList:
      for (bool b : v.to_bool_list()) out->mutable_bools()->add_values(b);
      break;
    default:
      fail(std::string(kComponent), "a constant ", v.type_name(), " has no protobuf form");
  }
}

struct Reader {
  std::string source;

  template <typename... Args>
  [[noreturn]] void error(const Args&... detail) const {
    fail(std::string(kComponent), source, ": ", detail...);
  }

  Device device(const proto::Device& d) const {
    DeviceType type = DeviceTypeRegistry::instance().find(d.type());
    if (type < 0) error("unknown device type '", d.type(), "' (is its plugin loaded?)");
    if (d.index() < -1 || d.index() > INT16_MAX) error("device index ", d.index(), " out of range");
    return Device{type, static_cast<int16_t>(d.index())};
  }

  ScalarType dtype(int32_t value) const {
    if (value < 0 || value >= kNumScalarTypes) error("unknown dtype ", value);
    return static_cast<ScalarType>(value);
  }

  Value constant(const proto::Constant& c) const {
    switch (c.kind_case()) {
      case proto::Constant::kNone:
        return Value();
      case proto::Constant::kIntValue:
        return Value(c.int_value());
      case proto::Constant::kDoubleValue:
        return Value(c.double_value());
      case proto::Constant::kBoolValue:
        return Value(c.bool_value());
      case proto::Constant::kStringValue:
        return Value(c.string_value());
      case proto::Constant::kDtype:
        return Value(dtype(c.dtype()));
      case proto::Constant::kDevice:
        return Value(device(c.device()));
      case proto::Constant::kInts:
        return Value(std::vector<int64_t>(c.ints().values().begin(), c.ints().values().end()));
      case proto::Constant::kDoubles:
        return Value(std::vector<double>(c.doubles().values().begin(), c.doubles().values().end()));
      case proto::Constant::kBools:
        return Value(std::vector<bool>(c.bools().values().begin(), c.bools().values().end()));
      case proto::Constant::KIND_NOT_SET:
        break;
    }
    error("a constant has no value");
  }

  ValueId id(int32_t value, int values, bool allow_none) const {
    if (allow_none && value == kNoValue) return kNoValue;
    if (value < 0 || value >= values)
      error("value id ", value, " is out of range [0, ", values, ")");
    return value;
  }
};

}  // namespace

std::string serialize_graph(const Graph& graph) {
  proto::Graph out;
  out.set_format_version(kGraphFormatVersion);
  for (const ValueInfo& v : graph.values()) {
    proto::Value* pv = out.add_values();
    pv->set_name(v.name);
    pv->set_type(static_cast<proto::ValueType>(v.type));
    if (v.meta) {
      proto::TensorMeta* m = pv->mutable_meta();
      m->set_dtype(static_cast<int32_t>(v.meta->dtype));
      for (const SymSize& s : v.meta->sizes) {
        proto::SymSize* ps = m->add_sizes();
        ps->set_value(s.value);
        ps->set_symbol(s.symbol);
      }
      write_device(v.meta->device, m->mutable_device());
    }
  }
  for (const GraphInput& in : graph.inputs()) {
    proto::Input* pi = out.add_inputs();
    pi->set_value(in.value);
    pi->set_role(static_cast<proto::InputRole>(in.role));
    pi->set_target(in.target);
  }
  for (const Node& node : graph.nodes()) {
    proto::Node* pn = out.add_nodes();
    pn->set_op(node.op);
    pn->set_source(node.source);
    pn->set_list_return(node.list_return);
    for (ValueId o : node.outputs) pn->add_outputs(o);
    for (const Argument& arg : node.arguments) {
      proto::Argument* pa = pn->add_arguments();
      pa->set_name(arg.name);
      switch (arg.kind) {
        case Argument::Kind::Constant:
          write_constant(arg.constant, pa->mutable_constant());
          break;
        case Argument::Kind::Value:
          pa->set_value(arg.value);
          break;
        case Argument::Kind::List:
          for (const ListItem& item : arg.items) {
            proto::ListItem* pl = pa->mutable_list()->add_items();
            pl->set_value(item.value);
            pl->set_constant(item.constant);
          }
          break;
      }
    }
  }
  for (ValueId o : graph.outputs()) out.add_outputs(o);
  for (const SymbolRange& r : graph.symbols()) {
    proto::SymbolRange* pr = out.add_symbols();
    pr->set_symbol(r.symbol);
    pr->set_min(r.min);
    pr->set_max(r.max);
  }
  return out.SerializeAsString();
}

namespace {

Graph read_graph(std::string_view bytes, const Reader& r) {
  proto::Graph in;
  if (!in.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    r.error("not a loom graph (the protobuf message does not parse)");
  }
  if (in.format_version() < 1 || in.format_version() > kGraphFormatVersion) {
    r.error("format version ", in.format_version(), " is not one this loom reads (1 to ",
            kGraphFormatVersion, ")");
  }
  Graph g;
  const int values = in.values_size();
  for (const proto::Value& pv : in.values()) {
    if (pv.type() < proto::TENSOR || pv.type() > proto::SYM_BOOL) {
      r.error("value '", pv.name(), "' has unknown type ", static_cast<int>(pv.type()));
    }
    std::optional<TensorMeta> meta;
    if (pv.has_meta()) {
      TensorMeta m;
      m.dtype = r.dtype(pv.meta().dtype());
      for (const proto::SymSize& s : pv.meta().sizes()) {
        if (s.symbol().empty() && s.value() < 0) {
          r.error("value '", pv.name(), "' has a negative size ", s.value());
        }
        m.sizes.push_back(SymSize{s.value(), s.symbol()});
      }
      m.device = r.device(pv.meta().device());
      meta = std::move(m);
    }
    g.add_value(pv.name(), static_cast<ValueType>(pv.type()), std::move(meta));
  }
  for (const proto::Input& pi : in.inputs()) {
    if (pi.role() < proto::USER_INPUT || pi.role() > proto::CONSTANT) {
      r.error("an input has unknown role ", static_cast<int>(pi.role()));
    }
    g.add_input(r.id(pi.value(), values, false), static_cast<InputRole>(pi.role()), pi.target());
  }
  for (const proto::Node& pn : in.nodes()) {
    Node node;
    node.op = pn.op();
    node.source = pn.source();
    node.list_return = pn.list_return();
    for (int32_t o : pn.outputs()) node.outputs.push_back(r.id(o, values, true));
    for (const proto::Argument& pa : pn.arguments()) {
      switch (pa.kind_case()) {
        case proto::Argument::kConstant:
          node.arguments.push_back(Argument::of_constant(pa.name(), r.constant(pa.constant())));
          break;
        case proto::Argument::kValue:
          node.arguments.push_back(Argument::of_value(pa.name(), r.id(pa.value(), values, false)));
          break;
        case proto::Argument::kList: {
          std::vector<ListItem> items;
          for (const proto::ListItem& pl : pa.list().items()) {
            items.push_back(ListItem{r.id(pl.value(), values, true), pl.constant()});
          }
          node.arguments.push_back(Argument::of_list(pa.name(), std::move(items)));
          break;
        }
        case proto::Argument::KIND_NOT_SET:
          r.error("node ", node.op, ": argument '", pa.name(), "' has no value");
      }
    }
    g.add_node(std::move(node));
  }
  for (int32_t o : in.outputs()) g.add_output(r.id(o, values, false));
  for (const proto::SymbolRange& pr : in.symbols()) {
    if (pr.min() > pr.max()) r.error("symbol ", pr.symbol(), " has an empty range");
    g.add_symbol(SymbolRange{pr.symbol(), pr.min(), pr.max()});
  }
  g.validate();
  return g;
}

}  // namespace

Graph parse_graph(std::string_view bytes, std::string_view source) {
  Reader r{std::string(source)};
  try {
    return read_graph(bytes, r);
  } catch (const Error& e) {
    if (e.component() == kComponent) throw;
    r.error(e.what());  // the graph's own checks ("[graph] ..."), named by the source
  }
}

void save_graph(const Graph& graph, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  LOOM_CHECK(out.good(), std::string(kComponent), path, ": cannot open for writing");
  std::string bytes = serialize_graph(graph);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  LOOM_CHECK(out.good(), std::string(kComponent), path, ": write failed");
}

Graph load_graph(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), std::string(kComponent), path, ": cannot open");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return parse_graph(bytes.str(), path);
}

}  // namespace loom::graph
