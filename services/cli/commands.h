// The gradsync subcommands. Each takes the arguments after its name and returns the exit code:
// 0 success, 1 the job or operation failed, 2 bad usage or input, 130 interrupted.
#pragma once

#include <string>
#include <vector>

namespace gradsync::cli {

int RunCommand(const std::vector<std::string>& argv);
int LocalCommand(const std::vector<std::string>& argv);
int SubmitCommand(const std::vector<std::string>& argv);
int GetCommand(const std::vector<std::string>& argv);
int ListCommand(const std::vector<std::string>& argv);
int CancelCommand(const std::vector<std::string>& argv);
int WatchCommand(const std::vector<std::string>& argv);
int HealthCommand(const std::vector<std::string>& argv);
int ReportCommand(const std::vector<std::string>& argv);
// gradsync model describe PRESET: needs no cluster.
int ModelCommand(const std::vector<std::string>& argv);

}  // namespace gradsync::cli
