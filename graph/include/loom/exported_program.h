// PyTorch's exported programs (`torch.export.save(ep, "model.pt2")`) on loom: the
// archive's graph becomes a loom graph (loom/graph.h) calling loom's operators, its
// weights become tensors, and the program runs through the interpreter on any loaded
// backend. No Python and no libtorch are involved.
//
//   loom::ExportedProgram ep = loom::load_exported("model.pt2");
//   ep.to(loom::parse_device("cuda"));                  // optional: where it runs
//   std::vector<loom::Tensor> out = ep({x});            // the user inputs, in order
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/graph.h"
#include "loom/graph_interpreter.h"
#include "loom/ops/tensor.h"
#include "loom/safetensors.h"

namespace loom {

// Note [Reading a .pt2 archive]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The archive is a zip whose entries sit under one folder: `archive_format` ("pt2"),
// `byteorder` ("little"), `models/model.json` (the graph in PyTorch's export schema,
// major version 8), `data/weights/model_weights_config.json` and
// `data/constants/model_constants_config.json` (for each state entry: the file under
// data/weights/ or data/constants/ holding its raw bytes, and its dtype, sizes, strides
// and storage offset). Each node's target `torch.ops.aten.<name>.<overload>` becomes
// loom's `loom::<name>.<overload>` (`.default`: no overload); other namespaces keep
// theirs (ops a plugin defines), and Python's `operator.*` on sizes become the graph's
// symbolic builtins. Arguments bind to loom's schema by name; those not given take the
// schema's default. Inputs named in the signature as parameters, buffers and tensor
// constants come from the state; the rest are the user's. Sizes exported as dynamic
// are symbols with the range constraints of the archive.
//
// Nothing read is trusted before it is checked: the zip directory and each entry's CRC,
// the JSON, every name a node reads (defined before), each weight's dtype, sizes and
// strides against its bytes (exactly the bytes its layout spans), pickled entries (loom
// cannot read them: re-export with `torch.export.save`), the schema's major version and
// every operator (known to loom, with arguments its schema has). Errors are loom::Error
// "[pt2] <archive>: <entry>: ..." and never a crash.
class ExportedProgram {
 public:
  // Runs the program on its device with the user inputs, in the order of the exported
  // signature; returns the user outputs. A buffer the program mutates (a batch norm's
  // running statistics in training mode) is updated in the state.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  // Moves the state to `device`; later calls run there (inputs must be there too).
  void to(Device device);
  Device device() const { return device_; }

  const graph::Graph& graph() const { return *graph_; }
  // Parameters, buffers and tensor constants by their names in the exported module.
  const NamedTensorList& state() const { return state_; }
  // The user inputs' names and metadata, in the order operator() takes them.
  std::vector<const graph::ValueInfo*> user_inputs() const;
  // How each node runs on `device` (kernel, decomposition or missing), before running.
  std::vector<graph::NodeSupport> check(Device device) const;

  std::string archive;        // the file it was read from
  std::string torch_version;  // of the exporter, "2.15.0+cu132"
  int schema_major = 0;       // of PyTorch's export schema
  int schema_minor = 0;

  // What the reader builds (load_exported).
  struct OutputSpec {
    enum class Kind { User, BufferMutation, UserInputMutation } kind = Kind::User;
    std::string target;  // the buffer, or the user input's name
  };
  ExportedProgram(std::unique_ptr<graph::Graph> graph, NamedTensorList state,
                  std::vector<OutputSpec> output_specs);
  ExportedProgram(ExportedProgram&&) noexcept;
  ExportedProgram& operator=(ExportedProgram&&) noexcept;
  ~ExportedProgram();

 private:
  const Tensor& state_tensor(const std::string& name) const;

  std::unique_ptr<graph::Graph> graph_;
  NamedTensorList state_;
  std::vector<OutputSpec> output_specs_;
  Device device_{};
  std::unique_ptr<graph::Interpreter> interpreter_;
};

// Reads a .pt2 archive (Note [Reading a .pt2 archive]) into CPU tensors; `to` moves it.
ExportedProgram load_exported(const std::string& path);
// The same from the archive's bytes in memory; `name` stands for the file in messages.
ExportedProgram load_exported_from_bytes(std::string bytes, std::string name = "<memory>");

}  // namespace loom
