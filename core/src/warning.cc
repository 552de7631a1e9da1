// The process's warning handler and the default one (Note [Warnings]).
#include "loom/core/warning.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <set>

namespace loom {
namespace {

struct WarningState {
  std::mutex mutex;
  std::shared_ptr<const WarningHandler> handler;  // null: the default
  std::set<std::string> printed;                  // the default handler's messages so far
};

WarningState& state() {
  static auto* s = new WarningState();  // outlives static destructors that might warn
  return *s;
}

void print_once(const Warning& w) {
  WarningState& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.printed.insert(w.message).second) return;
  }
  std::fprintf(stderr, "loom warning: %s\n", w.message.c_str());
}

}  // namespace

WarningHandler set_warning_handler(WarningHandler handler) {
  WarningState& s = state();
  auto next = handler ? std::make_shared<const WarningHandler>(std::move(handler)) : nullptr;
  std::lock_guard<std::mutex> lock(s.mutex);
  std::shared_ptr<const WarningHandler> previous = std::exchange(s.handler, std::move(next));
  return previous ? *previous : WarningHandler();
}

void warn_message(std::string component, std::string detail) {
  Warning w{component, str_cat("[", component, "] ", detail)};
  std::shared_ptr<const WarningHandler> handler;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    handler = state().handler;
  }
  // Called outside the lock: a handler may warn or set another handler itself.
  if (handler) {
    (*handler)(w);
  } else {
    print_once(w);
  }
}

}  // namespace loom
