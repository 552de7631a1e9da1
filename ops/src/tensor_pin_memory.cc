// Tensor::pin_memory: a cpu tensor copied into the pinned host memory a device type's
// plugin lends (Note [Pinned host memory] in loom/core/device_runtime.h).
#include "loom/core/device_runtime.h"
#include "loom/core/error.h"
#include "loom/core/memory_format.h"
#include "loom/core/read_section.h"
#include "loom/ops/generated/ops.h"
#include "loom/ops/tensor.h"

namespace loom {

Tensor Tensor::pin_memory(std::string_view device_type) const {
  LOOM_CHECK(defined(), "pin_memory", "expected a defined tensor, found an undefined one");
  LOOM_CHECK(device().type == kCPU, "pin_memory", "expected a cpu tensor, found one on ",
             device().to_string(), " (only cpu tensors can be pinned)");
  DeviceType type = -1;
  if (!device_type.empty()) {
    type = DeviceTypeRegistry::instance().find(device_type);
    LOOM_CHECK(type > kMeta, "pin_memory", "expected a loaded plugin device type, found '",
               device_type, "'");
  }
  Tensor pinned;
  {
    ReadSection section;  // the plugin stays loaded until the storage holds it
    Allocator& allocator = pinned_host_allocator(type, "pin_memory");
    if (is_pinned() && impl()->storage()->allocator() == &allocator) return *this;
    DimVector strides = preserved_strides(*impl());
    if (strides.empty()) strides = contiguous_strides(sizes());
    pinned = empty_strided(sizes(), strides, dtype(), device(), allocator);
  }
  loom::copy_(pinned, *this);
  return pinned;
}

}  // namespace loom
