# Helpers shared by every module's CMakeLists.txt (leveldb_test()/ns-3 build_lib() shape).

# Warnings apply to podsim's own targets only, never to the Debian packages' headers.
set(PODSIM_WARNINGS -Wall -Wextra -Werror)

# podsim_add_library(NAME sim SOURCES a.cc b.cc DEPS podsim_x Boost::headers)
# Builds the static library podsim_<NAME>; DEPS are linked PUBLIC so the direction is declared here.
function(podsim_add_library)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS" ${ARGN})
  set(target podsim_${ARG_NAME})
  if(ARG_SOURCES)
    add_library(${target} STATIC ${ARG_SOURCES})
    target_compile_options(${target} PRIVATE ${PODSIM_WARNINGS})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} PUBLIC ${ARG_DEPS})
  else()
    # A module without code yet: the target exists so the layout shows the architecture.
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
  add_library(podsim::${ARG_NAME} ALIAS ${target})
endfunction()

# The tests' own code is compiled at PODSIM_TEST_OPTIMIZATION, whatever the build type: it
# checks the libraries (compiled at the build type's level) and does little work itself, and
# optimizing GoogleTest's assertion macros doubles a test file's compile time (GCC: 6.9 s at
# -O0, 10.0 s at -O1, 13.1 s at -O3 for workloads/inference_schedule_test.cc).
set(PODSIM_TEST_OPTIMIZATION "-O0" CACHE STRING "Optimization flag of the test binaries' own code")

# The third-party headers that every test file parses, compiled once into a precompiled header
# that every test binary reuses: GoogleTest, nlohmann-json, Protobuf's runtime (what the generated
# .pb.h files include), Boost.Graph's adjacency list and the standard containers. Parsing them was
# a quarter of a test file's compile time (GCC, -O0: tests/sweep_cli_test.cc 12.9 s -> 9.6 s).
# The flags must match the tests' (GCC refuses a header made with other -fpic/-fpie or
# optimization settings), hence an executable with the tests' options.
if(PODSIM_BUILD_TESTS)
  add_executable(podsim_test_pch ${PROJECT_SOURCE_DIR}/tests/testing/precompiled_main.cc)
  target_compile_options(podsim_test_pch PRIVATE ${PODSIM_WARNINGS} ${PODSIM_TEST_OPTIMIZATION})
  target_link_libraries(podsim_test_pch PRIVATE GTest::gtest GTest::gmock protobuf::libprotobuf
                        nlohmann_json::nlohmann_json)
  target_precompile_headers(podsim_test_pch PRIVATE
    <gtest/gtest.h> <gmock/gmock.h> <nlohmann/json.hpp> <boost/graph/adjacency_list.hpp>
    <google/protobuf/arena.h> <google/protobuf/generated_message_reflection.h>
    <google/protobuf/generated_message_util.h> <google/protobuf/message.h>
    <google/protobuf/repeated_field.h> <google/protobuf/extension_set.h> <google/protobuf/map.h>
    <google/protobuf/map_entry.h> <google/protobuf/map_field_inl.h>
    <google/protobuf/generated_enum_reflection.h> <google/protobuf/unknown_field_set.h>
    <algorithm> <cstdint> <functional> <map> <memory> <optional> <set> <sstream> <string>
    <string_view> <unordered_map> <vector>)
endif()

# podsim_add_test(NAME sim SOURCES a_test.cc DEPS podsim_sim)
# One GoogleTest binary per module (podsim_<NAME>_test), registered with ctest.
function(podsim_add_test)
  if(NOT PODSIM_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS" ${ARGN})
  set(target podsim_${ARG_NAME}_test)
  add_executable(${target} ${ARG_SOURCES})
  target_compile_options(${target} PRIVATE ${PODSIM_WARNINGS} ${PODSIM_TEST_OPTIMIZATION})
  target_link_libraries(${target} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_precompile_headers(${target} REUSE_FROM podsim_test_pch)
  gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS ${ARG_NAME} ENVIRONMENT "PODSIM_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()

# podsim_add_benchmark(NAME engine SOURCES engine_bench.cc DEPS podsim_sim)
function(podsim_add_benchmark)
  if(NOT PODSIM_BUILD_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS" ${ARGN})
  set(target podsim_${ARG_NAME}_bench)
  add_executable(${target} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/bench/bench_main.cc)
  target_compile_options(${target} PRIVATE ${PODSIM_WARNINGS})
  target_link_libraries(${target} PRIVATE ${ARG_DEPS} podsim_sim benchmark::benchmark)
endfunction()
