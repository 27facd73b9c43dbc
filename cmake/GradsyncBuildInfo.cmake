# Writes OUTPUT: the version, git commit and CUDA build that every binary reports (--version,
# gradsync_build_info). The build runs this script each time (libs/core/CMakeLists.txt), so the
# commit follows the checkout; the file is rewritten only when what it says changes, so an
# unchanged commit recompiles and relinks nothing.
#
# Inputs (-D): OUTPUT, VERSION, CUDA (a toolkit version, or "none"), COMMIT (empty: ask GIT in
# SOURCE_DIR; "unknown" when that is no git checkout or git is missing).

if(NOT COMMIT)
  set(COMMIT unknown)
  if(GIT)
    execute_process(
      COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse --short=7 HEAD
      OUTPUT_VARIABLE head
      RESULT_VARIABLE status
      OUTPUT_STRIP_TRAILING_WHITESPACE
      ERROR_QUIET)
    if(status EQUAL 0 AND head MATCHES "^[0-9a-f]+$")
      set(COMMIT "${head}")
    endif()
  endif()
endif()

file(CONFIGURE OUTPUT "${OUTPUT}" @ONLY CONTENT [[
// Written by cmake/GradsyncBuildInfo.cmake at build time; edits are lost.
namespace gradsync::build_internal {
extern const char kVersion[] = "@VERSION@";
extern const char kCommit[] = "@COMMIT@";
extern const char kCuda[] = "@CUDA@";
}  // namespace gradsync::build_internal
]])
