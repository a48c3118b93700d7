# The libraries lmrun's parsing code needs (JSON, formatting, threads, PCRE2 regexes, ICU
# Unicode, xxHash): looked up here once, for the engine library (CMakeLists.txt) and for the
# fuzz build (tests/fuzz/fuzz.cmake), which builds only that code. The targets to link are
# in LMRUN_PARSING_LIBRARIES.
find_package(PkgConfig REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(ICU REQUIRED IMPORTED_TARGET icu-uc)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)

set(LMRUN_PARSING_LIBRARIES
    nlohmann_json::nlohmann_json fmt::fmt Threads::Threads PkgConfig::PCRE2 PkgConfig::ICU PkgConfig::XXHASH)
