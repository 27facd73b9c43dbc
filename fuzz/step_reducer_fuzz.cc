// The metrics service's step reduction (StepReducer) fed a sequence of operations decoded from the
// input: step reports with any field values (NaN and infinities included), clock ticks, series and
// job queries. Small limits (4 jobs, 8 ranks, 6 pending steps, 16 kept) so that a short input
// reaches every eviction. Beyond not crashing it checks what a reader of the series relies on:
// steps in (generation, step) order, no more than kept, ranks within the world.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "fuzz_support.h"
#include "gradsync/telemetry/step_reducer.h"

namespace gradsync::fuzz {
namespace {

constexpr size_t kSeriesCapacity = 16;

double AnyDouble(ByteReader& in) {
  switch (in.Below(8)) {
    case 0: return std::numeric_limits<double>::quiet_NaN();
    case 1: return std::numeric_limits<double>::infinity();
    case 2: return -1.0;
    case 3: return in.Get<double>();
    default: return in.Below(200) / 10.0;
  }
}

v1::StepReport Report(ByteReader& in) {
  v1::StepReport r;
  const uint8_t job = in.Get<uint8_t>();
  r.set_job_id(job < 250 ? std::string(1, static_cast<char>('a' + job % 6)) : in.Bytes(16));
  r.set_generation(in.Below(4) == 0 ? in.Get<int32_t>() : static_cast<int32_t>(in.Below(3)));
  r.set_world_size(in.Below(8) == 0 ? in.Get<int32_t>() : static_cast<int32_t>(1 + in.Below(8)));
  r.set_rank(in.Below(8) == 0 ? in.Get<int32_t>() : static_cast<int32_t>(in.Below(8)));
  r.set_step(in.Below(8) == 0 ? in.Get<int64_t>() : static_cast<int64_t>(in.Below(24)));
  r.set_loss(AnyDouble(in));
  r.set_samples(in.Get<int8_t>());
  r.set_tokens(in.Get<int16_t>());
  r.set_step_seconds(AnyDouble(in));
  r.set_compute_seconds(AnyDouble(in));
  r.set_communication_seconds(AnyDouble(in));
  r.set_grad_norm(AnyDouble(in));
  r.set_learning_rate(AnyDouble(in));
  for (uint32_t i = in.Below(3); i > 0; --i) {
    v1::BucketTiming* bucket = r.add_buckets();
    bucket->set_index(in.Get<int8_t>());
    bucket->set_bytes(in.Get<int16_t>());
    bucket->set_ready_seconds(AnyDouble(in));
    bucket->set_done_seconds(AnyDouble(in));
  }
  return r;
}

void CheckSeries(const v1::JobSeries& series) {
  GRADSYNC_FUZZ_CHECK(static_cast<size_t>(series.steps_size()) <= kSeriesCapacity, "series over capacity");
  for (int i = 0; i < series.steps_size(); ++i) {
    const v1::ReducedStep& s = series.steps(i);
    if (i > 0) {
      const v1::ReducedStep& p = series.steps(i - 1);
      GRADSYNC_FUZZ_CHECK(std::pair(p.generation(), p.step()) <= std::pair(s.generation(), s.step()), "order");
    }
    for (int32_t rank : s.missing_ranks()) GRADSYNC_FUZZ_CHECK(rank >= 0 && rank < s.world_size(), "missing rank");
  }
}

}  // namespace
}  // namespace gradsync::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gradsync;
  fuzz::QuietLibraryLogs();
  fuzz::ByteReader in(data, size);
  absl::Time now = absl::UnixEpoch();
  telemetry::StepReducerOptions options;
  options.step_timeout = absl::Seconds(5);
  options.series_capacity = fuzz::kSeriesCapacity;
  options.max_pending_steps = 6;
  options.max_world_size = 8;
  options.max_jobs = 4;
  options.job_idle_ttl = absl::Seconds(60);
  options.clock = [&now] { return now; };
  telemetry::StepReducer reducer(options);
  while (!in.empty()) {
    switch (in.Below(8)) {
      case 0:
        now += absl::Seconds(in.Below(90));
        (void)reducer.Tick();
        break;
      case 1: {
        const auto series = reducer.Series(std::string(1, static_cast<char>('a' + in.Below(6))), in.Below(20));
        if (series.ok()) fuzz::CheckSeries(*series);
        break;
      }
      case 2: GRADSYNC_FUZZ_CHECK(reducer.Jobs().size() <= options.max_jobs, "jobs over the limit"); break;
      default: (void)reducer.Add(fuzz::Report(in)); break;
    }
  }
  for (const std::string& job : reducer.Jobs()) {
    const auto series = reducer.Series(job);
    GRADSYNC_FUZZ_CHECK(series.ok(), series.status().ToString());
    fuzz::CheckSeries(*series);
  }
  return 0;
}
