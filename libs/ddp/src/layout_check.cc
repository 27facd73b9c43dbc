#include "gradsync/ddp/layout_check.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gradsync::ddp {

int FirstDifference(const std::string& a, const std::string& b, std::string* line_a, std::string* line_b) {
  const std::vector<std::string> la = absl::StrSplit(a, '\n');
  const std::vector<std::string> lb = absl::StrSplit(b, '\n');
  const size_t n = std::max(la.size(), lb.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string x = i < la.size() ? la[i] : "(nothing)";
    const std::string y = i < lb.size() ? lb[i] : "(nothing)";
    if (x != y) {
      *line_a = x;
      *line_b = y;
      return static_cast<int>(i);
    }
  }
  return -1;
}

absl::Status CheckLayoutAcrossRanks(comm::KvClient* kv, int rank, int world_size, const std::string& description,
                                    absl::Duration timeout) {
  constexpr char kOk[] = "ok";
  if (absl::Status s = kv->Set(absl::StrCat("layout/", rank), description); !s.ok()) return s;
  // Rank 0 compares everyone with itself and publishes one verdict, so every rank fails alike
  // (none is left waiting in a collective its peers never join).
  if (rank == 0) {
    std::string verdict = kOk;
    for (int r = 1; r < world_size && verdict == kOk; ++r) {
      auto other = kv->Get(absl::StrCat("layout/", r), timeout);
      if (!other.ok()) return other.status();
      std::string mine, theirs;
      const int line = FirstDifference(description, *other, &mine, &theirs);
      if (line >= 0) {
        verdict = absl::StrCat("model layout of rank ", r, " differs from rank 0 at parameter ", line, ": rank 0 has ",
                               mine, ", rank ", r, " has ", theirs);
      }
    }
    if (absl::Status s = kv->Set("layout/verdict", verdict); !s.ok()) return s;
  }
  auto verdict = kv->Get("layout/verdict", timeout);
  if (!verdict.ok()) return verdict.status();
  if (*verdict == kOk) return absl::OkStatus();
  return absl::FailedPreconditionError(*verdict);
}

}  // namespace gradsync::ddp
