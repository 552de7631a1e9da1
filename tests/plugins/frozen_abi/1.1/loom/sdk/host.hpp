// The host services as seen from inside one plugin. Every plugin has its own copy of
// this state (the SDK is header-only and plugins are built with hidden visibility).
#pragma once

#include "loom/plugin.h"
#include "loom/sdk/error.hpp"

namespace loom::sdk {

struct PluginState {
  const LoomHostApi* host = nullptr;
  LoomPluginContext* context = nullptr;
};

inline PluginState& plugin_state() {
  static PluginState state;
  return state;
}

inline const LoomHostApi& host() {
  const LoomHostApi* h = plugin_state().host;
  if (h == nullptr) throw Error("[sdk] the host API is not set (called before loom_plugin_entry?)");
  return *h;
}

// True when the host's table has `field` (it may be older than this SDK).
#define LOOM_SDK_HOST_HAS(field) LOOM_HAS_FIELD(&::loom::sdk::host(), LoomHostApi, field)

}  // namespace loom::sdk
