// Warnings: things a call did that work but that the user should hear about (an out=
// tensor of the wrong shape was resized), delivered to a handler the app can replace.
#pragma once

#include <functional>
#include <string>

#include "loom/core/str_cat.h"

namespace loom {

// Note [Warnings]
// ~~~~~~~~~~~~~~~
// A warning has the shape of an error message ("[loom::add.out] ...") but the call goes
// on. It goes to the process's warning handler. The default handler prints each distinct
// message once to stderr ("loom warning: [op] ..."), so a warning raised in a training
// loop is printed once, not every step (PyTorch's Python warnings behave so per call site;
// a C++ library cannot see the app's call site cheaply, so the message stands in for it).
// An app sets its own handler to count, log or turn warnings into errors (a handler may
// throw: the exception leaves the op call that warned, before anything was written).
struct Warning {
  std::string component;  // the op or component, as in loom::Error
  std::string message;    // the whole text: "[component] detail"
};

using WarningHandler = std::function<void(const Warning&)>;

// Replaces the warning handler for the whole process and returns the previous one. An
// empty handler restores the default (print each distinct message once to stderr).
WarningHandler set_warning_handler(WarningHandler handler);

// Sends a warning to the current handler.
void warn_message(std::string component, std::string detail);

template <typename... Args>
void warn(std::string component, const Args&... detail) {
  warn_message(std::move(component), str_cat(detail...));
}

}  // namespace loom
