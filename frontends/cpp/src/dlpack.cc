// DLPack export and import.
#include "loom/dlpack.h"

#include "loom/core/error.h"
#include "loom/dispatcher/dlpack_conversion.h"

namespace loom {
namespace {

struct ExportContext {
  Tensor tensor;  // keeps the memory alive
  DLManagedTensor managed;
};

void delete_export(DLManagedTensor* managed) {
  delete static_cast<ExportContext*>(managed->manager_ctx);
}

void delete_import(void* ctx, void*) {
  auto* managed = static_cast<DLManagedTensor*>(ctx);
  if (managed->deleter != nullptr) managed->deleter(managed);
}

}  // namespace

DLManagedTensor* to_dlpack(const Tensor& t) {
  LOOM_CHECK(t.defined(), "dlpack", "cannot export an undefined tensor");
  LOOM_CHECK(!is_quantized(t.dtype()), "dlpack", "quantized tensors (", scalar_type_name(t.dtype()),
             ") have no DLPack equivalent");
  auto* ctx = new ExportContext{t, {}};
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = t.impl()->storage()->data();
  dl.device = dispatch::to_dl_device(t.device());
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = dispatch::to_dl_dtype(t.dtype());
  dl.shape = const_cast<int64_t*>(t.impl()->sizes_data());
  dl.strides = const_cast<int64_t*>(t.impl()->strides_data());
  dl.byte_offset = static_cast<uint64_t>(t.storage_offset()) * element_size(t.dtype());
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = &delete_export;
  return &ctx->managed;
}

Tensor from_dlpack(DLManagedTensor* managed) {
  LOOM_CHECK(managed != nullptr, "dlpack", "from_dlpack got a null DLManagedTensor");
  const DLTensor& dl = managed->dl_tensor;
  LOOM_CHECK(dl.ndim >= 0 && (dl.ndim == 0 || dl.shape != nullptr), "dlpack",
             "invalid DLPack tensor: ndim ", dl.ndim, " with ", dl.shape ? "" : "no ", "shape");
  ScalarType dtype = dispatch::from_dl_dtype(dl.dtype);
  Device device = dispatch::from_dl_device(dl.device);
  IntArrayRef sizes(dl.shape, dl.ndim);
  DimVector strides = dl.strides != nullptr ? DimVector(dl.strides, dl.strides + dl.ndim)
                                            : contiguous_strides(sizes);
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  return from_blob(data, sizes, strides, dtype, device, &delete_import, managed);
}

}  // namespace loom
