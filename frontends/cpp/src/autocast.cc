// loom::autocast (loom/autocast.h) over the autocast plugin's table (loom/autocast_api.h).
#include "loom/autocast.h"

#include "loom/autocast_api.h"
#include "loom/core/error.h"
#include "loom/dispatcher/extensions.h"

namespace loom::autocast {
namespace {

static_assert(static_cast<int>(ScalarType::Float16) == LOOM_DTYPE_FLOAT16 &&
              static_cast<int>(ScalarType::BFloat16) == LOOM_DTYPE_BFLOAT16);

const LoomAutocastApi& api(const char* what) {
  const auto* table =
      static_cast<const LoomAutocastApi*>(dispatch::find_extension(LOOM_AUTOCAST_EXTENSION_NAME));
  if (table == nullptr) {
    fail_with(ErrorCode::FailedPrecondition, "autocast", what,
              ": the autocast plugin is not loaded (expected `plugins { name: \"autocast\" }` in "
              "the deployment manifest, found no table named '",
              LOOM_AUTOCAST_EXTENSION_NAME, "')");
  }
  return *table;
}

LoomAutocastRegion region_of(const std::string& device_type) {
  LoomAutocastRegion r{};
  r.struct_size = sizeof(r);
  r.device_type = device_type.c_str();
  r.dtype = -1;
  return r;
}

}  // namespace

bool is_available() {
  return dispatch::find_extension(LOOM_AUTOCAST_EXTENSION_NAME) != nullptr;
}

Guard::Guard(const std::string& device_type, std::optional<ScalarType> dtype, bool enabled,
             bool cache_enabled) {
  LoomAutocastRegion r = region_of(device_type);
  r.enabled = enabled ? 1 : 0;
  r.dtype = dtype ? static_cast<int32_t>(*dtype) : -1;
  r.cache_enabled = cache_enabled ? 1 : 0;
  dispatch::check_table_error(api("Guard").enter(&r), "autocast");
  token_ = r.out_token;
}

Guard::~Guard() {
  // Guards on the stack end in reverse order; one ended out of order (a guard moved to the
  // heap) is refused by the plugin and leaves the regions as they were.
  if (const auto* table = static_cast<const LoomAutocastApi*>(
          dispatch::find_extension(LOOM_AUTOCAST_EXTENSION_NAME))) {
    if (LoomError* err = table->exit(token_); err != nullptr && err->destroy != nullptr) {
      err->destroy(err);
    }
  }
}

bool is_enabled(const std::string& device_type) {
  LoomAutocastRegion r = region_of(device_type);
  dispatch::check_table_error(api("is_enabled").query(&r), "autocast");
  return r.enabled != 0;
}

ScalarType lower_dtype(const std::string& device_type) {
  LoomAutocastRegion r = region_of(device_type);
  dispatch::check_table_error(api("lower_dtype").query(&r), "autocast");
  return static_cast<ScalarType>(r.dtype);
}

Cast cast_of(const std::string& device_type, const std::string& op) {
  int32_t cast = 0;
  dispatch::check_table_error(api("cast_of").cast_of(device_type.c_str(), op.c_str(), &cast),
                              "autocast");
  return static_cast<Cast>(cast);
}

const char* cast_name(Cast cast) {
  switch (cast) {
    case Cast::Keep:
      return "keep";
    case Cast::Lower:
      return "lower";
    case Cast::Float32:
      return "float32";
    case Cast::Promote:
      return "promote";
  }
  return "?";
}

}  // namespace loom::autocast
