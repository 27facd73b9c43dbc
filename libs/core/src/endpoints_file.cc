#include "gradsync/core/endpoints_file.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

}  // namespace

absl::Status WriteEndpointsFile(const std::string& path, const std::map<std::string, std::string>& fields) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << "{";
    const char* sep = "";
    for (const auto& [name, value] : fields) {
      out << sep << JsonString(name) << ": " << JsonString(value);
      sep = ", ";
    }
    out << "}\n";
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", path));
  return absl::OkStatus();
}

std::string LoopbackAddress(int port) { return absl::StrCat("127.0.0.1:", port); }

}  // namespace gradsync
