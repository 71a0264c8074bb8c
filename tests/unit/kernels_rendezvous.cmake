# kernels/rendezvous.c: four real processes on loopback exchange a payload
# and run every collective; missing, late, duplicate and misconfigured ranks,
# stray connections, failures after the join, and deadlines.
rung_unit_test(test_rendezvous test_rendezvous.c)
target_link_libraries(test_rendezvous PRIVATE rung_kernels_rdzv ${MATH_LIB})
