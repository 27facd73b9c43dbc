// Whatever a generation throws becomes that rank's error status: the worker process outlives it.
#include "job_guard.h"

#include <ios>
#include <new>
#include <vector>

#include "gtest/gtest.h"

namespace gradsync::worker {
namespace {

TEST(JobGuard, ExceptionsBecomeTheRanksErrorWithTheirCause) {
  absl::StatusOr<int> oom = RunGuarded<int>([]() -> absl::StatusOr<int> { throw std::bad_alloc(); });
  EXPECT_EQ(oom.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(oom.status().message(), "out of memory (std::bad_alloc)");

  absl::StatusOr<int> io = RunGuarded<int>(
      []() -> absl::StatusOr<int> { throw std::ios_base::failure("basic_filebuf::underflow error reading the file"); });
  EXPECT_EQ(io.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(io.status().message().find("uncaught exception: basic_filebuf::underflow"), std::string::npos)
      << io.status();

  // A container sized by a spec.
  absl::StatusOr<int> length = RunGuarded<int>([]() -> absl::StatusOr<int> {
    std::vector<float> v;
    v.reserve(v.max_size() + 1);
    return 0;
  });
  EXPECT_EQ(length.status().code(), absl::StatusCode::kInternal) << length.status();

  absl::StatusOr<int> odd = RunGuarded<int>([]() -> absl::StatusOr<int> { throw 42; });
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kInternal);
}

TEST(JobGuard, ValuesAndStatusesPassThrough) {
  EXPECT_EQ(*RunGuarded<int>([]() -> absl::StatusOr<int> { return 7; }), 7);
  EXPECT_EQ(RunGuarded<int>([]() -> absl::StatusOr<int> { return absl::NotFoundError("x"); }).status(),
            absl::NotFoundError("x"));
}

}  // namespace
}  // namespace gradsync::worker
