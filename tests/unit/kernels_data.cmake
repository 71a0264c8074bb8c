# kernels/data.c: IDX (plain and gzip) and CSV loading and their errors,
# Fashion-MNIST from the Debian package, epoch orders, rank shards, the
# validation split and normalization.
rung_unit_test(test_data test_data.c)
target_link_libraries(test_data PRIVATE rung_kernels_data)
