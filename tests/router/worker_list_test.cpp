#include "router/worker_list.h"

#include <gtest/gtest.h>

namespace lmrun::router {
namespace {

TEST(WorkerList, NormalizesUrls) {
    EXPECT_EQ(parse_worker_url("http://127.0.0.1:8000/", "--worker").value(), "http://127.0.0.1:8000");
    EXPECT_EQ(parse_worker_url("  https://gpu-3:443 ", "--worker").value(), "https://gpu-3:443");
}

TEST(WorkerList, RefusesWhatIsNotAWorkerUrl) {
    for (const char* bad : {"127.0.0.1:8000", "ftp://a:1", "http://", "http://a:1/v1", "http://a b:1"}) {
        Result<std::string> url = parse_worker_url(bad, "--worker");
        ASSERT_FALSE(url.ok()) << bad;
        EXPECT_NE(url.error().message.find("--worker"), std::string::npos);
    }
}

TEST(WorkerList, FileSkipsCommentsAndDuplicatesAndNamesTheBadLine) {
    auto urls = parse_worker_list("# workers\nhttp://a:1\n\n  http://b:2/\nhttp://a:1\n", "workers.txt");
    ASSERT_TRUE(urls.ok());
    EXPECT_EQ(*urls, (std::vector<std::string>{"http://a:1", "http://b:2"}));
    auto bad = parse_worker_list("http://a:1\nnot a url\n", "workers.txt");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("workers.txt:2"), std::string::npos) << bad.error().message;
    EXPECT_EQ(read_worker_file("/nonexistent/workers.txt").error().kind, ErrorKind::NotFound);
}

}  // namespace
}  // namespace lmrun::router
