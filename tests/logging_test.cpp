#include "core/logging.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "test_util.h"

namespace lmrun {
namespace {

// A logged message quoting request text keeps every byte, NULs included (issue 10, item 9).
TEST(Logging, LinesKeepBytesAfterANul) {
    const std::string path = testing::make_temp_dir("logging_test") + "/stderr.txt";
    std::fflush(stderr);
    const int saved = dup(fileno(stderr));
    ASSERT_TRUE(std::freopen(path.c_str(), "w", stderr));
    log_line(LogLevel::Error, std::string("model `a\0b` not found", 21));
    std::fflush(stderr);
    dup2(saved, fileno(stderr));
    close(saved);
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), std::string("lmrun ERROR model `a\0b` not found\n", 34));
}

}  // namespace
}  // namespace lmrun
