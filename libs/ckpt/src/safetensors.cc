#include "gradsync/core/json_depth.h"
#include "gradsync/ckpt/safetensors.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "file_io.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace gradsync::ckpt {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian, read in place");

constexpr char kMetadataKey[] = "__metadata__";

using google::protobuf::Struct;
using google::protobuf::Value;

// JSON string literal of `s` (names and metadata are the only strings written).
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

float Bf16ToFloat(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// IEEE binary16 to binary32, exactly (every half value is a float).
float F16ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  float magnitude;
  if (exp == 0) {
    magnitude = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
  } else if (exp == 31) {
    return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf or NaN
  } else {
    magnitude = std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
  }
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
}

struct Entry {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;
  uint64_t begin = 0, end = 0;
};

size_t DtypeBytes(const std::string& dtype) { return dtype == "F32" ? 4 : dtype == "BF16" || dtype == "F16" ? 2 : 0; }

// A JSON number that is a non-negative integer below 2^53 (exact in a double).
bool ToCount(const Value& v, uint64_t* out) {
  if (v.kind_case() != Value::kNumberValue) return false;
  const double d = v.number_value();
  if (!(d >= 0 && d <= 9007199254740992.0) || std::floor(d) != d) return false;
  *out = static_cast<uint64_t>(d);
  return true;
}

class HeaderParser {
 public:
  HeaderParser(std::string source, uint64_t data_bytes) : source_(std::move(source)), data_bytes_(data_bytes) {}

  absl::Status Fail(const std::string& tensor, const std::string& problem) const {
    return absl::DataLossError(absl::StrCat(source_, ": tensor \"", tensor, "\": ", problem));
  }

  absl::StatusOr<Entry> ParseEntry(const std::string& name, const Value& v) const {
    if (v.kind_case() != Value::kStructValue) return Fail(name, "expected an object with dtype, shape, data_offsets");
    const auto& f = v.struct_value().fields();
    const auto dtype = f.find("dtype"), shape = f.find("shape"), offsets = f.find("data_offsets");
    if (dtype == f.end() || shape == f.end() || offsets == f.end() || f.size() != 3) {
      return Fail(name, "expected exactly the keys dtype, shape and data_offsets");
    }
    Entry e;
    e.name = name;
    if (dtype->second.kind_case() != Value::kStringValue || DtypeBytes(dtype->second.string_value()) == 0) {
      return Fail(name, "dtype must be F32, BF16 or F16 (gradsync reads floating-point weights only)");
    }
    e.dtype = dtype->second.string_value();
    if (shape->second.kind_case() != Value::kListValue) return Fail(name, "shape must be a list of integers");
    uint64_t numel = 1;
    for (const Value& d : shape->second.list_value().values()) {
      uint64_t dim = 0;
      if (!ToCount(d, &dim)) return Fail(name, "shape must be a list of non-negative integers");
      if (dim != 0 && numel > data_bytes_ / dim) return Fail(name, "shape holds more values than the file has bytes");
      numel *= dim;
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    const auto& o = offsets->second.list_value().values();
    if (offsets->second.kind_case() != Value::kListValue || o.size() != 2 || !ToCount(o[0], &e.begin) ||
        !ToCount(o[1], &e.end) || e.begin > e.end) {
      return Fail(name, "data_offsets must be [begin, end] with 0 <= begin <= end");
    }
    if (e.end > data_bytes_) {
      return Fail(name, absl::StrCat("data_offsets end at byte ", e.end, ", past the data's ", data_bytes_, " bytes"));
    }
    const uint64_t want = numel * DtypeBytes(e.dtype);
    if (e.end - e.begin != want) {
      return Fail(name,
                  absl::StrCat("data_offsets [", e.begin, ", ", e.end, ") hold ", e.end - e.begin, " bytes; shape [",
                               absl::StrJoin(e.shape, ", "), "] of ", e.dtype, " needs ", want));
    }
    return e;
  }

  // Sorted by offset, the entries must tile [0, data_bytes).
  absl::Status CheckTiling(std::vector<Entry>& entries) const {
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    uint64_t at = 0;
    for (const Entry& e : entries) {
      if (e.begin != at) {
        return Fail(e.name, absl::StrCat("data_offsets begin at byte ", e.begin, " where byte ", at,
                                         " was expected (tensors must be contiguous, without gaps or overlaps)"));
      }
      at = e.end;
    }
    if (at != data_bytes_) {
      return absl::DataLossError(
          absl::StrCat(source_, ": the tensors cover ", at, " bytes of data, the file holds ", data_bytes_));
    }
    return absl::OkStatus();
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  uint64_t data_bytes_;
};

absl::Status ParseMetadata(const Value& v, const std::string& source, std::map<std::string, std::string>* out) {
  if (v.kind_case() != Value::kStructValue) {
    return absl::DataLossError(absl::StrCat(source, ": __metadata__ must be an object of strings"));
  }
  for (const auto& [key, value] : v.struct_value().fields()) {
    if (value.kind_case() != Value::kStringValue) {
      return absl::DataLossError(absl::StrCat(source, ": __metadata__ \"", key, "\" must be a string"));
    }
    (*out)[key] = value.string_value();
  }
  return absl::OkStatus();
}

void Decode(const Entry& e, const char* data, NamedTensor* t) {
  const uint64_t bytes = e.end - e.begin;
  const char* p = data + e.begin;
  if (e.dtype == "F32") {
    t->values.resize(bytes / 4);
    if (bytes > 0) std::memcpy(t->values.data(), p, bytes);
    return;
  }
  t->values.resize(bytes / 2);
  for (size_t i = 0; i < t->values.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    t->values[i] = e.dtype == "BF16" ? Bf16ToFloat(h) : F16ToFloat(h);
  }
}

}  // namespace

absl::Status WriteSafetensors(const std::string& path, std::span<const NamedTensor> tensors,
                              const std::map<std::string, std::string>& metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    std::vector<std::string> pairs;
    for (const auto& [k, v] : metadata) pairs.push_back(absl::StrCat(Quote(k), ":", Quote(v)));
    absl::StrAppend(&header, Quote(kMetadataKey), ":{", absl::StrJoin(pairs, ","), "}");
  }
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    if (numel != static_cast<int64_t>(t.values.size()) || t.name == kMetadataKey || !names.insert(t.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor \"", t.name, "\" repeats, is reserved or has values that do not fit its shape"));
    }
    const uint64_t end = offset + 4 * t.values.size();
    absl::StrAppend(&header, header.size() > 1 ? "," : "", Quote(t.name), ":{\"dtype\":\"F32\",\"shape\":[",
                    absl::StrJoin(t.shape, ","), "],\"data_offsets\":[", offset, ",", end, "]}");
    offset = end;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  absl::StatusOr<AtomicFile> file = AtomicFile::Create(path);
  if (!file.ok()) return file.status();
  const uint64_t n = header.size();
  if (absl::Status s = file->Append(std::string_view(reinterpret_cast<const char*>(&n), sizeof(n))); !s.ok()) return s;
  if (absl::Status s = file->Append(header); !s.ok()) return s;
  for (const NamedTensor& t : tensors) {
    if (absl::Status s = file->Append(std::as_bytes(std::span(t.values))); !s.ok()) return s;
  }
  return file->Commit();
}

absl::StatusOr<SafetensorsFile> ParseSafetensors(std::string_view bytes, const std::string& source) {
  uint64_t n = 0;
  if (bytes.size() < sizeof(n)) {
    return absl::DataLossError(absl::StrCat(source, ": truncated: ", bytes.size(), " bytes, no header length"));
  }
  std::memcpy(&n, bytes.data(), sizeof(n));
  if (n > kMaxSafetensorsHeader || n > bytes.size() - sizeof(n)) {
    return absl::DataLossError(absl::StrCat(source, ": header of ", n, " bytes does not fit in the file's ",
                                            bytes.size(), " bytes (truncated, or not safetensors)"));
  }
  Struct header;
  const std::string json(bytes.substr(sizeof(n), n));
  if (absl::Status s = CheckJsonDepth(json, absl::StrCat(source, "'s header")); !s.ok()) {
    return absl::DataLossError(s.message());
  }
  if (!google::protobuf::util::JsonStringToMessage(json, &header).ok()) {
    return absl::DataLossError(absl::StrCat(source, ": the header is not a JSON object"));
  }
  const uint64_t data_bytes = bytes.size() - sizeof(n) - n;
  HeaderParser parser(source, data_bytes);
  SafetensorsFile out;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.fields()) {
    if (name == kMetadataKey) {
      if (absl::Status s = ParseMetadata(value, source, &out.metadata); !s.ok()) return s;
      continue;
    }
    absl::StatusOr<Entry> e = parser.ParseEntry(name, value);
    if (!e.ok()) return e.status();
    entries.push_back(*std::move(e));
  }
  if (absl::Status s = parser.CheckTiling(entries); !s.ok()) return s;
  const char* data = bytes.data() + sizeof(n) + n;
  for (const Entry& e : entries) {
    NamedTensor t{e.name, e.shape, {}};
    Decode(e, data, &t);
    out.tensors.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  return ParseSafetensors(*bytes, path);
}

}  // namespace gradsync::ckpt
