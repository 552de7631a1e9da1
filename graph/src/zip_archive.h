// The entries of an archive as the .pt2 reader sees them (ArchiveEntries): a zip file
// (a PyTorch .pt2) read through libzip with every size checked before it is trusted, or
// entries held in memory (EntryMap: tests and the reader's fuzzer).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct zip;  // libzip's archive handle

namespace loom::graph {

class ArchiveEntries {
 public:
  virtual ~ArchiveEntries() = default;
  // The archive's name in messages (its file).
  virtual const std::string& name() const = 0;
  virtual const std::vector<std::string>& entries() const = 0;
  virtual bool has(std::string_view entry) const = 0;
  // The size `entry` says it has; "[pt2] <name>: missing entry" when there is none.
  virtual uint64_t size_of(std::string_view entry) const = 0;
  // Reads `entry` whole; refuses one larger than `max_bytes`.
  virtual std::string read(std::string_view entry, uint64_t max_bytes) const = 0;
};

class ZipArchive final : public ArchiveEntries {
 public:
  // Opens `path`; "[pt2] <path>: not a zip archive (...)" when it is not one.
  static ZipArchive open_file(const std::string& path);
  // Opens an archive held in memory (`name` is for messages).
  static ZipArchive open_bytes(std::string bytes, std::string name);
  ~ZipArchive();
  ZipArchive(ZipArchive&&) noexcept;
  ZipArchive& operator=(ZipArchive&&) noexcept;

  const std::string& name() const override { return name_; }
  const std::vector<std::string>& entries() const override { return entries_; }
  bool has(std::string_view entry) const override;
  // The uncompressed size the directory gives for `entry`.
  uint64_t size_of(std::string_view entry) const override;
  // Also refused: an entry whose data does not decompress to its size with its CRC.
  std::string read(std::string_view entry, uint64_t max_bytes) const override;

 private:
  ZipArchive() = default;
  void list_entries();

  std::string name_;
  std::unique_ptr<std::string> bytes_;  // the archive, when opened from memory
  ::zip* zip_ = nullptr;
  std::vector<std::string> entries_;
};

// Entries held in memory, in the order given.
class EntryMap final : public ArchiveEntries {
 public:
  EntryMap(std::string name, std::vector<std::pair<std::string, std::string>> entries);
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& entries() const override { return names_; }
  bool has(std::string_view entry) const override;
  uint64_t size_of(std::string_view entry) const override;
  std::string read(std::string_view entry, uint64_t max_bytes) const override;

 private:
  std::string name_;
  std::vector<std::string> names_;
  std::map<std::string, std::string, std::less<>> data_;
};

}  // namespace loom::graph
