// RankReport: what one rank of a distributed search did — its share, the
// work it searched, how its latency cache served it, and where its time
// went (searching, exchanging, waiting for peers) — so a user can see
// whether the ranks were balanced and whether exchanging paid off
// (`autohaap search --rank-report`).
//
// Plain data (search/search_synchronizer.hpp), filled by the search driver
// on every rank and gathered on rank 0. Cost: the table is O(ranks).
#pragma once

#include <string>
#include <vector>

#include "autohaap/search/search_synchronizer.hpp"

namespace autohaap::dist {

using autohaap::RankReport;

// One line per rank and a total line: share, chunks, evaluated, pruned,
// cache hits (own / peer), hit rate, bytes, search / exchange / idle
// seconds.
std::string format_rank_table(const std::vector<RankReport>& ranks);

}  // namespace autohaap::dist
