#include "gradsync/ckpt/weights_file.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "file_io.h"
#include "gradsync/ckpt/checksum.h"

namespace gradsync::ckpt {
namespace {

constexpr char kMagic[8] = {'G', 'S', 'W', 'E', 'I', 'G', 'H', 'T'};
constexpr uint32_t kVersion = 3;
// Version 2: the same layout with an FNV-1a trailer.
constexpr uint32_t kFnvVersion = 2;
constexpr size_t kHeaderBytes = sizeof(kMagic) + sizeof(uint32_t);
constexpr size_t kTrailerBytes = sizeof(uint64_t);

// The algorithm of a file's trailer: its version says which.
constexpr ChecksumAlgorithm TrailerChecksum(uint32_t version) {
  return version >= 3 ? ChecksumAlgorithm::kXxh3_64 : ChecksumAlgorithm::kFnv1a64;
}
static_assert(TrailerChecksum(kVersion) == kWriteChecksum);

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

class Reader {
 public:
  Reader(const std::string& data, const std::string& path) : data_(data), path_(path) {}

  template <typename T>
  absl::Status Get(T* v, const char* what) {
    if (pos_ + sizeof(T) > data_.size()) return Truncated(what);
    std::memcpy(v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return absl::OkStatus();
  }
  absl::Status Bytes(size_t n, std::string* out, const char* what) {
    if (n > data_.size() - pos_) return Truncated(what);
    out->assign(data_.data() + pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }
  absl::Status Truncated(const char* what) const {
    return absl::DataLossError(absl::StrCat(path_, ": truncated while reading ", what, " at byte ", pos_));
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  const std::string& data_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

absl::Status SaveWeights(const std::string& path, const v1::ModelSpec& model, const nn::ParamLayout& layout,
                         std::span<const float> values) {
  if (static_cast<int64_t>(values.size()) != layout.total_numel()) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights for ", path, ": ", values.size(), " values for a layout of ", layout.total_numel()));
  }
  std::string buf(kMagic, sizeof(kMagic));
  Put<uint32_t>(&buf, kVersion);
  Put<uint32_t>(&buf, static_cast<uint32_t>(layout.size()));
  Put<uint64_t>(&buf, static_cast<uint64_t>(layout.total_numel()));
  Put<uint64_t>(&buf, layout.Hash());
  const std::string model_bytes = model.SerializeAsString();
  Put<uint32_t>(&buf, static_cast<uint32_t>(model_bytes.size()));
  buf.append(model_bytes);
  for (const nn::ParamInfo& p : layout.params()) {
    Put<uint32_t>(&buf, static_cast<uint32_t>(p.name.size()));
    buf.append(p.name);
    Put<uint32_t>(&buf, static_cast<uint32_t>(p.shape.size()));
    for (int64_t d : p.shape) Put<int64_t>(&buf, d);
  }
  // The values go from `values` to the file, hashed on the way: never copied whole.
  absl::StatusOr<AtomicFile> out = AtomicFile::Create(path);
  if (!out.ok()) return out.status();
  StreamingChecksum sum(kWriteChecksum);
  if (absl::Status s = AppendHashed(*out, std::as_bytes(std::span(buf)), sum); !s.ok()) return s;
  if (absl::Status s = AppendHashed(*out, std::as_bytes(values), sum); !s.ok()) return s;
  const uint64_t trailer = sum.Value();
  if (absl::Status s = out->Append(std::as_bytes(std::span(&trailer, 1))); !s.ok()) return s;
  return out->Commit();
}

absl::StatusOr<WeightsFile> LoadWeights(const std::string& path) {
  absl::StatusOr<std::string> read = ReadWholeFile(path);
  if (!read.ok()) return read.status();
  const std::string& data = *read;
  if (data.size() < sizeof(kMagic) || std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": not a gradsync weights file (bad magic)"));
  }
  if (data.size() < kHeaderBytes + kTrailerBytes) {
    return absl::DataLossError(absl::StrCat(path, ": truncated"));
  }
  uint32_t file_version = 0;
  std::memcpy(&file_version, data.data() + sizeof(kMagic), sizeof(file_version));
  if (file_version != kVersion && file_version != kFnvVersion) {
    return absl::DataLossError(absl::StrCat(path, ": unsupported version ", file_version, " (this build reads ",
                                            kFnvVersion, " and ", kVersion, ")"));
  }
  uint64_t stored = 0;
  std::memcpy(&stored, data.data() + data.size() - sizeof(stored), sizeof(stored));
  StreamingChecksum sum(TrailerChecksum(file_version));
  sum.Update(std::as_bytes(std::span(data.data(), data.size() - sizeof(stored))));
  if (sum.Value() != stored) {
    return absl::DataLossError(
        absl::StrFormat("%s: checksum mismatch (stored %016x, computed %016x by %s): corrupt or truncated", path,
                        stored, sum.Value(), ChecksumName(sum.algorithm())));
  }
  Reader r(data, path);
  std::string header;  // magic and version, checked above
  uint32_t count = 0;
  uint64_t total = 0, hash = 0;
  if (auto s = r.Bytes(kHeaderBytes, &header, "header"); !s.ok()) return s;
  if (auto s = r.Get(&count, "parameter count"); !s.ok()) return s;
  if (auto s = r.Get(&total, "element count"); !s.ok()) return s;
  if (auto s = r.Get(&hash, "layout hash"); !s.ok()) return s;
  WeightsFile out;
  uint32_t model_len = 0;
  std::string model_bytes;
  if (auto s = r.Get(&model_len, "model length"); !s.ok()) return s;
  if (auto s = r.Bytes(model_len, &model_bytes, "model"); !s.ok()) return s;
  if (!out.model.ParseFromString(model_bytes))
    return absl::DataLossError(absl::StrCat(path, ": unreadable model spec"));
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t len = 0, rank = 0;
    std::string name;
    if (auto s = r.Get(&len, "name length"); !s.ok()) return s;
    if (auto s = r.Bytes(len, &name, "name"); !s.ok()) return s;
    if (auto s = r.Get(&rank, "rank"); !s.ok()) return s;
    // Sizes are checked against the bytes left before anything is allocated or multiplied: every
    // parameter's values are in the file, so all of them together fit in it.
    if (rank > r.remaining() / sizeof(int64_t)) return r.Truncated("shape");
    std::vector<int64_t> shape(rank);
    const int64_t room = static_cast<int64_t>(data.size() / sizeof(float)) - out.layout.total_numel();
    int64_t numel = 1;
    for (auto& d : shape) {
      if (auto s = r.Get(&d, "shape"); !s.ok()) return s;
      if (d < 0 || (d > 0 && numel > room / d)) {
        return absl::DataLossError(absl::StrCat(path, ": parameter ", i, " has an impossible shape"));
      }
      numel *= d;
    }
    out.layout.Add(std::move(name), std::move(shape), true);
  }
  if (static_cast<uint64_t>(out.layout.total_numel()) != total) {
    return absl::DataLossError(
        absl::StrCat(path, ": shapes add up to ", out.layout.total_numel(), " elements, header says ", total));
  }
  if (total > r.remaining() / sizeof(float)) return r.Truncated("values");
  std::string raw;
  if (auto s = r.Bytes(total * sizeof(float), &raw, "values"); !s.ok()) return s;
  out.values.resize(total);
  if (total > 0) std::memcpy(out.values.data(), raw.data(), raw.size());  // data() may be null when empty
  return out;
}

}  // namespace gradsync::ckpt
