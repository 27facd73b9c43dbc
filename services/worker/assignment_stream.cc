#include "assignment_stream.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/unknown_field_set.h"
#include "gradsync/v1/coordinator.grpc.pb.h"

namespace gradsync::worker {
namespace {

std::string Flatten(const grpc::ByteBuffer& bytes) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!bytes.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// The header fields of an assignment from its wire format alone: an UnknownFieldSet keeps every
// field as it came, checking neither types nor UTF-8.
void ReadHeader(const std::string& wire, v1::Assignment* out) {
  out->Clear();
  google::protobuf::UnknownFieldSet fields;
  if (!fields.ParseFromString(wire)) return;
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& f = fields.field(i);
    const bool varint = f.type() == google::protobuf::UnknownField::TYPE_VARINT;
    switch (f.number()) {
      case v1::Assignment::kJobIdFieldNumber:
        if (f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) out->set_job_id(f.length_delimited());
        break;
      case v1::Assignment::kGenerationFieldNumber:
        if (varint) out->set_generation(static_cast<int32_t>(f.varint()));
        break;
      case v1::Assignment::kRankFieldNumber:
        if (varint) out->set_rank(static_cast<int32_t>(f.varint()));
        break;
      case v1::Assignment::kWorldSizeFieldNumber:
        if (varint) out->set_world_size(static_cast<int32_t>(f.varint()));
        break;
      default: break;
    }
  }
}

}  // namespace

std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> WatchAssignmentBytes(grpc::ChannelInterface* channel,
                                                                           grpc::ClientContext* ctx,
                                                                           const v1::WatchAssignmentsRequest& request) {
  // The generated stub's method, with bytes in place of the parsed message.
  static const std::string* const kMethod =
      new std::string(absl::StrCat("/", v1::CoordinatorService::service_full_name(), "/WatchAssignments"));
  const grpc::internal::RpcMethod method(kMethod->c_str(), grpc::internal::RpcMethod::SERVER_STREAMING);
  return std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>>(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel, method, ctx, request));
}

absl::Status ParseAssignment(const grpc::ByteBuffer& bytes, v1::Assignment* out) {
  const std::string wire = Flatten(bytes);
  if (out->ParseFromString(wire)) return absl::OkStatus();
  ReadHeader(wire, out);
  return absl::InvalidArgumentError(
      absl::StrCat("assignment: the coordinator's message (", wire.size(),
                   " bytes) does not parse as a gradsync.v1.Assignment (a string that is not UTF-8, or a coordinator "
                   "of another version)"));
}

}  // namespace gradsync::worker
