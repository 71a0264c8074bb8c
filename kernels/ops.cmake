# The CPU operations (ops_cpu.c) and the OpenBLAS kernel pick and check
# (blas.c): the library that the CPU trainer and the tests link.
#
# OpenBLAS's own cblas.h (it declares openblas_get_corename and
# openblas_set_num_threads); HINTS come before the system path, whose cblas.h
# is a Debian alternative that may be netlib's. The pthread variant is the
# one installed and linked here.
find_path(OPENBLAS_INCLUDE cblas.h
  HINTS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas
  REQUIRED)

add_library(rung_kernels_ops STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/ops_cpu.c
  ${CMAKE_CURRENT_SOURCE_DIR}/blas.c)
target_include_directories(rung_kernels_ops
  PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}
  PRIVATE ${OPENBLAS_INCLUDE})
# PUBLIC rung_common_headers: ops_math.h, which the tests include too, builds
# its dropout hash on common/splitmix.h.
target_link_libraries(rung_kernels_ops PUBLIC ${OPENBLAS_LIB} ${MATH_LIB} rung_common_headers)
# -O3 outside Debug: GCC's -O2 cost model ("very cheap") does not vectorize
# loops of unknown length, which every element-wise pass here is.
# -fno-math-errno lets sqrtf (AdamW) and expf compile to plain instructions;
# nothing reads errno after them.
target_compile_options(rung_kernels_ops PRIVATE
  $<$<NOT:$<CONFIG:Debug>>:-O3>
  -fno-math-errno)
