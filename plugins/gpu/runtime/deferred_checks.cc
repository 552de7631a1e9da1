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
    const Pending* oldest = nullptr;
    for (const Pending& p : pending_) {
      if (p.launched) {
        oldest = &p;
        break;
      }
    }
    if (oldest == nullptr) {
      throw sdk::Error("[deferred checks] every slot is held by a launch still to be queued");
    }
    const int wait_device = oldest->device;
    const void* wait_stream = oldest->stream;
    const bool waits = !oldest->finished;  // a finished stream's handle may be reused
    if (waits) wait_(wait_device, const_cast<void*>(wait_stream));
    std::string message = take_flagged(wait_device);
    retire(wait_device, wait_stream, false, waits);
    if (!message.empty()) throw sdk::Error(message);
  }
  const size_t slot = free_.back();
  free_.pop_back();
  words_[2 * slot] = 0;
  words_[2 * slot + 1] = 0;
  pending_.push_back(Pending{slot, device, stream, std::move(describe)});
  return slot;
}

void DeferredChecks::launched(size_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Pending& p : pending_) {
    if (p.slot == slot) p.launched = true;
  }
}

void DeferredChecks::after_wait(int device, const void* stream, bool all_streams, bool retire) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string message = take_flagged(device);
  if (retire) this->retire(device, stream, all_streams);
  if (!message.empty()) throw sdk::Error(message);
}

void DeferredChecks::stream_finished(int device, const void* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Pending& p : pending_) {
    if (p.device == device && p.stream == stream && p.launched) p.finished = true;
  }
}

size_t DeferredChecks::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

bool DeferredChecks::pending_on(int device, const void* stream) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Pending& p : pending_) {
    if (p.device == device && p.stream == stream && p.launched && !p.finished) return true;
  }
  return false;
}

std::string DeferredChecks::take_flagged(int device) {
  std::string message;
  size_t more = 0;
  for (Pending& p : pending_) {
    if (p.device != device || p.reported || !flagged(p.slot)) continue;
    if (message.empty()) {
      message = p.describe(words_[2 * p.slot]);
    } else {
      ++more;
    }
    p.reported = true;
  }
  if (message.empty()) return message;
  message += " (found by its kernel after the op returned";
  if (more > 0) message += "; " + std::to_string(more) + " later launch(es) also found bad input";
  return message + ")";
}

void DeferredChecks::retire(int device, const void* stream, bool all_streams, bool stream_waited) {
  for (size_t i = pending_.size(); i-- > 0;) {
    const Pending& p = pending_[i];
    if (p.device != device || !p.launched) continue;
    if (!p.finished && !(stream_waited && (all_streams || p.stream == stream))) continue;
    free_.push_back(p.slot);
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

}  // namespace loom::gpu
