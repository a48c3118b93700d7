// TokenMap: open-addressing string -> id lookup.
#include "tokenizer/token_map.h"

#include <gtest/gtest.h>

namespace lmrun {
namespace {

TEST(TokenMap, FindsEveryPresentToken) {
    std::vector<std::string> tokens;
    std::vector<bool> present;
    for (int i = 0; i < 5000; ++i) {
        tokens.push_back("tok" + std::to_string(i));
        present.push_back(i % 7 != 3);
    }
    TokenMap map;
    map.build(tokens, present);
    for (int i = 0; i < 5000; ++i) {
        if (present[i]) {
            EXPECT_EQ(map.find(tokens[i]), i);
        } else {
            EXPECT_FALSE(map.find(tokens[i]).has_value());
        }
    }
    EXPECT_FALSE(map.find("missing").has_value());
    EXPECT_FALSE(map.find("").has_value());
}

TEST(TokenMap, EmptyMap) {
    TokenMap map;
    EXPECT_FALSE(map.find("a").has_value());
}

}  // namespace
}  // namespace lmrun
