#include "gradsync/core/json_depth.h"
#include "gradsync/data/shards_info.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "data_file.h"
#include "data_writer.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace gradsync::data {
namespace {

constexpr int64_t kMaxInfoBytes = 1 << 16;

std::string InfoPath(const std::string& dir) { return (std::filesystem::path(dir) / kShardsInfoFile).string(); }

}  // namespace

absl::Status WriteShardsInfo(const std::string& dir, const ShardsInfo& info) {
  google::protobuf::Value root;
  auto& tokenizer =
      *(*root.mutable_struct_value()->mutable_fields())["tokenizer"].mutable_struct_value()->mutable_fields();
  tokenizer["kind"].set_string_value(info.tokenizer_kind);
  tokenizer["path"].set_string_value(info.tokenizer_path);
  tokenizer["vocabSize"].set_number_value(info.vocab_size);
  if (info.packed_seq_len > 0) {
    (*root.mutable_struct_value()->mutable_fields())["packedSeqLen"].set_number_value(info.packed_seq_len);
  }
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  if (!google::protobuf::util::MessageToJsonString(root, &json, options).ok()) {
    return absl::InternalError("cannot write the shards' description as JSON");
  }
  return internal::WriteDataFile(InfoPath(dir), {json});
}

absl::StatusOr<std::optional<ShardsInfo>> ReadShardsInfo(const std::string& dir) {
  const std::string path = InfoPath(dir);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  absl::StatusOr<std::string> text = ReadDataFile(path, kMaxInfoBytes);
  if (!text.ok()) return text.status();
  google::protobuf::Value root;
  const absl::Status invalid = absl::InvalidArgumentError(
      absl::StrCat(path, ": is not a shards description (want {\"tokenizer\": {\"kind\", \"path\", \"vocabSize\"}})"));
  if (!CheckJsonDepth(*text, path).ok() || !google::protobuf::util::JsonStringToMessage(*text, &root).ok() ||
      !root.has_struct_value()) {
    return invalid;
  }
  const auto& fields = root.struct_value().fields();
  const auto it = fields.find("tokenizer");
  if (it == fields.end() || !it->second.has_struct_value()) return invalid;
  const auto& t = it->second.struct_value().fields();
  const auto kind = t.find("kind"), tpath = t.find("path"), vocab = t.find("vocabSize");
  if (kind == t.end() || vocab == t.end() || !vocab->second.has_number_value() || vocab->second.number_value() < 1 ||
      vocab->second.number_value() > (1 << 30)) {
    return invalid;
  }
  int packed = 0;
  if (const auto p = fields.find("packedSeqLen"); p != fields.end()) {
    if (!p->second.has_number_value() || p->second.number_value() < 1 || p->second.number_value() > (1 << 24)) {
      return invalid;
    }
    packed = static_cast<int>(p->second.number_value());
  }
  return ShardsInfo{kind->second.string_value(), tpath == t.end() ? "" : tpath->second.string_value(),
                    static_cast<int>(vocab->second.number_value()), packed};
}

absl::Status CheckShardsFor(const std::string& shard_path, int model_vocab_size, int model_seq_len) {
  const std::string dir = std::filesystem::path(shard_path).parent_path().string();
  absl::StatusOr<std::optional<ShardsInfo>> info = ReadShardsInfo(dir.empty() ? "." : dir);
  if (!info.ok()) return info.status();
  if (!info->has_value()) return absl::OkStatus();
  if ((*info)->packed_seq_len > 0 && (*info)->packed_seq_len != model_seq_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        shard_path, ": its samples are packed for windows of ", (*info)->packed_seq_len, " tokens (",
        InfoPath(dir.empty() ? "." : dir), ") but the model's seqLen is ", model_seq_len,
        " (model.transformer.seqLen): its windows would cut samples apart"));
  }
  if ((*info)->vocab_size == model_vocab_size) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(shard_path, ": its shards were tokenized with ", (*info)->tokenizer_kind,
                   (*info)->tokenizer_path.empty() ? "" : absl::StrCat(" ", (*info)->tokenizer_path), " (vocabulary ",
                   (*info)->vocab_size, ", ", InfoPath(dir.empty() ? "." : dir), ") but the model's vocabulary is ",
                   model_vocab_size, " (model.transformer.vocabSize)"));
}

}  // namespace gradsync::data
