#include "scale_bench.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync::bench {

int ScaleBench(const ScaleOptions& options) {
  absl::StatusOr<std::unique_ptr<ScaleTarget>> target =
      options.coordinator.empty() ? ScaleTarget::StartLocal()
                                  : ScaleTarget::Attach(options.coordinator, options.cluster_token_file);
  if (!target.ok()) {
    std::fprintf(stderr, "gradsync-bench scale: %s\n", target.status().ToString().c_str());
    return 1;
  }
  const ScaleTarget& t = **target;
  const std::string where =
      t.state_dir().empty() ? "" : absl::StrCat(" (started here; state and log in ", t.state_dir(), ")");
  std::printf("coordinator %s%s, %d channels, assignment streams %s, %s\n", t.address().c_str(), where.c_str(),
              options.channels, options.watch_assignments ? "open" : "not opened",
              absl::FormatTime("%Y-%m-%d %H:%M", absl::Now(), absl::LocalTimeZone()).c_str());
  CoordinatorChannels channels(t.address(), t.cluster_token(), options.channels);
  bool clean = true;
  if (options.heartbeats) clean = RunHeartbeatSteps(t, channels, options) && clean;
  if (options.rendezvous) {
    std::printf("\n");
    clean = RunRendezvousRounds(channels, options) && clean;
  }
  if (options.quick && !clean) {
    std::fprintf(stderr, "gradsync-bench scale --quick: a worker was lost, a call failed or a rendezvous failed\n");
    return 1;
  }
  return 0;
}

}  // namespace gradsync::bench
