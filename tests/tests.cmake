# All tests run through ctest, so one command gives one summary line:
#   tests/c/test_*.c      C unit tests on cmocka, linked against pscore (no Lua)
#   tests/lua/test_*.lua  luaunit suites run by perfscript itself
#   tests/cli/test_*.sh   end-to-end tests of the binary and the recipes
set(PS_TEST_ENV
  "PERFSCRIPT=$<TARGET_FILE:perfscript>"
  "PERFSCRIPT_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
  "PERFSCRIPT_LUA_DIR=${CMAKE_SOURCE_DIR}/lua"
  "PERFSCRIPT_TEST_TMP=${CMAKE_BINARY_DIR}/test-tmp"
  "ASAN_OPTIONS=detect_leaks=1"
  "HOME=${CMAKE_BINARY_DIR}/test-home")
file(MAKE_DIRECTORY "${CMAKE_BINARY_DIR}/test-tmp" "${CMAKE_BINARY_DIR}/test-home")

if(CMOCKA_FOUND)
  file(GLOB C_TESTS CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/tests/c/test_*.c")
  foreach(src IN LISTS C_TESTS)
    get_filename_component(name "${src}" NAME_WE)
    add_executable(${name} "${src}")
    target_include_directories(${name} PRIVATE ${CMOCKA_INCLUDE_DIRS} src)
    target_link_libraries(${name} PRIVATE pscore ${CMOCKA_LIBRARIES})
    add_test(NAME c/${name} COMMAND ${name})
    set_tests_properties(c/${name} PROPERTIES ENVIRONMENT "${PS_TEST_ENV}")
  endforeach()
else()
  message(WARNING "cmocka not found: C unit tests are not built (apt-get install libcmocka-dev)")
endif()

file(GLOB LUA_TESTS CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/tests/lua/test_*.lua")
foreach(src IN LISTS LUA_TESTS)
  get_filename_component(name "${src}" NAME_WE)
  add_test(NAME lua/${name} COMMAND perfscript "${src}" -o text
           WORKING_DIRECTORY "${CMAKE_SOURCE_DIR}")
  set_tests_properties(lua/${name} PROPERTIES ENVIRONMENT "${PS_TEST_ENV}")
endforeach()

file(GLOB CLI_TESTS CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/tests/cli/test_*.sh")
foreach(src IN LISTS CLI_TESTS)
  get_filename_component(name "${src}" NAME_WE)
  add_test(NAME cli/${name} COMMAND bash "${src}" WORKING_DIRECTORY "${CMAKE_SOURCE_DIR}")
  set_tests_properties(cli/${name} PROPERTIES ENVIRONMENT "${PS_TEST_ENV}" SKIP_RETURN_CODE 77)
endforeach()

# Benchmarks are built on demand (cmake --build build --target bench_csv), never run as tests.
add_executable(bench_csv EXCLUDE_FROM_ALL "${CMAKE_SOURCE_DIR}/tests/bench/bench_csv.c")
target_link_libraries(bench_csv PRIVATE pscore)
