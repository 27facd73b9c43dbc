#include "gradsync/core/args.h"

#include <cstring>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace gradsync {

std::string Args::Get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> Args::GetAll(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

absl::StatusOr<int> Args::GetInt(const std::string& name, int fallback, int min, int max) const {
  if (!Has(name)) return fallback;
  int v = 0;
  const std::string text = Get(name);
  if (!absl::SimpleAtoi(text, &v) || v < min || v > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": expected an integer from ", min, " to ", max, ", got \"", text, "\""));
  }
  return v;
}

absl::StatusOr<Args> ParseArgs(const std::string& command, const std::vector<std::string>& argv,
                               const std::vector<OptionSpec>& options) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      args.positional.insert(args.positional.end(), argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      args.positional.push_back(a);
      continue;
    }
    std::string name, value;
    bool has_inline = false;
    if (absl::StartsWith(a, "--")) {
      name = a.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_inline = true;
      }
      // --state_dir, the daemons' older spelling, reads as --state-dir.
      name = absl::StrReplaceAll(name, {{"_", "-"}});
    } else {
      name = a.substr(1);
    }
    const OptionSpec* spec = nullptr;
    for (const auto& o : options) {
      if (o.name == name || (name.size() == 1 && o.short_name == name[0])) spec = &o;
    }
    if (spec == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("gradsync ", command, ": unknown option ", a));
    }
    if (!spec->takes_value) {
      if (has_inline) return absl::InvalidArgumentError(absl::StrCat("--", spec->name, " takes no value"));
      args.Add(spec->name, "true");
      continue;
    }
    if (!has_inline) {
      if (i + 1 >= argv.size()) {
        return absl::InvalidArgumentError(absl::StrCat("gradsync ", command, ": ", a, " needs a value"));
      }
      value = argv[++i];
    }
    args.Add(spec->name, value);
  }
  return args;
}

void ScrubSecretArguments(int argc, char** argv) {
  constexpr std::string_view kFlag = "--token";
  constexpr std::string_view kInline = "--token=";
  const auto blank = [](char* value) { std::memset(value, '*', std::strlen(value)); };
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == kFlag && i + 1 < argc) {
      blank(argv[++i]);
    } else if (arg.starts_with(kInline)) {
      blank(argv[i] + kInline.size());
    }
  }
}

}  // namespace gradsync
