// Call by op name (Note [Call by name] in loom/call.h): resolving the name to one or
// more overloads, binding Values to a schema's arguments with its defaults, boxing them,
// and unboxing the returns.
#include "loom/call.h"

#include <cstdlib>
#include <deque>
#include <optional>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/function_schema.h"
#include "loom/factories.h"
#include "loom/schema_default.h"

namespace loom {
namespace {

using dispatch::Argument;
using dispatch::FunctionSchema;
using dispatch::OperatorHandle;
using dispatch::SchemaType;

constexpr std::string_view kComponent = "loom::call";

// "add" -> "loom::add"; "ns::add.out" stays.
std::string qualify(std::string_view op) {
  if (op.find("::") != std::string_view::npos) return std::string(op);
  return str_cat("loom::", op);
}

// The overloads `op` names, in the order call tries them (Note [Call by name]).
std::vector<OperatorHandle> resolve(const std::string& qualified) {
  dispatch::Dispatcher& dispatcher = dispatch::Dispatcher::instance();
  size_t base_start = qualified.rfind("::") + 2;
  bool has_overload = qualified.find('.', base_start) != std::string::npos;
  std::vector<OperatorHandle> found;
  if (std::optional<OperatorHandle> exact = dispatcher.find(qualified);
      exact && exact->is_defined()) {
    found.push_back(*exact);
  }
  if (has_overload) return found;
  std::string prefix = qualified + ".";
  for (OperatorHandle op : dispatcher.defined_operators()) {
    if (op.name().starts_with(prefix)) found.push_back(op);
  }
  return found;
}

// Values and arrays the boxed arguments point into, alive for the whole call.
struct BindStorage {
  std::deque<Value> defaults;
  std::deque<std::vector<int64_t>> ints;
  std::deque<std::vector<double>> doubles;
  std::deque<std::vector<uint8_t>> bools;
  std::deque<std::vector<LoomTensor*>> tensors;
  std::deque<Tensor> numbers;  // numbers given for Tensor arguments, as wrapped scalars
  bool wrap_numbers = true;
};

LoomValue int_list(BindStorage& storage, std::vector<int64_t> values) {
  return dispatch::box(IntArrayRef(storage.ints.emplace_back(std::move(values))));
}

LoomValue tensor_handles(BindStorage& storage, std::vector<LoomTensor*> handles) {
  const std::vector<LoomTensor*>& kept = storage.tensors.emplace_back(std::move(handles));
  LoomValue v{LOOM_VALUE_TENSOR_LIST, static_cast<uint32_t>(kept.size()), {}};
  v.u.tensors = kept.data();
  return v;
}

LoomTensor* handle_of(const Tensor& t) {
  return reinterpret_cast<LoomTensor*>(t.impl());
}

// Boxes `v` as schema type `type`, or returns why it cannot.
std::optional<LoomValue> box_as(const SchemaType& type, const Value& v, BindStorage& storage) {
  using K = SchemaType::Kind;
  switch (type.kind) {
    case K::Optional:
      if (v.is_none()) return dispatch::none();
      return box_as(*type.elem, v, storage);
    case K::Tensor:
      if (v.is_tensor() && v.to_tensor().defined()) return dispatch::box(v.to_tensor());
      if (storage.wrap_numbers && (v.is_int() || v.is_double() || v.is_bool())) {
        return dispatch::box(storage.numbers.emplace_back(wrapped_scalar(v.to_scalar())));
      }
      return std::nullopt;
    case K::Int:
      if (v.is_int()) return dispatch::box(v.to_int());
      return std::nullopt;
    case K::Float:
      if (v.is_int() || v.is_double()) return dispatch::box(v.to_double());
      return std::nullopt;
    case K::Bool:
      if (v.is_bool()) return dispatch::box(v.to_bool());
      return std::nullopt;
    case K::Str:
      if (v.is_string()) return dispatch::box(v.to_string());
      return std::nullopt;
    case K::Scalar:
      if (v.is_int() || v.is_double() || v.is_bool()) return dispatch::box(v.to_scalar());
      return std::nullopt;
    case K::ScalarType:
      if (v.kind() == Value::Kind::Dtype) return dispatch::box(v.to_dtype());
      if (v.is_string()) return dispatch::box(parse_scalar_type(v.to_string()));
      return std::nullopt;
    case K::Device:
      if (v.kind() == Value::Kind::Device) return dispatch::box(v.to_device());
      if (v.is_string()) return dispatch::box(parse_device(v.to_string()));
      return std::nullopt;
    case K::Layout:
    case K::MemoryFormat:  // int-coded, PyTorch's enum values (torch.strided is 7)
      if (v.is_int()) return dispatch::box(v.to_int());
      return std::nullopt;
    case K::List:
      break;
    default:
      return std::nullopt;  // Generator: only None, when optional.
  }
  const SchemaType& elem = *type.elem;
  switch (elem.kind) {
    case K::Int:
      if (v.kind() == Value::Kind::IntList) return dispatch::box(IntArrayRef(v.to_int_list()));
      if (v.is_int()) {
        return int_list(storage, std::vector<int64_t>(type.fixed_size.value_or(1), v.to_int()));
      }
      return std::nullopt;
    case K::Float: {
      if (v.kind() == Value::Kind::IntList) {
        const std::vector<int64_t>& ints = v.to_int_list();
        storage.doubles.emplace_back(ints.begin(), ints.end());
      } else if (v.kind() == Value::Kind::DoubleList) {
        storage.doubles.push_back(v.to_double_list());
      } else {
        return std::nullopt;
      }
      LoomValue out{
          LOOM_VALUE_DOUBLE_LIST, static_cast<uint32_t>(storage.doubles.back().size()), {}};
      out.u.doubles = storage.doubles.back().data();
      return out;
    }
    case K::Bool: {
      if (v.kind() != Value::Kind::BoolList) return std::nullopt;
      const std::vector<bool>& bits = v.to_bool_list();
      const std::vector<uint8_t>& kept = storage.bools.emplace_back(bits.begin(), bits.end());
      LoomValue out{LOOM_VALUE_BOOL_LIST, static_cast<uint32_t>(kept.size()), {}};
      out.u.bools = kept.data();
      return out;
    }
    case K::Tensor: {
      if (!v.is_tensor_list()) return std::nullopt;
      std::vector<LoomTensor*> handles;
      for (const Tensor& t : v.to_tensor_list()) {
        if (!t.defined()) return std::nullopt;
        handles.push_back(handle_of(t));
      }
      return tensor_handles(storage, std::move(handles));
    }
    case K::Optional: {
      if (elem.elem->kind != K::Tensor) return std::nullopt;
      std::vector<LoomTensor*> handles;
      if (v.is_tensor_list()) {
        for (const Tensor& t : v.to_tensor_list()) handles.push_back(handle_of(t));
      } else if (v.kind() == Value::Kind::OptionalTensorList) {
        for (const std::optional<Tensor>& t : v.to_optional_tensor_list()) {
          handles.push_back(t && t->defined() ? handle_of(*t) : nullptr);
        }
      } else {
        return std::nullopt;
      }
      return tensor_handles(storage, std::move(handles));
    }
    default:
      return std::nullopt;
  }
}

// Binds the call's arguments to `schema`; the error text (empty on success) says why not.
std::string bind_arguments(const FunctionSchema& schema, const std::vector<Value>& args,
                           const Kwargs& kwargs, BindStorage& storage,
                           std::vector<LoomValue>& boxed) {
  size_t positional = 0;
  while (positional < schema.arguments.size() && !schema.arguments[positional].kwarg_only) {
    ++positional;
  }
  if (args.size() > positional) {
    return str_cat("takes at most ", positional, " positional argument", positional == 1 ? "" : "s",
                   ", found ", args.size());
  }
  for (const auto& [name, value] : kwargs) {
    bool known = false;
    for (size_t i = 0; i < schema.arguments.size(); ++i) {
      if (schema.arguments[i].name != name) continue;
      known = true;
      if (i < args.size()) return str_cat("argument '", name, "' was given twice");
    }
    if (!known) return str_cat("unexpected keyword argument '", name, "'");
  }
  boxed.clear();
  for (size_t i = 0; i < schema.arguments.size(); ++i) {
    const Argument& arg = schema.arguments[i];
    const Value* value = i < args.size() ? &args[i] : nullptr;
    for (const auto& [name, kw] : kwargs) {
      if (name == arg.name) value = &kw;
    }
    if (value == nullptr && arg.default_value) {
      value = &storage.defaults.emplace_back(value_of_default(*arg.default_value));
    }
    if (value == nullptr) return str_cat("missing argument '", arg.name, "'");
    std::optional<LoomValue> v = box_as(arg.type, *value, storage);
    if (!v) {
      return str_cat("argument '", arg.name, "' expects ", arg.type.to_string(), ", found ",
                     value->is_tensor() && !value->to_tensor().defined() ? "an undefined Tensor"
                                                                         : value->type_name());
    }
    boxed.push_back(*v);
  }
  return "";
}

Value unbox_return(LoomValue& v) {
  switch (v.tag) {
    case LOOM_VALUE_NONE:
      return Value();
    case LOOM_VALUE_TENSOR:
      if (v.u.tensor == nullptr) return Value();
      v.tag = LOOM_VALUE_NONE;
      return Value(Tensor::adopt(reinterpret_cast<TensorImpl*>(v.u.tensor)));
    case LOOM_VALUE_INT:
      return Value(v.u.i);
    case LOOM_VALUE_DOUBLE:
      return Value(v.u.d);
    case LOOM_VALUE_BOOL:
      return Value(v.u.i != 0);
    case LOOM_VALUE_DTYPE:
      return Value(static_cast<ScalarType>(v.u.i));
    case LOOM_VALUE_STRING: {
      std::string text(v.u.str, v.length);
      dispatch::release_value(v);
      return Value(std::move(text));
    }
    case LOOM_VALUE_TENSOR_LIST: {
      std::vector<Tensor> list;
      list.reserve(v.length);
      for (uint32_t i = 0; i < v.length; ++i) {
        list.push_back(Tensor::adopt(reinterpret_cast<TensorImpl*>(v.u.tensors[i])));
      }
      std::free(const_cast<LoomTensor**>(v.u.tensors));
      v.tag = LOOM_VALUE_NONE;
      return Value(std::move(list));
    }
    default: {
      int tag = v.tag;
      dispatch::release_value(v);
      fail(std::string(kComponent), "a return of value tag ", tag, " has no loom::Value kind");
    }
  }
}

std::vector<Value> invoke(OperatorHandle op, size_t num_returns,
                          const std::vector<LoomValue>& args) {
  std::vector<LoomValue> returns(num_returns, dispatch::none());
  dispatch::Dispatcher::instance().call(op, args.data(), args.size(), returns.data(),
                                        returns.size());
  std::vector<Value> results;
  results.reserve(num_returns);
  try {
    for (LoomValue& r : returns) results.push_back(unbox_return(r));
  } catch (...) {
    for (LoomValue& r : returns) dispatch::release_value(r);
    throw;
  }
  return results;
}

}  // namespace

std::vector<Value> call(std::string_view op, const std::vector<Value>& args, const Kwargs& kwargs) {
  std::string qualified = qualify(op);
  std::vector<OperatorHandle> candidates = resolve(qualified);
  LOOM_CHECK(!candidates.empty(), std::string(kComponent), "unknown operator '", qualified, "'");
  // Overloads that take the arguments as they are win over ones that need a number
  // wrapped as a tensor: max(x, 1) is max.dim, not max.other.
  std::string reasons;
  for (bool wrap_numbers : {false, true}) {
    if (!wrap_numbers && candidates.size() == 1) continue;
    reasons.clear();
    for (OperatorHandle candidate : candidates) {
      FunctionSchema schema = candidate.schema();
      BindStorage storage;
      storage.wrap_numbers = wrap_numbers;
      std::vector<LoomValue> boxed;
      std::string why = bind_arguments(schema, args, kwargs, storage, boxed);
      if (why.empty()) return invoke(candidate, schema.returns.size(), boxed);
      if (candidates.size() == 1) fail(candidate.name(), why);
      reasons += str_cat("\n  ", schema.to_string(), ": ", why);
    }
  }
  std::string given;
  for (const Value& v : args) given += str_cat(given.empty() ? "" : ", ", v.type_name());
  for (const auto& [name, v] : kwargs) {
    given += str_cat(given.empty() ? "" : ", ", name, "=", v.type_name());
  }
  fail(qualified, "no overload accepts (", given, "):", reasons);
}

Value value_of_default(const dispatch::DefaultValue& d) {
  return std::visit(
      [](const auto& v) -> Value {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return Value();
        } else {
          return Value(v);
        }
      },
      d);
}

std::vector<std::string> schemas(std::string_view op) {
  std::vector<std::string> out;
  for (OperatorHandle candidate : resolve(qualify(op))) {
    out.push_back(candidate.schema().to_string());
  }
  return out;
}

}  // namespace loom
