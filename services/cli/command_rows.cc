#include "command_rows.h"

#include <algorithm>

namespace gradsync::cli {

const std::vector<OptionDoc>& ConnectionOptions() {
  static const auto* options = new std::vector<OptionDoc>{{"address", "ADDRESS"},      {"token", "T"},
                                                          {"token-file", "FILE"},      {"tls-ca", "FILE"},
                                                          {"tls-server-name", "NAME"}, {"state-dir", "DIR"}};
  return *options;
}

const std::vector<OptionDoc>& MetricsApiOptions() {
  static const auto* options =
      new std::vector<OptionDoc>{{"metrics-api", "HOST:PORT"}, {"metrics-token-file", "FILE"}, {"state-dir", "DIR"}};
  return *options;
}

std::vector<OptionDoc> JobOptions() { return Plus(ConnectionOptions(), MetricsApiOptions()); }

std::vector<OptionDoc> Plus(std::vector<OptionDoc> options, const std::vector<OptionDoc>& more) {
  for (const OptionDoc& o : more) {
    const bool present =
        std::any_of(options.begin(), options.end(), [&](const OptionDoc& have) { return have.name == o.name; });
    if (!present) options.push_back(o);
  }
  return options;
}

OptionDoc Output(std::string value) { return {"output", std::move(value), 'o'}; }

const char kDevicesHelp[] =
    "--device auto (default: worker i on GPU i mod GPUs, or the CPU), cpu, cuda or cuda:N; worker i\n"
    "runs on its share of the CPUs unless --no-cpu-binding.\n";

}  // namespace gradsync::cli
