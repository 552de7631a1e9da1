// Linear (y = x W^T + b), Identity and Flatten, as torch.nn's.
#pragma once

#include "loom/nn/module.h"
#include "loom/nn/options.h"

namespace loom::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  LOOM_OPTION(int64_t, in_features);
  LOOM_OPTION(int64_t, out_features);
  LOOM_OPTION(bool, bias) = true;
};

// weight [out, in] and bias [out], both U(-1/sqrt(in), 1/sqrt(in)) as PyTorch's.
class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);
  Tensor forward(const Tensor& input) const;
  void reset_parameters();

  LinearOptions options;
  Tensor& weight;
  Tensor& bias;  // undefined without bias

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(Linear);

class IdentityImpl : public Module {
 public:
  IdentityImpl() : Module("Identity") {}
  Tensor forward(const Tensor& input) const { return input; }
};
LOOM_MODULE(Identity);

// Flattens dims start_dim..end_dim (default 1..-1: everything but the batch).
class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& input) const;
  int64_t start_dim, end_dim;

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(Flatten);

}  // namespace loom::nn
