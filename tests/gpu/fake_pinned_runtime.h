// A fake of the GPU runtime calls behind pinned host memory (StagingRuntime, in
// plugins/gpu/runtime/pinned_staging.h) for the host tests of the staging pool and the
// pinned host allocator: malloc'd "pinned" blocks checked for double release, and events
// that stay pending after a record until the test completes them.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>

#include "../../plugins/gpu/runtime/pinned_staging.h"

namespace loom::gpu::test {

class FakeRuntime final : public StagingRuntime {
 public:
  std::set<void*> pinned;
  std::map<void*, bool> events;  // event -> done
  bool refuse_record = false;
  int next_event = 1;

  void* allocate_pinned(size_t nbytes) override {
    void* p = std::malloc(nbytes);
    pinned.insert(p);
    return p;
  }
  void release_pinned(void* ptr) override {
    EXPECT_EQ(pinned.erase(ptr), 1u) << "released twice or never allocated";
    std::free(ptr);
  }
  void* create_event(int) override {
    void* e = reinterpret_cast<void*>(static_cast<uintptr_t>(next_event++));
    events[e] = true;
    return e;
  }
  void destroy_event(int, void* event) override { EXPECT_EQ(events.erase(event), 1u); }
  bool record_event(int, void* event, void*) override {
    if (refuse_record) return false;
    events.at(event) = false;  // pending until the test completes it
    return true;
  }
  bool event_done(int, void* event) override { return events.at(event); }
  void complete_all() {
    for (auto& [event, done] : events) done = true;
  }
};

}  // namespace loom::gpu::test
