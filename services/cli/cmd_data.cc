// gradsync data prepare: text files to llm.c token shards (byte tokens), so a job can read them
// with data.shards instead of tokenising text at every start. Needs no cluster.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "args.h"
#include "commands.h"
#include "gradsync/data/token_shard.h"

namespace gradsync::cli {
namespace {

constexpr char kUsage[] =
    "usage: gradsync data prepare TEXT... -o DIR [--val-fraction F] [--shard-tokens N]\n"
    "  Byte-tokenises the TEXT files (paths or globs, in order, concatenated) into llm.c shards\n"
    "  DIR/train_000000.bin ... and, with F > 0, DIR/val_000000.bin ... holding the last F of the\n"
    "  tokens. N tokens at most per shard (default 100000000).\n";
constexpr int kDefaultShardTokens = 100'000'000;

int Fail(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return 2;
}

absl::StatusOr<double> ValFraction(const Args& args) {
  if (!args.Has("val-fraction")) return 0.0;
  double f = 0;
  const std::string text = args.Get("val-fraction");
  if (!absl::SimpleAtod(text, &f) || !(f >= 0 && f < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--val-fraction: expected a number at least 0 and less than 1, got \"", text, "\""));
  }
  return f;
}

// Shards already in `dir` would mix with the new ones under a glob such as train_*.bin.
absl::Status CheckNoShards(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if ((name.starts_with("train_") || name.starts_with("val_")) && name.ends_with(".bin")) {
      return absl::AlreadyExistsError(absl::StrCat(entry.path().string(),
                                                   ": the output directory already holds shards; remove them or "
                                                   "choose another directory"));
    }
  }
  if (ec) return absl::InvalidArgumentError(absl::StrCat(dir, ": cannot list: ", ec.message()));
  return absl::OkStatus();
}

void PrintShards(const std::vector<data::ShardFile>& files) {
  for (const data::ShardFile& f : files) {
    std::printf("  %-40s %12lld tokens\n", f.path.c_str(), static_cast<long long>(f.tokens));
  }
}

int Prepare(const Args& args) {
  const std::vector<std::string> patterns(args.positional.begin() + 1, args.positional.end());
  const std::string dir = args.Get("output");
  if (patterns.empty() || dir.empty()) return Fail(kUsage);
  absl::StatusOr<double> val_fraction = ValFraction(args);
  if (!val_fraction.ok()) return Fail(std::string(val_fraction.status().message()));
  absl::StatusOr<int> shard_tokens = args.GetInt("shard-tokens", kDefaultShardTokens, 1, 1 << 30);
  if (!shard_tokens.ok()) return Fail(std::string(shard_tokens.status().message()));

  absl::StatusOr<std::vector<std::string>> paths = data::ExpandPaths(patterns);
  if (!paths.ok()) return Fail(std::string(paths.status().message()));
  std::vector<uint16_t> tokens;
  for (const std::string& path : *paths) {
    absl::StatusOr<std::vector<uint16_t>> file = data::ReadTextTokens(path);
    if (!file.ok()) return Fail(std::string(file.status().message()));
    tokens.insert(tokens.end(), file->begin(), file->end());
  }
  const auto val_tokens = static_cast<size_t>(std::floor(*val_fraction * static_cast<double>(tokens.size())));
  if (*val_fraction > 0 && val_tokens == 0) {
    return Fail(absl::StrFormat("--val-fraction: %g of %d tokens is not a single token", *val_fraction, tokens.size()));
  }

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(absl::StrCat(dir, ": cannot create the directory: ", ec.message()));
  if (absl::Status s = CheckNoShards(dir); !s.ok()) return Fail(std::string(s.message()));

  const std::span<const uint16_t> all(tokens);
  auto train = data::WriteShards(dir, "train", all.first(all.size() - val_tokens), *shard_tokens);
  if (!train.ok()) return Fail(std::string(train.status().message()));
  std::vector<data::ShardFile> val;
  if (val_tokens > 0) {
    auto written = data::WriteShards(dir, "val", all.last(val_tokens), *shard_tokens);
    if (!written.ok()) return Fail(std::string(written.status().message()));
    val = *std::move(written);
  }
  std::printf("read %zu file(s), %zu bytes = %zu tokens (one per byte, vocabulary 256)\n", paths->size(), tokens.size(),
              tokens.size());
  std::printf("wrote %zu train shard(s), %zu tokens:\n", train->size(), tokens.size() - val_tokens);
  PrintShards(*train);
  if (!val.empty()) {
    std::printf("wrote %zu val shard(s), %zu tokens:\n", val.size(), val_tokens);
    PrintShards(val);
  }
  std::printf("train on them with: data: {shards: {paths: [\"%s/train_*.bin\"]}}\n", dir.c_str());
  return 0;
}

}  // namespace

int DataCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseArgs("data", argv, {{"output", true, 'o'}, {"val-fraction"}, {"shard-tokens"}});
  if (!args.ok()) return Fail(absl::StrCat(args.status().message(), "\n", kUsage));
  if (args->positional.empty() || args->positional[0] != "prepare") return Fail(kUsage);
  return Prepare(*args);
}

}  // namespace gradsync::cli
