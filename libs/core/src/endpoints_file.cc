#include "gradsync/core/endpoints_file.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::Status WriteEndpointsFile(const std::string& path, const std::map<std::string, std::string>& fields) {
  std::string json = "{";
  const char* sep = "";
  for (const auto& [name, value] : fields) {
    absl::StrAppend(&json, sep, JsonString(name), ": ", JsonString(value));
    sep = ", ";
  }
  return ReplaceFileAtomically(path, json + "}\n");
}

absl::Status ReplaceFileAtomically(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << contents;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", path));
  return absl::OkStatus();
}

std::string LoopbackAddress(int port) { return absl::StrCat("127.0.0.1:", port); }

}  // namespace gradsync
