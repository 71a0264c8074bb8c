# tests/gpu/: the CUDA backend against the CPU one, the specification of its
# arithmetic (docs/trainer.md, "Data-parallel training").
# test_ops_gpu compares every CUDA operation with its CPU twin (ops_cpu.c);
# test_train_gpu compares whole training runs (train_cuda.cu against
# train_cpu.c); test_nodes_gpu runs two processes as the two nodes of a
# multi-node run (NCCL over loopback) against the CPU trainer. Built
# wherever the CUDA backend is; ctest -L gpu runs them.
#
# On a machine without a usable CUDA device each prints "skipped: no CUDA
# device" and exits with RUNG_GPU_SKIP (77, the status their sources return):
# SKIP_RETURN_CODE makes ctest report them as skipped, not as passed, so a
# run without a GPU never reads as a GPU check that succeeded.
if(NOT TARGET rung_kernels_cuda)
  message(STATUS "rung: GPU tests not built (no CUDA backend in this build)")
  return()
endif()

set(RUNG_GPU_SKIP 77)

function(rung_gpu_test name source)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${source})
  target_link_libraries(${name} PRIVATE rung_kernels_cuda ${ARGN} ${MATH_LIB})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS gpu TIMEOUT 600
                                          SKIP_RETURN_CODE ${RUNG_GPU_SKIP})
endfunction()

# The CPU libraries are always there (kernels/CMakeLists.txt requires them).
rung_gpu_test(test_ops_gpu test_ops_gpu.c rung_kernels_ops rung_kernels_data)
rung_gpu_test(test_train_gpu test_train_gpu.c rung_kernels_train rung_kernels_data)
rung_gpu_test(test_nodes_gpu test_nodes_gpu.c rung_kernels_train rung_kernels_data)
