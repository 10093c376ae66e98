# SPDX-License-Identifier: Apache-2.0
# The PostgreSQL ctest fixture (docs/configuration.md, MCPCORE_POSTGRES): a throwaway PostgreSQL 15
# cluster that scripts/pg-test-cluster starts before the tests that require the fixture `mcpcore_pg`
# and removes after them (a unix socket in its own directory, no TCP). One cluster per build tree,
# defined by whichever directory asks first (tests/ or bench/).
#
# mcpcore_pg_fixture(<conninfo-var>): defines the fixture once and sets <conninfo-var> to the
# connection string the tests get as MCPCORE_TEST_PG.
function(mcpcore_pg_fixture out)
  get_property(dir GLOBAL PROPERTY mcpcore_pg_fixture_dir)
  if(NOT dir)
    string(MD5 hash "${CMAKE_BINARY_DIR}")
    string(SUBSTRING "${hash}" 0 12 hash)
    set(dir "/tmp/mcpcore-pg-${hash}")
    set(script "${PROJECT_SOURCE_DIR}/scripts/pg-test-cluster")
    add_test(NAME postgres.cluster_start COMMAND bash ${script} start ${dir})
    set_tests_properties(postgres.cluster_start PROPERTIES FIXTURES_SETUP mcpcore_pg LABELS postgres TIMEOUT 60)
    add_test(NAME postgres.cluster_stop COMMAND bash ${script} stop ${dir})
    set_tests_properties(postgres.cluster_stop PROPERTIES FIXTURES_CLEANUP mcpcore_pg LABELS postgres TIMEOUT 60)
    set_property(GLOBAL PROPERTY mcpcore_pg_fixture_dir "${dir}")
  endif()
  set(${out} "host=${dir} dbname=mcpcore_test user=postgres" PARENT_SCOPE)
endfunction()
