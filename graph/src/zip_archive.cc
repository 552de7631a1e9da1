// libzip behind ZipArchive: opening with consistency checks, listing, and reading
// entries with their sizes and CRCs checked.
#include "zip_archive.h"

#include <zip.h>

#include <algorithm>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"

namespace loom::graph {
namespace {

constexpr std::string_view kComponent = "pt2";

std::string zip_error_text(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

}  // namespace

ZipArchive ZipArchive::open_file(const std::string& path) {
  ZipArchive archive;
  archive.name_ = path;
  int code = 0;
  archive.zip_ = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (archive.zip_ == nullptr) {
    fail(std::string(kComponent), path, ": ",
         code == ZIP_ER_NOENT || code == ZIP_ER_OPEN ? "cannot open the file" : "not a zip archive",
         " (", zip_error_text(code), ")");
  }
  archive.list_entries();
  return archive;
}

ZipArchive ZipArchive::open_bytes(std::string bytes, std::string name) {
  ZipArchive archive;
  archive.name_ = std::move(name);
  archive.bytes_ = std::make_unique<std::string>(std::move(bytes));
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source =
      zip_source_buffer_create(archive.bytes_->data(), archive.bytes_->size(), 0, &error);
  if (source == nullptr) {
    std::string text = zip_error_strerror(&error);
    zip_error_fini(&error);
    fail(std::string(kComponent), archive.name_, ": ", text);
  }
  archive.zip_ = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (archive.zip_ == nullptr) {
    zip_source_free(source);
    std::string text = zip_error_strerror(&error);
    zip_error_fini(&error);
    fail(std::string(kComponent), archive.name_, ": not a zip archive (", text, ")");
  }
  zip_error_fini(&error);
  archive.list_entries();
  return archive;
}

ZipArchive::~ZipArchive() {
  if (zip_ != nullptr) zip_discard(zip_);
}

ZipArchive::ZipArchive(ZipArchive&& o) noexcept
    : name_(std::move(o.name_)),
      bytes_(std::move(o.bytes_)),
      zip_(std::exchange(o.zip_, nullptr)),
      entries_(std::move(o.entries_)) {}

ZipArchive& ZipArchive::operator=(ZipArchive&& o) noexcept {
  if (this != &o) {
    if (zip_ != nullptr) zip_discard(zip_);
    name_ = std::move(o.name_);
    bytes_ = std::move(o.bytes_);
    zip_ = std::exchange(o.zip_, nullptr);
    entries_ = std::move(o.entries_);
  }
  return *this;
}

void ZipArchive::list_entries() {
  zip_int64_t count = zip_get_num_entries(zip_, 0);
  LOOM_CHECK(count >= 0, std::string(kComponent), name_, ": cannot list the archive's entries");
  for (zip_int64_t i = 0; i < count; ++i) {
    const char* entry = zip_get_name(zip_, static_cast<zip_uint64_t>(i), 0);
    if (entry != nullptr) entries_.emplace_back(entry);
  }
}

bool ZipArchive::has(std::string_view entry) const {
  return std::find(entries_.begin(), entries_.end(), entry) != entries_.end();
}

uint64_t ZipArchive::size_of(std::string_view entry) const {
  zip_stat_t st;
  zip_stat_init(&st);
  std::string key(entry);
  LOOM_CHECK(zip_stat(zip_, key.c_str(), 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE),
             std::string(kComponent), name_, ": missing entry '", entry, "'");
  return st.size;
}

std::string ZipArchive::read(std::string_view entry, uint64_t max_bytes) const {
  uint64_t size = size_of(entry);
  LOOM_CHECK(size <= max_bytes, std::string(kComponent), name_, ": entry '", entry, "' holds ",
             size, " bytes, more than the ", max_bytes, " expected");
  std::string key(entry);
  zip_file_t* file = zip_fopen(zip_, key.c_str(), 0);
  LOOM_CHECK(file != nullptr, std::string(kComponent), name_, ": cannot open entry '", entry, "' (",
             zip_strerror(zip_), ")");
  std::string data(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    zip_int64_t n = zip_fread(file, data.data() + done, size - done);
    if (n <= 0) break;
    done += static_cast<uint64_t>(n);
  }
  char extra = 0;
  bool longer = done == size && zip_fread(file, &extra, 1) > 0;
  int closed = zip_fclose(file);  // nonzero on a CRC mismatch
  LOOM_CHECK(done == size && !longer && closed == 0, std::string(kComponent), name_, ": entry '",
             entry, "' is damaged (", done, " of ", size, " bytes read",
             closed != 0 ? ", " + zip_error_text(closed) : std::string(), ")");
  return data;
}

EntryMap::EntryMap(std::string name, std::vector<std::pair<std::string, std::string>> entries)
    : name_(std::move(name)) {
  for (auto& [entry, bytes] : entries) {
    if (data_.emplace(entry, std::move(bytes)).second) names_.push_back(entry);
  }
}

bool EntryMap::has(std::string_view entry) const {
  return data_.find(entry) != data_.end();
}

uint64_t EntryMap::size_of(std::string_view entry) const {
  auto it = data_.find(entry);
  LOOM_CHECK(it != data_.end(), std::string(kComponent), name_, ": missing entry '", entry, "'");
  return it->second.size();
}

std::string EntryMap::read(std::string_view entry, uint64_t max_bytes) const {
  uint64_t size = size_of(entry);
  LOOM_CHECK(size <= max_bytes, std::string(kComponent), name_, ": entry '", entry, "' holds ",
             size, " bytes, more than the ", max_bytes, " expected");
  return data_.find(entry)->second;
}

}  // namespace loom::graph
