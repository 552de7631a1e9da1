// Checks of input that only a kernel can see (an index out of range, a target outside the
// classes): slots of host memory mapped into the device, which kernels flag and the host
// reads when it next waits for the device (Note [Input errors found by kernels]). Free of
// any GPU runtime: the memory and the wait come in from the device layer, so the
// bookkeeping is unit-tested on the host.
//
// Note [Input errors found by kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel cannot throw. One that meets bad input skips the element and flags it in its
// launch's slot: two words of pinned host memory mapped into the device, the bad value
// and then a flag. Reading the slot straight after the launch would wait for the stream,
// draining the queue of launches the host keeps ahead of the device: a CNN training step
// waited four times (the loss's targets, the pooling gradients' scatters), and its host
// and device times added up instead of overlapping.
//
// So the op returns, and its slot stays pending until the host next waits for the device
// anyway: a stream, event or device synchronisation, which every copy to the host and
// every `item()` ends with. There a flagged slot becomes the op's error ("[loom::nll_loss]
// target 12 is out of bounds for 10 classes", noting the wait that raised it: the device
// interface's contract for waits in loom/plugin.h), like PyTorch's device-side asserts,
// which also surface at the next synchronising call. Unlike an assert, the device stays
// usable and the process goes on.
//
// A slot is free again only once its kernel cannot write it any more: after a wait for
// its own stream (or the whole device), and only when the kernel had been queued before
// that wait (a slot is armed before its launch and marked launched after it, so another
// thread's wait cannot free a slot whose kernel is still to come). A flagged slot seen
// by any other wait is reported there, once, and stays taken until then. A destroyed
// stream's slots are finished: the stream was waited for first. When every slot is
// taken, the oldest launched slot's stream is waited for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace loom::gpu {

class DeferredChecks {
 public:
  // Builds the error message of a flagged check from the value the kernel reported.
  using Describe = std::function<std::string(int64_t value)>;
  // Waits for `stream` of `device` (the runtime's stream synchronisation).
  using WaitForStream = std::function<void(int device, void* stream)>;

  // `words`: 2 * `slots` words of host memory the kernels can write (mapped pinned memory
  // on a GPU). The caller owns it; it must outlive this object.
  DeferredChecks(volatile int64_t* words, size_t slots, WaitForStream wait);

  // A cleared slot for one launch on `stream` of `device`: the index of its two words
  // (value at 2 * slot, flag at 2 * slot + 1), which the launch's kernels may flag. Call
  // launched(slot) once the launch was queued (or failed).
  size_t arm(int device, void* stream, Describe describe);
  void launched(size_t slot);

  // After the host waited for `stream` of `device` (every stream of it when
  // `all_streams`): throws sdk::Error with the earliest flagged, unreported check's
  // message for the device (any stream), and frees the waited streams' launched slots.
  // After an event wait, which says nothing about whole streams, call it with `retire`
  // false.
  void after_wait(int device, const void* stream, bool all_streams, bool retire = true);

  // `stream` of `device` was waited for and is about to be destroyed: its launched slots
  // are finished (freed by the next wait of the device, reported if flagged).
  void stream_finished(int device, const void* stream);

  size_t pending() const;
  // Whether `stream` of `device` holds launched slots.
  bool pending_on(int device, const void* stream) const;

 private:
  struct Pending {
    size_t slot;
    int device;
    const void* stream;
    Describe describe;
    bool launched = false;
    bool reported = false;
    bool finished = false;  // its stream was waited for, then destroyed
  };

  bool flagged(size_t slot) const { return words_[2 * slot + 1] != 0; }
  // The earliest flagged, unreported check of `device` as an error message (the others
  // counted in it), all of them marked reported; empty when none. Caller holds mutex_.
  std::string take_flagged(int device);
  // Frees the finished slots of `device` and, when `stream_waited`, its launched slots on
  // `stream` (every stream when `all_streams`). Caller holds mutex_.
  void retire(int device, const void* stream, bool all_streams, bool stream_waited = true);
  volatile int64_t* words_;
  WaitForStream wait_;
  mutable std::mutex mutex_;
  std::vector<Pending> pending_;  // in launch order
  std::vector<size_t> free_;
};

}  // namespace loom::gpu
