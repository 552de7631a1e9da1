// The registry of named extension tables (LoomHostApi::extension_publish/find).
#include "loom/dispatcher/extensions.h"

#include <map>
#include <mutex>
#include <shared_mutex>

#include "loom/core/error.h"

namespace loom::dispatch {
namespace {

struct Published {
  const void* table;
  const Registrant* owner;
};

std::shared_mutex g_mutex;
std::map<std::string, Published, std::less<>>& tables() {
  static auto* t = new std::map<std::string, Published, std::less<>>();
  return *t;
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

void publish_extension(const std::string& name, const void* table, const Registrant* owner) {
  LOOM_CHECK(valid_name(name), "extensions",
             "an extension table's name must be 1 to 128 characters of [a-z0-9_.], found '", name,
             "'");
  LOOM_CHECK(table != nullptr, "extensions", "the table published as '", name, "' is null");
  std::unique_lock<std::shared_mutex> lock(g_mutex);
  auto [it, inserted] = tables().emplace(name, Published{table, owner});
  if (!inserted) {
    throw Error("extensions",
                str_cat("a table named '", name, "' is already published by '",
                        it->second.owner != nullptr ? it->second.owner->name : "the app", "'"),
                ErrorCode::AlreadyExists);
  }
}

const void* find_extension(const std::string& name) {
  std::shared_lock<std::shared_mutex> lock(g_mutex);
  auto it = tables().find(name);
  return it == tables().end() ? nullptr : it->second.table;
}

void remove_extensions_of(const Registrant* owner) {
  std::unique_lock<std::shared_mutex> lock(g_mutex);
  for (auto it = tables().begin(); it != tables().end();) {
    it = it->second.owner == owner ? tables().erase(it) : std::next(it);
  }
}

void check_table_error(LoomError* err, const std::string& component, const char* what) {
  if (err == nullptr) return;
  std::string message = err->message != nullptr ? err->message : "(no message)";
  const auto code = static_cast<ErrorCode>(err->code);
  err->destroy(err);
  const std::string prefix = "[" + component + "] ";
  if (message.rfind(prefix, 0) == 0) {
    message.erase(0, prefix.size());
  } else if (what != nullptr) {
    message = str_cat(what, ": ", message);
  }
  throw Error(component, message, code);
}

}  // namespace loom::dispatch
