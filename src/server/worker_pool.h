// WorkerPool: the threads that run the endpoints' CPU work (parse and validate bodies,
// tokenize, render chat templates, build JSON responses), off the HTTP I/O threads, so a
// long tokenization never delays /health or another connection's bytes. Tasks run in
// the order posted. stop() runs what is queued, then joins; later posts are dropped.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lmrun::server {

class WorkerPool {
  public:
    explicit WorkerPool(int num_threads);
    ~WorkerPool();

    // False (and the task is dropped) once stop() has begun.
    bool post(std::function<void()> task);
    void stop();

  private:
    void run();

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace lmrun::server
