#include "gradsync/cluster/current_cluster.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gradsync/core/env.h"

namespace gradsync::cluster {
namespace {

namespace fs = std::filesystem;

std::string ConfigDir() {
  if (std::string dir = EnvOr("GRADSYNC_CONFIG_DIR", ""); !dir.empty()) return dir;
  if (std::string xdg = EnvOr("XDG_CONFIG_HOME", ""); !xdg.empty()) return xdg + "/gradsync";
  return EnvOr("HOME", "/tmp") + "/.config/gradsync";
}

std::string Recorded() {
  std::ifstream in(CurrentClusterPath());
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return std::string(absl::StripAsciiWhitespace(line));
}

}  // namespace

std::string CurrentClusterPath() { return ConfigDir() + "/current-cluster"; }

absl::Status SetCurrentCluster(const std::string& state_dir) {
  const std::string path = CurrentClusterPath();
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << fs::absolute(state_dir).lexically_normal().string() << "\n";
    if (!out.flush()) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

void ForgetCurrentCluster(const std::string& state_dir) {
  if (Recorded() != fs::absolute(state_dir).lexically_normal().string()) return;
  std::error_code ec;
  fs::remove(CurrentClusterPath(), ec);
}

std::string CurrentCluster() {
  const std::string dir = Recorded();
  if (dir.empty() || !ReadLocalClusterFile(dir).ok()) return "";
  return dir;
}

}  // namespace gradsync::cluster
