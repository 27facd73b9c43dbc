// Paths confined to directories an operator chose (roots): a path a job spec names is resolved the
// way the kernel would open it, symlinks and ".." included, and refused unless it lands inside a
// root. Errors name the field, the path and the roots; nothing here reads a file's contents.
//
// What "resolved" means: the longest prefix of the path that exists, up to its first glob
// component ('*', '?', '[' or '\'), is replaced by its realpath(3); the rest is kept as written,
// without "." components. The rest must not climb: a ".." there, or a glob component that can match
// "..", could leave the root once the missing directories appear (as symlinks, say), so it is
// refused. Files a glob matches later can still be symlinks that lead out: CheckMatches resolves
// every match, and a reader calls it again right before opening them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync::spec {

// Whether `path` is `dir` or lies below it, by whole components. Both are absolute and normal (no
// ".", "..", doubled or trailing '/'), as ConfinedRoots makes them.
bool PathIsWithin(const std::string& path, const std::string& dir);

// One or more root directories of one kind, e.g. the data roots. Immutable; thread-safe.
class ConfinedRoots {
 public:
  // `dirs` made absolute (against the working directory) and resolved as far as each exists; they
  // need not exist. `kind` names them in errors ("data root"). INVALID_ARGUMENT when `dirs` is
  // empty or one of them is empty.
  static absl::StatusOr<ConfinedRoots> Open(const std::vector<std::string>& dirs, const std::string& kind);

  // The resolved roots, in the given order; relative paths start at the first.
  const std::vector<std::string>& dirs() const { return dirs_; }

  // Whether the absolute, normal `path` lies in one of the roots.
  bool Contains(const std::string& path) const;

  // `path` (relative: to the first root; it may be a glob) resolved as the file comment says.
  // INVALID_ARGUMENT "<field>: \"<path>\" ..." when it is empty, climbs where it does not exist, or
  // lands outside every root.
  absl::StatusOr<std::string> Resolve(const std::string& field, const std::string& path) const;

  // Every file `pattern` (a path or a glob) matches now, with its symlinks followed, lies in a
  // root. No match is no error: the files may live where only the workers see them.
  // INVALID_ARGUMENT naming the field, the pattern and the match that resolves outside (or cannot
  // be resolved).
  absl::Status CheckMatches(const std::string& field, const std::string& pattern) const;

  // "the data root /a" or "the data roots /a, /b".
  std::string Describe() const;

 private:
  ConfinedRoots(std::vector<std::string> dirs, std::string kind) : dirs_(std::move(dirs)), kind_(std::move(kind)) {}

  std::vector<std::string> dirs_;
  std::string kind_;
};

}  // namespace gradsync::spec
