// `loom run` (tools/loom/run_model.h).
#include "run_model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "loom/exported_program.h"
#include "loom/loom.h"

namespace loom::cli {
namespace {

constexpr const char* kComponent = "loom run";

// The user inputs: from the safetensors file (by input name, else input_<i>), or random
// ones of the exported shapes (symbolic sizes at the size they were traced with).
std::vector<Tensor> make_inputs(const ExportedProgram& ep, const RunOptions& o) {
  std::vector<const graph::ValueInfo*> wanted = ep.user_inputs();
  std::vector<Tensor> inputs;
  if (!o.input.empty()) {
    SafetensorsFile file = load_safetensors(o.input);
    std::map<std::string, Tensor> by_name(file.tensors.begin(), file.tensors.end());
    for (size_t i = 0; i < wanted.size(); ++i) {
      auto it = by_name.find(wanted[i]->name);
      if (it == by_name.end()) it = by_name.find("input_" + std::to_string(i));
      if (it == by_name.end()) {
        fail(kComponent, o.input, " has neither '", wanted[i]->name, "' nor 'input_", i,
             "' for the program's input ", i);
      }
      inputs.push_back(it->second);
    }
    return inputs;
  }
  manual_seed(o.seed);
  for (const graph::ValueInfo* v : wanted) {
    LOOM_CHECK(v->meta.has_value(), kComponent, "input '", v->name,
               "' has no shape in the archive: give it with --input");
    std::vector<int64_t> sizes;
    for (const graph::SymSize& s : v->meta->sizes) sizes.push_back(s.value);
    ScalarType dtype = v->meta->dtype;
    bool floating = dtype == ScalarType::Float32 || dtype == ScalarType::Float64 ||
                    dtype == ScalarType::Float16 || dtype == ScalarType::BFloat16;
    inputs.push_back(floating ? randn(sizes, TensorOptions().dtype(dtype))
                              : zeros(sizes, TensorOptions().dtype(dtype)));
  }
  return inputs;
}

std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.sizes()[i]);
  return s + "]";
}

int print_check(const ExportedProgram& ep, Device device) {
  std::vector<graph::NodeSupport> rows = ep.check(device);
  std::map<std::string, int> counts;
  size_t width = 4;
  for (const graph::NodeSupport& r : rows) width = std::max(width, r.node.size());
  std::printf("%-*s  %-40s  %s\n", static_cast<int>(width), "node", "operator", "on device");
  for (const graph::NodeSupport& r : rows) {
    ++counts[r.how];
    std::string how = r.how + (r.provider.empty() ? "" : " (" + r.provider + ")");
    std::printf("%-*s  %-40s  %s\n", static_cast<int>(width), r.node.c_str(), r.op.c_str(),
                how.c_str());
  }
  std::printf("%zu nodes on %s:", rows.size(), device.to_string().c_str());
  for (const auto& [how, n] : counts) std::printf(" %d %s", n, how.c_str());
  std::printf("\n");
  if (counts.contains("decomposition")) {
    std::printf("(a decomposition runs through other ops, which need kernels on %s too)\n",
                device.to_string().c_str());
  }
  return counts.contains("missing") ? 1 : 0;
}

}  // namespace

int run_model(const RunOptions& o) {
  LOOM_CHECK(!o.model.empty(), kComponent, "expected a .pt2 file: loom run MODEL.pt2");
  LOOM_CHECK(o.bench >= 0, kComponent, "--bench: expected a non-negative count, found ", o.bench);
  Device device = parse_device(o.device);
  ExportedProgram ep = load_exported(o.model);
  std::printf("%s: %zu nodes, %zu state tensors, %zu inputs (exported by PyTorch %s)\n",
              o.model.c_str(), ep.graph().nodes().size(), ep.state().size(),
              ep.user_inputs().size(), ep.torch_version.c_str());
  if (o.print_graph) std::printf("%s", ep.graph().to_text().c_str());
  if (o.check) return print_check(ep, device);
  std::vector<Tensor> inputs = make_inputs(ep, o);
  for (Tensor& t : inputs) t = t.to(device, false);
  ep.to(device);
  std::vector<Tensor> outputs = ep(inputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor cpu = outputs[i].to(Device{}, false);
    std::printf("output_%zu: %s %s\n", i, std::string(scalar_type_name(cpu.dtype())).c_str(),
                shape_text(cpu).c_str());
  }
  if (!o.output.empty()) {
    NamedTensorList named;
    for (size_t i = 0; i < outputs.size(); ++i) {
      named.emplace_back("output_" + std::to_string(i), outputs[i].to(Device{}, false));
    }
    save_safetensors(o.output, named);
    std::printf("wrote %s\n", o.output.c_str());
  }
  if (o.bench > 0) {
    for (int i = 0; i < 3; ++i) ep(inputs);
    std::vector<double> times;
    for (int64_t i = 0; i < o.bench; ++i) {
      auto start = std::chrono::steady_clock::now();
      std::vector<Tensor> out = ep(inputs);
      synchronize(device);
      times.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(times.begin(), times.end());
    double median = times[times.size() / 2];
    std::printf(
        "bench: %lld runs, median %.1f us per run (%.3f us per node, %zu nodes), min %.1f us\n",
        static_cast<long long>(o.bench), median,
        median / static_cast<double>(std::max<size_t>(ep.graph().nodes().size(), 1)),
        ep.graph().nodes().size(), times.front());
  }
  return 0;
}

}  // namespace loom::cli
