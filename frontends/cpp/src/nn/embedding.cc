// Embedding over the embedding op.
#include "loom/nn/embedding.h"

#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/factories.h"
#include "loom/nn/init.h"
#include "loom/ops/generated/ops.h"

namespace loom::nn {
namespace {

// padding_idx in [-num, num), negative counted from the end as PyTorch's; -1 in the op
// means none, so a negative index is normalised first.
EmbeddingOptions checked(EmbeddingOptions o) {
  LOOM_CHECK(o.num_embeddings() > 0 && o.embedding_dim() > 0, "nn::Embedding",
             "expected positive num_embeddings and embedding_dim, found ", o.num_embeddings(),
             " and ", o.embedding_dim());
  if (o.padding_idx()) {
    int64_t p = *o.padding_idx();
    LOOM_CHECK(p >= -o.num_embeddings() && p < o.num_embeddings(), "nn::Embedding",
               "expected padding_idx in [", -o.num_embeddings(), ", ", o.num_embeddings(),
               "), found ", p);
    if (p < 0) o.padding_idx(p + o.num_embeddings());
  }
  return o;
}

}  // namespace

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& o)
    : Module("Embedding"),
      options(checked(o)),
      weight(register_parameter("weight", loom::empty({o.num_embeddings(), o.embedding_dim()}))) {
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) {
    NoGradGuard no_grad;
    loom::fill_(loom::select(weight, 0, *options.padding_idx()), 0);
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) const {
  return loom::embedding(weight, indices, options.padding_idx().value_or(-1));
}

std::string EmbeddingImpl::extra_repr() const {
  std::string s = str_cat(options.num_embeddings(), ", ", options.embedding_dim());
  if (options.padding_idx()) s += str_cat(", padding_idx=", *options.padding_idx());
  return s;
}

}  // namespace loom::nn
