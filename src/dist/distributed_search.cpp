#include "autohaap/dist/distributed_search.hpp"

#include <cmath>
#include <utility>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/dist/checkpoint.hpp"
#include "mpi_session_impl.hpp"
#include "mpi_synchronizer.hpp"
#include "rank_group.hpp"

namespace autohaap::dist {

void validate(const DistributedSettings& settings, const SearchSettings& search) {
  autohaap::validate(SearchConfig{search, settings});
}

DistributedResult run_distributed_search(const Problem& problem, const DistributedOptions& options,
                                         MpiSession* mpi) {
  // A job of one rank has no one to exchange with: it runs as one process.
  RankGroup group = mpi && mpi->size() > 1 ? RankGroup(mpi->impl().world) : RankGroup();
  const SearchOptions& search = options.search;
  const CostModel cost(problem);
  MpiSynchronizer sync(group, search_fingerprint(problem, cost.parameters(), search), describe_search(problem, search),
                       options, options.note);
  DriverOptions driver;
  driver.exchange_interval_s = options.exchange_interval_s;
  driver.chunks_per_rank = options.chunks_per_rank;
  driver.inject_failure = options.inject_failure;
  return drive_search(problem, search, driver, sync);
}

}  // namespace autohaap::dist
