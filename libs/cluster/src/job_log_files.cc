#include "gradsync/cluster/job_log_files.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gradsync::cluster {
namespace {

namespace fs = std::filesystem;

// The time field of a line ("I 2026-11-28T15:04:05.123Z r1 ..."): fixed width, so its text order
// is time order.
absl::string_view TimeOf(const std::string& line) {
  if (line.size() < 26) return "";
  return absl::string_view(line).substr(2, 24);
}

// The rank of "rank-<r>.log"; nullopt for any other name.
std::optional<int> RankOfFile(const std::string& name) {
  absl::string_view n = name;
  int rank = 0;
  if (!absl::ConsumePrefix(&n, "rank-") || !absl::ConsumeSuffix(&n, ".log") || !absl::SimpleAtoi(n, &rank)) {
    return std::nullopt;
  }
  return rank;
}

}  // namespace

std::string JobLogDir(const std::string& state_dir) { return (fs::path(state_dir) / "logs" / "jobs").string(); }

absl::StatusOr<std::string> ReadJobLogFiles(const std::string& job_log_dir, const std::string& job_id,
                                            std::optional<int> rank) {
  const fs::path dir = fs::path(job_log_dir) / job_id;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return absl::NotFoundError(absl::StrCat("no log files of job ", job_id, " in ", dir.string()));
  // Each rank's lines in order, then merged by time.
  std::vector<std::vector<std::string>> ranks;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::optional<int> r = RankOfFile(e.path().filename().string());
    if (!r.has_value() || (rank.has_value() && *r != *rank)) continue;
    std::ifstream in(e.path());
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
    ranks.push_back(std::move(lines));
  }
  std::vector<size_t> next(ranks.size(), 0);
  std::string out;
  for (;;) {
    int pick = -1;
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (next[i] == ranks[i].size()) continue;
      if (pick < 0 || TimeOf(ranks[i][next[i]]) < TimeOf(ranks[pick][next[pick]])) pick = static_cast<int>(i);
    }
    if (pick < 0) break;
    absl::StrAppend(&out, ranks[pick][next[pick]++], "\n");
  }
  return out;
}

}  // namespace gradsync::cluster
