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
// gradsync logs JOB [--rank R] [--follow]: the job's own log lines.
int LogsCommand(const std::vector<std::string>& argv);
int HealthCommand(const std::vector<std::string>& argv);
int ReportCommand(const std::vector<std::string>& argv);
// gradsync artifacts list JOB [PREFIX] | get JOB [PATH] -o DIR: a job's files through the coordinator.
int ArtifactsCommand(const std::vector<std::string>& argv);
// gradsync model describe PRESET | logits WEIGHTS --tokens IDS: needs no cluster.
int ModelCommand(const std::vector<std::string>& argv);
// gradsync checkpoint inspect | diff | list | save: reads checkpoints on this machine (list JOB and
// save JOB ask the coordinator).
int CheckpointCommand(const std::vector<std::string>& argv);
// gradsync data prepare TEXT... -o DIR: text files to token shards; needs no cluster.
int DataCommand(const std::vector<std::string>& argv);
// gradsync generate --weights PATH --prompt TEXT: samples from a weights file; needs no cluster.
int GenerateCommand(const std::vector<std::string>& argv);
// gradsync export SRC --format hf|gradsync|llmc -o OUT: weights in another layout; needs no cluster.
int ExportCommand(const std::vector<std::string>& argv);
// gradsync workers: the coordinator's worker pool (idle, busy with a rank, lost recently).
int WorkersCommand(const std::vector<std::string>& argv);
// gradsync completion bash|zsh: a completion script generated from the command table.
int CompletionCommand(const std::vector<std::string>& argv);
// gradsync version [-o json] (also gradsync --version): the version, git commit and CUDA build.
int VersionCommand(const std::vector<std::string>& argv);

}  // namespace gradsync::cli
