// The MPI session of the distributed-layer test program (mpi_test_main.cpp).
#pragma once

#include "autohaap/dist/mpi_session.hpp"

namespace autohaap::dist::testing {

extern MpiSession* g_session;

}  // namespace autohaap::dist::testing
