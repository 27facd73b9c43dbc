// gradsync: submit and watch jobs, or run a whole local cluster for one job. Every command, its
// usage and its --help come from the command table (command_table.h).
#include <cstdio>
#include <string>
#include <vector>

#include "command_table.h"
#include "gradsync/core/args.h"

int main(int argc, char** argv) {
  using namespace gradsync::cli;
  const std::vector<std::string> args(argv + 1, argv + argc);
  gradsync::ScrubSecretArguments(argc, argv);
  if (args.empty()) {
    std::fputs(OverallUsage().c_str(), stderr);
    return 2;
  }
  const std::string& word = args[0];
  if (word == "--help" || word == "-h" || word == "help") {
    // `gradsync help COMMAND [SUBCOMMAND]` is COMMAND's --help.
    if (args.size() >= 2 && !CommandsOf(args[1]).empty()) {
      const Command* sub = args.size() >= 3 ? FindCommand(args[1] + " " + args[2]) : nullptr;
      std::fputs((sub != nullptr ? CommandHelp(*sub) : GroupHelp(args[1])).c_str(), stdout);
      return 0;
    }
    std::fputs(OverallUsage().c_str(), stdout);
    return 0;
  }
  const std::string command = word == "--version" ? "version" : word;
  const std::vector<const Command*> entries = CommandsOf(command);
  if (entries.empty()) {
    std::fprintf(stderr, "gradsync: unknown command \"%s\"\n\n%s", word.c_str(), OverallUsage().c_str());
    return 2;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (WantsHelp(entries, rest)) {
    // The subcommand's help when one is named (the first positional argument), else the group's.
    const Command* sub = FindCommand(command + " " + FirstOperand(entries, rest));
    std::fputs((sub != nullptr ? CommandHelp(*sub) : GroupHelp(command)).c_str(), stdout);
    return 0;
  }
  // A group's subcommand runs its own row's runner.
  if (entries[0]->name != command) return RunSubcommand(command, rest);
  return entries[0]->run(rest);
}
