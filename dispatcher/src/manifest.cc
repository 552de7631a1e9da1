// Parsing, validation and file resolution for deployment manifests (see
// loom/dispatcher/manifest.h and dispatcher/proto/manifest.proto).
#include "loom/dispatcher/manifest.h"

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "loom/core/error.h"
#include "manifest.pb.h"

namespace loom::dispatch {
namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;

constexpr std::string_view kOrigin = "$ORIGIN";
constexpr std::string_view kLibDir = "$LIBDIR";
constexpr std::string_view kDefaultSource = "<embedded default>";

// The embedded default manifest; see default_manifest().
constexpr std::string_view kDefaultManifestText = R"pb(
  # Installed layout: <prefix>/bin/<exe> and <prefix>/lib/loom/plugins/libloom_plugin_*.so;
  # an app elsewhere finds the plugins beside the loom libraries it links.
  search_dirs: "$ORIGIN/../lib/loom/plugins"
  search_dirs: "$LIBDIR/loom/plugins"
  plugins { name: "cpu" }
  plugins { name: "autograd" }
  plugins { name: "profiler" optional: true }
  plugins { name: "compiler" optional: true }
  plugins { name: "distributed" optional: true }
  plugins { name: "quantization" optional: true }
  plugins { name: "autocast" optional: true }
)pb";

// Note [Manifest error positions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// protobuf's text-format parser reports errors with 0-based line and column, where the
// column counts a tab as advancing to the next multiple of 8. Loom reports 1-based line
// and 1-based *byte* column (a tab is one column), like compilers do.
//
// Some errors are only detected after the parser has consumed the offending token and
// are then reported at the position of the *next* token: an unknown field name
// ("  bogus: 1" points at the ':'), a repeated non-repeated field, an unknown extension
// ("[a.b]: 1" points past the ']') and a bad boolean literal ("optional: maybe }" points
// at the '}'). For those messages we re-tokenize the text with the same tokenizer
// settings and move the position back to the start of the preceding token (for "]", to
// its matching "["), so the reported column is that of the bad token itself.

// Records the first error protobuf reports.
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (has_error_) return;
    has_error_ = true;
    line_ = line;
    column_ = column;
    message_ = message;
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}

  bool has_error() const { return has_error_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  bool has_error_ = false;
  int line_ = -1;
  int column_ = -1;
  std::string message_;
};

class IgnoreErrors : public pb::io::ErrorCollector {
 public:
  void AddError(int, pb::io::ColumnNumber, const std::string&) override {}
};

// Whether protobuf reports `message` at the token after the offending one.
bool ReportedAfterBadToken(const std::string& message) {
  auto contains = [&](std::string_view part) { return message.find(part) != std::string::npos; };
  return contains("has no field named") || contains("is specified multiple times") ||
         contains("is not defined or is not an extension") || contains("another member of oneof") ||
         message.starts_with("Invalid value for boolean field");
}

struct TokenPos {
  int line;
  int column;
  bool is_open_bracket;
  bool is_close_bracket;
};

// Start of the token preceding (line, column), in protobuf's coordinates; see
// Note [Manifest error positions]. Returns the input position when there is none.
std::pair<int, int> StartOfPrecedingToken(std::string_view text, int line, int column) {
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  IgnoreErrors ignore;
  pb::io::Tokenizer tokenizer(&input, &ignore);
  tokenizer.set_comment_style(pb::io::Tokenizer::SH_COMMENT_STYLE);
  tokenizer.set_allow_f_after_float(true);
  tokenizer.set_require_space_after_number(false);

  std::vector<TokenPos> tokens;
  while (tokenizer.Next()) {
    const pb::io::Tokenizer::Token& t = tokenizer.current();
    if (std::make_pair(t.line, t.column) >= std::make_pair(line, column)) break;
    tokens.push_back({t.line, t.column, t.text == "[", t.text == "]"});
  }
  if (tokens.empty()) return {line, column};
  size_t i = tokens.size() - 1;
  if (tokens[i].is_close_bracket) {
    // Walk back to the matching "[" of an extension or Any type name.
    int depth = 0;
    for (size_t j = i + 1; j-- > 0;) {
      if (tokens[j].is_close_bracket) ++depth;
      if (tokens[j].is_open_bracket && --depth == 0) {
        i = j;
        break;
      }
    }
  }
  return {tokens[i].line, tokens[i].column};
}

// Converts a protobuf column (tabs advance to the next multiple of 8) on 0-based `line`
// to a 0-based byte offset within that line.
int ByteColumn(std::string_view text, int line, int column) {
  size_t pos = 0;
  for (int l = 0; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string_view::npos) return column;
    ++pos;
  }
  int visual = 0;
  size_t i = pos;
  while (visual < column && i < text.size() && text[i] != '\n') {
    visual = text[i] == '\t' ? visual + 8 - visual % 8 : visual + 1;
    ++i;
  }
  return static_cast<int>(i - pos) + std::max(0, column - visual);
}

[[noreturn]] void FailSyntax(std::string_view text, const std::string& source,
                             const FirstErrorCollector& errors) {
  if (!errors.has_error()) fail("manifest", source, ": invalid manifest");
  std::string message = errors.message();
  if (errors.line() < 0) fail("manifest", source, ": ", message);
  int line = errors.line();
  int column = errors.column();
  if (ReportedAfterBadToken(message)) {
    std::tie(line, column) = StartOfPrecedingToken(text, line, column);
  }
  // protobuf prints the offending token after "got: "; at the end of input it is empty.
  if (message.ends_with(": ")) absl::StrAppend(&message, "end of input");
  fail("manifest", source, ":", line + 1, ":", ByteColumn(text, line, column) + 1, ": ", message);
}

bool IsFileSource(std::string_view source) {
  return !(source.size() >= 2 && source.front() == '<' && source.back() == '>');
}

bool StartsWithToken(std::string_view entry, std::string_view token) {
  return entry.starts_with(token) && (entry.size() == token.size() || entry[token.size()] == '/');
}

// "$ORIGIN" or "$LIBDIR" (Note [Manifest resolution]).
bool StartsWithOrigin(std::string_view entry) {
  return StartsWithToken(entry, kOrigin) || StartsWithToken(entry, kLibDir);
}

bool IsValidPluginName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Rebases a relative entry onto `base` (the manifest's directory, or empty for none).
std::string Rebase(const fs::path& base, const std::string& entry) {
  if (base.empty() || StartsWithOrigin(entry) || fs::path(entry).is_absolute()) return entry;
  return (base / entry).string();
}

const fs::path& ExecutableDir() {
  static const fs::path dir = [] {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
      fail("plugin-host", "cannot expand $ORIGIN: cannot read /proc/self/exe: ", ec.message());
    }
    return exe.parent_path();
  }();
  return dir;
}

// The directory holding libloom_dispatcher (this code), found with dladdr.
const fs::path& LibraryDir() {
  static const fs::path dir = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&LibraryDir), &info) == 0 ||
        info.dli_fname == nullptr) {
      fail("plugin-host", "cannot expand $LIBDIR: dladdr found no file for libloom_dispatcher");
    }
    std::error_code ec;
    fs::path lib = fs::canonical(info.dli_fname, ec);
    return (ec ? fs::path(info.dli_fname) : lib).parent_path();
  }();
  return dir;
}

std::string ExpandOrigin(const std::string& entry) {
  if (StartsWithToken(entry, kLibDir)) {
    return absl::StrCat(LibraryDir().string(), entry.substr(kLibDir.size()));
  }
  if (!StartsWithToken(entry, kOrigin)) return entry;
  return absl::StrCat(ExecutableDir().string(), entry.substr(kOrigin.size()));
}

// An existing file that is not a directory (a symlink counts as its target).
bool IsLoadableFile(const fs::path& p) {
  std::error_code ec;
  fs::file_status status = fs::status(p, ec);
  return !ec && fs::exists(status) && !fs::is_directory(status);
}

}  // namespace

DeploymentManifest parse_manifest(std::string_view text, std::string_view source_name) {
  DeploymentManifest result;
  result.source = source_name.empty() ? "<string>" : std::string(source_name);
  const std::string& source = result.source;

  LOOM_CHECK(text.size() <= static_cast<size_t>(std::numeric_limits<int>::max()), "manifest",
             source, ": manifest is too large (", text.size(), " bytes)");
  loom::manifest::Deployment proto;
  FirstErrorCollector errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  if (!parser.Parse(&input, &proto) || errors.has_error()) FailSyntax(text, source, errors);

  const fs::path base = IsFileSource(source) ? fs::path(source).parent_path() : fs::path();

  for (int i = 0; i < proto.search_dirs_size(); ++i) {
    const std::string& dir = proto.search_dirs(i);
    if (dir.empty()) fail("manifest", source, ": search_dirs[", i, "] is empty");
    result.search_dirs.push_back(Rebase(base, dir));
  }

  std::map<std::string, int> index_of_name;
  for (int i = 0; i < proto.plugins_size(); ++i) {
    const loom::manifest::PluginSpec& spec = proto.plugins(i);
    const std::string where = absl::StrCat(source, ": plugins[", i, "]");
    if (spec.name().empty() && spec.path().empty()) {
      fail("manifest", where, " has neither a name nor a path; set exactly one of them");
    }
    if (!spec.name().empty() && !spec.path().empty()) {
      fail("manifest", where, " has both name '", spec.name(), "' and path '", spec.path(),
           "'; set exactly one of them");
    }
    PluginRequest request;
    if (!spec.name().empty()) {
      if (!IsValidPluginName(spec.name())) {
        fail("manifest", where, ": invalid plugin name '", spec.name(),
             "'; names may only contain a-z, 0-9 and '_'");
      }
      auto [it, inserted] = index_of_name.emplace(spec.name(), i);
      if (!inserted) {
        fail("manifest", where, ": plugin name '", spec.name(), "' is already used by plugins[",
             it->second, "]");
      }
      request.name = spec.name();
    } else {
      request.path = Rebase(base, spec.path());
    }
    request.required = !spec.optional();
    for (const auto& [key, value] : spec.options()) request.options.emplace_back(key, value);
    std::sort(request.options.begin(), request.options.end());
    result.plugins.push_back(std::move(request));
  }
  return result;
}

DeploymentManifest load_manifest_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (file == nullptr) {
    fail("manifest", "cannot read manifest '", path, "': ", std::strerror(errno));
  }
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file.get())) > 0) text.append(buffer, n);
  if (std::ferror(file.get())) {
    // e.g. EISDIR: fopen succeeds on a directory, reading from it fails.
    fail("manifest", "cannot read manifest '", path, "': ", std::strerror(errno));
  }
  return parse_manifest(text, path);
}

const DeploymentManifest& default_manifest() {
  static const DeploymentManifest manifest = parse_manifest(kDefaultManifestText, kDefaultSource);
  return manifest;
}

std::vector<std::string> plugin_search_dirs(const DeploymentManifest& m) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("LOOM_PLUGIN_PATH"); env != nullptr) {
    std::string_view rest = env;
    while (!rest.empty()) {
      size_t colon = std::min(rest.find(':'), rest.size());
      if (colon > 0) dirs.push_back(ExpandOrigin(std::string(rest.substr(0, colon))));
      rest.remove_prefix(std::min(colon + 1, rest.size()));
    }
  }
  for (const std::string& dir : m.search_dirs) dirs.push_back(ExpandOrigin(dir));
  return dirs;
}

std::string resolve_plugin_file(const PluginRequest& request,
                                const std::vector<std::string>& search_dirs) {
  if (!request.path.empty()) {
    std::string file = ExpandOrigin(request.path);
    std::error_code ec;
    if (fs::is_directory(file, ec)) {
      fail("plugin-host", "plugin '", request.path, "': '", file,
           "' is a directory, not a plugin file (expected a shared library)");
    }
    if (!IsLoadableFile(file)) {
      fail("plugin-host", "plugin '", request.path, "': file '", file, "' does not exist");
    }
    return file;
  }
  LOOM_CHECK(!request.name.empty(), "plugin-host", "plugin request has neither a name nor a path");
  const std::string file_name = absl::StrCat("libloom_plugin_", request.name, ".so");
  // A directory of the plugin's file name is skipped (a later directory may hold the
  // file) but named in the error when no file is found.
  std::string directories;
  for (const std::string& dir : search_dirs) {
    fs::path candidate = fs::path(dir) / file_name;
    if (IsLoadableFile(candidate)) return candidate.string();
    std::error_code ec;
    if (fs::is_directory(candidate, ec)) {
      absl::StrAppend(&directories, "; '", candidate.string(),
                      "' is a directory, not a plugin file");
    }
  }
  fail("plugin-host", "plugin '", request.name, "': no file ", file_name,
       " in the search path (searched: ",
       search_dirs.empty() ? std::string("no directories") : absl::StrJoin(search_dirs, ", "),
       "; set LOOM_PLUGIN_PATH or the manifest's search_dirs)", directories);
}

}  // namespace loom::dispatch
