// The series files of `gradsync report -o` and `gradsync run`: the format by extension, CSV and
// JSON Lines of merged and single points, reading back, and job ids fit to name a directory.
#include "series_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "series_lookup.h"

namespace gradsync::cli {
namespace {

using ::testing::HasSubstr;

v1::JobSeries TwoPoints() {
  v1::JobSeries s;
  s.set_job_id("j");
  v1::ReducedStep* merged = s.add_steps();
  merged->set_job_id("j");
  merged->set_generation(1);
  merged->set_step(127);
  merged->set_first_step(0);
  merged->set_merged_steps(128);
  merged->set_loss(2.5);
  merged->set_min_loss(1.75);
  merged->set_max_loss(9.125);
  merged->set_tokens(131072);
  v1::ReducedStep* single = s.add_steps();
  single->set_job_id("j");
  single->set_generation(1);
  single->set_step(128);
  single->set_loss(0.1);
  single->set_validation_loss(0.3);
  single->set_learning_rate(3e-4);
  return s;
}

TEST(SeriesFiles, TheFormatIsTheExtensions) {
  EXPECT_EQ(*SeriesFormatOf("a/curve.svg"), SeriesFormat::kSvg);
  EXPECT_EQ(*SeriesFormatOf("curve.CSV"), SeriesFormat::kCsv);
  EXPECT_EQ(*SeriesFormatOf("curve.jsonl"), SeriesFormat::kJsonl);
  for (const char* bad : {"curve.png", "curve", "curve.json", "svg"}) {
    absl::StatusOr<SeriesFormat> f = SeriesFormatOf(bad);
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(f.status().message(), HasSubstr(".csv, .jsonl or .svg")) << bad;
    EXPECT_THAT(f.status().message(), HasSubstr(bad));
  }
}

TEST(SeriesFiles, CsvSaysWhatEachPointStandsFor) {
  const std::vector<std::string> rows = absl::StrSplit(SeriesCsv(TwoPoints()), '\n', absl::SkipEmpty());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0],
            "generation,step,first_step,merged_steps,epoch,loss,min_loss,max_loss,validation_loss,tokens_per_second,"
            "step_seconds,grad_norm,learning_rate,samples,tokens,partial");
  EXPECT_EQ(rows[1], "1,127,0,128,0,2.5,1.75,9.125,,0,0,0,0,0,131072,false");
  EXPECT_EQ(rows[2], "1,128,128,1,0,0.1,0.1,0.1,0.3,0,0,0,3e-04,0,0,false");
}

TEST(SeriesFiles, JsonLinesReadBackAsTheSameSeries) {
  const v1::JobSeries s = TwoPoints();
  const std::string text = SeriesJsonl(s);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  absl::StatusOr<v1::JobSeries> back = ParseSeriesJsonl(text + "\n", "x.jsonl");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), s.SerializeAsString());
}

TEST(SeriesFiles, ALineThatIsNotAPointIsNamed) {
  const std::string text = SeriesJsonl(TwoPoints()) + "{\"step\": \"twelve\"}\n";
  absl::StatusOr<v1::JobSeries> parsed = ParseSeriesJsonl(text, "/a/series.jsonl");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(parsed.status().message(), HasSubstr("/a/series.jsonl: line 3"));
}

TEST(SeriesFiles, WrittenFilesReadBackAndAMissingOneIsNotFound) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/series-files-", getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/series.jsonl";
  ASSERT_TRUE(WriteFileAtomically(path, SeriesJsonl(TwoPoints())).ok());
  absl::StatusOr<v1::JobSeries> read = ReadSeriesFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->steps_size(), 2);
  EXPECT_EQ(read->job_id(), "j");
  EXPECT_EQ(ReadSeriesFile(dir + "/none.jsonl").status().code(), absl::StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST(SeriesFiles, AJobIdMustBeFitToNameADirectory) {
  EXPECT_EQ(*JobIdForFiles("jobs/mlp-1a2b3"), "mlp-1a2b3");
  EXPECT_EQ(*JobIdForFiles("mlp-1a2b3"), "mlp-1a2b3");
  for (const char* bad : {"", "jobs/", "..", "jobs/..", "a/b", "jobs/../../etc"}) {
    EXPECT_EQ(JobIdForFiles(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace gradsync::cli
