// gradsync healthcheck ADDRESS: exits 0 when the server answers SERVING (for probes).
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "gradsync/rpc/health.h"

namespace gradsync::cli {

int HealthCommand(const std::vector<std::string>& argv) {
  auto args = ParseArgs("healthcheck", argv, {{"service"}, {"timeout"}});
  if (!args.ok() || args->positional.size() != 1) {
    std::fprintf(stderr, "usage: gradsync healthcheck HOST:PORT [--service NAME] [--timeout SECONDS]\n");
    return 2;
  }
  auto timeout = args->GetInt("timeout", 5, 1, 3600);
  if (!timeout.ok()) {
    std::fprintf(stderr, "%s\n", std::string(timeout.status().message()).c_str());
    return 2;
  }
  absl::Status s = rpc::CheckHealth(args->positional[0], args->Get("service"), absl::Seconds(*timeout));
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", args->positional[0].c_str(), std::string(s.message()).c_str());
    return 1;
  }
  std::printf("%s: SERVING\n", args->positional[0].c_str());
  return 0;
}

}  // namespace gradsync::cli
