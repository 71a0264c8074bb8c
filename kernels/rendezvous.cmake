# kernels/rendezvous.c: the TCP rendezvous of a multi-node run and its
# collectives (docs/trainer.md, "Multi-node training"). Plain sockets, no
# NCCL, so that the CPU tests exercise it; the CPU trainer, the CUDA backend
# and rung-train link it.
add_library(rung_kernels_rdzv STATIC ${CMAKE_CURRENT_SOURCE_DIR}/rendezvous.c)
target_include_directories(rung_kernels_rdzv PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(rung_kernels_rdzv PUBLIC Threads::Threads ${MATH_LIB})
