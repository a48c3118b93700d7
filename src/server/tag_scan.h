// Scanning generated text for tags (<think>, <tool_call>, ...) that stream chunks may split:
// the reasoning and tool-call parsers hold back what may be the start of a tag.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace lmrun::server {

// Whitespace around tags as chat templates and models write it.
inline bool is_tag_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// Length of the longest suffix of `text` that is a proper prefix of `tag`: the bytes to hold
// back, since the next chunk may complete the tag.
inline size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
    for (size_t length = std::min(text.size(), tag.size() - 1); length > 0; --length) {
        if (text.substr(text.size() - length) == tag.substr(0, length)) return length;
    }
    return 0;
}

}  // namespace lmrun::server
