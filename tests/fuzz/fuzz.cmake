# libFuzzer targets (tests/fuzz/*_fuzz.cpp) for everything lmrun parses from untrusted
# input: safetensors headers, config.json, tokenizer.json (and encoding with a real
# tokenizer), Jinja chat templates and OpenAI request bodies. Included by the top-level
# CMakeLists.txt when LMRUN_FUZZ is ON, in a build directory of its own with clang:
#   cmake -S . -B build-fuzz -G Ninja -DLMRUN_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-16
# scripts/fuzz.sh builds and runs them. Only the parsing code is built (no kernels, no
# OpenMP or oneDNN), instrumented with -fsanitize=fuzzer-no-link,address,undefined.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "LMRUN_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++-16")
endif()

include(cmake/parsing_dependencies.cmake)

# -O1 -g1 (after the build type's flags, so they win): the sanitizers' recommended level, with
# line tables for their reports, at half the compile time of -O2 -g.
set(LMRUN_FUZZ_FLAGS -O1 -g1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)

# What the targets parse with: core, the tokenizer and templates, the checkpoint readers,
# and the request parser with SamplingParams. Globbed like the engine library, minus the
# few files that need OpenMP or the kernels.
file(GLOB LMRUN_FUZZ_SOURCES CONFIGURE_DEPENDS src/core/*.cpp)
list(FILTER LMRUN_FUZZ_SOURCES EXCLUDE REGEX "src/core/(parallel|op_profiler)\\.cpp$")
file(GLOB_RECURSE LMRUN_FUZZ_TOKENIZER_SOURCES CONFIGURE_DEPENDS src/tokenizer/*.cpp)
list(APPEND LMRUN_FUZZ_SOURCES ${LMRUN_FUZZ_TOKENIZER_SOURCES}
     src/model/config.cpp src/model/config_limits.cpp src/model/quantization_config.cpp
     src/model/safetensors.cpp src/model/safetensors_writer.cpp
     src/model/checkpoint.cpp src/engine/sampling_params.cpp
     src/server/openai_request.cpp src/server/request_fields.cpp src/server/api_error.cpp
     src/server/tool_request.cpp src/server/structured_output_fields.cpp)
# The request parser reads tools and structured outputs (schemas, grammars) into their params.
file(GLOB LMRUN_FUZZ_STRUCTURED_SOURCES CONFIGURE_DEPENDS src/structured/*.cpp)
list(APPEND LMRUN_FUZZ_SOURCES ${LMRUN_FUZZ_STRUCTURED_SOURCES})

add_library(lmrun_fuzz_lib STATIC ${LMRUN_FUZZ_SOURCES})
# In unity batches: src/ compiles that way (the lint stage checks it), and it halves this build.
set_target_properties(lmrun_fuzz_lib PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
target_include_directories(lmrun_fuzz_lib PUBLIC src)
target_compile_options(lmrun_fuzz_lib PUBLIC ${LMRUN_FUZZ_FLAGS} PRIVATE -fsanitize=fuzzer-no-link)
target_link_options(lmrun_fuzz_lib PUBLIC -fsanitize=address,undefined)
target_link_libraries(lmrun_fuzz_lib PUBLIC ${LMRUN_PARSING_LIBRARIES})
# The encode half of the tokenizer target loads the real tokenizers from the test data.
target_compile_definitions(lmrun_fuzz_lib PUBLIC
    LMRUN_TESTDATA_DIR="${CMAKE_SOURCE_DIR}/../shared/testdata")

file(GLOB LMRUN_FUZZ_TARGETS CONFIGURE_DEPENDS tests/fuzz/*_fuzz.cpp)
foreach(target_source ${LMRUN_FUZZ_TARGETS})
    get_filename_component(target_name ${target_source} NAME_WE)
    add_executable(${target_name} ${target_source} tests/fuzz/fuzz_util.cpp)
    target_include_directories(${target_name} PRIVATE tests/fuzz)
    target_compile_options(${target_name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${target_name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${target_name} PRIVATE lmrun_fuzz_lib)
endforeach()

# Writes seed corpora from ../shared/testdata (never copied into the repository).
add_executable(make_fuzz_seeds tests/fuzz/make_fuzz_seeds.cpp tests/fuzz/fuzz_util.cpp)
target_include_directories(make_fuzz_seeds PRIVATE tests/fuzz)
target_link_libraries(make_fuzz_seeds PRIVATE lmrun_fuzz_lib)
