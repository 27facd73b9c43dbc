# Finds libxxhash (Debian's libxxhash-dev): XXH3-64 checksums of checkpoint and weights files.
# Defines the imported target xxHash::xxhash (the name upstream's own CMake package gives it).
find_path(xxHash_INCLUDE_DIR NAMES xxhash.h)
find_library(xxHash_LIBRARY NAMES xxhash)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(xxHash
  REQUIRED_VARS xxHash_LIBRARY xxHash_INCLUDE_DIR
  REASON_FAILURE_MESSAGE "gradsync checksums checkpoints with XXH3: install Debian's libxxhash-dev (scripts/install-deps.sh does)")

if(xxHash_FOUND AND NOT TARGET xxHash::xxhash)
  add_library(xxHash::xxhash UNKNOWN IMPORTED)
  set_target_properties(xxHash::xxhash PROPERTIES
    IMPORTED_LOCATION "${xxHash_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${xxHash_INCLUDE_DIR}")
endif()
mark_as_advanced(xxHash_INCLUDE_DIR xxHash_LIBRARY)
