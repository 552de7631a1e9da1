// Activation layers: ReLU, GELU, SiLU, Tanh, Sigmoid, Softmax, as torch.nn's.
#pragma once

#include <string>

#include "loom/nn/module.h"

namespace loom::nn {

class ReLUImpl : public Module {
 public:
  ReLUImpl() : Module("ReLU") {}
  Tensor forward(const Tensor& input) const;
};
LOOM_MODULE(ReLU);

// approximate: "none" (erf) or "tanh".
class GELUImpl : public Module {
 public:
  explicit GELUImpl(std::string approximate = "none");
  Tensor forward(const Tensor& input) const;
  std::string approximate;

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(GELU);

class SiLUImpl : public Module {
 public:
  SiLUImpl() : Module("SiLU") {}
  Tensor forward(const Tensor& input) const;
};
LOOM_MODULE(SiLU);

class TanhImpl : public Module {
 public:
  TanhImpl() : Module("Tanh") {}
  Tensor forward(const Tensor& input) const;
};
LOOM_MODULE(Tanh);

class SigmoidImpl : public Module {
 public:
  SigmoidImpl() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input) const;
};
LOOM_MODULE(Sigmoid);

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(int64_t dim) : Module("Softmax"), dim(dim) {}
  Tensor forward(const Tensor& input) const;
  int64_t dim;

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(Softmax);

}  // namespace loom::nn
