#include "router/worker_list.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace lmrun::router {

Result<std::string> parse_worker_url(const std::string& text, const std::string& source) {
    std::string url = text;
    while (!url.empty() &&
           (url.back() == '/' || url.back() == ' ' || url.back() == '\t' || url.back() == '\r'))
        url.pop_back();
    size_t start = url.find_first_not_of(" \t");
    url = start == std::string::npos ? std::string() : url.substr(start);
    const size_t scheme = url.rfind("http://", 0) == 0 ? 7 : url.rfind("https://", 0) == 0 ? 8 : 0;
    if (scheme == 0)
        return make_error("{}: a worker URL must start with http:// or https://, got \"{}\"", source, text);
    const std::string authority = url.substr(scheme);
    if (authority.empty() || authority.find('/') != std::string::npos ||
        std::any_of(authority.begin(), authority.end(),
                    [](unsigned char c) { return c <= ' ' || c == 0x7f; }))
        return make_error("{}: a worker URL is http(s)://host:port without a path, got \"{}\"", source, text);
    return url;
}

Result<std::vector<std::string>> parse_worker_list(const std::string& text, const std::string& file_name) {
    std::vector<std::string> urls;
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
        const size_t first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '#') continue;
        LMRUN_ASSIGN_OR_RETURN(std::string url,
                               parse_worker_url(line, file_name + ":" + std::to_string(number)));
        if (std::find(urls.begin(), urls.end(), url) == urls.end()) urls.push_back(std::move(url));
    }
    return urls;
}

Result<std::vector<std::string>> read_worker_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return make_error(ErrorKind::NotFound, "{}: cannot open the worker file", path);
    std::stringstream text;
    text << in.rdbuf();
    return parse_worker_list(text.str(), path);
}

}  // namespace lmrun::router
