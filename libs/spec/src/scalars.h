// Strict readers of YAML scalar text for the proto's scalar types. YAML's own conversions are
// too lenient for a job spec (they accept "0x10" as an integer and "yes" as a boolean), so the
// accepted forms are spelt out here.
//
// Each error is INVALID_ARGUMENT whose message is the problem alone ("expected an integer"); the
// caller adds the field path and the offending text.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync::spec::internal {

// An optionally signed decimal integer within [min, max].
absl::StatusOr<int64_t> ParseInteger(absl::string_view text, int64_t min, int64_t max);

// An unsigned decimal integer within [0, max]; a leading minus sign is an error.
absl::StatusOr<uint64_t> ParseUnsigned(absl::string_view text, uint64_t max);

// An integer or decimal number, with or without an exponent. Also YAML's .inf/.nan and JSON's
// Infinity/NaN, so that a spec printed by ToJson reads back; validation rejects them where a
// finite value is needed.
absl::StatusOr<double> ParseNumber(absl::string_view text);

// true or false (also True/TRUE/False/FALSE, as YAML 1.2 spells them).
absl::StatusOr<bool> ParseBoolean(absl::string_view text);

}  // namespace gradsync::spec::internal
