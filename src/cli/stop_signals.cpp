#include "stop_signals.hpp"

#include <csignal>

namespace autohaap::cli {
namespace {

std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "a signal handler may only touch lock-free atomics");

extern "C" void on_stop_signal(int) { g_stop_requested.store(true); }

}  // namespace

const std::atomic<bool>& install_stop_signals() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  // A closed standard output (the launcher that relayed it is gone, a
  // pipe's reader quit) must not kill the process before it writes its
  // files: writes to it fail quietly instead.
  std::signal(SIGPIPE, SIG_IGN);
  return g_stop_requested;
}

}  // namespace autohaap::cli
