#include "completion_script.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "command_table.h"

namespace gradsync::cli {
namespace {

// The words the functions answer for each key ("local", "local up").
struct Key {
  std::vector<std::string> options;                // "--workers", "-o", ...
  std::map<std::string, std::string> value_kinds;  // option -> none | file | dir | words ... | any
  std::string operands;                            // file | words ... | ""
};

// Values written as "hf|gradsync|llmc": fixed words.
bool IsWordChoice(const std::string& value) {
  return value.find('|') != std::string::npos &&
         std::all_of(value.begin(), value.end(), [](char c) { return absl::ascii_islower(c) || c == '|'; });
}

std::string ValueKind(const Command& c, const OptionDoc& o) {
  if (!o.TakesValue()) return "none";
  if (o.name == "output" && !c.formats.empty()) {
    std::vector<std::string> names;
    for (OutputFormat f : c.formats) names.emplace_back(OutputFormatName(f));
    return absl::StrCat("words ", absl::StrJoin(names, " "));
  }
  if (IsWordChoice(o.value)) return absl::StrCat("words ", absl::StrJoin(absl::StrSplit(o.value, '|'), " "));
  if (o.value == "DIR") return "dir";
  if (o.value == "FILE" || o.value == "PATH" || o.value == "TOK" || o.value == "OUT") return "file";
  return "any";
}

// A command whose synopsis starts with JOB (get, logs, artifacts get, ...) completes the jobs of the
// cluster it would reach; any other takes its operands from the table.
std::string OperandKind(const Command& c) {
  if (c.operands == Operands::kNone && absl::StartsWith(c.synopsis, "JOB")) return "jobs";
  switch (c.operands) {
    case Operands::kFiles: return "file";
    case Operands::kWords: return absl::StrCat("words ", absl::StrJoin(c.words, " "));
    case Operands::kNone: return "";
  }
  return "";
}

void AddCommand(const Command& c, Key* key) {
  auto add_option = [&](const std::string& flag, const std::string& kind) {
    if (key->value_kinds.count(flag) > 0) return;
    key->options.push_back(flag);
    key->value_kinds[flag] = kind;
  };
  for (const OptionDoc& o : c.options) {
    const std::string kind = ValueKind(c, o);
    add_option("--" + o.name, kind);
    if (o.short_name != 0) add_option(std::string("-") + o.short_name, kind);
  }
  add_option("--help", "none");
  if (key->operands.empty()) key->operands = OperandKind(c);
}

// Every key in table order: each command word, then each of its subcommands.
std::vector<std::pair<std::string, Key>> Keys() {
  std::vector<std::pair<std::string, Key>> keys;
  std::vector<std::string> words;
  for (const Command& c : Commands()) {
    const std::string word = c.name.substr(0, c.name.find(' '));
    if (std::find(words.begin(), words.end(), word) == words.end()) words.push_back(word);
  }
  for (const std::string& word : words) {
    Key group;
    for (const Command* c : CommandsOf(word)) AddCommand(*c, &group);
    if (!SubcommandsOf(word).empty()) group.operands.clear();  // the operand is the subcommand
    keys.emplace_back(word, std::move(group));
    for (const Command* c : CommandsOf(word)) {
      if (c->name == word) continue;
      Key sub;
      AddCommand(*c, &sub);
      keys.emplace_back(c->name, std::move(sub));
    }
  }
  return keys;
}

// The shell functions both scripts share: plain `case` tables.
std::string SharedFunctions() {
  const auto keys = Keys();
  std::vector<std::string> words;
  std::string subcommands, options, values, operands;
  for (const auto& [name, key] : keys) {
    if (name.find(' ') == std::string::npos) {
      words.push_back(name);
      if (const auto subs = SubcommandsOf(name); !subs.empty()) {
        absl::StrAppend(&subcommands, "    ", name, ") echo \"", absl::StrJoin(subs, " "), "\" ;;\n");
      }
    }
    absl::StrAppend(&options, "    \"", name, "\") echo \"", absl::StrJoin(key.options, " "), "\" ;;\n");
    for (const std::string& flag : key.options) {
      const std::string& kind = key.value_kinds.at(flag);
      if (kind != "none") absl::StrAppend(&values, "    \"", name, "|", flag, "\") echo \"", kind, "\" ;;\n");
    }
    if (!key.operands.empty()) absl::StrAppend(&operands, "    \"", name, "\") echo \"", key.operands, "\" ;;\n");
  }
  return absl::StrCat("_gradsync_commands=\"", absl::StrJoin(words, " "),
                      "\"\n"
                      "\n"
                      "_gradsync_subcommands() {\n"
                      "  case \"$1\" in\n",
                      subcommands,
                      "  esac\n"
                      "}\n"
                      "\n"
                      "_gradsync_options() {\n"
                      "  case \"$1\" in\n",
                      options,
                      "  esac\n"
                      "}\n"
                      "\n"
                      "_gradsync_value() {\n"
                      "  case \"$1|$2\" in\n",
                      values,
                      "    *) echo none ;;\n"
                      "  esac\n"
                      "}\n"
                      "\n"
                      "# The jobs of the cluster a command would reach (the current one, or the environment's),\n"
                      "# as jobs/ID and as their names; nothing when none answers within a few seconds.\n"
                      "_gradsync_jobs() {\n"
                      "  timeout 5 gradsync list -o json 2>/dev/null | sed -n 's/^ *\"\\(name\\|id\\)\": \"\\([^\"]*\\)\",\\{0,1\\}$/\\2/p' | sort -u\n"
                      "}\n"
                      "\n"
                      "_gradsync_operands() {\n"
                      "  case \"$1\" in\n",
                      operands,
                      "  esac\n"
                      "}\n");
}

// The loop both shells run over the words before the cursor, from index `first` to `last` - 1 of
// the array `array`: sets cmd, sub and key ("cmd" or "cmd sub"). An option's value is skipped,
// written apart or after "=" (bash splits "--output=json" into three words).
std::string WordLoop(const std::string& array, const std::string& first, const std::string& last) {
  return absl::StrCat(
      "  local cmd=\"\" sub=\"\" key=\"\" w=\"\" skip=\"\" i\n", "  for (( i = ", first, "; i < ", last,
      "; i++ )); do\n", "    w=\"${", array,
      "[i]}\"\n"
      "    if [[ $w == \"=\" ]]; then skip=1; continue; fi\n"
      "    if [[ -n $skip ]]; then skip=\"\"; continue; fi\n"
      "    if [[ $w == -* ]]; then\n"
      "      if [[ -n $cmd && $w != *=* && $(_gradsync_value \"$key\" \"$w\") != none ]]; then skip=1; fi\n"
      "      continue\n"
      "    fi\n"
      "    if [[ -z $cmd ]]; then\n"
      "      cmd=$w; key=$w\n"
      "    elif [[ -z $sub && -n $(_gradsync_subcommands \"$cmd\") ]]; then\n"
      "      sub=$w; key=\"$cmd $sub\"\n"
      "    fi\n"
      "  done\n");
}

}  // namespace

std::string BashCompletion() {
  return absl::StrCat(
      "# bash completion for gradsync, generated by `gradsync completion bash` from its command table.\n"
      "# Load it with:  source <(gradsync completion bash)\n"
      "\n",
      SharedFunctions(),
      "\n"
      "_gradsync_reply() {\n"
      "  local kind=\"$1\" cur=\"$2\"\n"
      "  case \"$kind\" in\n"
      "    file) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n"
      "    dir) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\")) ;;\n"
      "    words\\ *) COMPREPLY=($(compgen -W \"${kind#words }\" -- \"$cur\")) ;;\n"
      "    jobs) COMPREPLY=($(compgen -W \"$(_gradsync_jobs)\" -- \"$cur\")) ;;\n"
      "  esac\n"
      "}\n"
      "\n"
      "_gradsync() {\n"
      "  COMPREPLY=()\n"
      "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\"\n"
      "  (( COMP_CWORD > 1 )) && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
      "  if [[ $prev == \"=\" ]] && (( COMP_CWORD > 2 )); then prev=\"${COMP_WORDS[COMP_CWORD-2]}\"; fi\n"
      "  [[ $cur == \"=\" ]] && cur=\"\"\n",
      WordLoop("COMP_WORDS", "1", "COMP_CWORD"),
      "  if [[ -z $cmd ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$_gradsync_commands --help --version\" -- \"$cur\"))\n"
      "    return 0\n"
      "  fi\n"
      "  if [[ $prev == -* && $prev != *=* ]]; then\n"
      "    local kind\n"
      "    kind=$(_gradsync_value \"$key\" \"$prev\")\n"
      "    if [[ $kind != none ]]; then _gradsync_reply \"$kind\" \"$cur\"; return 0; fi\n"
      "  fi\n"
      "  if [[ $cur == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$(_gradsync_options \"$key\")\" -- \"$cur\"))\n"
      "    return 0\n"
      "  fi\n"
      "  local subs\n"
      "  subs=$(_gradsync_subcommands \"$cmd\")\n"
      "  if [[ -n $subs && -z $sub ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))\n"
      "    return 0\n"
      "  fi\n"
      "  _gradsync_reply \"$(_gradsync_operands \"$key\")\" \"$cur\"\n"
      "  return 0\n"
      "}\n"
      "\n"
      "complete -F _gradsync gradsync\n");
}

std::string ZshCompletion() {
  return absl::StrCat(
      "#compdef gradsync\n"
      "# zsh completion for gradsync, generated by `gradsync completion zsh` from its command table.\n"
      "# Save it as _gradsync in a directory of $fpath, or source it after compinit.\n"
      "\n",
      SharedFunctions(),
      "\n"
      "_gradsync_reply() {\n"
      "  local kind=\"$1\"\n"
      "  case \"$kind\" in\n"
      "    file) _files ;;\n"
      "    dir) _files -/ ;;\n"
      "    words\\ *) compadd -- ${=${kind#words }} ;;\n"
      "    jobs) compadd -- ${=$(_gradsync_jobs)} ;;\n"
      "  esac\n"
      "}\n"
      "\n"
      "_gradsync() {\n"
      "  local cur=\"${words[CURRENT]}\" prev=\"\"\n"
      "  (( CURRENT > 2 )) && prev=\"${words[CURRENT-1]}\"\n",
      WordLoop("words", "2", "CURRENT"),
      "  if [[ -z $cmd ]]; then\n"
      "    compadd -- ${=_gradsync_commands} --help --version\n"
      "    return\n"
      "  fi\n"
      "  if [[ $prev == -* && $prev != *=* ]]; then\n"
      "    local kind\n"
      "    kind=$(_gradsync_value \"$key\" \"$prev\")\n"
      "    if [[ $kind != none ]]; then _gradsync_reply \"$kind\"; return; fi\n"
      "  fi\n"
      "  if [[ $cur == -* ]]; then\n"
      "    compadd -- ${=$(_gradsync_options \"$key\")}\n"
      "    return\n"
      "  fi\n"
      "  local subs\n"
      "  subs=$(_gradsync_subcommands \"$cmd\")\n"
      "  if [[ -n $subs && -z $sub ]]; then\n"
      "    compadd -- ${=subs}\n"
      "    return\n"
      "  fi\n"
      "  _gradsync_reply \"$(_gradsync_operands \"$key\")\"\n"
      "}\n"
      "\n"
      "if [[ \"${funcstack[1]}\" == _gradsync ]]; then\n"
      "  _gradsync \"$@\"\n"
      "else\n"
      "  compdef _gradsync gradsync\n"
      "fi\n");
}

}  // namespace gradsync::cli
