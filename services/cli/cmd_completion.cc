// gradsync completion bash|zsh: prints the shell's completion script (completion_script.h).
#include <cstdio>
#include <string>
#include <vector>

#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "completion_script.h"
#include "gradsync/core/args.h"

namespace gradsync::cli {

int CompletionCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseCommandArgs("completion", argv);
  const std::string shell = args.ok() && args->positional.size() == 1 ? args->positional[0] : "";
  if (shell == "bash") {
    std::fputs(BashCompletion().c_str(), stdout);
    return 0;
  }
  if (shell == "zsh") {
    std::fputs(ZshCompletion().c_str(), stdout);
    return 0;
  }
  if (!args.ok()) std::fprintf(stderr, "%s\n", std::string(args.status().message()).c_str());
  if (!shell.empty())
    std::fprintf(stderr, "gradsync completion: no completion for \"%s\" (bash or zsh)\n", shell.c_str());
  std::fputs(UsageLine(*FindCommand("completion")).c_str(), stderr);
  return 2;
}

// Its rows of the command table (command_table.h).
std::vector<Command> CompletionRows() {
  std::vector<Command> t;
  t.push_back({.name = "completion",
               .synopsis = "bash|zsh",
               .summary = "a shell completion script for gradsync's commands, subcommands and options",
               .example = "source <(gradsync completion bash)",
               .details = "bash: source it from ~/.bashrc. zsh: save it as _gradsync in a directory of $fpath, or\n"
                          "source it after compinit.\n",
               .operands = Operands::kWords,
               .words = {"bash", "zsh"},
               .run = CompletionCommand});
  return t;
}

}  // namespace gradsync::cli
