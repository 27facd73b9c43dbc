#include "sample_log.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync::worker {

absl::StatusOr<std::unique_ptr<SampleLog>> SampleLog::Open(const std::string& dir, const std::string& job_id,
                                                           int generation, int rank) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path =
      (std::filesystem::path(dir) / absl::StrFormat("%s.g%d.r%d.samples", job_id, generation, rank)).string();
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("sample log ", path, ": ", std::strerror(errno)));
  }
  return std::unique_ptr<SampleLog>(new SampleLog(f));
}

SampleLog::~SampleLog() { std::fclose(file_); }

void SampleLog::Write(int64_t step, const ddp::Position& from, const ddp::StepShard& shard) {
  std::string line = absl::StrFormat("%d %d %d", step, from.epoch, from.cursor);
  for (const auto& micro : shard.micro_indices) {
    for (int64_t i : micro) {
      if (i != ddp::kPadSample) absl::StrAppend(&line, " ", i);
    }
  }
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

}  // namespace gradsync::worker
