#include "command_table.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "command_rows.h"
#include "commands.h"

namespace gradsync::cli {
namespace {

constexpr char kReachingACluster[] =
    "Reaching a cluster: --state-dir DIR (env GRADSYNC_STATE_DIR, while a local cluster runs there): a\n"
    "local cluster, its address and tokens from DIR/endpoints.json; or --address ADDRESS (env\n"
    "GRADSYNC_ADDRESS, default localhost:7070): HOST:PORT for gRPC, http://HOST:PORT or https://HOST:PORT\n"
    "for REST. --token-file FILE (env GRADSYNC_AUTH_TOKEN_FILE, as the coordinator's; --auth-token-file\n"
    "and GRADSYNC_TOKEN_FILE are read too) holds the bearer token; --token T (env GRADSYNC_TOKEN)\n"
    "works, but prefer the file: a token on the command line is in your shell history, and in ps\n"
    "until scrubbed.\n"
    "--tls-ca FILE (env GRADSYNC_TLS_CA_FILE) verifies a TLS server; --tls-server-name NAME (env\n"
    "GRADSYNC_TLS_SERVER_NAME) verifies it against NAME, not the address's host (a port-forward to\n"
    "127.0.0.1 of a server whose certificate names its Service); TLS only. Naming none of these, a\n"
    "command reaches the current cluster: the one the last `gradsync local up` started, while it runs.\n";

// The rows in the order `gradsync --help` lists them; each command's rows sit beside its runner.
std::vector<Command> MakeTable() {
  std::vector<Command> t;
  for (std::vector<Command> (*rows)() :
       {RunRows, LocalRows, JobRows, LogsRows, WorkersRows, ArtifactsRows, ReportRows, HealthRows, ModelRows,
        CheckpointRows, DataRows, GenerateRows, ExportRows, VersionRows, CompletionRows}) {
    for (Command& c : rows()) t.push_back(std::move(c));
  }
  return t;
}

std::string FirstWord(absl::string_view name) { return std::string(name.substr(0, name.find(' '))); }

std::string FormatsSynopsis(const Command& c) {
  if (c.formats.empty()) return "";
  std::vector<std::string> names;
  for (OutputFormat f : c.formats) names.emplace_back(OutputFormatName(f));
  return absl::StrCat(" [-o ", absl::StrJoin(names, "|"), "]");
}

// "--set path=value, --wait, -o/--output FORMAT" for the options not among the connection ones.
std::string OptionsText(const Command& c) {
  std::vector<std::string> own, connection;
  for (const OptionDoc& o : c.options) {
    const bool reaches = c.connects && std::any_of(ConnectionOptions().begin(), ConnectionOptions().end(),
                                                   [&](const OptionDoc& co) { return co.name == o.name; });
    const std::string value = o.name == "output" && !c.formats.empty() ? DescribeFormats(c.formats) : o.value;
    std::string text = absl::StrCat(o.short_name != 0 ? absl::StrCat("-", std::string(1, o.short_name), ", ") : "",
                                    "--", o.name, value.empty() ? "" : " " + value);
    (reaches ? connection : own).push_back(std::move(text));
  }
  std::string out;
  if (!own.empty()) absl::StrAppend(&out, "  ", absl::StrJoin(own, "\n  "), "\n");
  if (!connection.empty()) absl::StrAppend(&out, "  connection: ", absl::StrJoin(connection, ", "), "\n");
  return out;
}

std::string Indented(absl::string_view text, absl::string_view indent) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty()))
    absl::StrAppend(&out, indent, line, "\n");
  return out;
}

// Whether `arg` is an option of one of `entries` whose value is the next argument.
bool ValueFollows(const std::vector<const Command*>& entries, absl::string_view arg) {
  absl::string_view name;
  char short_name = 0;
  if (absl::StartsWith(arg, "--") && arg.find('=') == absl::string_view::npos) {
    name = arg.substr(2);
  } else if (arg.size() == 2 && arg[0] == '-' && arg[1] != '-') {
    short_name = arg[1];
  } else {
    return false;
  }
  for (const Command* c : entries) {
    for (const OptionDoc& o : c->options) {
      if ((!name.empty() && o.name == name) || (short_name != 0 && o.short_name == short_name)) return o.TakesValue();
    }
  }
  return false;
}

}  // namespace

const std::vector<Command>& Commands() {
  static const auto* table = new std::vector<Command>(MakeTable());
  return *table;
}

const Command* FindCommand(absl::string_view name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::vector<const Command*> CommandsOf(absl::string_view word) {
  std::vector<const Command*> out;
  for (const Command& c : Commands()) {
    if (FirstWord(c.name) == word) out.push_back(&c);
  }
  return out;
}

std::vector<std::string> SubcommandsOf(absl::string_view word) {
  std::vector<std::string> out;
  for (const Command* c : CommandsOf(word)) {
    const size_t space = c->name.find(' ');
    if (space != std::string::npos) out.push_back(c->name.substr(space + 1));
  }
  return out;
}

std::vector<OptionSpec> OptionsOf(absl::string_view word) {
  const Command* one = absl::StrContains(word, ' ') ? FindCommand(word) : nullptr;
  std::vector<OptionDoc> docs;
  for (const Command* c : one != nullptr ? std::vector<const Command*>{one} : CommandsOf(word)) {
    docs = Plus(std::move(docs), c->options);
  }
  std::vector<OptionSpec> specs;
  for (const OptionDoc& o : docs) specs.push_back({o.name, o.TakesValue(), o.short_name});
  return specs;
}

absl::StatusOr<Args> ParseCommandArgs(absl::string_view word, const std::vector<std::string>& argv) {
  // The coordinator's name for the job API's token file, accepted for the CLI's own.
  std::vector<std::string> spelled = argv;
  for (std::string& a : spelled) {
    if (a == "--") break;
    for (const char* alias : {"--auth-token-file", "--auth_token_file"}) {
      if (a == alias || absl::StartsWith(a, absl::StrCat(alias, "="))) a = "--token-file" + a.substr(std::strlen(alias));
    }
  }
  return ParseArgs(std::string(word), spelled, OptionsOf(word));
}

int RunSubcommand(absl::string_view group, const std::vector<std::string>& argv) {
  const std::string word = FirstOperand(CommandsOf(group), argv);
  const Command* sub = word.empty() ? nullptr : FindCommand(absl::StrCat(group, " ", word));
  if (sub != nullptr) return sub->run(argv);
  if (!word.empty())
    std::fprintf(stderr, "gradsync %s: unknown subcommand \"%s\"\n", std::string(group).c_str(), word.c_str());
  std::fputs(GroupUsage(group).c_str(), stderr);
  return 2;
}

std::string UsageLine(const Command& c) {
  return absl::StrCat("usage: gradsync ", c.name, c.synopsis.empty() ? "" : " ", c.synopsis, FormatsSynopsis(c),
                      c.connects ? " [connection options]" : "", "\n");
}

std::string GroupUsage(absl::string_view word) {
  std::string out;
  for (const Command* c : CommandsOf(word)) absl::StrAppend(&out, UsageLine(*c));
  absl::StrAppend(&out, "(gradsync ", word, " --help: the options and an example)\n");
  return out;
}

std::string CommandHelp(const Command& c) {
  std::string out = absl::StrCat(UsageLine(c), "\n", c.summary, "\n");
  if (!c.details.empty()) absl::StrAppend(&out, "\n", c.details);
  if (!c.options.empty()) absl::StrAppend(&out, "\nOptions:\n", OptionsText(c));
  absl::StrAppend(&out, "\nExample:\n", Indented(c.example, "  "));
  if (c.connects) absl::StrAppend(&out, "\n", kReachingACluster);
  return out;
}

std::string GroupHelp(absl::string_view word) {
  const std::vector<const Command*> entries = CommandsOf(word);
  if (entries.size() == 1 && entries[0]->name == word) return CommandHelp(*entries[0]);
  std::string out = absl::StrCat("gradsync ", word, ": ", absl::StrJoin(SubcommandsOf(word), " | "), "\n");
  for (const Command* c : entries) absl::StrAppend(&out, "\n", CommandHelp(*c));
  return out;
}

std::string OverallUsage() {
  std::string out =
      "usage: gradsync COMMAND [ARGS]      (gradsync COMMAND --help: its options and an example)\n"
      "\n";
  for (const Command& c : Commands()) {
    absl::StrAppend(&out, "  ", c.name, c.synopsis.empty() ? "" : " ", c.synopsis, FormatsSynopsis(c),
                    c.connects ? " [connection options]" : "", "\n", "                     ", c.summary, "\n");
  }
  absl::StrAppend(&out, "\n", kReachingACluster,
                  "\nJob specs are YAML or JSON with the JSON names of gradsync.v1.JobSpec, e.g. "
                  "training.worldSize.\n"
                  "Exit codes: 0 success, 1 failure, 2 bad usage or input, 130 interrupted.\n");
  return out;
}

bool WantsHelp(const std::vector<const Command*>& entries, const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
    if (ValueFollows(entries, a)) ++i;
  }
  return false;
}

std::string FirstOperand(const std::vector<const Command*>& entries, const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") return i + 1 < argv.size() ? argv[i + 1] : "";
    if (a.size() < 2 || a[0] != '-') return a;
    if (ValueFollows(entries, a)) ++i;
  }
  return "";
}

}  // namespace gradsync::cli
