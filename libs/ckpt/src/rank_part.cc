// WriteRankPart / ReadRankPart: one rank's checkpoint file (format in checkpoint.h). Both stream
// the tensors, so a part is never held twice in memory.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "file_io.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/ckpt/checksum.h"

namespace gradsync::ckpt {
namespace {

constexpr char kMagic[8] = {'G', 'S', 'C', 'K', 'P', 'A', 'R', 'T'};
constexpr uint32_t kVersion = 3;
// Sharded parts with an FNV-1a trailer.
constexpr uint32_t kFnvVersion = 2;
// Whole parts: no shard fields, FNV-1a trailer.
constexpr uint32_t kWholeVersion = 1;
// Magic, version and the recorded file size.
constexpr size_t kHeaderBytes = sizeof(kMagic) + sizeof(uint32_t) + sizeof(uint64_t);
constexpr size_t kTrailerBytes = sizeof(uint64_t);
constexpr size_t kReadPiece = 1 << 20;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void PutString(std::string* out, const std::string& s) {
  Put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// The algorithm of a part's trailer: its version says which.
constexpr ChecksumAlgorithm TrailerChecksum(uint32_t version) {
  return version >= 3 ? ChecksumAlgorithm::kXxh3_64 : ChecksumAlgorithm::kFnv1a64;
}
static_assert(TrailerChecksum(kVersion) == kWriteChecksum);

std::span<const std::byte> Bytes(const std::vector<float>& v) { return std::as_bytes(std::span(v)); }

// Everything between the header and the tensors.
std::string EncodeMeta(const RankState& s) {
  std::string out;
  PutString(&out, s.job_id);
  Put<int32_t>(&out, s.generation);
  Put<int32_t>(&out, s.rank);
  Put<int32_t>(&out, s.world_size);
  Put<int64_t>(&out, s.step);
  Put<int32_t>(&out, s.epoch);
  Put<int64_t>(&out, s.cursor);
  Put<uint64_t>(&out, s.seed);
  Put<int64_t>(&out, s.adam_step);
  PutString(&out, s.model.SerializeAsString());
  Put<uint32_t>(&out, static_cast<uint32_t>(s.layout.size()));
  Put<uint64_t>(&out, static_cast<uint64_t>(s.layout.total_numel()));
  Put<uint64_t>(&out, s.layout.Hash());
  for (const nn::ParamInfo& p : s.layout.params()) {
    PutString(&out, p.name);
    Put<uint8_t>(&out, p.weight_decay ? 1 : 0);
    Put<uint32_t>(&out, static_cast<uint32_t>(p.shape.size()));
    for (int64_t d : p.shape) Put<int64_t>(&out, d);
  }
  Put<uint64_t>(&out, static_cast<uint64_t>(s.shard_begin));
  Put<uint64_t>(&out, static_cast<uint64_t>(s.params.size()));
  Put<uint8_t>(&out, s.adam_m.empty() ? 0 : 1);
  return out;
}

absl::Status CheckShapes(const std::string& dir, const RankState& s) {
  const int64_t total = s.layout.total_numel();
  if (s.shard_begin < 0 || s.shard_begin > total || static_cast<int64_t>(s.params.size()) > total - s.shard_begin) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint part for ", dir, ": ", s.params.size(),
                                                   " parameter values from element ", s.shard_begin,
                                                   " do not fit a layout of ", total));
  }
  if (s.adam_m.size() != s.adam_v.size() || (!s.adam_m.empty() && s.adam_m.size() != s.params.size())) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint part for ", dir, ": optimizer moments of ",
                                                   s.adam_m.size(), " and ", s.adam_v.size(), " values for ",
                                                   s.params.size(), " parameter values"));
  }
  if (s.world_size < 1 || s.rank < 0 || s.rank >= s.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint part for ", dir, ": rank ", s.rank, " outside a world of ", s.world_size));
  }
  return absl::OkStatus();
}

// Sequential reads of a part's content (everything before the trailer), hashing what it reads
// with the trailer's algorithm and, when the manifest's digest names another, with that one too.
// The first failure sticks: later reads do nothing and status() reports it.
class PartReader {
 public:
  PartReader(std::FILE* f, const std::string& path, uint64_t content_bytes, ChecksumAlgorithm trailer,
             ChecksumAlgorithm file)
      : f_(f), path_(path), limit_(content_bytes), content_(trailer) {
    if (file != trailer) file_.emplace(file);
  }

  bool Read(void* dst, uint64_t n, const char* what) {
    if (!status_.ok()) return false;
    if (n > limit_ - pos_) return Fail(absl::StrCat(what, " at byte ", pos_, " runs past the end of the data"));
    // 1 MiB at a time, each piece hashed while the read has it in the cache.
    auto* out = static_cast<char*>(dst);
    for (uint64_t done = 0; done < n;) {
      const size_t piece = static_cast<size_t>(std::min<uint64_t>(n - done, kReadPiece));
      if (std::fread(out + done, 1, piece, f_) != piece) return Fail(absl::StrCat("cannot read ", what));
      Hash(std::as_bytes(std::span(out + done, piece)));
      done += piece;
    }
    pos_ += n;
    return true;
  }
  template <typename T>
  bool Get(T* v, const char* what) {
    return Read(v, sizeof(T), what);
  }
  bool GetString(std::string* s, const char* what) {
    uint32_t len = 0;
    if (!Get(&len, what)) return false;
    if (len > limit_ - pos_) return Read(nullptr, len, what);
    s->resize(len);
    return Read(s->data(), len, what);
  }
  // `n` elements; the size is checked before anything is allocated.
  template <typename T>
  bool GetArray(std::vector<T>* v, uint64_t n, const char* what) {
    if (n > (limit_ - pos_) / sizeof(T)) return Read(nullptr, limit_ - pos_ + 1, what);
    v->resize(n);
    return Read(v->data(), n * sizeof(T), what);
  }
  bool Fail(const std::string& problem) {
    if (status_.ok()) status_ = absl::DataLossError(absl::StrCat(path_, ": ", problem));
    return false;
  }
  const absl::Status& status() const { return status_; }
  // The most fp32 values the content could hold.
  bool at_end() const { return pos_ == limit_; }

  void Hash(std::span<const std::byte> bytes) {
    content_.Update(bytes);
    if (file_) file_->Update(bytes);
  }
  // Hashes the rest of the content, so that corruption can be told apart from a structural error.
  void Drain() {
    char buf[1 << 16];
    while (pos_ < limit_) {
      const size_t n = std::fread(buf, 1, std::min<uint64_t>(sizeof(buf), limit_ - pos_), f_);
      if (n == 0) return;
      Hash(std::as_bytes(std::span(buf, n)));
      pos_ += n;
    }
  }
  // DATA_LOSS unless the trailer holds the hash of the whole content; sets the whole-file digest.
  absl::Status CheckTrailer(std::string* file_digest) {
    uint64_t stored = 0;
    if (pos_ != limit_ || std::fread(&stored, 1, sizeof(stored), f_) != sizeof(stored)) {
      return absl::DataLossError(absl::StrCat(path_, ": cannot read the checksum"));
    }
    const uint64_t computed = content_.Value();
    if (stored != computed) {
      return absl::DataLossError(
          absl::StrFormat("%s: checksum mismatch (stored %016x, computed %016x by %s): corrupt file", path_, stored,
                          computed, ChecksumName(content_.algorithm())));
    }
    Hash(std::as_bytes(std::span(&stored, 1)));
    *file_digest = file_ ? file_->Digest() : content_.Digest();
    return absl::OkStatus();
  }

 private:
  std::FILE* f_;
  const std::string& path_;
  const uint64_t limit_;
  uint64_t pos_ = 0;
  StreamingChecksum content_;
  std::optional<StreamingChecksum> file_;
  absl::Status status_;
};

// The shard fields (version 2), or a whole part's moment count (version 1): the shard and
// whether it carries moments.
void DecodeShard(PartReader& r, uint32_t version, uint64_t total, uint64_t* begin, uint64_t* count, bool* moments) {
  if (version == kWholeVersion) {
    uint64_t n = 0;
    r.Get(&n, "optimizer moment count");
    if (r.status().ok() && n != 0 && n != total)
      r.Fail(absl::StrCat(n, " optimizer moment values for ", total, " parameters"));
    *begin = 0;
    *count = total;
    *moments = n != 0;
    return;
  }
  uint8_t with_moments = 0;
  r.Get(begin, "shard begin");
  r.Get(count, "shard elements");
  r.Get(&with_moments, "optimizer state flag");
  if (r.status().ok() && (*begin > total || *count > total - *begin)) {
    r.Fail(absl::StrCat("a shard of ", *count, " elements from ", *begin, " lies outside the ", total, " parameters"));
  }
  if (r.status().ok() && with_moments > 1) r.Fail("unreadable optimizer state flag");
  *moments = with_moments == 1;
}

absl::Status DecodeBody(PartReader& r, uint32_t version, RankState* s) {
  std::string model;
  uint32_t count = 0;
  uint64_t total = 0, hash = 0;
  r.GetString(&s->job_id, "job id");
  r.Get(&s->generation, "generation");
  r.Get(&s->rank, "rank");
  r.Get(&s->world_size, "world size");
  r.Get(&s->step, "step");
  r.Get(&s->epoch, "epoch");
  r.Get(&s->cursor, "cursor");
  r.Get(&s->seed, "seed");
  r.Get(&s->adam_step, "adam step");
  r.GetString(&model, "model spec");
  r.Get(&count, "parameter count");
  r.Get(&total, "element count");
  r.Get(&hash, "layout hash");
  if (!r.status().ok()) return r.status();
  if (!s->model.ParseFromString(model)) r.Fail("unreadable model spec");
  for (uint32_t i = 0; i < count && r.status().ok(); ++i) {
    std::string name;
    uint8_t decay = 0;
    uint32_t rank = 0;
    std::vector<int64_t> shape;
    r.GetString(&name, "parameter name");
    r.Get(&decay, "weight decay flag");
    r.Get(&rank, "tensor rank");
    if (!r.GetArray(&shape, rank, "shape")) break;
    // Bounded by the element count the header records, so a corrupt dimension cannot overflow the
    // count (a corrupt total fails the layout check below). Not by what this file holds: a shard of
    // four ranks holds less than one large tensor of the layout it records.
    const auto bound = static_cast<int64_t>(std::min<uint64_t>(total, std::numeric_limits<int64_t>::max()));
    int64_t numel = 1;
    for (int64_t d : shape) {
      if (d < 0 || (d > 0 && numel > bound / d)) {
        r.Fail(absl::StrCat("parameter \"", name, "\" has an impossible shape"));
        break;
      }
      numel *= d;
    }
    if (r.status().ok()) s->layout.Add(std::move(name), std::move(shape), decay != 0);
  }
  if (!r.status().ok()) return r.status();
  if (static_cast<uint64_t>(s->layout.total_numel()) != total || s->layout.Hash() != hash) {
    r.Fail(absl::StrCat("the parameter shapes do not match the recorded layout (", s->layout.total_numel(),
                        " elements, header says ", total, ")"));
  }
  uint64_t begin = 0, shard = 0;
  bool moments = false;
  DecodeShard(r, version, total, &begin, &shard, &moments);
  s->shard_begin = static_cast<int64_t>(begin);
  r.GetArray(&s->params, shard, "parameters");
  r.GetArray(&s->adam_m, moments ? shard : 0, "first moments");
  r.GetArray(&s->adam_v, moments ? shard : 0, "second moments");
  if (r.status().ok() && !r.at_end()) r.Fail("unexpected bytes before the checksum");
  return r.status();
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Reads and checks a part; `file_digest` receives the whole file's digest by `file_algorithm`, or
// by the trailer's algorithm when none is given.
absl::StatusOr<RankState> ReadPartFile(const std::string& path, std::optional<ChecksumAlgorithm> file_algorithm,
                                       std::string* file_digest, Links links) {
  absl::StatusOr<int> fd = OpenRegularFile(path, links);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<std::FILE, FileCloser> f(::fdopen(*fd, "rb"));
  if (f == nullptr) {
    ::close(*fd);
    return ErrnoStatus("cannot open checkpoint part", path);
  }
  struct stat st {};
  if (::fstat(::fileno(f.get()), &st) != 0) return ErrnoStatus("cannot stat", path);
  const auto size = static_cast<uint64_t>(st.st_size);

  char header[kHeaderBytes] = {};
  const size_t got = std::fread(header, 1, kHeaderBytes, f.get());
  if (std::memcmp(header, kMagic, std::min(got, sizeof(kMagic))) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": not a gradsync checkpoint part (bad magic)"));
  }
  if (got < kHeaderBytes || size < kHeaderBytes + kTrailerBytes) {
    return absl::DataLossError(absl::StrCat(path, ": truncated (", size, " bytes)"));
  }
  uint32_t version = 0;
  uint64_t recorded = 0;
  std::memcpy(&version, header + sizeof(kMagic), sizeof(version));
  std::memcpy(&recorded, header + sizeof(kMagic) + sizeof(version), sizeof(recorded));
  if (version != kVersion && version != kFnvVersion && version != kWholeVersion) {
    return absl::DataLossError(absl::StrCat(path, ": unsupported checkpoint part version ", version,
                                            " (this build reads ", kWholeVersion, " to ", kVersion, ")"));
  }
  if (size < recorded) {
    return absl::DataLossError(absl::StrCat(path, ": truncated (", size, " of ", recorded, " bytes)"));
  }
  if (size > recorded) {
    return absl::DataLossError(absl::StrCat(path, ": ", size, " bytes where the header says ", recorded,
                                            " (corrupt header or appended data)"));
  }

  const ChecksumAlgorithm trailer = TrailerChecksum(version);
  PartReader r(f.get(), path, size - kHeaderBytes - kTrailerBytes, trailer, file_algorithm.value_or(trailer));
  r.Hash(std::as_bytes(std::span(header)));
  RankState state;
  if (absl::Status s = DecodeBody(r, version, &state); !s.ok()) {
    // Corruption explains most structural errors; say so when the checksum agrees.
    r.Drain();
    absl::Status checksum = r.CheckTrailer(file_digest);
    return checksum.ok() ? s : checksum;
  }
  if (absl::Status s = r.CheckTrailer(file_digest); !s.ok()) return s;
  return state;
}

}  // namespace

absl::StatusOr<v1::CheckpointPart> WriteRankPart(const std::string& dir, const RankState& state) {
  if (dir.empty()) return absl::InvalidArgumentError("checkpoint part: empty directory");
  if (absl::Status s = CheckShapes(dir, state); !s.ok()) return s;
  const std::string file = PartFileName(state.rank);
  const std::string path = (std::filesystem::path(dir) / file).string();

  const std::string meta = EncodeMeta(state);
  const uint64_t floats = state.params.size() + 2 * state.adam_m.size();
  const uint64_t bytes = kHeaderBytes + meta.size() + floats * sizeof(float) + kTrailerBytes;
  std::string header(kMagic, sizeof(kMagic));
  Put<uint32_t>(&header, kVersion);
  Put<uint64_t>(&header, bytes);

  absl::StatusOr<AtomicFile> out = AtomicFile::Create(path);
  if (!out.ok()) return out.status();
  StreamingChecksum sum(kWriteChecksum);
  for (std::span<const std::byte> piece : {std::as_bytes(std::span(header)), std::as_bytes(std::span(meta)),
                                           Bytes(state.params), Bytes(state.adam_m), Bytes(state.adam_v)}) {
    if (absl::Status s = AppendHashed(*out, piece, sum); !s.ok()) return s;
  }
  const uint64_t trailer = sum.Value();
  if (absl::Status s = AppendHashed(*out, std::as_bytes(std::span(&trailer, 1)), sum); !s.ok()) return s;
  if (absl::Status s = out->Commit(); !s.ok()) return s;

  v1::CheckpointPart part;
  part.set_rank(state.rank);
  part.set_file(file);
  part.set_bytes(static_cast<int64_t>(bytes));
  part.set_checksum(sum.Digest());
  part.set_shard_begin(state.shard_begin);
  part.set_shard_elements(static_cast<int64_t>(state.params.size()));
  return part;
}

absl::StatusOr<RankState> ReadRankPart(const std::string& path) {
  std::string digest;
  return ReadPartFile(path, std::nullopt, &digest, Links::kFollow);
}

absl::StatusOr<RankState> ReadRankPart(const std::string& dir, const v1::CheckpointPart& part) {
  const std::string path = (std::filesystem::path(dir) / part.file()).string();
  if (part.file().empty() || part.file().find('/') != std::string::npos || part.file() == "..") {
    return absl::DataLossError(
        absl::StrCat(dir, ": the manifest names \"", part.file(), "\" for rank ", part.rank(), ", not a file name"));
  }
  absl::StatusOr<ChecksumAlgorithm> algorithm = DigestAlgorithm(part.checksum(), path);
  if (!algorithm.ok()) return algorithm.status();
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec == std::errc::no_such_file_or_directory) {
    return absl::NotFoundError(absl::StrCat(path, ": missing (listed in the manifest for rank ", part.rank(), ")"));
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot stat ", path, ": ", ec.message()));
  if (static_cast<int64_t>(size) != part.bytes()) {
    return absl::DataLossError(absl::StrCat(path, ": ", size, " bytes, the manifest says ", part.bytes()));
  }
  std::string digest;
  // A part is a file the job wrote in its checkpoint directory: a link there leads elsewhere.
  absl::StatusOr<RankState> state = ReadPartFile(path, *algorithm, &digest, Links::kRefuse);
  if (!state.ok()) return state.status();
  if (digest != part.checksum()) {
    return absl::DataLossError(
        absl::StrCat(path, ": checksum ", digest, " differs from the manifest's ", part.checksum()));
  }
  if (state->rank != part.rank()) {
    return absl::DataLossError(
        absl::StrCat(path, ": holds rank ", state->rank, ", the manifest lists it for rank ", part.rank()));
  }
  return state;
}

}  // namespace gradsync::ckpt
