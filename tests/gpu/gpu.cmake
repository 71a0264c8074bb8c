# tests/gpu/: the CUDA backend against the CPU one (DESIGN.md, principle 6).
# test_ops_gpu compares every CUDA operation with its CPU twin (ops_cpu.c);
# test_train_gpu compares whole training runs (train_cuda.cu against
# train_cpu.c). Built wherever the CUDA backend is; on a machine without a
# CUDA device each prints "skipped: no CUDA device" and exits 0. ctest -L gpu
# runs them.
if(NOT TARGET rung_kernels_cuda)
  message(STATUS "rung: GPU tests not built (no CUDA backend in this build)")
  return()
endif()

function(rung_gpu_test name source)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${source})
  target_link_libraries(${name} PRIVATE rung_kernels_cuda ${ARGN} ${MATH_LIB})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS gpu TIMEOUT 600)
endfunction()

if(TARGET rung_kernels_ops)
  rung_gpu_test(test_ops_gpu test_ops_gpu.c rung_kernels_ops)
else()
  message(STATUS "rung: test_ops_gpu not built (no CPU operations library rung_kernels_ops)")
endif()
if(TARGET rung_kernels_train AND TARGET rung_kernels_data)
  rung_gpu_test(test_train_gpu test_train_gpu.c rung_kernels_train rung_kernels_data)
else()
  message(STATUS "rung: test_train_gpu not built (no CPU trainer library rung_kernels_train)")
endif()
