// Automatic mixed precision (autocast) over the autocast plugin's table
// (loom/autocast_api.h), shaped like torch.autocast:
//
//   {
//     loom::autocast::Guard amp("cpu", loom::ScalarType::BFloat16);
//     Tensor logits = model.forward(x);        // linear and conv in bfloat16
//     Tensor loss = loss_fn(logits, target);    // losses in float32
//   }
//   loss.backward();                            // gradients in the parameters' dtype
//
// Inside a region, the ops of the lower-precision list run on their float32 tensors cast to
// the region's dtype, the ops of the float32 list on float16/bfloat16 tensors cast to
// float32, and the ops that combine tensors on the widest dtype among them (Note [Autocast
// policy] in plugins/autocast/autocast_policy.h). Regions are per thread and nest; a
// parameter is cast once per outermost region.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "loom/core/scalar_type.h"

namespace loom::autocast {

// Whether the autocast plugin is loaded (`plugins { name: "autocast" }` in the manifest).
bool is_available();

// A region: autocast on for `device_type` ("cpu", "cuda", a vendor's) in `dtype` (float16 or
// bfloat16; unset: the device type's default, bfloat16 on cpu, float16 elsewhere) until the
// guard is destroyed; `enabled = false` turns it off inside an enclosing region. Refused
// with a loom::Error when the plugin or the device type is not loaded or the dtype is not
// float16 or bfloat16.
class Guard {
 public:
  explicit Guard(const std::string& device_type, std::optional<ScalarType> dtype = std::nullopt,
                 bool enabled = true, bool cache_enabled = true);
  ~Guard();
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  uint64_t token_ = 0;
};

// The calling thread's state for `device_type`.
bool is_enabled(const std::string& device_type);
// The dtype of the enclosing region, or the device type's default outside one.
ScalarType lower_dtype(const std::string& device_type);

// What autocast does to an op's floating tensors on `device_type` (the backend's policy
// table, else the default policy).
enum class Cast { Keep, Lower, Float32, Promote };
Cast cast_of(const std::string& device_type, const std::string& op);
const char* cast_name(Cast cast);  // "keep", "lower", "float32", "promote"

}  // namespace loom::autocast
