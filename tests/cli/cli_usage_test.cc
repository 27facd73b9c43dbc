// The real gradsync binary against its command table (services/cli/command_table.h), with no
// cluster: every command's --help and -h, the overall usage, -o values it refuses, every option the
// table lists accepted by the command's parser (so the table cannot drift from the commands), the
// shell completion run in a real bash (and zsh, where installed), and -o yaml read back by an
// independent YAML parser (PyYAML).
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli_harness.h"
#include "command_table.h"
#include "gtest/gtest.h"
#include "output_format.h"

namespace gradsync::testing {
namespace {

using cli::Command;
using cli::Commands;

// The words of a table entry's name: {"local", "up"}.
std::vector<std::string> Words(const Command& c) { return absl::StrSplit(c.name, ' '); }

std::vector<std::string> Cli(const Command& c, std::vector<std::string> extra) {
  std::vector<std::string> args = {"gradsync"};
  for (const std::string& w : Words(c)) args.push_back(w);
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = MakeTempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(CliHelp, EveryCommandPrintsItsUsageAndExampleForHelpAndH) {
  for (const Command& c : Commands()) {
    for (const std::string flag : {"--help", "-h"}) {
      CommandResult r = RunBinary(Cli(c, {flag}));
      EXPECT_EQ(r.exit_code, 0) << c.name << " " << flag << ": " << r.err;
      EXPECT_TRUE(r.err.empty()) << c.name << " " << flag << ": " << r.err;
      EXPECT_NE(r.out.find("usage: gradsync " + c.name), std::string::npos) << c.name << " " << flag << ":\n" << r.out;
      EXPECT_NE(r.out.find("Example:\n  " + c.example), std::string::npos) << c.name << ":\n" << r.out;
      EXPECT_NE(r.out.find(c.summary), std::string::npos) << c.name << ":\n" << r.out;
    }
  }
}

TEST(CliHelp, HelpCountsAnywhereBeforeDoubleDashButNotAsAnOptionsValue) {
  CommandResult late = RunBinary({"gradsync", "submit", "job.yaml", "--set", "training.seed=1", "--wait", "-h"});
  EXPECT_EQ(late.exit_code, 0) << late.err;
  EXPECT_NE(late.out.find("usage: gradsync submit FILE"), std::string::npos) << late.out;
  CommandResult sub = RunBinary({"gradsync", "checkpoint", "--state-dir", "save", "list", "--help"});
  EXPECT_EQ(sub.exit_code, 0) << sub.err;
  EXPECT_NE(sub.out.find("usage: gradsync checkpoint list"), std::string::npos)
      << "save is --state-dir's value, list the subcommand:\n"
      << sub.out;
  // After "--" it is an operand; as an option's value it is that value.
  CommandResult operand = RunBinary({"gradsync", "version", "--", "--help"});
  EXPECT_EQ(operand.exit_code, 2) << operand.out;
  CommandResult value = RunBinary({"gradsync", "generate", "--prompt", "-h", "--weights", "/no/such/weights.bin"});
  EXPECT_EQ(value.exit_code, 1) << value.out << value.err;
  EXPECT_NE(value.err.find("/no/such/weights.bin"), std::string::npos) << value.err;
  // `gradsync help COMMAND [SUB]` is the same help.
  CommandResult help = RunBinary({"gradsync", "help", "local", "down"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out, RunBinary({"gradsync", "local", "down", "--help"}).out);
}

TEST(CliHelp, AGroupsHelpListsEverySubcommand) {
  for (const std::string group : {"local", "artifacts", "model", "checkpoint", "data"}) {
    CommandResult r = RunBinary({"gradsync", group, "--help"});
    EXPECT_EQ(r.exit_code, 0) << group << ": " << r.err;
    for (const std::string& sub : cli::SubcommandsOf(group)) {
      EXPECT_NE(r.out.find("usage: gradsync " + group + " " + sub), std::string::npos) << group << ":\n" << r.out;
    }
  }
  const std::string local = RunBinary({"gradsync", "local", "--help"}).out;
  EXPECT_NE(local.find("gradsync local: up | down"), std::string::npos) << local;
}

TEST(CliHelp, TheOverallUsageListsEveryCommand) {
  CommandResult help = RunBinary({"gradsync", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const Command& c : Commands()) {
    EXPECT_NE(help.out.find("  " + c.name + " "), std::string::npos) << c.name;
    EXPECT_NE(help.out.find(c.summary), std::string::npos) << c.name;
  }
  EXPECT_NE(help.out.find("GRADSYNC_TOKEN_FILE"), std::string::npos) << "how to reach a cluster:\n" << help.out;
  EXPECT_EQ(RunBinary({"gradsync", "-h"}).out, help.out);
  CommandResult bare = RunBinary({"gradsync"});
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_EQ(bare.err, help.out);
  CommandResult unknown = RunBinary({"gradsync", "frobnicate", "--help"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown command \"frobnicate\""), std::string::npos) << unknown.err;
}

TEST(CliOutput, AnUnknownFormatIsAUsageErrorNamingTheAcceptedOnes) {
  int checked = 0;
  for (const Command& c : Commands()) {
    if (c.formats.empty()) continue;
    ++checked;
    for (const std::vector<std::string>& o : {std::vector<std::string>{"-o", "bogus"}, {"--output=bogus"}}) {
      CommandResult r = RunBinary(Cli(c, o));
      EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.out << r.err;
      EXPECT_NE(r.err.find("-o: expected " + cli::DescribeFormats(c.formats) + ", got \"bogus\""), std::string::npos)
          << c.name << ": " << r.err;
    }
  }
  EXPECT_GE(checked, 14);
  // kubectl's words where the table says so, and only there.
  EXPECT_EQ(cli::DescribeFormats(cli::FindCommand("list")->formats), "table, wide, json, yaml or name");
  EXPECT_EQ(RunBinary({"gradsync", "version", "-o", "wide"}).exit_code, 2);
  EXPECT_EQ(RunBinary({"gradsync", "version", "-o", "text"}).exit_code, 0) << "text is table";
}

// Each option the table lists for a command, in each of its forms, is what the command's parser
// takes (every command parses with its row's options: ParseCommandArgs), under its own name. And
// the binary refuses an option nobody lists, through the command's own runner, so a runner that
// parsed with options of its own would show here.
TEST(CliTable, EveryListedOptionIsAcceptedByItsCommandsParser) {
  int checked = 0;
  for (const Command& c : Commands()) {
    for (const cli::OptionDoc& o : c.options) {
      std::vector<std::string> forms = {o.TakesValue() ? absl::StrCat("--", o.name, "=v") : "--" + o.name};
      if (o.short_name != 0) forms.push_back(absl::StrCat("-", std::string(1, o.short_name)));
      for (const std::string& form : forms) {
        std::vector<std::string> args = {form};
        if (form.size() == 2 && o.TakesValue()) args.push_back("v");
        const absl::StatusOr<gradsync::Args> parsed = cli::ParseCommandArgs(c.name, args);
        ++checked;
        ASSERT_TRUE(parsed.ok()) << c.name << " lists " << form << ": " << parsed.status();
        EXPECT_TRUE(parsed->Has(o.name)) << c.name << ": " << form;
        if (o.TakesValue()) {
          EXPECT_EQ(parsed->Get(o.name), "v") << c.name << ": " << form;
        }
      }
    }
    std::vector<std::string> bogus_args = {"gradsync"};
    for (const std::string& w : Words(c)) bogus_args.push_back(w);  // a subcommand's runner, not its group's
    bogus_args.push_back("--no-such-option");
    CommandResult bogus = RunBinary(bogus_args);
    EXPECT_EQ(bogus.exit_code, 2) << c.name;
    EXPECT_NE(bogus.err.find("unknown option --no-such-option"), std::string::npos) << c.name << ": " << bogus.err;
  }
  EXPECT_GT(checked, 140);
}

// Every --option a synopsis mentions is one the table lists for that command.
TEST(CliTable, SynopsesNameOnlyListedOptions) {
  for (const Command& c : Commands()) {
    for (absl::string_view token : absl::StrSplit(c.synopsis, absl::ByAnyChar(" []|()\n"), absl::SkipEmpty())) {
      // A bare "--" ends the options (run's and submit's command follows it); it names none.
      if (!absl::StartsWith(token, "--") || token == "--") continue;
      const std::string name(token.substr(2));
      const bool listed =
          std::any_of(c.options.begin(), c.options.end(), [&](const cli::OptionDoc& o) { return o.name == name; });
      EXPECT_TRUE(listed) << c.name << "'s synopsis names --" << name;
    }
  }
}

// --- completion --------------------------------------------------------------------------------

class BashCompletion : public ::testing::Test {
 protected:
  void SetUp() override {
    CommandResult script = RunBinary({"gradsync", "completion", "bash"});
    ASSERT_EQ(script.exit_code, 0) << script.err;
    path_ = WriteTemp("gradsync.bash", script.out);
  }

  // COMPREPLY, sorted, for the command line `words` (the last one being completed), in a bash
  // that sourced the script.
  std::string Complete(const std::vector<std::string>& words, const std::string& cwd = "") const {
    std::string array;
    for (const std::string& w : words) absl::StrAppend(&array, " '", w, "'");
    const std::string program = absl::StrCat(
        "export LC_ALL=C && ", cwd.empty() ? "" : "cd '" + cwd + "' && ", "source '", path_, "' && COMP_WORDS=(", array,
        ") && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && _gradsync && printf '%s\\n' \"${COMPREPLY[@]}\" | sort | "
        "tr '\\n' ' '");
    CommandResult r = RunProgram("/bin/bash", {"--norc", "-c", program});
    EXPECT_EQ(r.exit_code, 0) << absl::StrJoin(words, " ") << ": " << r.out;
    return std::string(absl::StripTrailingAsciiWhitespace(r.out));
  }

  std::string path_;
};

TEST_F(BashCompletion, TheScriptParsesAndIsRegistered) {
  EXPECT_EQ(RunProgram("/bin/bash", {"-n", path_}).exit_code, 0);
  CommandResult registered =
      RunProgram("/bin/bash", {"--norc", "-c", "source '" + path_ + "' && complete -p gradsync"});
  EXPECT_EQ(registered.exit_code, 0) << registered.out;
  EXPECT_NE(registered.out.find("-F _gradsync gradsync"), std::string::npos) << registered.out;
}

TEST_F(BashCompletion, CompletesCommandsSubcommandsOptionsAndValues) {
  EXPECT_EQ(Complete({"gradsync", "su"}), "submit");
  EXPECT_EQ(Complete({"gradsync", "local", ""}), "down up");
  EXPECT_EQ(Complete({"gradsync", "submit", "--wa"}), "--wait");
  EXPECT_EQ(Complete({"gradsync", "checkpoint", ""}), "diff inspect list save");
  EXPECT_EQ(Complete({"gradsync", "checkpoint", "save", "jobs/x", "--w"}), "--wait");
  EXPECT_EQ(Complete({"gradsync", "list", "-o", ""}), "json name table wide yaml");
  EXPECT_EQ(Complete({"gradsync", "workers", "--output", "w"}), "wide");
  EXPECT_EQ(Complete({"gradsync", "list", "--output", "=", "ya"}), "yaml") << "bash splits --output=ya";
  EXPECT_EQ(Complete({"gradsync", "export", "w.bin", "--format", ""}), "gradsync hf llmc");
  EXPECT_EQ(Complete({"gradsync", "completion", ""}), "bash zsh");
  EXPECT_EQ(Complete({"gradsync", "ver"}), "version");
  // An option's value is skipped when finding the subcommand: here "up" is it, not "/tmp/x".
  EXPECT_EQ(Complete({"gradsync", "local", "--state-dir", "/tmp/x", "up", "--data"}), "--data-root");
  EXPECT_EQ(Complete({"gradsync", "submit", "--set", "a=b", "--w"}), "--wait --workers");
  // Files for FILE operands and options, directories for DIR.
  const std::string dir = MakeTempDir();
  std::filesystem::create_directories(dir + "/specs");
  std::ofstream(dir + "/spec.yaml") << "name: x\n";
  EXPECT_EQ(Complete({"gradsync", "run", "sp"}, dir), "spec.yaml specs");
  EXPECT_EQ(Complete({"gradsync", "local", "up", "--state-dir", "sp"}, dir), "specs");
  EXPECT_EQ(Complete({"gradsync", "list", "--token-file", "spec."}, dir), "spec.yaml");
}

TEST(ZshCompletion, TheScriptParses) {
  if (RunProgram("/bin/sh", {"-c", "command -v zsh"}).exit_code != 0) GTEST_SKIP() << "zsh is not installed";
  CommandResult script = RunBinary({"gradsync", "completion", "zsh"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  EXPECT_TRUE(absl::StartsWith(script.out, "#compdef gradsync\n"));
  EXPECT_EQ(RunProgram("/bin/sh", {"-c", "zsh -n '" + WriteTemp("_gradsync", script.out) + "'"}).exit_code, 0);
}

TEST(Completion, AnUnknownShellIsAUsageError) {
  CommandResult fish = RunBinary({"gradsync", "completion", "fish"});
  EXPECT_EQ(fish.exit_code, 2);
  EXPECT_NE(fish.err.find("\"fish\""), std::string::npos) << fish.err;
}

// --- yaml ------------------------------------------------------------------------------------

TEST(CliYaml, TheYamlOfACommandIsItsJsonAsData) {
  const std::string python = PythonWithYaml();
  if (python.empty()) GTEST_SKIP() << "no python3 with PyYAML to read the YAML back";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"version"}, {"model", "describe", "gpt-tiny", "--set", "transformer.layers=6"}}) {
    std::vector<std::string> json = {"gradsync"}, yaml = {"gradsync"};
    json.insert(json.end(), args.begin(), args.end());
    yaml.insert(yaml.end(), args.begin(), args.end());
    json.insert(json.end(), {"-o", "json"});
    yaml.insert(yaml.end(), {"-o", "yaml"});
    CommandResult j = RunBinary(json), y = RunBinary(yaml);
    ASSERT_EQ(j.exit_code, 0) << j.err;
    ASSERT_EQ(y.exit_code, 0) << y.err;
    EXPECT_EQ(y.out.find('{'), std::string::npos) << "block style:\n" << y.out;
    CommandResult same = SameYamlData(python, j.out, y.out);
    EXPECT_EQ(same.exit_code, 0) << absl::StrJoin(args, " ") << ":\n" << same.out << "\n" << y.out;
  }
}

// What YAML readers take for other types stays a string; numbers, booleans and null stay what they
// are; nesting, order and escapes survive.
TEST(CliYaml, JsonToYamlKeepsEveryTypeAndString) {
  const std::string python = PythonWithYaml();
  if (python.empty()) GTEST_SKIP() << "no python3 with PyYAML to read the YAML back";
  const std::string json = R"({
    "strings": ["42", "-7", "+1", "1e3", "0x1F", "0o17", "1_000", "12:30:00", "2026-11-25", "2026-11-25T05:07:26Z",
                ".inf", "-.inf", ".nan", "true", "False", "yes", "no", "on", "off", "y", "n", "null", "~", "",
                " padded ", "a: b", "- item", "#comment", "x # y", "[list]", "{map}", "*alias", "&anchor", "!tag",
                "%directive", "@at", "`tick", "'single'", "\"double\"", "line\nbreak", "tab\there", "caf\u00e9",
                "back\\slash", "?", ":", "-", "1.0", "007", "3.14"],
    "numbers": [0, -1, 3, 1.5, -0.25, 1e-05, 1e+21, 123456789012, 2.5e-300],
    "booleans": [true, false],
    "nothing": null,
    "empty": {"list": [], "map": {}},
    "nested": {"b": {"c": [{"d": 1}, [2, [3]]]}, "a": "first key order kept"},
    "42": "a numeric key"
  })";
  absl::StatusOr<std::string> yaml = cli::JsonToYaml(json);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  CommandResult same = SameYamlData(python, json, *yaml);
  EXPECT_EQ(same.exit_code, 0) << same.out << "\n" << *yaml;
  EXPECT_LT(yaml->find("nested:"), yaml->find("\"42\":")) << "keys keep their order:\n" << *yaml;
  EXPECT_FALSE(cli::JsonToYaml("{not json").ok());
}

}  // namespace
}  // namespace gradsync::testing
