// Index-driven nn ops on CPU tensors: embedding (the out= kernel of the Shaped op: rows of
// the weight gathered by indices of any shape) and one_hot (not structured: its output
// size may depend on the data).
#include <algorithm>
#include <cstring>
#include <string>

#include "../kernels.h"
#include "../parallel.h"
#include "../scalar_types.h"
#include "../strided_loop.h"

namespace loom::cpu {
namespace {

// Calls f(index) for every element of an int32 or int64 tensor, in row-major order.
template <typename F>
void for_each_index(const sdk::Tensor& indices, const char* op, F&& f) {
  const sdk::Tensor* operands[] = {&indices};
  auto run = [&](auto tag) {
    using I = decltype(tag);
    for_each_element(indices.sizes(), operands, [&](char* const* p) {
      f(static_cast<int64_t>(*reinterpret_cast<const I*>(p[0])));
    });
  };
  if (indices.dtype() == LOOM_DTYPE_INT32) {
    run(int32_t{});
  } else if (indices.dtype() == LOOM_DTYPE_INT64) {
    run(int64_t{});
  } else {
    unsupported_dtype(indices.dtype(), op, "int32 or int64 indices");
  }
}

// padding_idx, scale_grad_by_freq and sparse only change the gradient.
sdk::Tensor embedding_out(const sdk::Tensor& weight, const sdk::Tensor& indices, int64_t, bool,
                          bool, const sdk::Tensor& out) {
  const char* op = "loom::embedding";
  const int64_t rows = weight.sizes()[0], width = weight.sizes()[1];
  const int64_t row_stride = weight.strides()[0], col_stride = weight.strides()[1];
  const int64_t item = weight.view().dl.dtype.bits / 8;
  const char* src = weight.data<char>();
  char* dst = out.data<char>();
  std::vector<int64_t> picked;
  picked.reserve(static_cast<size_t>(indices.numel()));
  for_each_index(indices, op, [&](int64_t index) {
    if (index < 0 || index >= rows) {
      throw sdk::Error(std::string("[") + op + "] index " + std::to_string(index) +
                       " is out of range for a weight of " + std::to_string(rows) + " rows");
    }
    picked.push_back(index);
  });
  // the rows are copied on the thread pool
  const int64_t count = static_cast<int64_t>(picked.size());
  parallel_for(0, count, grain_for(width), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const char* row = src + picked[p] * row_stride * item;
      char* target = dst + p * width * item;
      if (col_stride == 1) {
        std::memcpy(target, row, static_cast<size_t>(width * item));
      } else {
        for (int64_t j = 0; j < width; ++j) {
          std::memcpy(target + j * item, row + j * col_stride * item, static_cast<size_t>(item));
        }
      }
    }
  });
  return out;
}

// int64 classes in [0, num_classes) to rows of zeros with a 1 at the class; num_classes
// -1 means the largest class + 1.
sdk::Tensor one_hot(const sdk::Tensor& self, int64_t num_classes) {
  const char* op = "loom::one_hot";
  auto fail = [&](const std::string& detail) {
    throw sdk::Error(std::string("[") + op + "] " + detail);
  };
  if (self.dtype() != LOOM_DTYPE_INT64) {
    fail(std::string("expected an int64 input, found ") + dtype_name(self.dtype()));
  }
  if (num_classes < -1) {
    fail("expected num_classes >= 0 (or -1 to infer it), found " + std::to_string(num_classes));
  }
  std::vector<int64_t> classes;
  classes.reserve(static_cast<size_t>(self.numel()));
  for_each_index(self, op, [&](int64_t c) { classes.push_back(c); });
  if (num_classes == -1) {
    if (classes.empty()) fail("can't infer num_classes from an empty input; pass num_classes");
    num_classes = 0;
    for (int64_t c : classes) num_classes = std::max(num_classes, c + 1);
  }
  for (int64_t c : classes) {
    if (c < 0 || c >= num_classes) {
      fail("class " + std::to_string(c) + " is out of range for " + std::to_string(num_classes) +
           " classes");
    }
  }
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  sizes.push_back(num_classes);
  sdk::Tensor out = sdk::empty(sizes, LOOM_DTYPE_INT64, self.device());
  int64_t* dst = out.data<int64_t>();
  std::fill(dst, dst + out.numel(), int64_t{0});
  for (size_t i = 0; i < classes.size(); ++i) dst[i * num_classes + classes[i]] = 1;
  return out;
}

}  // namespace

void register_embedding_kernels(sdk::Registrar& r) {
  r.impl<&embedding_out>("loom::embedding.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&one_hot>("loom::one_hot", LOOM_KEY_CPU);
  r.capability("loom::one_hot", LOOM_KEY_CPU, {LOOM_DTYPE_INT64});
}

}  // namespace loom::cpu
