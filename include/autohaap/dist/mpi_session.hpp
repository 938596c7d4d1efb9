// MpiSession: MPI for the lifetime of one command, and the one way ranks
// agree that a step succeeded everywhere before they go on.
//
// MPI is started only when a launcher started this process
// (started_by_mpi_launcher: mpirun / mpiexec of Open MPI or MPICH, srun
// with PMI or PMIx), so a plain run on a login node never loads or
// initializes MPI. The session asks for MPI_THREAD_FUNNELED: only the
// thread that built the session calls MPI; search worker threads never do.
//
// Failure rules, so a job never hangs on one broken rank:
//  - first_failure(step) is collective: every rank runs `step`, then all
//    learn the failure of the lowest failing rank (exit code 2 for
//    InputError, 1 otherwise, and its message), or that none failed. Use it
//    around anything that may fail on some ranks only (loading inputs).
//  - abort(message, code) prints the message once on stderr and ends every
//    rank of the job (MPI_Abort): for errors in the middle of a collective,
//    where peers could otherwise wait for ever.
//  - the destructor finalizes MPI, except while an exception is unwinding
//    the stack: then it aborts the job with exit code 1 instead.
//
// One session per process, built and used on one thread. Cost: MPI start-up
// (tens of milliseconds); first_failure is one all-reduce of an int plus,
// on failure, one broadcast of the message.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "autohaap/search/search_synchronizer.hpp"

namespace autohaap::dist {

// True when the environment shows a parallel launcher started this process
// (Open MPI's OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, PMI's PMI_RANK /
// PMI_SIZE). Reads the environment only; safe anywhere.
bool started_by_mpi_launcher();

// Why a step failed, and on which rank.
using RankFailure = SearchFailure;

// Runs `step`, turning an exception into a failure (InputError: exit code
// 2; any other std::exception: 1). For one process, and used by the
// session for each rank.
std::optional<RankFailure> try_step(const std::function<void()>& step, int rank = 0);

class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const;
  int size() const;

  // Collective: see the opening comment.
  std::optional<RankFailure> first_failure(const std::function<void()>& step);

  // Prints "error: <message>" on stderr and ends the whole job with `code`.
  [[noreturn]] void abort(const std::string& message, int code);

  // The communicator, for the distributed layer's own code (src/dist).
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace autohaap::dist
