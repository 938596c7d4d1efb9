// What an MpiSession holds: Boost.MPI's environment (MPI_Init_thread /
// MPI_Finalize) and the world communicator. Private to src/dist.
#pragma once

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include "autohaap/dist/mpi_session.hpp"

namespace autohaap::dist {

struct MpiSession::Impl {
  // Not Boost's abort-on-exception (exit code -1): MpiSession's destructor
  // aborts with its own code and the environment finalizes otherwise.
  boost::mpi::environment environment{boost::mpi::threading::funneled, false};
  boost::mpi::communicator world;
};

}  // namespace autohaap::dist
