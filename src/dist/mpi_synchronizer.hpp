// MpiSynchronizer: the search driver's SearchSynchronizer over the ranks of
// an MPI job (RankGroup's collectives, messages.hpp) and a checkpoint file
// (checkpoint.hpp); also over one process alone (RankGroup without a
// communicator), which is how --checkpoint runs without a launcher. It
// moves data only — bounds, cache entries, chunk bookkeeping, checkpoints
// — and decides nothing about the search (dist/distributed_search.hpp says
// what goes over the wire).
//
// Collective: every rank calls every method in the same order, from the
// thread that owns the MPI session. Private to src/dist and its tests.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autohaap/dist/checkpoint.hpp"
#include "autohaap/dist/distributed_search.hpp"
#include "autohaap/search/search_synchronizer.hpp"
#include "autohaap/specs/problem.hpp"
#include "messages.hpp"  // before any collective on the driver's messages is instantiated
#include "rank_group.hpp"

namespace autohaap::dist {

class MpiSynchronizer final : public SearchSynchronizer {
 public:
  // `fingerprint` and `inputs` name the search (search_fingerprint,
  // describe_search): a checkpoint or a rank of other inputs is refused.
  // `note`: rank 0's one-line notices (resume, last checkpoint).
  MpiSynchronizer(RankGroup& group, std::uint64_t fingerprint, std::string inputs,
                  DistributedSettings settings, std::function<void(const std::string&)> note);

  int rank() const override { return group_.rank(); }
  int size() const override { return group_.size(); }
  std::optional<SearchFailure> agree(const std::function<void()>& step) override;
  std::optional<SearchFailure> attempt(const std::function<void()>& step) override;
  bool any(bool mine) override { return group_.any(mine); }
  double wait_for_all() override { return group_.wait_for_all(); }
  [[noreturn]] void abort(const std::string& message, int exit_code) override;

  void validate(const SearchSettings& settings) const override;
  void open(const Problem& searched) override;
  std::optional<InitProgress> restored_initialization() override;
  bool write_initialization(const InitProgress& progress) override;
  void keep_walked_initialization(InitProgress progress) override;
  void check_list(const std::vector<Skeleton>& skeletons) override;
  std::optional<SearchFailure> share_chunks(const std::vector<Skeleton>& skeletons, std::size_t count,
                                            SearchState& state) override;
  std::vector<InitRound> exchange_initialization(const InitRound& mine) override;
  std::vector<RoundReport> exchange_round(const RoundReport& mine) override { return group_.all_gather(mine); }
  void exchange_cache(LatencyCache& cache, std::uint64_t& mark) override;
  std::vector<std::vector<Plan>> gather_plans(const std::vector<Plan>& mine) override;
  std::vector<RankReport> gather_reports(const RankReport& mine) override { return group_.gather(mine, 0); }
  void share_outcome(Outcome& outcome) override { group_.broadcast(outcome, 0); }
  double checkpoint_interval_s() const override {
    return settings_.checkpoint_path.empty() ? 0 : settings_.checkpoint_interval_s;
  }
  bool write_checkpoint(const SearchState& state, bool final) override;
  std::int64_t bytes_sent() const override { return group_.bytes_sent(); }
  std::int64_t bytes_received() const override { return group_.bytes_received(); }

 private:
  void note(const std::string& line) const {
    if (group_.rank() == 0 && note_) note_(line);
  }

  RankGroup& group_;
  const std::uint64_t fingerprint_;
  const std::string inputs_;
  const DistributedSettings settings_;
  const std::function<void(const std::string&)> note_;
  std::optional<SearchCheckpoint> restored_;  // rank 0: read by open()
  InitProgress walked_;  // rank 0, with a checkpoint: the whole initialization, once walked
  std::uint64_t skeletons_ = 0;               // the list's size and digest, for checkpoints
  std::uint64_t digest_ = 0;
};

}  // namespace autohaap::dist
