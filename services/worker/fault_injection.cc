#include "fault_injection.h"

#include <map>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gradsync::worker {

absl::StatusOr<std::optional<StallFault>> ParseStallFault(const std::string& spec) {
  if (spec.empty()) return std::optional<StallFault>();
  std::map<std::string, double> fields;
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    const std::vector<std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    double value = 0;
    if (kv.size() != 2 || !absl::SimpleAtod(kv[1], &value) || value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--inject_stall: \"", part, "\" is not key=number (expected rank=R,step=S,seconds=T)"));
    }
    fields[kv[0]] = value;
  }
  for (const char* key : {"rank", "step", "seconds"}) {
    if (fields.count(key) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--inject_stall: missing ", key, " (expected rank=R,step=S,seconds=T)"));
    }
  }
  if (fields.size() != 3) return absl::InvalidArgumentError("--inject_stall: only rank, step and seconds are known");
  if (fields["step"] < 1) return absl::InvalidArgumentError("--inject_stall: step counts from 1");
  StallFault f;
  f.rank = static_cast<int>(fields["rank"]);
  f.step = static_cast<int64_t>(fields["step"]);
  f.duration = absl::Seconds(fields["seconds"]);
  return std::optional<StallFault>(f);
}

}  // namespace gradsync::worker
