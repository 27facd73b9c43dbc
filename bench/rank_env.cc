#include "rank_env.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gradsync/rpc/server.h"

namespace gradsync::bench {

absl::StatusOr<RankEnv> ConnectRank(int rank, int ranks, const std::string& coordinator,
                                    const std::string& cluster_token, bool shared_memory) {
  RankEnv env;
  env.rank = rank;
  env.ranks = ranks;
  env.kv = NewBenchKv(coordinator, cluster_token, 1);
  comm::GlooOptions options;
  options.timeout = absl::Minutes(2);
  options.shared_memory = shared_memory;
  auto c = comm::ConnectGloo(env.kv.get(), rank, ranks, options);
  if (!c.ok()) return c.status();
  env.comm = *std::move(c);
  return env;
}

std::unique_ptr<comm::KvClient> NewBenchKv(const std::string& coordinator, const std::string& cluster_token,
                                           int generation) {
  auto channel = rpc::MakeChannel(coordinator, {.bearer_token = cluster_token});
  return comm::NewCoordinatorKvClient(v1::CoordinatorService::NewStub(channel), "bench", generation);
}

absl::StatusOr<int64_t> ParseSize(const std::string& text) {
  std::string t = absl::AsciiStrToUpper(text);
  int64_t mult = 1;
  if (!t.empty() && (t.back() == 'K' || t.back() == 'M' || t.back() == 'G')) {
    mult = t.back() == 'K' ? 1 << 10 : t.back() == 'M' ? 1 << 20 : int64_t{1} << 30;
    t.pop_back();
  }
  int64_t v = 0;
  if (!absl::SimpleAtoi(t, &v) || v < 0) {
    return absl::InvalidArgumentError(absl::StrCat("size: expected bytes like 64, 64K, 8M or 1G, got \"", text, "\""));
  }
  return v * mult;
}

std::string FormatBytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) return absl::StrFormat("%.0fG", bytes / 1073741824.0);
  if (bytes >= (1 << 20)) return absl::StrFormat("%.0fM", bytes / 1048576.0);
  if (bytes >= (1 << 10)) return absl::StrFormat("%.0fK", bytes / 1024.0);
  return absl::StrCat(bytes);
}

}  // namespace gradsync::bench
