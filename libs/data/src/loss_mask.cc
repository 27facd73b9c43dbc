#include "gradsync/data/loss_mask.h"

#include <cerrno>
#include <cstring>
#include <limits>

#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "data_writer.h"
#include "gradsync/kernels/cpu/softmax_xent.h"
#include "read_only_file.h"

namespace gradsync::data {
namespace {

constexpr int kHeaderInts = 256;
constexpr int64_t kHeaderBytes = kHeaderInts * sizeof(int32_t);

int64_t BodyBytes(int64_t tokens) { return (tokens + 7) / 8; }

}  // namespace

std::string LossMaskPath(const std::string& shard_path) {
  if (absl::EndsWith(shard_path, ".bin")) return absl::StrCat(shard_path.substr(0, shard_path.size() - 4), ".mask");
  return absl::StrCat(shard_path, ".mask");
}

absl::Status WriteLossMask(const std::string& path, std::span<const uint8_t> mask) {
  if (mask.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", mask.size(), " tokens do not fit a mask's count"));
  }
  std::vector<int32_t> header(kHeaderInts, 0);
  header[0] = kLossMaskMagic;
  header[1] = kLossMaskVersion;
  header[2] = static_cast<int32_t>(mask.size());
  std::vector<uint8_t> bits(static_cast<size_t>(BodyBytes(static_cast<int64_t>(mask.size()))), 0);
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] != 0) bits[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
  }
  return internal::WriteDataFile(
      path, {std::string_view(reinterpret_cast<const char*>(header.data()), header.size() * sizeof(int32_t)),
             std::string_view(reinterpret_cast<const char*>(bits.data()), bits.size())});
}

absl::StatusOr<MaskReader> MaskReader::Open(const std::string& path, int64_t tokens) {
  int64_t bytes = 0;
  absl::StatusOr<std::shared_ptr<const internal::ReadOnlyFile>> file = internal::ReadOnlyFile::Open(path, &bytes);
  if (!file.ok()) return file.status();
  MaskReader reader;
  reader.path_ = path;
  reader.file_ = *std::move(file);
  reader.count_ = tokens;
  int32_t header[3] = {0, 0, 0};
  if (bytes < kHeaderBytes || !reader.file_->ReadAt(header, sizeof(header), 0)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": shorter than a loss mask's header of ", kHeaderBytes, " bytes"));
  }
  if (header[0] != kLossMaskMagic || header[1] != kLossMaskVersion) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a loss mask (its header lacks magic ", kLossMaskMagic,
                                                   " version ", kLossMaskVersion, ")"));
  }
  if (header[2] != tokens) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": a mask of another number of tokens than its shard's"));
  }
  if (bytes != kHeaderBytes + BodyBytes(tokens)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": its size is not that of a mask of its shard's tokens"));
  }
  return reader;
}

absl::Status MaskReader::Read(int64_t first, int64_t count, uint8_t* out) const {
  if (first < 0 || count < 0 || first + count > count_) {
    return absl::OutOfRangeError(absl::StrCat(path_, ": bits ", first, "..", first + count, " are outside its ", count_));
  }
  if (count == 0) return absl::OkStatus();
  const int64_t first_byte = first / 8, last_byte = (first + count - 1) / 8;
  std::vector<uint8_t> bytes(static_cast<size_t>(last_byte - first_byte + 1));
  if (!file_->ReadAt(bytes.data(), bytes.size(), kHeaderBytes + first_byte)) {
    return absl::DataLossError(absl::StrCat(path_, ": cannot read its bits ", first, "..", first + count,
                                            " (was the file cut or replaced while training?)"));
  }
  for (int64_t i = 0; i < count; ++i) {
    const int64_t bit = first + i;
    out[i] = (bytes[static_cast<size_t>(bit / 8 - first_byte)] >> (bit % 8)) & 1u;
  }
  return absl::OkStatus();
}

absl::Status MaskReader::MaskTargets(int64_t first, int64_t count, int32_t* targets) const {
  std::vector<uint8_t> bits(static_cast<size_t>(count));
  if (absl::Status s = Read(first, count, bits.data()); !s.ok()) return s;
  for (int64_t i = 0; i < count; ++i) {
    if (bits[static_cast<size_t>(i)] == 0) targets[i] = kernels::cpu::kIgnoreIndex;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<MaskReader>> OpenMaskOf(const std::string& shard_path, int64_t tokens) {
  const std::string path = LossMaskPath(shard_path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  absl::StatusOr<MaskReader> opened = MaskReader::Open(path, tokens);
  if (!opened.ok()) return opened.status();
  return std::optional<MaskReader>(*std::move(opened));
}

}  // namespace gradsync::data
