// The default Philox generators, one per device type id (Note [Generator state]).
#include "loom/core/generator.h"

#include <array>

#include "loom/core/error.h"

namespace loom {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = {seed, 0};
}

PhiloxState Generator::reserve(uint64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  PhiloxState reserved = state_;
  state_.offset += count;
  return reserved;
}

PhiloxState Generator::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

void Generator::set_state(PhiloxState state) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = state;
}

namespace {

// One slot per possible device type id, all alive for the whole process: a type
// registered later finds its generator already seeded by manual_seed_all, and a kernel
// never races with the creation of one.
std::array<Generator, kMaxDeviceTypes>& default_generators() {
  static auto* generators = new std::array<Generator, kMaxDeviceTypes>();  // never destroyed:
  return *generators;  // plugins may still draw numbers during static destruction
}

}  // namespace

Generator& default_generator(DeviceType type) {
  LOOM_CHECK(type >= 0 && type < kMaxDeviceTypes, "generator", "device type id ", type,
             " is out of range (expected 0..", kMaxDeviceTypes - 1, ")");
  return default_generators()[static_cast<size_t>(type)];
}

void manual_seed_all(uint64_t seed) {
  for (Generator& g : default_generators()) g.manual_seed(seed);
}

}  // namespace loom
