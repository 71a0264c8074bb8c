# The CUDA backend of rung-train (docs/trainer.md): built in every
# build where nvcc exists, with warnings as errors, and skipped with one
# message where it does not. Defines rung_kernels_cuda, a static library of
# the CUDA operations (ops_cuda.cu) and the NCCL trainer (train_cuda.cu),
# which exports RUNG_HAVE_CUDA=1 to whatever links it, and the module
# librung-train-cuda.so that rung-train loads (kernels/train_gpu.c).
#
# -DRUNG_CUDA=OFF skips it on purpose; -DCMAKE_CUDA_COMPILER=<path> picks an
# nvcc (a path that does not exist skips it too).
option(RUNG_CUDA "Build rung-train's CUDA backend where nvcc, cuBLAS and NCCL exist" ON)
if(NOT RUNG_CUDA)
  message(STATUS "rung: CUDA backend off (RUNG_CUDA=OFF); rung-train runs on the CPU")
  return()
endif()

# nvcc: the one named by CMAKE_CUDA_COMPILER or CUDACXX, else on PATH, else
# the toolkit's usual home (installers do not put it on PATH).
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(RUNG_NVCC nvcc)
  if(NOT RUNG_NVCC AND EXISTS /usr/local/cuda/bin/nvcc)
    set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
  endif()
endif()
include(CheckLanguage)
check_language(CUDA) # tries a real CUDA project; caches the compiler or NOTFOUND
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "rung: no nvcc found; CUDA backend skipped, rung-train runs on the CPU")
  return()
elseif(NOT EXISTS "${CMAKE_CUDA_COMPILER}")
  message(STATUS "rung: nvcc ${CMAKE_CUDA_COMPILER} does not exist; CUDA backend skipped, "
                 "rung-train runs on the CPU")
  return()
endif()

# The toolkit that this nvcc belongs to (through symlinks such as
# /usr/local/bin/nvcc): cudart, cuBLAS, and NCCL beside them.
get_filename_component(RUNG_CUDA_ROOT "${CMAKE_CUDA_COMPILER}" REALPATH)
get_filename_component(RUNG_CUDA_ROOT "${RUNG_CUDA_ROOT}" DIRECTORY)
get_filename_component(RUNG_CUDA_ROOT "${RUNG_CUDA_ROOT}" DIRECTORY)
if(NOT DEFINED CUDAToolkit_ROOT)
  set(CUDAToolkit_ROOT "${RUNG_CUDA_ROOT}")
endif()
find_package(CUDAToolkit QUIET)
find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} ${RUNG_CUDA_ROOT}/include /usr/local/cuda/include)
find_library(NCCL_LIBRARY nccl
  HINTS ${CUDAToolkit_LIBRARY_DIR} ${RUNG_CUDA_ROOT}/lib64 /usr/local/cuda/lib64)
if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cublas OR NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
  message(STATUS "rung: nvcc found but not cuBLAS and NCCL (CUDAToolkit ${CUDAToolkit_FOUND}, "
                 "nccl.h ${NCCL_INCLUDE_DIR}, libnccl ${NCCL_LIBRARY}); CUDA backend skipped")
  return()
endif()

# Ampere and Hopper: sm_80 (with its PTX, which later GPUs JIT-compile) and
# sm_90. nvcc 13 no longer builds for Maxwell, Pascal or Volta, and bf16
# tensor-core GEMMs need sm_80.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures of rung-train")
endif()
# One CUDA runtime in the process: the shared libcudart that cuBLAS and NCCL
# also load, not CMake's default static copy.
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
enable_language(CUDA)
message(STATUS "rung: CUDA backend with ${CMAKE_CUDA_COMPILER} "
               "(${CMAKE_CUDA_COMPILER_VERSION}), architectures ${CMAKE_CUDA_ARCHITECTURES}, "
               "NCCL ${NCCL_LIBRARY}")

# The oldest architecture built, as a number (80 from "80;90-real"): devices
# older than it cannot run the kernels, so train_cuda_devices() skips them.
set(RUNG_CUDA_MIN_ARCH 0)
foreach(arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
  string(REGEX MATCH "^[0-9]+" num "${arch}")
  if(num AND (RUNG_CUDA_MIN_ARCH EQUAL 0 OR num LESS RUNG_CUDA_MIN_ARCH))
    set(RUNG_CUDA_MIN_ARCH ${num})
  endif()
endforeach()

add_library(rung_kernels_cuda STATIC
  ${CMAKE_CURRENT_LIST_DIR}/ops_cuda.cu
  ${CMAKE_CURRENT_LIST_DIR}/train_cuda.cu)
set_target_properties(rung_kernels_cuda PROPERTIES
  CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}"
  CUDA_RUNTIME_LIBRARY Shared
  CUDA_STANDARD 17
  CUDA_STANDARD_REQUIRED ON
  POSITION_INDEPENDENT_CODE ON)
target_include_directories(rung_kernels_cuda
  PUBLIC ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_LIST_DIR}
  PRIVATE ${NCCL_INCLUDE_DIR})
# RUNG_HAVE_CUDA: the trainer calls train_cuda(); RUNG_CUDA_MIN_ARCH (80 for
# sm_80): the oldest GPU that can run these kernels, for programs that check.
target_compile_definitions(rung_kernels_cuda
  PUBLIC RUNG_HAVE_CUDA=1 RUNG_CUDA_MIN_ARCH=${RUNG_CUDA_MIN_ARCH})

# The project's compile options (-Wall -Wextra -Werror, sanitizers) are
# gcc's: nvcc rejects them, so they reach the host compiler through
# -Xcompiler; nvcc's own warnings are errors as well.
get_property(rung_host_opts DIRECTORY PROPERTY COMPILE_OPTIONS)
set(rung_cuda_opts --Werror=all-warnings)
foreach(opt IN LISTS rung_host_opts)
  list(APPEND rung_cuda_opts "-Xcompiler=${opt}")
endforeach()
set_property(TARGET rung_kernels_cuda PROPERTY COMPILE_OPTIONS ${rung_cuda_opts})
target_compile_options(rung_kernels_cuda PRIVATE $<$<NOT:$<CONFIG:Debug>>:-lineinfo>)

# train_cuda.cu uses the CPU trainer's shared pieces (train_lr_at, the
# dropout key, checkpoints) and data.c's sampler; linking them from here
# keeps the link order right for any program that links this library.
# stdc++: the objects nvcc makes are C++, and C programs link with gcc.
# rung_common_headers: ops_math.h includes common/splitmix.h.
target_link_libraries(rung_kernels_cuda PUBLIC
  CUDA::cudart CUDA::cublas ${NCCL_LIBRARY} Threads::Threads stdc++ rung_common_headers
  $<TARGET_NAME_IF_EXISTS:rung_kernels_train> $<TARGET_NAME_IF_EXISTS:rung_kernels_data>)

# The module rung-train loads where a GPU may be (kernels/train_gpu.c): the
# backend with everything it uses, and the CUDA libraries, which cost about
# 220 MB of memory in any process that loads them. It holds its own copy of
# the CPU trainer's pieces (so they are built position-independent,
# kernels/train.cmake); -Bsymbolic binds its names to that copy. The one
# state they share, the stop flag, rung-train reaches through the backend.
add_library(rung-train-cuda MODULE ${CMAKE_CURRENT_LIST_DIR}/train_cuda_module.c)
target_link_libraries(rung-train-cuda PRIVATE rung_kernels_cuda)
target_link_options(rung-train-cuda PRIVATE -Wl,-Bsymbolic)
set_target_properties(rung-train-cuda PROPERTIES
  PREFIX "lib"
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
# Installed with rung-worker (packaging/README.md) where rung-train looks for
# it (RUNG_CUDA_MODULE_INSTALL_DIR, kernels/CMakeLists.txt); this rule exists
# only when the module was built. Its CUDA libraries are not Debian packages
# here, so the package cannot depend on them: they must be on the machine's
# library path (ld.so.conf) where GPUs are, and rung-train loads the module
# only there.
install(TARGETS rung-train-cuda LIBRARY DESTINATION ${RUNG_CUDA_MODULE_INSTALL_DIR}
        COMPONENT rung-worker)
