# Decides whether the CUDA targets build. AUTO builds them when nvcc, the CUDA runtime and NCCL
# are all found (the machine image keeps them under /usr/local/cuda); otherwise the build is
# CPU-only and says so in one line.

set(GRADSYNC_HAVE_CUDA OFF)
if(NOT GRADSYNC_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  # Stock CMake 3.25's FindCUDAToolkit marks CUDA::nvToolsExt deprecated whenever the project's
  # minimum is 3.25 or more, without checking that the target exists; CUDA 13 no longer ships
  # that library, so configuring stops ("set_property could not find TARGET CUDA::nvToolsExt").
  # CMake 3.27 checks for the target first. Look for the toolkit under a minimum of 3.24, in a
  # scope of its own; its targets are directory-wide and its results are passed up.
  block(PROPAGATE CUDAToolkit_FOUND CUDAToolkit_VERSION CUDAToolkit_INCLUDE_DIRS CUDAToolkit_LIBRARY_DIR)
    set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
    find_package(CUDAToolkit QUIET)
  endblock()
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS /usr/local/cuda/include ${CUDAToolkit_INCLUDE_DIRS})
  find_library(NCCL_LIBRARY nccl HINTS /usr/local/cuda/lib /usr/local/cuda/lib64)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(GRADSYNC_HAVE_CUDA ON)
  endif()
endif()

if(GRADSYNC_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  # CMake 3.25 does not know nvcc's C++20 mode (nvcc 12+ has it): name its flag, so that CUDA
  # sources compile as C++20 like the rest, also when they link C++20 targets.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  add_library(gradsync_nccl INTERFACE)
  target_include_directories(gradsync_nccl INTERFACE ${NCCL_INCLUDE_DIR})
  target_link_libraries(gradsync_nccl INTERFACE ${NCCL_LIBRARY})
  message(STATUS "gradsync: CUDA build ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, NCCL ${NCCL_LIBRARY}, archs ${CMAKE_CUDA_ARCHITECTURES})")
elseif(GRADSYNC_CUDA STREQUAL "ON")
  message(FATAL_ERROR "gradsync: GRADSYNC_CUDA=ON but nvcc, the CUDA toolkit or NCCL was not found")
elseif(GRADSYNC_CUDA STREQUAL "OFF")
  message(STATUS "gradsync: CPU-only build (GRADSYNC_CUDA=OFF)")
else()
  message(STATUS "gradsync: CPU-only build (nvcc, the CUDA toolkit or NCCL not found)")
endif()
