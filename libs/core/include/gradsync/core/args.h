// A small command-line parser for subcommands: positional arguments plus declared options
// ("--name value", "--name=value", "-o value", repeatable options, boolean switches).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync {

struct OptionSpec {
  std::string name;  // long name without dashes, e.g. "workers"
  bool takes_value = true;
  char short_name = 0;  // e.g. 'o'
};

class Args {
 public:
  std::vector<std::string> positional;

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  // The last value given, or `fallback`.
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> GetAll(const std::string& name) const;
  // INVALID_ARGUMENT "--name: expected an integer, got ..." when not an integer in [min, max].
  absl::StatusOr<int> GetInt(const std::string& name, int fallback, int min, int max) const;

  void Add(const std::string& name, std::string value) { values_[name].push_back(std::move(value)); }

 private:
  std::map<std::string, std::vector<std::string>> values_;
};

// INVALID_ARGUMENT naming an unknown option or a missing value, with `command` in the message. A
// long option may be written with underscores for its dashes (--state_dir for --state-dir).
absl::StatusOr<Args> ParseArgs(const std::string& command, const std::vector<std::string>& argv,
                               const std::vector<OptionSpec>& options);

// Overwrites, in the process's own argument memory, the value of every --token ("--token T" and
// "--token=T", up to a "--"), so that ps and /proc/<pid>/cmdline no longer show it. Call it once
// the arguments have been copied; the value is readable by others only from exec until then.
void ScrubSecretArguments(int argc, char** argv);

}  // namespace gradsync
