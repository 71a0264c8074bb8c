# The report line parser (reportline.c) as its own small library, so that the
# unit test and the fuzz target link exactly what rung-worker links. Included
# from worker/CMakeLists.txt and by the tests that need it; the first include
# defines the target and the others return here.
if(TARGET rung_reportline)
  return()
endif()
add_library(rung_reportline STATIC ${CMAKE_CURRENT_LIST_DIR}/reportline.c)
target_include_directories(rung_reportline PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(rung_reportline PUBLIC rung_common PkgConfig::JANSSON)
