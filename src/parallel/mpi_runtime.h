// MPI for the mpi backend: whether mpirun / srun launched this process as one of several
// ranks, MPI_Init (once per process, MPI_THREAD_SERIALIZED: the server's engine thread makes
// the calls, not the thread that initialised), the world's shape, and the end of the job:
// rank 0 tells the worker ranks to exit and finalises when its program exits.
#pragma once

#include "core/result.h"

namespace lmrun::parallel {

struct MpiWorld {
    int rank = 0;
    int size = 1;
    int local_rank = 0;  // among the ranks of this machine
    int local_size = 1;
};

// mpirun (OMPI_COMM_WORLD_SIZE), MPICH/Slurm PMI (PMI_SIZE) or srun (SLURM_STEP_NUM_TASKS)
// started this process as one of more than one rank.
bool launched_by_mpi();
// The number of ranks the launcher started (1 when not launched by MPI), before MPI_Init.
int mpi_launch_size();
// Initialises MPI the first time; the world afterwards.
Result<MpiWorld> init_mpi();
// Rank 0, at exit: the worker ranks leave their loop, then MPI_Finalize.
void finish_mpi_job();

}  // namespace lmrun::parallel
