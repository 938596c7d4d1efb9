// Stop signals: SIGINT and SIGTERM (Ctrl-C, scancel, a Slurm time limit)
// ask a long command to stop cleanly — a search keeps its best plan so far,
// a batch records what it finished — instead of killing the process. The
// commands that can stop cleanly (search, batch) call
// install_stop_signals() once, first thing, and hand the flag it returns to
// the library as their `cancel`; no other code installs handlers.
//
// SIGPIPE is ignored as well: when mpirun is killed, the ranks' standard
// output goes nowhere, and the plan file (-o) must still be written.
//
// The handler only stores to a lock-free atomic (async-signal-safe). Calling
// it again returns the same flag. Call from the main thread.
#pragma once

#include <atomic>

namespace autohaap::cli {

const std::atomic<bool>& install_stop_signals();

}  // namespace autohaap::cli
