// The rendezvous half of `gradsync-bench scale`: R simulated ranks through the coordinator's
// key-value store as Gloo's full-mesh connect goes, with values of one address and with the
// values Gloo stores ((R - 1) addresses), for growing R.
#include <unistd.h>

#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "scale_bench.h"
#include "sim_rendezvous.h"

namespace gradsync::bench {
namespace {

struct Round {
  int ranks = 0;
  std::optional<RendezvousResult> one_address;
  std::optional<RendezvousResult> gloo;  // nullopt: over the byte cap
  int64_t gloo_bytes = 0;                // what the Gloo round moves (or would)
};

// Bytes a rendezvous of `ranks` moves with `value` bytes a key: every rank sets one value and
// gets every other rank's.
int64_t BytesMoved(int64_t ranks, int64_t value) { return ranks * value + ranks * (ranks - 1) * value; }

std::string Describe(const RendezvousResult& r) {
  return absl::StrFormat("%.3f s (median rank %.3f s), %d calls, %.1f MiB", absl::ToDoubleSeconds(r.total),
                         absl::ToDoubleSeconds(r.median_rank), r.calls, static_cast<double>(r.bytes) / (1 << 20));
}

void PrintTable(const std::vector<Round>& rounds) {
  std::printf(
      "\n| ranks | calls | one address a key | per R^2 | Gloo's values: MiB moved | time |\n"
      "| --- | --- | --- | --- | --- | --- |\n");
  for (const Round& r : rounds) {
    const double r2 = static_cast<double>(r.ranks) * r.ranks;
    const std::string single =
        r.one_address ? absl::StrFormat("%.3f s", absl::ToDoubleSeconds(r.one_address->total)) : std::string("-");
    const std::string per = r.one_address
                                ? absl::StrFormat("%.1f us", absl::ToDoubleMicroseconds(r.one_address->total) / r2)
                                : std::string("-");
    const std::string gloo = r.gloo ? absl::StrFormat("%.3f s", absl::ToDoubleSeconds(r.gloo->total))
                                    : std::string("not run (over --gloo-bytes-cap)");
    std::printf("| %d | %lld | %s | %s | %.0f | %s |\n", r.ranks,
                static_cast<long long>(r.one_address ? r.one_address->calls : 0), single.c_str(), per.c_str(),
                static_cast<double>(r.gloo_bytes) / (1 << 20), gloo.c_str());
  }
}

}  // namespace

bool RunRendezvousRounds(const CoordinatorChannels& channels, const ScaleOptions& options) {
  // A namespace of no job the coordinator knows, new for each round.
  const std::string job = absl::StrCat("scale-bench-", ::getpid(), "-", absl::ToUnixMillis(absl::Now()));
  int generation = 0;
  std::vector<Round> rounds;
  bool ok = true;
  for (int ranks : options.ranks) {
    Round round{.ranks = ranks, .gloo_bytes = BytesMoved(ranks, (ranks - 1) * kGlooAddressBytes)};
    RendezvousOptions ro{.ranks = ranks, .value_bytes = kGlooAddressBytes, .job_id = job, .generation = ++generation};
    absl::StatusOr<RendezvousResult> single = RunRendezvous(channels, ro);
    if (!single.ok()) {
      std::printf("rendezvous of %d ranks: %s\n", ranks, single.status().ToString().c_str());
      ok = false;
      break;
    }
    round.one_address = *single;
    std::printf("rendezvous of %5d ranks, one address a key: %s\n", ranks, Describe(*single).c_str());
    std::fflush(stdout);
    if (round.gloo_bytes <= options.gloo_bytes_cap && ranks > 1) {
      ro.value_bytes = (ranks - 1) * kGlooAddressBytes;
      ro.generation = ++generation;
      absl::StatusOr<RendezvousResult> gloo = RunRendezvous(channels, ro);
      if (!gloo.ok()) {
        std::printf("rendezvous of %d ranks with Gloo's values: %s\n", ranks, gloo.status().ToString().c_str());
        ok = false;
        break;
      }
      round.gloo = *gloo;
      std::printf("rendezvous of %5d ranks, Gloo's values:     %s\n", ranks, Describe(*gloo).c_str());
      std::fflush(stdout);
    }
    rounds.push_back(round);
  }
  PrintTable(rounds);
  return ok;
}

}  // namespace gradsync::bench
