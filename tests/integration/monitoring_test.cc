// The monitoring stack against real servers: promtool checks the scrape config and the alert rules
// (and runs their unit tests); a real Prometheus server scrapes a local cluster that ran a job,
// and every query of the Grafana dashboard returns data through Prometheus's HTTP API.
#include <signal.h>
#include <sys/wait.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "http_client.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

const std::string kMonitoring = std::string(GRADSYNC_SOURCE_DIR) + "/services/metrics/monitoring";

// Prometheus's own binaries, fetched by `make` (scripts/fetch-prometheus.sh); empty if unavailable.
std::string PrometheusBin(const std::string& name) {
  const std::string dir = GRADSYNC_PROMETHEUS_DIR;
  if (!fs::exists(dir + "/usr/bin/" + name)) {
    const std::string fetch =
        absl::StrCat("sh ", GRADSYNC_SOURCE_DIR, "/scripts/fetch-prometheus.sh ", dir, " >/dev/null 2>&1");
    if (std::system(fetch.c_str()) != 0) return "";
  }
  return dir + "/usr/bin/" + name;
}

int Shell(const std::string& cmd, std::string* output) {
  const std::string log = MakeTempDir() + "/out";
  const int rc = std::system(absl::StrCat(cmd, " >", log, " 2>&1").c_str());
  *output = ReadFile(log);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += absl::StrFormat("%%%02X", c);
    }
  }
  return out;
}

int PortOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

TEST(Monitoring, PromtoolAcceptsTheConfigAndRulesAndTheAlertTestsPass) {
  const std::string promtool = PrometheusBin("promtool");
  if (promtool.empty()) GTEST_SKIP() << "promtool unavailable (apt-get download prometheus failed)";
  // The config reads the metrics token from the path compose mounts it at; promtool insists the
  // file exists, so the check runs on a copy beside a token of its own.
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/prometheus.yml") << ReadFile(kMonitoring + "/prometheus.yml");
  std::ofstream(dir + "/alerts.yml") << ReadFile(kMonitoring + "/alerts.yml");
  std::ofstream(dir + "/metrics.token") << "token\n";
  std::string out;
  EXPECT_EQ(Shell(absl::StrCat(promtool, " check config ", dir, "/prometheus.yml"), &out), 0) << out;
  EXPECT_EQ(Shell(absl::StrCat(promtool, " check rules ", kMonitoring, "/alerts.yml"), &out), 0) << out;
  EXPECT_EQ(Shell(absl::StrCat("cd ", kMonitoring, " && ", promtool, " test rules alerts_test.yml"), &out), 0) << out;
}

google::protobuf::Struct Dashboard() {
  google::protobuf::Struct dashboard;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(
                  ReadFile(kMonitoring + "/grafana/dashboards/gradsync-training.json"), &dashboard)
                  .ok());
  return dashboard;
}

// The axis each query of a panel is drawn on: "right" where an override by its refId says so.
std::map<std::string, std::string> AxisByExpr(const google::protobuf::Struct& panel) {
  std::map<std::string, std::string> axis_of_ref;
  for (const auto& o : panel.fields().at("fieldConfig").struct_value().fields().at("overrides").list_value().values()) {
    const auto& f = o.struct_value().fields();
    const std::string ref = f.at("matcher").struct_value().fields().at("options").string_value();
    for (const auto& prop : f.at("properties").list_value().values()) {
      if (prop.struct_value().fields().at("id").string_value() == "custom.axisPlacement") {
        axis_of_ref[ref] = prop.struct_value().fields().at("value").string_value();
      }
    }
  }
  std::map<std::string, std::string> out;
  for (const auto& t : panel.fields().at("targets").list_value().values()) {
    const auto& f = t.struct_value().fields();
    const std::string ref = f.at("refId").string_value();
    out[f.at("expr").string_value()] = axis_of_ref.count(ref) ? axis_of_ref[ref] : "auto";
  }
  return out;
}

// Quantities of different scales share no axis (the learning rate sat flat at zero beside the
// gradient norm), and no two panels cover one another.
TEST(Monitoring, DashboardPanelsKeepScalesApartAndDoNotOverlap) {
  const google::protobuf::Struct dashboard = Dashboard();
  std::vector<std::array<double, 4>> boxes;
  int pairs = 0;
  for (const auto& p : dashboard.fields().at("panels").list_value().values()) {
    const auto& f = p.struct_value().fields();
    const auto& g = f.at("gridPos").struct_value().fields();
    boxes.push_back(
        {g.at("x").number_value(), g.at("y").number_value(), g.at("w").number_value(), g.at("h").number_value()});
    const std::map<std::string, std::string> axes = AxisByExpr(p.struct_value());
    for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
             {"gradsync_train_learning_rate", "gradsync_train_grad_norm"},
             {"gradsync_gpu_temperature_celsius", "gradsync_gpu_power_watts"}}) {
      std::string axis_a, axis_b;
      for (const auto& [expr, axis] : axes) {
        if (absl::StrContains(expr, a)) axis_a = axis;
        if (absl::StrContains(expr, b)) axis_b = axis;
      }
      if (axis_a.empty() || axis_b.empty()) continue;
      ++pairs;
      EXPECT_NE(axis_a, axis_b) << f.at("title").string_value() << ": " << a << " and " << b << " share an axis";
    }
  }
  EXPECT_EQ(pairs, 2) << "both pairs are drawn";
  for (size_t i = 0; i < boxes.size(); ++i) {
    EXPECT_LE(boxes[i][0] + boxes[i][2], 24) << "panel " << i << " is wider than the grid";
    for (size_t j = i + 1; j < boxes.size(); ++j) {
      const auto& a = boxes[i];
      const auto& b = boxes[j];
      const bool apart = a[0] + a[2] <= b[0] || b[0] + b[2] <= a[0] || a[1] + a[3] <= b[1] || b[1] + b[3] <= a[1];
      EXPECT_TRUE(apart) << "panels " << i << " and " << j << " overlap";
    }
  }
}

TEST(Monitoring, PrometheusScrapesALocalClusterAndEveryDashboardQueryHasData) {
  const std::string prometheus = PrometheusBin("prometheus");
  const std::string promtool = PrometheusBin("promtool");
  if (prometheus.empty()) GTEST_SKIP() << "prometheus unavailable (apt-get download prometheus failed)";
  const std::string dir = MakeTempDir();
  // Token shards with validation shards beside them, for the dashboard's validation loss.
  std::ofstream(dir + "/text.txt") << std::string(4000, 'a') + std::string(4000, 'b');
  ASSERT_EQ(
      RunBinary({"gradsync", "data", "prepare", dir + "/text.txt", "-o", dir + "/shards", "--val-fraction", "0.2"})
          .exit_code,
      0);
  CommandResult up = RunBinary(
      {"gradsync", "local", "up", "--workers", "2", "--state-dir", dir + "/cluster", "--data-root", dir + "/shards"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  auto endpoints = ParseFlatJson(up.out);
  CommandResult job = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--state-dir", dir + "/cluster",
                                 "--set", "training.maxSteps=120", "--set", "training.epochs=0", "--set",
                                 "checkpoint.everySteps=50", "--wait", "-o", "json"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  CommandResult validated = RunBinary(
      {"gradsync", "submit", ExamplePath("gpt-tiny-shards.yaml"), "--state-dir", dir + "/cluster", "--set",
       "data.shards.paths=[\"" + dir + "/shards/train_*.bin\"]", "--set",
       "model.transformer={layers: 1, heads: 2, width: 32, mlpWidth: 64, seqLen: 32}", "--set", "training.maxSteps=10",
       "--set", "training.epochs=0", "--set", "training.evalEvery=5", "--wait", "-o", "json"});
  ASSERT_EQ(validated.exit_code, 0) << validated.out << validated.err;
  // Every /metrics of the cluster wants its metrics token, as Prometheus sends it.
  const std::string token_file = dir + "/cluster/tokens/metrics.token";
  std::string token = ReadFile(token_file);
  token = token.substr(0, token.find('\n'));
  ASSERT_FALSE(token.empty()) << token_file;
  const std::map<std::string, std::string> bearer = {{"Authorization", "Bearer " + token}};

  // Every service's exposition passes promtool's lint: the metrics service, the coordinator, and
  // a worker (whose own per-rank step and bucket timings are there).
  endpoints["workerMetrics"] = ParseFlatJson(ReadFile(dir + "/cluster/worker-0.json"))["metrics"];
  const HttpResponse worker = HttpRequest("GET", PortOf(endpoints["workerMetrics"]), "/metrics", bearer);
  EXPECT_NE(worker.body.find("gradsync_worker_bucket_allreduce_seconds_count{bucket=\"0\""), std::string::npos)
      << worker.body;
  EXPECT_NE(worker.body.find("gradsync_worker_rendezvous_seconds{"), std::string::npos) << worker.body;
  for (const char* name : {"metricsHttp", "coordinatorMetrics", "workerMetrics"}) {
    EXPECT_EQ(HttpRequest("GET", PortOf(endpoints[name]), "/metrics").status, 401) << name << " without the token";
    const HttpResponse scrape = HttpRequest("GET", PortOf(endpoints[name]), "/metrics", bearer);
    ASSERT_EQ(scrape.status, 200) << name;
    std::ofstream(dir + "/" + name + ".txt") << scrape.body;
    std::string out;
    EXPECT_EQ(Shell(absl::StrCat(promtool, " check metrics < ", dir, "/", name, ".txt"), &out), 0)
        << name << ": " << out;
  }

  const int port = PortOf(endpoints["rest"]) + 1;  // near the cluster's ports; checked by Prometheus's bind
  std::ofstream(dir + "/prometheus.yml") << absl::StrCat(
      "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      "scrape_configs:\n"
      "  - job_name: gradsync-metrics\n    authorization: {credentials_file: ",
      token_file, "}\n    static_configs: [{targets: ['", endpoints["metricsHttp"],
      "']}]\n"
      "  - job_name: gradsync-coordinator\n    authorization: {credentials_file: ",
      token_file, "}\n    static_configs: [{targets: ['", endpoints["coordinatorMetrics"], "']}]\n");
  const std::string listen = absl::StrCat("127.0.0.1:", port);
  const pid_t prom = StartBinaryAt(prometheus,
                                   {"--config.file=" + dir + "/prometheus.yml", "--storage.tsdb.path=" + dir + "/tsdb",
                                    "--web.listen-address=" + listen},
                                   dir + "/prometheus.log");

  auto query = [&](const std::string& expr) {
    return HttpRequest("GET", port, "/api/v1/query?query=" + UrlEncode(expr));
  };
  // Wait until two scrapes of the job's series exist, so rate() windows have data.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline &&
         query("count_over_time(gradsync_train_step[1m]) >= 3").body.find("\"value\"") == std::string::npos) {
    ASSERT_TRUE(ProcessAlive(prom)) << ReadFile(dir + "/prometheus.log");
    absl::SleepFor(absl::Milliseconds(500));
  }

  const google::protobuf::Struct dashboard = Dashboard();
  int queries = 0;
  for (const auto& panel : dashboard.fields().at("panels").list_value().values()) {
    const std::string title = panel.struct_value().fields().at("title").string_value();
    for (const auto& target : panel.struct_value().fields().at("targets").list_value().values()) {
      const std::string expr =
          absl::StrReplaceAll(target.struct_value().fields().at("expr").string_value(), {{"$training_job", ".+"}});
      const HttpResponse r = query(expr);
      ++queries;
      EXPECT_EQ(r.status, 200) << title << ": " << expr << " -> " << r.body;
      EXPECT_NE(r.body.find("\"status\":\"success\""), std::string::npos) << title << ": " << r.body;
      // The GPU series come from workers on GPUs (NVML); this cluster's workers run on the CPU.
      if (absl::StrContains(expr, "gradsync_gpu_") && !absl::StrContains(expr, "vector(0)")) continue;
      EXPECT_NE(r.body.find("\"value\""), std::string::npos)
          << "panel \"" << title << "\" has no data: " << expr << " -> " << r.body;
    }
  }
  EXPECT_GE(queries, 31);
  EXPECT_NE(query("up").body.find("gradsync-coordinator"), std::string::npos) << query("up").body;

  ::kill(prom, SIGTERM);
  ::waitpid(prom, nullptr, 0);
  EXPECT_EQ(RunBinary({"gradsync", "local", "down", "--state-dir", dir + "/cluster"}).exit_code, 0);
}

}  // namespace
}  // namespace gradsync::testing
