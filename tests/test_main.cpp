// The test binary's main: GoogleTest, unless this process was started as a tensor-parallel
// worker rank (the mp backend re-runs this executable as `lmrun_tests worker ...`; under
// mpirun every rank but 0 serves rank 0's engines), exactly as lmrun's own main does.
#include <gtest/gtest.h>

#include "parallel/worker_main.h"

int main(int argc, char** argv) {
    if (std::optional<int> worker_exit_code = lmrun::parallel::run_worker_if_requested(argc, argv))
        return *worker_exit_code;
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
