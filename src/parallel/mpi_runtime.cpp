#include "parallel/mpi_runtime.h"

#include <mpi.h>

#include <cstdlib>
#include <mutex>

#include "parallel/mpi_process_group.h"

namespace lmrun::parallel {
namespace {

int env_int(const char* name) {
    const char* text = std::getenv(name);
    return text ? std::atoi(text) : 0;
}

}  // namespace

int mpi_launch_size() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"})
        if (env_int(name) > 1) return env_int(name);
    return 1;
}

bool launched_by_mpi() {
    return mpi_launch_size() > 1;
}

Result<MpiWorld> init_mpi() {
    static std::mutex mutex;
    static MpiWorld world;
    static bool initialized = false;
    std::lock_guard lock(mutex);
    if (initialized) return world;
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return make_error(ErrorKind::Unavailable, "MPI_Init_thread failed");
    if (provided < MPI_THREAD_SERIALIZED)
        return make_error(ErrorKind::Unsupported, "this MPI library does not support MPI_THREAD_SERIALIZED");
    MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world.size);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &world.local_rank);
    MPI_Comm_size(local, &world.local_size);
    MPI_Comm_free(&local);
    initialized = true;
    return world;
}

void finish_mpi_job() {
    mpi_world_group().broadcast(mpi_exit_message());
    MPI_Finalize();
}

}  // namespace lmrun::parallel
