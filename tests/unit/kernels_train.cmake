# kernels/train_cpu.c and checkpoint.c: data-parallel ranks against one rank,
# resume against an uninterrupted run, a real Fashion-MNIST subset.
rung_unit_test(test_train test_train.c)
target_link_libraries(test_train PRIVATE rung_kernels_train)
set_tests_properties(test_train PROPERTIES TIMEOUT 600)
# kernels/pool.c: the fork-join pool of a rank's threads (ranges, every
# part once, thousands of jobs, the one-thread case).
rung_unit_test(test_pool test_pool.c)
target_link_libraries(test_pool PRIVATE rung_kernels_train)
# kernels/train_cpu.c over several nodes (train_nodes.c, rendezvous.c): one
# process per node on loopback against one process with as many ranks, a
# resume from node 0's checkpoint, nodes that disagree, a SIGTERM on one
# node, a node that dies.
rung_unit_test(test_train_nodes test_train_nodes.c)
target_link_libraries(test_train_nodes PRIVATE rung_kernels_train)
# kernels/plan.c and data_codebook: the CUDA backend's decisions that need
# no device (buckets, the "auto" batch search, shards, the byte codebook).
rung_unit_test(test_plan test_plan.c)
target_link_libraries(test_plan PRIVATE rung_kernels_train)
# kernels/train_main.c's config parser (compiled into the test, its main
# renamed): every config form, dotted keys, per-layer widths, each error.
rung_unit_test(test_train_config test_train_config.c)
target_sources(test_train_config PRIVATE ${PROJECT_SOURCE_DIR}/kernels/train_gpu.c)
target_link_libraries(test_train_config PRIVATE rung_kernels_train rung_common PkgConfig::JANSSON
                                                ${CMAKE_DL_LIBS})
# kernels/train_gpu.c against the CUDA module where nvcc built one: it loads
# (every library and symbol it needs is there), its version matches, and it
# answers how many GPUs there are (0 here without a driver) without a GPU.
if(TARGET rung-train-cuda)
  rung_unit_test(test_cuda_module test_cuda_module.c)
  target_sources(test_cuda_module PRIVATE ${PROJECT_SOURCE_DIR}/kernels/train_gpu.c)
  target_link_libraries(test_cuda_module PRIVATE rung_kernels_train ${CMAKE_DL_LIBS})
  target_compile_definitions(test_cuda_module PRIVATE
                             RUNG_CUDA_MODULE="$<TARGET_FILE:rung-train-cuda>")
  add_dependencies(test_cuda_module rung-train-cuda)
endif()
