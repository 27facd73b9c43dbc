// gradsync report JOB -o FILE.svg: the loss and throughput curves of a job as a picture.
#include <cstdio>
#include <fstream>

#include "args.h"
#include "charts.h"
#include "commands.h"
#include "connection.h"
#include "metrics_client.h"

namespace gradsync::cli {

int ReportCommand(const std::vector<std::string>& argv) {
  constexpr char kUsage[] =
      "usage: gradsync report JOB -o FILE.svg [--metrics-api HOST:PORT --metrics-token-file FILE | --state-dir DIR]\n";
  auto args = ParseArgs("report", argv, WithMetricsApiOptions({{"output", true, 'o'}}));
  if (!args.ok() || args->positional.size() != 1 || !args->Has("output")) {
    if (!args.ok()) std::fprintf(stderr, "%s\n", std::string(args.status().message()).c_str());
    std::fputs(kUsage, stderr);
    return 2;
  }
  absl::StatusOr<MetricsApi> api = MetricsApiFromArgs(*args, "localhost:9466");
  if (!api.ok()) {
    std::fprintf(stderr, "%s\n", DescribeError(api.status()).c_str());
    return 1;
  }
  auto series = FetchSeries(api->address, api->token, args->positional[0]);
  if (!series.ok()) {
    std::fprintf(stderr, "%s\n", std::string(series.status().message()).c_str());
    return 1;
  }
  const std::string path = args->Get("output");
  std::ofstream out(path);
  out << SvgReport(*series);
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 1;
  }
  std::printf("%s: %d steps of job %s\n", path.c_str(), series->steps_size(), series->job_id().c_str());
  return 0;
}

}  // namespace gradsync::cli
