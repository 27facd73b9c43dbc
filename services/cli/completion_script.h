// Shell completion for gradsync, generated from the command table (command_table.h): command
// names, subcommands, options, the values of -o and of options naming files or directories, and
// operands that are files or fixed words.
//
// Both scripts share shell functions that answer from case tables (portable to bash and zsh):
//   _gradsync_subcommands WORD       the subcommands of a group ("up down" for local)
//   _gradsync_options KEY            the options of "WORD" or "WORD SUB" (a group's: all of its subs')
//   _gradsync_value KEY OPTION       how OPTION's value completes: none (a switch), file, dir,
//                                    "words W..." or any (nothing to offer)
//   _gradsync_operands KEY           how operands complete: file, "words W..." or nothing
// and a function per shell that reads the words before the cursor (skipping options and their
// values) to find the command, the subcommand and what the word under the cursor is.
#pragma once

#include <string>

namespace gradsync::cli {

// For bash 4+: defines _gradsync and registers it (`complete -F _gradsync gradsync`), using
// COMP_WORDS and COMP_CWORD and setting COMPREPLY. Load with `source <(gradsync completion bash)`.
std::string BashCompletion();

// For zsh: a #compdef file (save it as _gradsync in $fpath) that also works when sourced after
// compinit.
std::string ZshCompletion();

}  // namespace gradsync::cli
