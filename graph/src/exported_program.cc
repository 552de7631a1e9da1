// Running an exported program: its state and user inputs into the graph's inputs, the
// interpreter on the program's device, and the outputs back out (returned, or written
// into the state for the buffers it mutates, in place when the shapes allow).
#include "loom/exported_program.h"

#include <algorithm>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/ops/generated/ops.h"

namespace loom {
namespace {
constexpr std::string_view kComponent = "exported program";
}  // namespace

ExportedProgram::ExportedProgram(std::unique_ptr<graph::Graph> graph, NamedTensorList state,
                                 std::vector<OutputSpec> output_specs)
    : graph_(std::move(graph)), state_(std::move(state)), output_specs_(std::move(output_specs)) {}
ExportedProgram::ExportedProgram(ExportedProgram&&) noexcept = default;
ExportedProgram& ExportedProgram::operator=(ExportedProgram&&) noexcept = default;
ExportedProgram::~ExportedProgram() = default;

const Tensor& ExportedProgram::state_tensor(const std::string& name) const {
  for (const auto& [n, t] : state_) {
    if (n == name) return t;
  }
  fail(std::string(kComponent), archive, ": no state entry '", name, "'");
}

std::vector<const graph::ValueInfo*> ExportedProgram::user_inputs() const {
  std::vector<const graph::ValueInfo*> out;
  for (const graph::GraphInput& in : graph_->inputs()) {
    if (in.role == graph::InputRole::UserInput) out.push_back(&graph_->value(in.value));
  }
  return out;
}

std::vector<Tensor> ExportedProgram::operator()(const std::vector<Tensor>& inputs) {
  std::vector<const graph::ValueInfo*> user = user_inputs();
  if (inputs.size() != user.size()) {
    std::string names;
    for (const graph::ValueInfo* v : user) names += str_cat(names.empty() ? "" : ", ", v->name);
    fail(std::string(kComponent), archive, ": takes ", user.size(), " input",
         user.size() == 1 ? "" : "s", " (", names, "), found ", inputs.size());
  }
  std::vector<Tensor> all;
  all.reserve(graph_->inputs().size());
  size_t next_user = 0;
  for (const graph::GraphInput& in : graph_->inputs()) {
    all.push_back(in.role == graph::InputRole::UserInput ? inputs[next_user++]
                                                         : state_tensor(in.target));
  }
  if (!interpreter_) interpreter_ = std::make_unique<graph::Interpreter>(*graph_, device_);
  std::vector<Tensor> outputs = (*interpreter_)(all);
  std::vector<Tensor> user_outputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputSpec& spec = output_specs_[i];
    switch (spec.kind) {
      case OutputSpec::Kind::User:
        user_outputs.push_back(std::move(outputs[i]));
        break;
      case OutputSpec::Kind::BufferMutation:
        for (auto& [name, t] : state_) {
          if (name != spec.target) continue;
          // in place when it fits, so whoever holds the buffer (loom::compile) sees it
          const bool fits = t.dtype() == outputs[i].dtype() && t.device() == outputs[i].device() &&
                            std::ranges::equal(t.sizes(), outputs[i].sizes());
          if (fits) {
            loom::copy_(t, outputs[i]);
          } else {
            t = outputs[i];
          }
        }
        break;
      case OutputSpec::Kind::UserInputMutation:
        for (size_t u = 0; u < user.size(); ++u) {
          if (user[u]->name == spec.target) loom::copy_(inputs[u], outputs[i]);
        }
        break;
    }
  }
  return user_outputs;
}

void ExportedProgram::to(Device device) {
  NamedTensorList moved;
  for (const auto& [name, t] : state_) moved.emplace_back(name, t.to(device, false));
  state_ = std::move(moved);
  device_ = device;
  interpreter_.reset();
}

std::vector<graph::NodeSupport> ExportedProgram::check(Device device) const {
  return graph::Interpreter(*graph_, device).support();
}

}  // namespace loom
