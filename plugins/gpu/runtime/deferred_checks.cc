// The pending kernel checks of Note [Input errors found by kernels].
#include "deferred_checks.h"

#include <utility>

#include "loom/sdk/error.hpp"

namespace loom::gpu {

DeferredChecks::DeferredChecks(volatile int64_t* words, size_t slots, WaitForStream wait)
    : words_(words), wait_(std::move(wait)) {
  free_.reserve(slots);
  for (size_t s = slots; s-- > 0;) free_.push_back(s);
  pending_.reserve(slots);
}

size_t DeferredChecks::arm(int device, void* stream, Describe describe) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) {
    if (pending_.empty()) throw sdk::Error("[deferred checks] no slots to check kernels' input");
    const Pending oldest = pending_.front();  // a copy: the wait may not touch the list
    wait_(oldest.device, oldest.stream);
    std::string message = take_flagged(oldest.device);
    for (size_t i = pending_.size(); i-- > 0;) {
      if (pending_[i].device == oldest.device && pending_[i].stream == oldest.stream) release(i);
    }
    if (!message.empty()) throw sdk::Error(message);
  }
  const size_t slot = free_.back();
  free_.pop_back();
  words_[2 * slot] = 0;
  words_[2 * slot + 1] = 0;
  pending_.push_back(Pending{slot, device, stream, std::move(describe)});
  return slot;
}

void DeferredChecks::after_wait(int device, const void* stream, bool all_streams, bool retire) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string message = take_flagged(device);
  if (retire) {
    for (size_t i = pending_.size(); i-- > 0;) {
      const Pending& p = pending_[i];
      if (p.device == device && (all_streams || p.stream == stream)) release(i);
    }
  }
  if (!message.empty()) throw sdk::Error(message);
}

size_t DeferredChecks::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

std::string DeferredChecks::take_flagged(int device) {
  std::string message;
  size_t more = 0;
  for (size_t i = 0; i < pending_.size();) {
    const Pending& p = pending_[i];
    if (p.device != device || !flagged(p.slot)) {
      ++i;
      continue;
    }
    if (message.empty()) {
      message = p.describe(words_[2 * p.slot]);
    } else {
      ++more;
    }
    release(i);
  }
  if (message.empty()) return message;
  message += " (found by its kernel after the op returned";
  if (more > 0) message += "; " + std::to_string(more) + " later launch(es) also found bad input";
  return message + ")";
}

void DeferredChecks::release(size_t index) {
  free_.push_back(pending_[index].slot);
  pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(index));
}

}  // namespace loom::gpu
