#include "prometheus_text.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace gradsync::metrics::testing {
namespace {

// Runs `command` through the shell; returns its exit status and stdout+stderr.
std::pair<int, std::string> Run(const std::string& command) {
  std::string output;
  FILE* pipe = popen(absl::StrCat(command, " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) output.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

absl::StatusOr<std::string> Promtool() {
  if (const char* env = std::getenv("GRADSYNC_PROMTOOL"); env != nullptr && *env != '\0') return std::string(env);
  auto [rc, output] = Run(absl::StrCat(GRADSYNC_FETCH_PROMETHEUS, " ", GRADSYNC_PROMETHEUS_DIR));
  if (rc != 0) return absl::FailedPreconditionError(absl::StrCat("promtool unavailable: ", output));
  return std::string(absl::StripSuffix(output, "\n"));
}

}  // namespace

std::optional<double> SampleValue(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  const std::string prefix = series + " ";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    double value = 0;
    if (absl::SimpleAtod(line.substr(prefix.size()), &value)) return value;
  }
  return std::nullopt;
}

absl::Status PromtoolCheck(const std::string& text) {
  absl::StatusOr<std::string> promtool = Promtool();
  if (!promtool.ok()) return promtool.status();
  const std::string path = absl::StrCat(::testing::TempDir(), "/scrape-", getpid(), ".prom");
  std::ofstream(path) << text;
  auto [rc, output] = Run(absl::StrCat(*promtool, " check metrics < ", path));
  std::remove(path.c_str());
  if (rc != 0) return absl::InvalidArgumentError(absl::StrCat("promtool check metrics: ", output));
  return absl::OkStatus();
}

}  // namespace gradsync::metrics::testing
