// Start-up of a process that mpirun / srun launched as one rank of several (the mpi backend):
// every rank initialises MPI and takes its place on its machine (placement.h: the CPUs the
// launcher left it, split between the machine's ranks when the launcher did not bind them).
// Ranks > 0 then serve rank 0's engines one after another (config, load, steps, shutdown)
// until rank 0's program exits; rank 0 returns to run the program and ends the job at exit.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "parallel/mpi_process_group.h"

namespace lmrun::parallel {

// The exit code of a worker rank; nullopt on rank 0 and when not launched by MPI.
std::optional<int> run_mpi_worker_if_launched();

// Every rank's "rank R: cpus ... (T threads), pid P, host H" on rank 0 (a collective: all ranks call it,
// rank 0 in its executor, the others when an engine starts). Empty on the other ranks.
std::vector<std::string> gather_rank_descriptions(MpiProcessGroup& group);

}  // namespace lmrun::parallel
