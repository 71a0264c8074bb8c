# kernels/ops_cpu.c and blas.c: every op against a double-precision reference
# (one table, an error budget per case), dropout's mask properties, backward
# against central finite differences, and the BLAS kernel check.
rung_unit_test(test_ops test_ops.c)
target_link_libraries(test_ops PRIVATE rung_kernels_ops rung_common ${MATH_LIB})
