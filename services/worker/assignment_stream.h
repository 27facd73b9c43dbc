// The coordinator's assignment stream (CoordinatorService.WatchAssignments), read as bytes and
// parsed here. gRPC's generated reader parses each message itself, and one that does not parse
// (a string that is not UTF-8, a coordinator of another version) fails the Read while the call
// stays open: the worker then waits in Finish for a server that streams on, heartbeating with its
// rank held and the job RUNNING for ever. Read as bytes, an assignment that does not parse is one
// rank's failure, reported like any other, and the stream goes on.
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "gradsync/v1/coordinator.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/sync_stream.h"

namespace gradsync::worker {

// Opens the stream on `channel` under `ctx` (both outlive the reader). Read gives each
// assignment's bytes; it returns false only when the call has ended, so Finish returns at once.
std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> WatchAssignmentBytes(grpc::ChannelInterface* channel,
                                                                           grpc::ClientContext* ctx,
                                                                           const v1::WatchAssignmentsRequest& request);

// Parses one message of the stream into `out`. INVALID_ARGUMENT when it does not parse as an
// Assignment; `out` then holds only the job id, generation, rank and world size that a lenient
// read of the wire format found (empty or 0 where it found none), so the failure can be reported
// against that rank.
absl::Status ParseAssignment(const grpc::ByteBuffer& bytes, v1::Assignment* out);

}  // namespace gradsync::worker
