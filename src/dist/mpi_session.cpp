#include "autohaap/dist/mpi_session.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <thread>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <boost/mpi/collectives/broadcast.hpp>
#include <boost/serialization/string.hpp>

#include "autohaap/error.hpp"
#include "messages.hpp"
#include "mpi_session_impl.hpp"
#include "rank_group.hpp"

namespace autohaap::dist {

bool started_by_mpi_launcher() {
  // Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; srun --mpi=pmix and Open
  // MPI 4 set PMIX_RANK; MPICH's hydra and srun --mpi=pmi2 set PMI_RANK /
  // PMI_SIZE. A plain srun of a non-MPI step sets none of them.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

std::optional<RankFailure> try_step(const std::function<void()>& step, int rank) {
  try {
    step();
    return std::nullopt;
  } catch (const InputError& e) {
    return RankFailure{rank, kExitInvalidInput, e.what()};
  } catch (const std::exception& e) {
    return RankFailure{rank, kExitFailure, e.what()};
  }
}

// --- RankGroup's non-template members ---------------------------------------

double RankGroup::wait_for_all() {
  if (!comm_) return 0.0;
  const auto start = std::chrono::steady_clock::now();
  MPI_Request request;
  MPI_Ibarrier(MPI_Comm(*comm_), &request);
  // Poll with a sleep that grows to 1 ms: short waits stay short, long
  // ones cost next to no CPU.
  auto pause = std::chrono::microseconds(20);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::optional<RankFailure> RankGroup::first_failure(const std::function<void()>& step) {
  std::optional<RankFailure> mine = try_step(step, rank());
  if (!comm_) return mine;
  const int n = size();
  const int first = boost::mpi::all_reduce(*comm_, mine ? rank() : n, boost::mpi::minimum<int>());
  if (first == n) return std::nullopt;
  RankFailure failure = mine ? *mine : RankFailure{};
  broadcast(failure, first);
  return failure;
}

void RankGroup::abort(const std::string& message, int code) {
  if (!comm_) throw std::runtime_error(message);
  std::cerr << "error: " << message << std::endl;
  MPI_Abort(MPI_Comm(*comm_), code);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

// --- MpiSession ---------------------------------------------------------------

MpiSession::MpiSession() : impl_(std::make_unique<Impl>()) {}

MpiSession::~MpiSession() {
  // An exception leaving the session's scope means some collective may be
  // half done on this rank; finalizing would leave the peers waiting.
  if (std::uncaught_exceptions() > 0) {
    std::cerr << "error: rank " << rank() << " stopped on an unexpected exception; ending the job" << std::endl;
    MPI_Abort(MPI_COMM_WORLD, kExitFailure);
  }
}

int MpiSession::rank() const { return impl_->world.rank(); }
int MpiSession::size() const { return impl_->world.size(); }

std::optional<RankFailure> MpiSession::first_failure(const std::function<void()>& step) {
  RankGroup group(impl_->world);
  return group.first_failure(step);
}

void MpiSession::abort(const std::string& message, int code) {
  RankGroup group(impl_->world);
  group.abort(message, code);
}

}  // namespace autohaap::dist
