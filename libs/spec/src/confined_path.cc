#include "gradsync/spec/confined_path.h"

#include <fnmatch.h>
#include <glob.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "checker.h"

namespace gradsync::spec {
namespace {

// What glob(3) reads as more than a plain name: wildcards, brackets and the escape character.
constexpr char kGlobChars[] = "*?[\\";

bool IsGlob(const std::string& component) { return component.find_first_of(kGlobChars) != std::string::npos; }

// Whether the component, as glob(3) reads it (a leading '.' only matched by a '.'), can name the
// parent directory.
bool MayClimb(const std::string& component) {
  return component == ".." || (IsGlob(component) && ::fnmatch(component.c_str(), "..", FNM_PERIOD) == 0);
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? absl::StrCat("/", name) : absl::StrCat(dir, "/", name);
}

std::optional<std::string> RealPath(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return std::nullopt;
  std::string out(resolved);
  std::free(resolved);
  return out;
}

struct Resolved {
  std::string path;
  // The part past what exists holds a component that may name the parent directory.
  bool climbs = false;
};

// The kernel's answer for the longest existing, glob-free prefix of the absolute `path`, then the
// rest as written.
Resolved ResolveAbsolute(const std::string& path) {
  const std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  Resolved r{"/"};
  size_t i = 0;
  for (; i < parts.size() && !IsGlob(parts[i]); ++i) {
    std::optional<std::string> next = RealPath(Join(r.path, parts[i]));
    if (!next.has_value()) break;
    r.path = *std::move(next);
  }
  for (; i < parts.size(); ++i) {
    if (parts[i] == ".") continue;
    r.climbs = r.climbs || MayClimb(parts[i]);
    r.path = Join(r.path, parts[i]);
  }
  return r;
}

absl::Status Invalid(const std::string& field, const std::string& path, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", internal::Quote(path), " ", problem));
}

}  // namespace

bool PathIsWithin(const std::string& path, const std::string& dir) {
  if (dir == "/") return !path.empty() && path[0] == '/';
  return path.size() >= dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         (path.size() == dir.size() || path[dir.size()] == '/');
}

absl::StatusOr<ConfinedRoots> ConfinedRoots::Open(const std::vector<std::string>& dirs, const std::string& kind) {
  if (dirs.empty()) return absl::InvalidArgumentError(absl::StrCat("no ", kind, " is set"));
  std::vector<std::string> resolved;
  for (const std::string& dir : dirs) {
    if (dir.empty() || dir.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("a ", kind, " must be a directory, got ", internal::Quote(dir)));
    }
    std::error_code ec;
    std::filesystem::path canonical = std::filesystem::absolute(dir, ec);
    if (!ec) canonical = std::filesystem::weakly_canonical(canonical, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat(kind, " ", internal::Quote(dir), ": ", ec.message()));
    std::string text = canonical.string();
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    resolved.push_back(std::move(text));
  }
  return ConfinedRoots(std::move(resolved), kind);
}

bool ConfinedRoots::Contains(const std::string& path) const {
  for (const std::string& dir : dirs_) {
    if (PathIsWithin(path, dir)) return true;
  }
  return false;
}

std::string ConfinedRoots::Describe() const {
  return absl::StrCat("the ", kind_, dirs_.size() == 1 ? " " : "s ", absl::StrJoin(dirs_, ", "));
}

absl::StatusOr<std::string> ConfinedRoots::Resolve(const std::string& field, const std::string& path) const {
  if (path.empty() || path.find('\0') != std::string::npos) return Invalid(field, path, "is no path");
  const Resolved r = ResolveAbsolute(path[0] == '/' ? path : Join(dirs_.front(), path));
  if (r.climbs) {
    return Invalid(
        field, path,
        absl::StrCat("climbs with \"..\" (or a glob that matches it) past what exists; name files in ", Describe()));
  }
  if (!Contains(r.path)) return Invalid(field, path, absl::StrCat("lies outside ", Describe()));
  return r.path;
}

absl::Status ConfinedRoots::CheckMatches(const std::string& field, const std::string& pattern) const {
  glob_t matches{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &matches);
  absl::Status status;
  if (rc != 0 && rc != GLOB_NOMATCH) status = Invalid(field, pattern, "cannot be listed");
  for (size_t i = 0; rc == 0 && status.ok() && i < matches.gl_pathc; ++i) {
    const std::string match = matches.gl_pathv[i];
    const std::optional<std::string> real = RealPath(match);
    if (!real.has_value()) {
      status = Invalid(
          field, pattern,
          absl::StrCat("matches ", internal::Quote(match), ", which cannot be resolved: ", std::strerror(errno)));
    } else if (!Contains(*real)) {
      status = Invalid(field, pattern,
                       absl::StrCat("matches ", internal::Quote(match), ", which resolves outside ", Describe()));
    }
  }
  ::globfree(&matches);
  return status;
}

}  // namespace gradsync::spec
