// Independent tasks run side by side, their results gathered in task order: on this process's
// threads, or, in a build with MPI (cmake -DPODSIM_WITH_MPI=ON) started by mpirun or with --mpi,
// spread over the MPI ranks -- with one thread per rank (the default when the ranks fill the
// machine) each takes the next task from a counter on rank 0 as it finishes one, otherwise rank
// r runs tasks r, r + ranks, ... on its threads -- and every rank receives every result
// (MPI_Allgatherv), so that all ranks take the same decisions from them and rank 0 alone
// prints. Results travel as strings: the task serialises what it returns.

#ifndef PODSIM_CLI_TASK_RUNNER_H_
#define PODSIM_CLI_TASK_RUNNER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/status.h"

namespace podsim::cli {

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // Runs task(i) for every i < n (each on one thread, any order) and returns the results in
  // task order. The tasks must not throw; they run concurrently (one after the other where the
  // system refuses the threads: the same results).
  virtual std::vector<std::string> Map(size_t n,
                                       const std::function<std::string(size_t)>& task) = 0;
  // Every process's `mine`, in rank order (this process's alone without MPI).
  virtual std::vector<std::string> AllGather(const std::string& mine) { return {mine}; }
  // Processes the tasks are spread over (1 without MPI) and this one's index.
  virtual int ranks() const { return 1; }
  virtual int rank() const { return 0; }
  // Threads each process runs its tasks on.
  virtual int threads() const = 0;
};

// OK for a --jobs value MakeTaskRunner takes: 0 or more.
sim::Status CheckJobs(int jobs);

// `jobs` threads (0: this process's share of the machine's cores). With `mpi` or when started by
// mpirun: the MPI ranks (InvalidArgument in a build without MPI).
sim::StatusOr<std::unique_ptr<TaskRunner>> MakeTaskRunner(int jobs, bool mpi);

// Whether this process was started by mpirun (Open MPI's or a PMI launcher's environment), and
// how many ranks the launcher started (1 when none).
bool StartedByMpirun();
int LaunchedRanks();

// True on the MPI ranks other than 0 (by the runner, or before one by the launcher's
// environment): they print nothing, neither results nor errors (rank 0 prints the same error).
bool IsSecondaryRank();

}  // namespace podsim::cli

#endif  // PODSIM_CLI_TASK_RUNNER_H_
