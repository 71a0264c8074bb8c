# kernels/train_cpu.c and checkpoint.c: data-parallel ranks against one rank,
# resume against an uninterrupted run, a real Fashion-MNIST subset.
rung_unit_test(test_train test_train.c)
target_link_libraries(test_train PRIVATE rung_kernels_train)
set_tests_properties(test_train PROPERTIES TIMEOUT 600)
