// An assignment that does not parse is the rank's failure, reported against the rank its header
// names; one that parses comes through whole.
#include "assignment_stream.h"

#include <string>

#include "gtest/gtest.h"

namespace gradsync::worker {
namespace {

grpc::ByteBuffer Bytes(const std::string& wire) {
  grpc::Slice slice(wire);
  return grpc::ByteBuffer(&slice, 1);
}

v1::Assignment Sample() {
  v1::Assignment a;
  a.set_job_id("mlp-0a1b2");
  a.set_generation(3);
  a.set_rank(1);
  a.set_world_size(2);
  a.mutable_spec()->set_name("mlp");
  a.set_weights_path("/srv/artifacts/mlp-0a1b2/weights.bin");
  return a;
}

TEST(AssignmentStream, AnAssignmentThatParsesComesThroughWhole) {
  v1::Assignment out;
  ASSERT_TRUE(ParseAssignment(Bytes(Sample().SerializeAsString()), &out).ok());
  EXPECT_EQ(out.SerializeAsString(), Sample().SerializeAsString());
}

TEST(AssignmentStream, OneThatDoesNotParseFailsNamingItsRank) {
  // A weights path that is not UTF-8 (the operator's artifact root): proto3 refuses to parse it.
  v1::Assignment bad = Sample();
  bad.set_weights_path("/srv/artifacts-\xff/mlp-0a1b2/weights.bin");
  std::string wire;
  ASSERT_TRUE(bad.SerializePartialToString(&wire));
  v1::Assignment out;
  const absl::Status s = ParseAssignment(Bytes(wire), &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("does not parse as a gradsync.v1.Assignment"), std::string::npos) << s;
  EXPECT_EQ(out.job_id(), "mlp-0a1b2");
  EXPECT_EQ(out.generation(), 3);
  EXPECT_EQ(out.rank(), 1);
  EXPECT_EQ(out.world_size(), 2);
  EXPECT_FALSE(out.has_spec()) << "nothing beyond the header is trusted";

  const absl::Status garbage = ParseAssignment(Bytes("\xff\xff\xff"), &out);
  EXPECT_EQ(garbage.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.job_id(), "");
}

}  // namespace
}  // namespace gradsync::worker
