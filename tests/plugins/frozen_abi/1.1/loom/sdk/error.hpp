// Errors on the plugin side: loom::sdk::Error, turning exceptions into LoomError at the
// ABI edge (catch_all) and host errors back into exceptions (check).
#pragma once

#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

#include "loom/plugin.h"

namespace loom::sdk {

// Thrown inside a plugin; becomes a LoomError with its code at the ABI edge.
class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, int32_t code = LOOM_STATUS_INVALID_ARGUMENT)
      : std::runtime_error(std::move(message)), code_(code) {}
  int32_t code() const { return code_; }

 private:
  int32_t code_;
};

namespace detail {
inline void destroy_plugin_error(LoomError* e) {
  delete[] e->message;
  delete e;
}
}  // namespace detail

// A LoomError allocated by this plugin; it carries the plugin's own destroy function.
inline LoomError* make_error(int32_t code, std::string_view message) noexcept {
  try {
    char* text = new char[message.size() + 1];
    std::memcpy(text, message.data(), message.size());
    text[message.size()] = '\0';
    return new LoomError{sizeof(LoomError), code, text, &detail::destroy_plugin_error};
  } catch (...) {
    static char oom[] = "out of memory creating an error";
    static LoomError fallback{sizeof(LoomError), LOOM_STATUS_RESOURCE_EXHAUSTED, oom,
                              [](LoomError*) {}};
    return &fallback;
  }
}

// Throws the host's error as loom::sdk::Error (after destroying it).
inline void check(LoomError* err) {
  if (err == nullptr) [[likely]]
    return;
  std::string message = err->message != nullptr ? err->message : "(no message)";
  int32_t code = err->code;
  if (err->destroy != nullptr) err->destroy(err);
  throw Error(std::move(message), code);
}

// Runs body(); any exception becomes a LoomError. Use at every ABI entry point.
template <typename F>
LoomError* catch_all(F&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const Error& e) {
    return make_error(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return make_error(LOOM_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return make_error(LOOM_STATUS_INTERNAL, e.what());
  } catch (...) {
    return make_error(LOOM_STATUS_INTERNAL, "unknown exception thrown by a plugin");
  }
}

}  // namespace loom::sdk
