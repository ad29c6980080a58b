#include "cli/task_runner.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>

#include "sim/check.h"

#ifdef PODSIM_WITH_MPI
#include <mpi.h>
#endif

namespace podsim::cli {

namespace {

bool secondary_rank = false;

// Runs the tasks `mine` (indices) on a pool of `threads` and stores each result at its index.
void RunOnThreads(int threads, const std::vector<size_t>& mine,
                  const std::function<std::string(size_t)>& task, std::vector<std::string>* out) {
  const size_t workers = std::max<size_t>(1, std::min<size_t>(threads, mine.size()));
  std::unique_ptr<boost::asio::thread_pool> pool;
  if (workers > 1) {
    try {
      pool = std::make_unique<boost::asio::thread_pool>(workers);
    } catch (const std::system_error&) {
      // The system refuses the threads: the same results, one after the other.
    }
  }
  if (pool == nullptr) {
    for (size_t i : mine) (*out)[i] = task(i);
    return;
  }
  for (size_t i : mine) boost::asio::post(*pool, [&task, out, i] { (*out)[i] = task(i); });
  pool->join();
}

int Cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

class LocalRunner : public TaskRunner {
 public:
  explicit LocalRunner(int threads) : threads_(threads) {}
  std::vector<std::string> Map(size_t n, const std::function<std::string(size_t)>& task) override {
    std::vector<std::string> out(n);
    std::vector<size_t> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = i;
    RunOnThreads(threads_, all, task, &out);
    return out;
  }
  int threads() const override { return threads_; }

 private:
  int threads_;
};

#ifdef PODSIM_WITH_MPI
// MPI_Init once for the process, MPI_Finalize at exit.
void InitMpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  // Only the main thread calls MPI; the pools' threads only simulate.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  std::atexit([] {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
}

class MpiRunner : public TaskRunner {
 public:
  MpiRunner(int ranks, int rank, int threads) : ranks_(ranks), rank_(rank), threads_(threads) {
    // Every rank must run a Map the same way (the dynamic one calls a barrier and the counter):
    // dynamic only when every rank has one thread.
    int one_thread = threads == 1 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &one_thread, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    dynamic_ = one_thread == 1;
    // The next task of a Map, a counter on rank 0 that every rank takes from (one thread per
    // rank: only the main thread calls MPI).
    MPI_Win_allocate(rank == 0 ? sizeof(long long) : 0, sizeof(long long), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &next_, &window_);
  }
  ~MpiRunner() override { MPI_Win_free(&window_); }

  // With one thread per rank, each rank takes the next task from the shared counter as it
  // finishes one, which balances tasks of unequal cost; with several, task i runs on rank
  // i mod ranks, on its threads. Either way every rank gets every result.
  std::vector<std::string> Map(size_t n, const std::function<std::string(size_t)>& task) override {
    std::vector<std::string> out(n);
    std::vector<size_t> mine;
    if (dynamic_) {
      if (rank_ == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, window_);
        *next_ = 0;
        MPI_Win_unlock(0, window_);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      const long long one = 1;
      for (;;) {
        long long taken = 0;
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, window_);
        MPI_Fetch_and_op(&one, &taken, MPI_LONG_LONG, 0, 0, MPI_SUM, window_);
        MPI_Win_unlock(0, window_);
        if (taken >= static_cast<long long>(n)) break;
        const size_t i = static_cast<size_t>(taken);
        out[i] = task(i);
        mine.push_back(i);
      }
    } else {
      for (size_t i = static_cast<size_t>(rank_); i < n; i += static_cast<size_t>(ranks_)) {
        mine.push_back(i);
      }
      RunOnThreads(threads_, mine, task, &out);
    }
    // Each rank's results, as (task, length, bytes), to every rank.
    std::string packed;
    for (size_t i : mine) {
      const uint64_t header[2] = {i, out[i].size()};
      packed.append(reinterpret_cast<const char*>(header), sizeof header);
      packed += out[i];
    }
    for (const std::string& theirs : AllGather(packed)) {
      for (size_t at = 0; at < theirs.size();) {
        uint64_t header[2] = {0, 0};
        std::memcpy(header, theirs.data() + at, sizeof header);
        at += sizeof header;
        out[header[0]] = theirs.substr(at, header[1]);
        at += header[1];
      }
    }
    return out;
  }

  std::vector<std::string> AllGather(const std::string& mine) override {
    // A wave's results are kilobytes; MPI counts are ints.
    PODSIM_CHECK(mine.size() < (size_t{1} << 30)) << "MPI message of " << mine.size() << " bytes";
    const int length = static_cast<int>(mine.size());
    std::vector<int> lengths(ranks_), offsets(ranks_, 0);
    MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 1; r < ranks_; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
    std::string bytes(static_cast<size_t>(offsets[ranks_ - 1] + lengths[ranks_ - 1]), '\0');
    MPI_Allgatherv(mine.data(), length, MPI_CHAR, bytes.data(), lengths.data(), offsets.data(),
                   MPI_CHAR, MPI_COMM_WORLD);
    std::vector<std::string> all;
    for (int r = 0; r < ranks_; ++r) all.push_back(bytes.substr(offsets[r], lengths[r]));
    return all;
  }
  int ranks() const override { return ranks_; }
  int rank() const override { return rank_; }
  int threads() const override { return threads_; }

 private:
  int ranks_;
  int rank_;
  int threads_;
  bool dynamic_ = false;
  long long* next_ = nullptr;
  MPI_Win window_;
};
#endif

}  // namespace

bool StartedByMpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

int LaunchedRanks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* size = std::getenv(name);
    if (size != nullptr) return std::max(1, std::atoi(size));
  }
  return 1;
}

bool IsSecondaryRank() {
  if (secondary_rank) return true;
  // Before (or without) a runner: the launcher says which rank this is.
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    const char* rank = std::getenv(name);
    if (rank != nullptr) return std::atoi(rank) > 0;
  }
  return false;
}

sim::Status CheckJobs(int jobs) {
  if (jobs >= 0) return sim::Status::Ok();
  return sim::Status::InvalidArgument(
      "--jobs: expected a count of simulations at once >= 1, or 0 "
      "for all cores (got " +
      std::to_string(jobs) + ")");
}

sim::StatusOr<std::unique_ptr<TaskRunner>> MakeTaskRunner(int jobs, bool mpi) {
  PODSIM_RETURN_IF_ERROR(CheckJobs(jobs));
  mpi = mpi || StartedByMpirun();
#ifdef PODSIM_WITH_MPI
  if (mpi) {
    InitMpi();
    int ranks = 1, rank = 0, local = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm node;  // The ranks sharing this machine share its cores.
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    const int threads = jobs > 0 ? jobs : std::max(1, Cores() / local);
    secondary_rank = rank != 0;
    return std::unique_ptr<TaskRunner>(new MpiRunner(ranks, rank, threads));
  }
#else
  if (mpi) {
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    return sim::Status::InvalidArgument(
        std::string(size != nullptr ? "started by mpirun with " + std::string(size) + " ranks, "
                                    : "--mpi: ") +
        "but this podsim was built without MPI; configure with cmake -DPODSIM_WITH_MPI=ON");
  }
#endif
  const int threads = jobs > 0 ? jobs : Cores();
  return std::unique_ptr<TaskRunner>(new LocalRunner(threads));
}

}  // namespace podsim::cli
