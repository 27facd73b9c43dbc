// Every gradsync command and subcommand in one table: its synopsis, a one-line summary, an
// example, the options it accepts and the -o formats it prints. Each option is declared once, in
// its command's row: main.cc dispatches through the table, every command parses its arguments with
// the row's options (ParseCommandArgs), every usage and --help is printed from it, and
// `gradsync completion` generates the shell completion from it.
#pragma once

#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "gradsync/core/args.h"
#include "output_format.h"

namespace gradsync::cli {

// One option as the command's parser declares it.
struct OptionDoc {
  std::string name;  // the long name without dashes, e.g. "workers"
  // What its value is ("N", "FILE", "DIR", "path=value"); empty for a switch. Completion offers
  // files for FILE, PATH and the like, directories for DIR, and the formats for -o.
  std::string value;
  char short_name = 0;
  bool TakesValue() const { return !value.empty(); }
};

// What a command's operands (its positional arguments after the subcommand) are, for completion.
enum class Operands { kNone, kFiles, kWords };

using CommandRunner = int (*)(const std::vector<std::string>& argv);

struct Command {
  std::string name;      // "submit", or a subcommand's "local up"
  std::string synopsis;  // what follows the name in its usage; -o and the connection options are added
  std::string summary;   // one line
  std::string example;   // one command line per line
  std::string details;   // further paragraphs of its --help; may be empty
  std::vector<OptionDoc> options;
  // What -o accepts, the default first; empty where -o names a path or is no option.
  std::vector<OutputFormat> formats;
  // Whether it takes the options that reach a coordinator (--address, --state-dir, ...), which
  // `options` then holds too.
  bool connects = false;
  Operands operands = Operands::kNone;
  std::vector<std::string> words;  // the operands' values with Operands::kWords
  // Runs the command with the arguments after its first word (a subcommand's runner is its
  // group's, which reads the subcommand as its first positional argument).
  CommandRunner run = nullptr;
};

// Every command, in the order `gradsync --help` lists them.
const std::vector<Command>& Commands();
// The entry named `name` ("submit", "local up"); nullptr when there is none.
const Command* FindCommand(absl::string_view name);
// The entries whose first word is `word`: the command itself, or every subcommand of a group
// ("local" -> local up, local down). Empty for an unknown word.
std::vector<const Command*> CommandsOf(absl::string_view word);
// The subcommand words of group `word` ("up", "down"); empty for a command without any.
std::vector<std::string> SubcommandsOf(absl::string_view word);

// "usage: gradsync NAME SYNOPSIS [-o ...] [connection options]\n".
std::string UsageLine(const Command& command);
// The usage lines of every entry of group `word`, then "(gradsync WORD --help: ...)".
std::string GroupUsage(absl::string_view word);
// A command's --help: usage, summary, details, options, example (and how to reach a cluster).
std::string CommandHelp(const Command& command);
// The --help of `word` alone: the command's, or every subcommand's of a group.
std::string GroupHelp(absl::string_view word);
// `gradsync --help`: every command with its synopsis and summary, and what they share.
std::string OverallUsage();

// The options of every entry of `word` ("submit"; "local": those of local up and local down), or of
// one subcommand ("local up"), as their parser takes them.
std::vector<OptionSpec> OptionsOf(absl::string_view word);
// `argv` (the arguments after the command's first word) parsed with OptionsOf(word).
// INVALID_ARGUMENT naming the command and an unknown option or a missing value.
absl::StatusOr<Args> ParseCommandArgs(absl::string_view word, const std::vector<std::string>& argv);

// Runs the subcommand of `group` that `argv` (the arguments after the group's word) names first,
// through its row's runner, which parses `argv` with its own options; usage (exit 2) when it names
// none or an unknown one.
int RunSubcommand(absl::string_view group, const std::vector<std::string>& argv);

// Whether `argv` (the arguments after a command's first word) asks for help: --help or -h before
// any "--", not as the value of an option of `entries` that takes one.
bool WantsHelp(const std::vector<const Command*>& entries, const std::vector<std::string>& argv);
// The first positional argument of `argv` as the parsers of `entries` read it (a group's
// subcommand), skipping options and their values; "" when there is none.
std::string FirstOperand(const std::vector<const Command*>& entries, const std::vector<std::string>& argv);

}  // namespace gradsync::cli
