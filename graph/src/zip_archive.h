// Reading the entries of a zip archive (a PyTorch .pt2 file) through libzip, with every
// size checked before it is trusted.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct zip;  // libzip's archive handle

namespace loom::graph {

class ZipArchive {
 public:
  // Opens `path`; "[pt2] <path>: not a zip archive (...)" when it is not one.
  static ZipArchive open_file(const std::string& path);
  // Opens an archive held in memory (`name` is for messages).
  static ZipArchive open_bytes(std::string bytes, std::string name);
  ~ZipArchive();
  ZipArchive(ZipArchive&&) noexcept;
  ZipArchive& operator=(ZipArchive&&) noexcept;

  const std::string& name() const { return name_; }
  const std::vector<std::string>& entries() const { return entries_; }
  bool has(std::string_view entry) const;
  // The uncompressed size the directory gives for `entry`.
  uint64_t size_of(std::string_view entry) const;
  // Reads `entry` whole. Refused: a missing entry, one larger than `max_bytes`, and one
  // whose data does not decompress to its size with its CRC.
  std::string read(std::string_view entry, uint64_t max_bytes) const;

 private:
  ZipArchive() = default;
  void list_entries();

  std::string name_;
  std::unique_ptr<std::string> bytes_;  // the archive, when opened from memory
  ::zip* zip_ = nullptr;
  std::vector<std::string> entries_;
};

}  // namespace loom::graph
