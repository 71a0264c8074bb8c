# Read by cpack when it makes the packages (CPACK_PROJECT_CONFIG_FILE,
# cmake/package.cmake): the package version becomes the programs' version.
#
# cpack reads this file first and builds the programs after (its
# "preinstall" step), so the programs may not be up to date yet: a commit
# since the last build changes their version. So common/version.c is
# brought up to date first, by the same script as in the build
# (cmake/version.cmake, which leaves the file alone when the version did not
# change), and the version is read from it; the programs that cpack then
# builds and packs print the same one.
execute_process(COMMAND "${CPACK_RUNG_CMAKE}" -DBASE=${CPACK_RUNG_VERSION_BASE}
                        -DSRC=${CPACK_RUNG_SOURCE_DIR} -DOUT=${CPACK_RUNG_VERSION_C}
                        -P ${CPACK_RUNG_SOURCE_DIR}/cmake/version.cmake
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT EXISTS "${CPACK_RUNG_VERSION_C}")
  message(FATAL_ERROR "cannot write ${CPACK_RUNG_VERSION_C} (cmake/version.cmake): ${rc}")
endif()
file(READ "${CPACK_RUNG_VERSION_C}" rung_version_c)
if(NOT rung_version_c MATCHES "rung_version\\[\\] = \"([^\"]+)\"")
  message(FATAL_ERROR "no version in ${CPACK_RUNG_VERSION_C}")
endif()
set(CPACK_PACKAGE_VERSION "${CMAKE_MATCH_1}")
