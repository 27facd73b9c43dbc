#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gradsync/core/args.h"
#include "rank_env.h"
#include "scale_bench.h"

namespace gradsync::bench {
namespace {

// "250,500,1000": positive, strictly increasing counts.
absl::StatusOr<std::vector<int>> ParseCounts(const std::string& name, const std::string& text, int max) {
  std::vector<int> counts;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 1 || v > max || (!counts.empty() && v <= counts.back())) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, ": expected increasing counts from 1 to ", max,
                                                     " separated by commas, got \"", text, "\""));
    }
    counts.push_back(v);
  }
  return counts;
}

absl::StatusOr<absl::Duration> ParseSeconds(const gradsync::Args& args, const std::string& name,
                                            absl::Duration fallback) {
  if (!args.Has(name)) return fallback;
  double s = 0;
  if (!absl::SimpleAtod(args.Get(name), &s) || s < 0 || s > 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": expected seconds from 0 to 3600, got \"", args.Get(name), "\""));
  }
  return absl::Seconds(s);
}

void SetQuick(ScaleOptions* o) {
  o->quick = true;
  o->workers = {64};
  o->settle = absl::Seconds(1);
  // As long as the lease lasts (the step's floor), so that a lease the coordinator let expire shows.
  o->measure = absl::ZeroDuration();
  o->ranks = {2, 8, 32};
}

}  // namespace

absl::StatusOr<ScaleOptions> ParseScaleOptions(const std::vector<std::string>& argv) {
  auto args = gradsync::ParseArgs("scale", argv,
                                  {{"workers"},
                                   {"step-seconds"},
                                   {"settle-seconds"},
                                   {"channels"},
                                   {"no-watch", false},
                                   {"ranks"},
                                   {"gloo-bytes-cap"},
                                   {"only"},
                                   {"coordinator"},
                                   {"cluster-token-file"},
                                   {"quick", false}});
  if (!args.ok()) return args.status();
  if (!args->positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("scale: unexpected argument \"", args->positional[0], "\""));
  }
  ScaleOptions o;
  if (args->Has("quick")) SetQuick(&o);
  for (auto [name, field, max] : {std::tuple{"workers", &o.workers, 1000000}, std::tuple{"ranks", &o.ranks, 65536}}) {
    if (!args->Has(name)) continue;
    auto counts = ParseCounts(name, args->Get(name), max);
    if (!counts.ok()) return counts.status();
    *field = *std::move(counts);
  }
  auto measure = ParseSeconds(*args, "step-seconds", o.measure);
  if (!measure.ok()) return measure.status();
  o.measure = *measure;
  auto settle = ParseSeconds(*args, "settle-seconds", o.settle);
  if (!settle.ok()) return settle.status();
  o.settle = *settle;
  auto channels = args->GetInt("channels", o.channels, 1, 1024);
  if (!channels.ok()) return channels.status();
  o.channels = *channels;
  if (args->Has("gloo-bytes-cap")) {
    auto cap = ParseSize(args->Get("gloo-bytes-cap"));
    if (!cap.ok()) return absl::InvalidArgumentError(absl::StrCat("--gloo-bytes-cap: ", cap.status().message()));
    o.gloo_bytes_cap = *cap;
  }
  const std::string only = args->Get("only");
  if (!only.empty() && only != "heartbeats" && only != "rendezvous") {
    return absl::InvalidArgumentError(absl::StrCat("--only: expected heartbeats or rendezvous, got \"", only, "\""));
  }
  o.heartbeats = only != "rendezvous";
  o.rendezvous = only != "heartbeats";
  o.watch_assignments = !args->Has("no-watch");
  o.coordinator = args->Get("coordinator");
  o.cluster_token_file = args->Get("cluster-token-file");
  if (o.coordinator.empty() && !o.cluster_token_file.empty()) {
    return absl::InvalidArgumentError(
        "--cluster-token-file: only with --coordinator (a started coordinator has its own)");
  }
  return o;
}

}  // namespace gradsync::bench
