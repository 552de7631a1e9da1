// safetensors reading and atomic writing, over nlohmann-json for the header.
#include "loom/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/core/quantizer.h"
#include "loom/core/type_promotion.h"
#include "loom/factories.h"
#include "loom/ops/generated/ops.h"

namespace loom {
namespace {

constexpr const char* kWhat = "safetensors";
// The safetensors package refuses headers over 100 MB; so do we.
constexpr uint64_t kMaxHeader = 100'000'000;

struct DTypeName {
  ScalarType type;
  const char* name;
};
constexpr DTypeName kDTypes[] = {
    {ScalarType::Bool, "BOOL"},   {ScalarType::UInt8, "U8"},         {ScalarType::Int8, "I8"},
    {ScalarType::Int16, "I16"},   {ScalarType::Int32, "I32"},        {ScalarType::Int64, "I64"},
    {ScalarType::Float16, "F16"}, {ScalarType::BFloat16, "BF16"},    {ScalarType::Float32, "F32"},
    {ScalarType::Float64, "F64"}, {ScalarType::ComplexFloat, "C64"},
};

const char* dtype_name(ScalarType t, const std::string& key) {
  for (const DTypeName& d : kDTypes) {
    if (d.type == t) return d.name;
  }
  fail(kWhat, "tensor '", key, "': dtype ", scalar_type_name(t), " has no safetensors name");
}

std::optional<ScalarType> dtype_of(const std::string& name) {
  for (const DTypeName& d : kDTypes) {
    if (name == d.name) return d.type;
  }
  return std::nullopt;
}

// Note [Quantized tensors in safetensors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// safetensors has no quantized dtypes, so a quantized tensor is stored as its integers
// (I8, U8 or I32) and its quantizer beside it, as the metadata entry "loom.quant.<name>":
// a JSON object {"dtype": "qint8", "scheme": "per_tensor_affine", "scale": 0.1,
// "zero_point": 3} or, per channel, {"scheme": "per_channel_affine", "axis": 0,
// "scales": [...], "zero_points": [...]} (JSON numbers keep doubles exactly). Other
// readers see plain integer tensors; loom's reader checks the entry as it checks the
// header (dtype matching the integers, scales positive and finite, zero points in
// range, one pair per channel) before it makes the quantized tensor, and refuses an
// entry whose parameters are missing.
constexpr const char* kQuantPrefix = "loom.quant.";

std::string quantizer_entry(const Tensor& t) {
  const Quantizer& q = *t.impl()->quantizer();
  nlohmann::ordered_json j;
  j["dtype"] = scalar_type_name(t.dtype());
  j["scheme"] = qscheme_name(q.scheme());
  if (q.scheme() == QScheme::PerTensorAffine) {
    j["scale"] = q.scale();
    j["zero_point"] = q.zero_point();
  } else {
    j["axis"] = q.axis();
    std::vector<double> scales;
    std::vector<int64_t> zero_points;
    for (int64_t c = 0; c < q.channels(); ++c) {
      scales.push_back(q.channel_scale(c));
      zero_points.push_back(q.channel_zero_point(c));
    }
    j["scales"] = scales;
    j["zero_points"] = zero_points;
  }
  return j.dump();
}

// The integer dtype a quantized dtype is stored as.
ScalarType stored_dtype(ScalarType t) {
  return t == ScalarType::QInt8    ? ScalarType::Int8
         : t == ScalarType::QUInt8 ? ScalarType::UInt8
                                   : ScalarType::Int32;
}

// The integers of a dense quantized tensor, as a plain tensor sharing its storage.
Tensor raw_integers(const Tensor& q) {
  const TensorImpl& impl = *q.impl();
  return Tensor(Ref<TensorImpl>::adopt(
      new TensorImpl(impl.storage(), DimVector(impl.sizes().begin(), impl.sizes().end()),
                     DimVector(impl.strides().begin(), impl.strides().end()), impl.storage_offset(),
                     stored_dtype(impl.dtype()))));
}

// The quantized tensor of loaded integers `ints` described by metadata `text`.
Tensor quantized_from_entry(const Tensor& ints, const std::string& text, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  LOOM_CHECK(j.is_object(), kWhat, where, ": its quantizer entry is not a JSON object");
  auto field = [&](const char* name) -> const nlohmann::json& {
    LOOM_CHECK(j.contains(name), kWhat, where, " is quantized, but its ", name,
               " is missing from the quantizer entry");
    return j[name];
  };
  const nlohmann::json& dtype_field = field("dtype");
  LOOM_CHECK(dtype_field.is_string(), kWhat, where, ": the quantized dtype is not a string");
  const std::string dtype_text = dtype_field.get<std::string>();
  std::optional<ScalarType> qtype;
  for (ScalarType c : {ScalarType::QInt8, ScalarType::QUInt8, ScalarType::QInt32}) {
    if (dtype_text == scalar_type_name(c)) qtype = c;
  }
  LOOM_CHECK(qtype.has_value(), kWhat, where, ": unknown quantized dtype '", dtype_text,
             "' (expected qint8, quint8 or qint32)");
  LOOM_CHECK(stored_dtype(*qtype) == ints.dtype(), kWhat, where, ": ", dtype_text, " is stored as ",
             scalar_type_name(stored_dtype(*qtype)), ", found ", scalar_type_name(ints.dtype()));
  const nlohmann::json& scheme = field("scheme");
  LOOM_CHECK(scheme.is_string(), kWhat, where, ": the quantization scheme is not a string");
  const std::string what = str_cat(kWhat, "] [", where);  // errors name the file and tensor
  Ref<Quantizer> q;
  if (scheme.get<std::string>() == "per_tensor_affine") {
    const nlohmann::json& scale = field("scale");
    const nlohmann::json& zero_point = field("zero_point");
    LOOM_CHECK(scale.is_number() && zero_point.is_number_integer(), kWhat, where,
               ": scale must be a number and zero_point an integer");
    q = Quantizer::per_tensor(scale.get<double>(), zero_point.get<int64_t>(), *qtype, what.c_str());
  } else {
    LOOM_CHECK(scheme.get<std::string>() == "per_channel_affine", kWhat, where,
               ": unknown quantization scheme '", scheme.get<std::string>(), "'");
    const nlohmann::json& axis = field("axis");
    const nlohmann::json& scales = field("scales");
    const nlohmann::json& zero_points = field("zero_points");
    LOOM_CHECK(
        axis.is_number_integer() && axis.get<int64_t>() >= 0 && axis.get<int64_t>() < ints.dim(),
        kWhat, where, ": the channel axis must be a dim of its ", ints.dim(), "-dim shape");
    const int64_t channels = ints.sizes()[axis.get<int64_t>()];
    LOOM_CHECK(scales.is_array() && zero_points.is_array() &&
                   static_cast<int64_t>(scales.size()) == channels &&
                   static_cast<int64_t>(zero_points.size()) == channels,
               kWhat, where, ": expected ", channels, " scales and zero points (axis ",
               axis.get<int64_t>(), "), found ", scales.size(), " and ", zero_points.size());
    Tensor s = loom::empty({channels}, TensorOptions().dtype(ScalarType::Float64));
    Tensor z = loom::empty({channels}, TensorOptions().dtype(ScalarType::Int64));
    for (int64_t c = 0; c < channels; ++c) {
      LOOM_CHECK(scales[c].is_number() && zero_points[c].is_number_integer(), kWhat, where,
                 ": scale and zero point ", c, " must be a number and an integer");
      s.data<double>()[c] = scales[c].get<double>();
      z.data<int64_t>()[c] = zero_points[c].get<int64_t>();
    }
    q = Quantizer::per_channel(Ref<TensorImpl>::retain(s.impl()), Ref<TensorImpl>::retain(z.impl()),
                               axis.get<int64_t>(), *qtype, what.c_str());
  }
  Tensor out = loom::empty(ints.sizes(), TensorOptions().dtype(*qtype));
  out.impl()->set_quantizer(std::move(q));
  if (ints.numel() > 0) {
    std::memcpy(out.data_ptr(), ints.data_ptr(), ints.numel() * element_size(ints.dtype()));
  }
  return out;
}

void write_all(int fd, const void* data, size_t n, const std::string& path) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    LOOM_CHECK(w > 0, kWhat, "writing '", path, "' failed: ", std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensorList& tensors,
                      const std::map<std::string, std::string>& user_metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::map<std::string, std::string> metadata = user_metadata;
  for (const auto& [key, t] : tensors) {
    if (t.defined() && is_quantized(t.dtype())) {
      LOOM_CHECK(!user_metadata.contains(kQuantPrefix + key), kWhat, "metadata '", kQuantPrefix,
                 key, "' is loom's own entry for the quantized tensor '", key, "'");
      metadata[kQuantPrefix + key] = quantizer_entry(t);
    }
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> contiguous;
  std::set<std::string> names;
  uint64_t offset = 0;
  {
    NoGradGuard no_grad;
    for (const auto& [key, t] : tensors) {
      LOOM_CHECK(key != "__metadata__" && !key.empty(), kWhat, "invalid tensor name '", key, "'");
      LOOM_CHECK(names.insert(key).second, kWhat, "tensor name '", key, "' is given twice");
      LOOM_CHECK(t.defined(), kWhat, "tensor '", key, "' is undefined");
      // A quantized tensor is written as its integers (Note [Quantized tensors in
      // safetensors]).
      Tensor c = is_quantized(t.dtype()) ? (t.is_contiguous() ? t : loom::int_repr(t))
                                         : loom::contiguous(t.to("cpu"));
      if (is_quantized(c.dtype())) c = raw_integers(c);
      const uint64_t bytes = static_cast<uint64_t>(c.numel()) * element_size(c.dtype());
      header[key] = {{"dtype", dtype_name(c.dtype(), key)},
                     {"shape", std::vector<int64_t>(c.sizes().begin(), c.sizes().end())},
                     {"data_offsets", {offset, offset + bytes}}};
      offset += bytes;
      contiguous.push_back(std::move(c));
    }
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  const uint64_t length = text.size();
  uint8_t prefix[8];
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<uint8_t>(length >> (8 * i));

  const std::filesystem::path target(path);
  const std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string temp = (dir / (target.filename().string() + ".tmp.XXXXXX")).string();
  int fd = ::mkstemp(temp.data());
  LOOM_CHECK(fd >= 0, kWhat, "cannot create a temporary file beside '", path,
             "': ", std::strerror(errno));
  try {
    // mkstemp makes the file 0600; give it the mode a plain create would (0666 & ~umask).
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    write_all(fd, prefix, 8, temp);
    write_all(fd, text.data(), text.size(), temp);
    for (const Tensor& c : contiguous) {
      write_all(fd, c.data_ptr(), static_cast<size_t>(c.numel()) * element_size(c.dtype()), temp);
    }
    LOOM_CHECK(::fsync(fd) == 0, kWhat, "fsync of '", temp, "' failed: ", std::strerror(errno));
    LOOM_CHECK(::close(fd) == 0, kWhat, "closing '", temp, "' failed: ", std::strerror(errno));
    fd = -1;
    LOOM_CHECK(::rename(temp.c_str(), path.c_str()) == 0, kWhat, "renaming '", temp, "' to '", path,
               "' failed: ", std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  // The rename itself is durable once the directory is synced.
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

SafetensorsFile load_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_with(ErrorCode::NotFound, kWhat, "cannot open '", path, "'");
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  LOOM_CHECK(file_size >= 8, kWhat, "'", path, "': expected at least the 8-byte header length, ",
             "found a file of ", file_size, " bytes");
  uint8_t prefix[8];
  in.read(reinterpret_cast<char*>(prefix), 8);
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= uint64_t{prefix[i]} << (8 * i);
  LOOM_CHECK(length <= kMaxHeader && length <= file_size - 8, kWhat, "'", path, "': header length ",
             length, " does not fit (file of ", file_size, " bytes, at most ", kMaxHeader, ")");
  std::string text(length, '\0');
  in.read(text.data(), static_cast<std::streamsize>(length));
  nlohmann::json header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  LOOM_CHECK(header.is_object(), kWhat, "'", path, "': the header is not a JSON object");
  const uint64_t data_size = file_size - 8 - length;

  SafetensorsFile out;
  struct Entry {
    std::string key;
    ScalarType dtype;
    std::vector<int64_t> shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "__metadata__") {
      LOOM_CHECK(v.is_object(), kWhat, "'", path, "': __metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        LOOM_CHECK(m.value().is_string(), kWhat, "'", path, "': metadata '", m.key(),
                   "' is not a string");
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto where = [&] { return str_cat("'", path, "': tensor '", key, "'"); };
    LOOM_CHECK(
        v.is_object() && v.contains("dtype") && v.contains("shape") && v.contains("data_offsets"),
        kWhat, where(), ": expected an object with dtype, shape and data_offsets");
    LOOM_CHECK(v["dtype"].is_string(), kWhat, where(), ": dtype is not a string");
    std::optional<ScalarType> dtype = dtype_of(v["dtype"].get<std::string>());
    LOOM_CHECK(dtype.has_value(), kWhat, where(), ": unsupported dtype '",
               v["dtype"].get<std::string>(), "'");
    const nlohmann::json& shape = v["shape"];
    LOOM_CHECK(shape.is_array() && shape.size() <= 64, kWhat, where(), ": shape is not a list");
    Entry e{key, *dtype, {}, 0, 0};
    for (const nlohmann::json& s : shape) {
      LOOM_CHECK(s.is_number_unsigned(), kWhat, where(), ": shape holds ", s.dump(),
                 ", expected non-negative integers");
      LOOM_CHECK(s.get<uint64_t>() <= data_size, kWhat, where(), ": shape ", shape.dump(),
                 " is larger than the file");
      e.shape.push_back(static_cast<int64_t>(s.get<uint64_t>()));
    }
    // The element count, bounded by the data (no overflow): a zero size makes it 0.
    uint64_t numel = 1;
    if (std::find(e.shape.begin(), e.shape.end(), 0) != e.shape.end()) {
      numel = 0;
    } else {
      for (int64_t size : e.shape) {
        LOOM_CHECK(numel <= data_size / static_cast<uint64_t>(size), kWhat, where(), ": shape ",
                   shape.dump(), " is larger than the file");
        numel *= static_cast<uint64_t>(size);
      }
    }
    const nlohmann::json& offsets = v["data_offsets"];
    LOOM_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                   offsets[1].is_number_unsigned(),
               kWhat, where(), ": data_offsets is not two non-negative integers");
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    LOOM_CHECK(e.begin <= e.end && e.end <= data_size, kWhat, where(), ": bytes [", e.begin, ", ",
               e.end, ") are outside the ", data_size, " bytes of data (truncated file?)");
    const uint64_t need = numel * element_size(*dtype);
    LOOM_CHECK(e.end - e.begin == need, kWhat, where(), ": shape ", shape.dump(), " of ",
               v["dtype"].get<std::string>(), " needs ", need, " bytes, found ", e.end - e.begin);
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  uint64_t expected = 0;
  for (const Entry& e : entries) {
    LOOM_CHECK(e.begin == expected, kWhat, "'", path, "': tensor '", e.key, "' starts at byte ",
               e.begin, ", expected ", expected, " (entries must cover the data without gaps or ",
               "overlaps)");
    expected = e.end;
  }
  LOOM_CHECK(expected == data_size, kWhat, "'", path, "': the entries cover ", expected,
             " bytes of data but the file holds ", data_size);
  for (const Entry& e : entries) {
    Tensor t = loom::empty(e.shape, TensorOptions().dtype(e.dtype));
    in.seekg(static_cast<std::streamoff>(8 + length + e.begin));
    in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(e.end - e.begin));
    LOOM_CHECK(static_cast<uint64_t>(in.gcount()) == e.end - e.begin, kWhat, "'", path,
               "': reading tensor '", e.key, "' failed");
    auto quant = out.metadata.find(kQuantPrefix + e.key);
    if (quant != out.metadata.end()) {
      t = quantized_from_entry(t, quant->second, str_cat("'", path, "': tensor '", e.key, "'"));
    }
    out.tensors.emplace_back(e.key, std::move(t));
  }
  for (const auto& [name, text] : out.metadata) {
    if (name.rfind(kQuantPrefix, 0) != 0) continue;
    const std::string key = name.substr(std::string(kQuantPrefix).size());
    LOOM_CHECK(
        std::any_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.key == key; }),
        kWhat, "'", path, "': metadata '", name, "' describes a tensor the file does not hold");
  }
  return out;
}

}  // namespace loom
