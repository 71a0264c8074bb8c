# The CPU trainer, checkpoints, the multi-node pieces both backends share
# (train_nodes.c, over the rendezvous), the CUDA backend's device-free plan
# (plan.c: buckets, the "auto" batch search, shards) and the rung-train
# program. The CUDA backend (cuda/cuda.cmake) is linked when it was built;
# otherwise a stub says there is no GPU.
add_library(rung_kernels_train STATIC ${CMAKE_CURRENT_SOURCE_DIR}/train_cpu.c
                                      ${CMAKE_CURRENT_SOURCE_DIR}/train_nodes.c
                                      ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint.c
                                      ${CMAKE_CURRENT_SOURCE_DIR}/plan.c)
target_include_directories(rung_kernels_train PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(rung_kernels_train PUBLIC rung_kernels_ops rung_kernels_data
                      rung_kernels_rdzv ZLIB::ZLIB Threads::Threads ${MATH_LIB})

add_executable(rung-train ${CMAKE_CURRENT_SOURCE_DIR}/train_main.c)
if(TARGET rung_kernels_cuda)
  target_link_libraries(rung-train PRIVATE rung_kernels_cuda)
else()
  target_sources(rung-train PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/train_nocuda.c)
endif()
# rung_common: the command line's option table (common/options.h).
target_link_libraries(rung-train PRIVATE rung_kernels_train rung_common PkgConfig::JANSSON)
