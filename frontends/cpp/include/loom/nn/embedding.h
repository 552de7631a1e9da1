// Embedding, as torch.nn.Embedding: a [num_embeddings, embedding_dim] table, N(0, 1)
// initialised, looked up by int64 indices (padding_idx's row zero and gradient-free).
#pragma once

#include <optional>

#include "loom/nn/module.h"
#include "loom/nn/options.h"

namespace loom::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  LOOM_OPTION(int64_t, num_embeddings);
  LOOM_OPTION(int64_t, embedding_dim);
  LOOM_OPTION(std::optional<int64_t>, padding_idx);
};

class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  Tensor forward(const Tensor& indices) const;
  void reset_parameters();
  EmbeddingOptions options;
  Tensor& weight;

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(Embedding);

}  // namespace loom::nn
