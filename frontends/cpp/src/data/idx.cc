// read_idx over zlib's gz* reader (which reads plain files unchanged).
#include "loom/data/idx.h"

#include <zlib.h>

#include <cstring>
#include <memory>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/type_promotion.h"
#include "loom/factories.h"

namespace loom::data {
namespace {

constexpr const char* kWhat = "read_idx";
// No IDX file we read is larger; a header claiming more is corrupt.
constexpr uint64_t kMaxBytes = uint64_t{1} << 32;

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};

std::vector<uint8_t> read_all(const std::string& path) {
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) fail_with(ErrorCode::NotFound, kWhat, "cannot open '", path, "'");
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  while (true) {
    int n = gzread(file.get(), chunk, sizeof chunk);
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(file.get(), &code);
      fail(kWhat, "'", path, "' is not a readable gzip or IDX file: ", message);
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
    LOOM_CHECK(bytes.size() <= kMaxBytes + 1024, kWhat, "'", path, "' is larger than ", kMaxBytes,
               " bytes");
  }
  return bytes;
}

uint32_t big_endian32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

std::pair<ScalarType, size_t> element_type(uint8_t code, const std::string& path) {
  switch (code) {
    case 0x08:
      return {ScalarType::UInt8, 1};
    case 0x09:
      return {ScalarType::Int8, 1};
    case 0x0B:
      return {ScalarType::Int16, 2};
    case 0x0C:
      return {ScalarType::Int32, 4};
    case 0x0D:
      return {ScalarType::Float32, 4};
    case 0x0E:
      return {ScalarType::Float64, 8};
    default:
      fail(kWhat, "'", path, "': expected an element type code 0x08, 0x09, 0x0B, 0x0C, 0x0D ",
           "or 0x0E, found 0x", std::to_string(code));
  }
}

}  // namespace

Tensor read_idx(const std::string& path) {
  std::vector<uint8_t> bytes = read_all(path);
  LOOM_CHECK(bytes.size() >= 4 && bytes[0] == 0 && bytes[1] == 0, kWhat, "'", path,
             "': expected the IDX magic (two zero bytes, type, rank), found ",
             bytes.size() < 4 ? "a file of " + std::to_string(bytes.size()) + " bytes"
                              : std::string("other bytes"));
  auto [dtype, element_size] = element_type(bytes[2], path);
  const size_t rank = bytes[3];
  LOOM_CHECK(rank >= 1, kWhat, "'", path, "': expected at least one dimension, found 0");
  const size_t header = 4 + 4 * rank;
  LOOM_CHECK(bytes.size() >= header, kWhat, "'", path, "': truncated header (", rank,
             " sizes need ", header, " bytes, the file has ", bytes.size(), ")");
  std::vector<int64_t> sizes(rank);
  uint64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    sizes[d] = big_endian32(&bytes[4 + 4 * d]);
    count *= static_cast<uint64_t>(sizes[d]);
    LOOM_CHECK(count * element_size <= kMaxBytes, kWhat, "'", path, "': sizes ",
               shape_to_string(std::vector<int64_t>(sizes.begin(), sizes.begin() + d + 1)),
               " describe more than ", kMaxBytes, " bytes");
  }
  const uint64_t body = count * element_size;
  LOOM_CHECK(bytes.size() - header == body, kWhat, "'", path, "': sizes ", shape_to_string(sizes),
             " need ", body, " bytes of elements, found ", bytes.size() - header,
             bytes.size() - header < body ? " (truncated)" : " (trailing data)");
  Tensor out = loom::empty(sizes, TensorOptions().dtype(dtype));
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  const uint8_t* src = bytes.data() + header;
  // IDX is big-endian: reverse each element's bytes.
  for (uint64_t i = 0; i < count; ++i) {
    for (size_t b = 0; b < element_size; ++b) {
      dst[i * element_size + b] = src[i * element_size + element_size - 1 - b];
    }
  }
  return out;
}

}  // namespace loom::data
