// The random number generators' state: one default Philox generator per device type,
// holding (seed, offset). Kernels reserve counter ranges from it (the ABI's
// generator_reserve); the numbers themselves are computed by the backends from
// loom/sdk/philox.hpp (Note [Random stream layout]).
#pragma once

#include <cstdint>
#include <mutex>

#include "loom/core/device.h"

namespace loom {

// The seed every default generator starts with (the same default as PyTorch).
inline constexpr uint64_t kDefaultSeed = 67280421310721ULL;

// Where a Philox stream stands: the key (seed) and the next unused counter (offset).
struct PhiloxState {
  uint64_t seed = kDefaultSeed;
  uint64_t offset = 0;
  bool operator==(const PhiloxState&) const = default;
};

// Note [Generator state]
// ~~~~~~~~~~~~~~~~~~~~~~
// A generator is only a seed and a counter offset: Philox needs no other state, so
// reserving numbers is "return the offset, add count" under a mutex, and the values
// a kernel produces depend only on what it reserved, never on the order in which
// threads or kernels run. manual_seed() restarts the stream at offset 0. The mutex
// (not a pair of atomics) keeps seed and offset consistent with each other when
// manual_seed races with reserve; one lock per kernel call is noise next to the fill.
class Generator {
 public:
  explicit Generator(uint64_t seed = kDefaultSeed) : state_{seed, 0} {}
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // Sets the seed and restarts at offset 0.
  void manual_seed(uint64_t seed);
  // Returns the current (seed, offset) and advances the offset by `count` (wrapping at
  // 2^64), atomically with respect to every other call on this generator.
  PhiloxState reserve(uint64_t count);

  PhiloxState state() const;
  // Restores a state saved with state() (checkpointing).
  void set_state(PhiloxState state);
  uint64_t seed() const { return state().seed; }
  uint64_t offset() const { return state().offset; }

 private:
  mutable std::mutex mutex_;
  PhiloxState state_;
};

// The default generator of a device type (cpu, meta, and every type a plugin registers,
// each its own). Throws "[generator] ..." for a type id outside [0, kMaxDeviceTypes).
Generator& default_generator(DeviceType type);

// Seeds every device type's default generator, including those of types registered
// later (all start at offset 0).
void manual_seed_all(uint64_t seed);

}  // namespace loom
