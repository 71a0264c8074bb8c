# A real PostgreSQL for the tests of label `postgres` (cluster.sh): started
# before the first of them (a ctest fixture) and stopped after the last. Its
# folder is under /tmp, named after this build folder, so that the
# unprivileged user that runs it can reach it wherever the build is.
string(MD5 RUNG_PG_HASH "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${RUNG_PG_HASH}" 0 12 RUNG_PG_HASH)
set(RUNG_PG_DIR /tmp/rung-pg-${RUNG_PG_HASH})
add_test(NAME postgres_start COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cluster.sh start ${RUNG_PG_DIR})
add_test(NAME postgres_stop COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cluster.sh stop ${RUNG_PG_DIR})
set_tests_properties(postgres_start PROPERTIES FIXTURES_SETUP postgres LABELS postgres TIMEOUT 60)
set_tests_properties(postgres_stop PROPERTIES FIXTURES_CLEANUP postgres LABELS postgres TIMEOUT 60)

# A test that needs it: rung_postgres_test(NAME) adds the fixture and
# RUNG_TEST_PG, the path of the file with its libpq connection string.
function(rung_postgres_test name)
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED postgres
                       ENVIRONMENT "RUNG_TEST_PG=${RUNG_PG_DIR}/conninfo")
  set_property(TEST ${name} APPEND PROPERTY LABELS postgres)
endfunction()
