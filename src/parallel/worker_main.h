// The entry of a worker rank. A process is a worker when
//   - rank 0 of the mp backend started it as `EXECUTABLE worker --rank R --size N
//     --group-fd FD --parent PID` (worker_processes.h), or
//   - mpirun / srun started it as rank > 0 of an MPI job (the mpi backend): it then serves
//     rank 0's engines one after the other until rank 0 exits.
// Every program that may create a tensor-parallel engine calls run_worker_if_requested()
// first thing in main() (lmrun and the test binary do), as Python programs guard
// multiprocessing with `if __name__ == "__main__"`.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace lmrun::parallel {

// Runs this process as a worker rank if it was started as one and returns its exit code;
// nullopt for a normal start (or MPI rank 0, which goes on to run the program).
std::optional<int> run_worker_if_requested(int argc, char** argv);

// The command line of an mp worker (argv[0] first).
std::vector<std::string> worker_arguments(const std::string& executable, int rank, int size, int group_fd,
                                          pid_t parent_pid);

}  // namespace lmrun::parallel
