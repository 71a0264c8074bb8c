# kernels/data.c: IDX and CSV loaders (through zlib), the validation split,
# normalization and the per-epoch, per-rank sample order.
add_library(rung_kernels_data STATIC ${CMAKE_CURRENT_SOURCE_DIR}/data.c)
target_include_directories(rung_kernels_data PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
# rung_common_headers: common/splitmix.h, the generator of the sample orders.
target_link_libraries(rung_kernels_data PUBLIC ZLIB::ZLIB ${MATH_LIB} PRIVATE rung_common_headers)
