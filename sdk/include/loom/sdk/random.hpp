// Random numbers in a kernel: reserve_random() takes counters from the host's default
// generator of a device type; the Philox stream it returns (loom/sdk/philox.hpp) gives
// every element its block. See Note [Random stream layout].
//
//   sdk::PhiloxStream s = sdk::reserve_random(self.device(), numel);
//   for (int64_t i = 0; i < numel; ++i) out[i] = sdk::uniform_float(s.block(i)[0]);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "loom/plugin.h"
#include "loom/sdk/dtype.hpp"
#include "loom/sdk/error.hpp"
#include "loom/sdk/host.hpp"
#include "loom/sdk/philox.hpp"
#include "loom/sdk/shape.hpp"

namespace loom::sdk {

// Reserves `count` counters of `device`'s type: returns the generator's (seed, offset)
// and advances its offset by count, atomically (concurrent kernels get disjoint ranges).
// Needs a host with ABI minor >= 1; an older host gets a clear error, not a crash.
inline PhiloxStream reserve_random(LoomDevice device, uint64_t count) {
  const LoomHostApi& h = host();
  if (!LOOM_HAS_FIELD(&h, LoomHostApi, generator_reserve) || h.generator_reserve == nullptr) {
    throw Error("[sdk] random numbers need the host service generator_reserve (loom ABI " +
                    std::to_string(LOOM_ABI_VERSION_MAJOR) + ".1), but this host provides ABI " +
                    std::to_string(h.abi_major) + "." + std::to_string(h.abi_minor),
                LOOM_STATUS_UNIMPLEMENTED);
  }
  PhiloxStream stream;
  check(h.generator_reserve(device, count, &stream.seed, &stream.offset));
  return stream;
}

// The integers `dtype` holds exactly: bool's [0, 1], an integer type's range, a floating
// type's [-2^digits, 2^digits] (digits: 11 float16, 8 bfloat16, 24 float32, 53 float64).
inline std::pair<int64_t, int64_t> exact_integer_range(LoomDType dtype) {
  switch (dtype) {
    case LOOM_DTYPE_BOOL:
      return {0, 1};
    case LOOM_DTYPE_UINT8:
      return {0, 255};
    case LOOM_DTYPE_INT8:
      return {-128, 127};
    case LOOM_DTYPE_INT16:
      return {-32768, 32767};
    case LOOM_DTYPE_INT32:
      return {INT32_MIN, INT32_MAX};
    case LOOM_DTYPE_INT64:
      return {INT64_MIN, INT64_MAX};
    default: {
      const int digits = dtype == LOOM_DTYPE_FLOAT16    ? 11
                         : dtype == LOOM_DTYPE_BFLOAT16 ? 8
                         : dtype == LOOM_DTYPE_FLOAT32  ? 24
                                                        : 53;
      return {-(int64_t{1} << digits), int64_t{1} << digits};
    }
  }
}

// random_(from, to)'s values, after PyTorch's checks (from < to, both among the dtype's
// exact integers; no `to`: up to the largest): `from` and how many values follow it from
// there, 0 standing for all 2^64.
struct IntegerRange {
  int64_t from;
  uint64_t count;
};
inline IntegerRange random_integer_range(LoomDType dtype, int64_t from, std::optional<int64_t> to) {
  const auto [lowest, highest] = exact_integer_range(dtype);
  const std::string range_text = std::string(dtype_name(dtype)) + " (expected [" +
                                 std::to_string(lowest) + ", " + std::to_string(highest) + "])";
  auto fail = [](const std::string& detail) {
    throw Error("[random_] " + detail, LOOM_STATUS_INVALID_ARGUMENT);
  };
  if (to && from >= *to) {
    fail("expected from < to, found from=" + std::to_string(from) + " to=" + std::to_string(*to));
  }
  if (from < lowest || from > highest) {
    fail("from=" + std::to_string(from) + " is out of range for " + range_text);
  }
  if (to && *to - 1 > highest) {
    fail("to - 1 = " + std::to_string(*to - 1) + " is out of range for " + range_text);
  }
  const int64_t last = to ? *to - 1 : highest;  // 2^64 values wrap the count to 0
  return {from, static_cast<uint64_t>(last) - static_cast<uint64_t>(from) + 1};
}

// randperm(n)'s checks: n >= 0, out of shape [n], n - 1 among out's exact integers.
inline void check_randperm(int64_t n, LoomDType dtype, std::span<const int64_t> out_sizes) {
  auto fail = [](const std::string& detail) {
    throw Error("[randperm] " + detail, LOOM_STATUS_INVALID_ARGUMENT);
  };
  if (n < 0) fail("expected n >= 0, found n=" + std::to_string(n));
  if (out_sizes.size() != 1 || out_sizes[0] != n) {
    fail("expected out of shape [" + std::to_string(n) + "], found " + shape_string(out_sizes));
  }
  const int64_t highest = exact_integer_range(dtype).second;
  if (n > 0 && n - 1 > highest) {
    fail("n=" + std::to_string(n) + " is too large for " + dtype_name(dtype) + " (largest value " +
         std::to_string(highest) + ")");
  }
}

}  // namespace loom::sdk
