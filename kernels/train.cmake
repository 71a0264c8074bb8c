# The CPU trainer, checkpoints, the multi-node pieces both backends share
# (train_nodes.c, over the rendezvous), the CUDA backend's device-free plan
# (plan.c: buckets, the "auto" batch search, shards) and the rung-train
# program. The CUDA backend (cuda/cuda.cmake) is linked when it was built;
# otherwise a stub says there is no GPU.
add_library(rung_kernels_train STATIC ${CMAKE_CURRENT_SOURCE_DIR}/train_cpu.c
                                      ${CMAKE_CURRENT_SOURCE_DIR}/pool.c
                                      ${CMAKE_CURRENT_SOURCE_DIR}/train_nodes.c
                                      ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint.c
                                      ${CMAKE_CURRENT_SOURCE_DIR}/plan.c)
target_include_directories(rung_kernels_train PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
# The CUDA module (cuda/cuda.cmake) links these into a shared object.
set_target_properties(rung_kernels_train rung_kernels_ops rung_kernels_data rung_kernels_rdzv
                      PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_link_libraries(rung_kernels_train PUBLIC rung_kernels_ops rung_kernels_data
                      rung_kernels_rdzv ZLIB::ZLIB Threads::Threads ${MATH_LIB})

# rung-train loads the CUDA backend, the module librung-train-cuda.so
# (cuda/cuda.cmake), only where a GPU may be (train_gpu.c). Without nvcc
# there is no module, and no GPU.
add_executable(rung-train ${CMAKE_CURRENT_SOURCE_DIR}/train_main.c
                          ${CMAKE_CURRENT_SOURCE_DIR}/train_gpu.c)
if(TARGET rung-train-cuda)
  add_dependencies(rung-train rung-train-cuda)
endif()
# rung_common: the command line's option table (common/options.h).
target_link_libraries(rung-train PRIVATE rung_kernels_train rung_common PkgConfig::JANSSON
                                         ${CMAKE_DL_LIBS})
