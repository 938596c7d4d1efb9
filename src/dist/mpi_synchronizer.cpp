#include "mpi_synchronizer.hpp"

#include <algorithm>
#include <utility>

#include "autohaap/error.hpp"
#include "autohaap/search/searcher.hpp"
#include "messages.hpp"

namespace autohaap::dist {

MpiSynchronizer::MpiSynchronizer(RankGroup& group, std::uint64_t fingerprint, std::string inputs,
                                 DistributedSettings settings, std::function<void(const std::string&)> note)
    : group_(group), fingerprint_(fingerprint), inputs_(std::move(inputs)),
      settings_(std::move(settings)), note_(std::move(note)) {}

std::optional<SearchFailure> MpiSynchronizer::agree(const std::function<void()>& step) {
  return group_.first_failure(step);
}

std::optional<SearchFailure> MpiSynchronizer::attempt(const std::function<void()>& step) {
  return try_step(step, group_.rank());
}

void MpiSynchronizer::abort(const std::string& message, int exit_code) { group_.abort(message, exit_code); }

void MpiSynchronizer::validate(const SearchSettings& search) const { dist::validate(settings_, search); }

void MpiSynchronizer::open(const Problem& searched) {
  if (group_.rank() == 0 && !settings_.checkpoint_path.empty()) {
    restored_ = read_checkpoint(settings_.checkpoint_path, fingerprint_, inputs_);
    if (restored_) check_checkpoint_plans(*restored_, searched, settings_.checkpoint_path);
  }
}

std::optional<InitProgress> MpiSynchronizer::restored_initialization() {
  CerealPayload<std::vector<InitProgress>> payload;
  if (group_.rank() == 0 && restored_ && restored_->initializing) {
    payload.value.push_back(std::move(restored_->init));
    // What is left of it names no list: the list is built anew.
    restored_.reset();
  } else if (group_.rank() == 0 && restored_ && restored_->init.walked_all()) {
    // A search-phase checkpoint with its whole initialization: the list is
    // rebuilt from it (no round walked again) and its chunks then restored.
    payload.value.push_back(restored_->init);
    walked_ = std::move(restored_->init);
    restored_->init = InitProgress{};
  }
  group_.broadcast(payload, 0);
  if (payload.value.empty()) return std::nullopt;
  const InitProgress& p = payload.value.front();
  if (p.walked_all())
    note("resuming from checkpoint " + settings_.checkpoint_path + ": its initialization (" +
         std::to_string(p.tasks) + " tasks, " + std::to_string(p.kept.size()) +
         " skeletons kept) restored, not walked again");
  else
    note("resuming the initialization from checkpoint " + settings_.checkpoint_path + ": " +
         std::to_string(p.next_task) + " of " + std::to_string(p.tasks) + " tasks walked, " +
         std::to_string(p.kept.size()) + " skeletons kept");
  return std::move(payload.value.front());
}

void MpiSynchronizer::keep_walked_initialization(InitProgress progress) {
  if (group_.rank() == 0 && !settings_.checkpoint_path.empty()) walked_ = std::move(progress);
}

std::vector<InitRound> MpiSynchronizer::exchange_initialization(const InitRound& mine) {
  std::vector<CerealPayload<InitRound>> all = group_.all_gather(CerealPayload<InitRound>{mine});
  std::vector<InitRound> rounds;
  rounds.reserve(all.size());
  for (auto& r : all) rounds.push_back(std::move(r.value));
  return rounds;
}

bool MpiSynchronizer::write_initialization(const InitProgress& progress) {
  if (group_.rank() != 0) return false;
  SearchCheckpoint checkpoint;
  checkpoint.fingerprint = fingerprint_;
  checkpoint.inputs = inputs_;
  checkpoint.initializing = true;
  checkpoint.init = progress;
  // As write_checkpoint: a write that fails costs the resume only.
  try {
    dist::write_checkpoint(settings_.checkpoint_path, checkpoint);
    return true;
  } catch (const std::exception& e) {
    note(std::string("warning: checkpoint not written (") + e.what() +
         "); the search goes on and tries again at the next interval");
    return false;
  }
}

void MpiSynchronizer::check_list(const std::vector<Skeleton>& skeletons) {
  skeletons_ = skeletons.size();
  digest_ = skeleton_list_digest(skeletons);
  if (restored_ && (restored_->skeletons != skeletons_ || restored_->list_digest != digest_))
    throw InputError(settings_.checkpoint_path, "checkpoint",
                     "a checkpoint whose skeleton list differs from this search's (another autohaap version?)",
                     "a checkpoint written by this version for this search; remove the file or choose "
                     "another --checkpoint path");
}

std::optional<SearchFailure> MpiSynchronizer::share_chunks(const std::vector<Skeleton>& skeletons,
                                                           std::size_t count, SearchState& state) {
  const bool root = group_.rank() == 0;
  ShareTable table;
  if (root) {
    table.fingerprint = fingerprint_;
    table.list_digest = digest_;
    table.skeletons = skeletons.size();
    table.resumed = restored_.has_value();
    // A resumed search keeps the chunks of the run that wrote the
    // checkpoint, whatever the rank count is now.
    if (restored_) {
      table.chunk_end = restored_->chunk_end;
    } else {
      for (const SkeletonChunk& c : cut_into_chunks(skeletons, count)) table.chunk_end.push_back(c.end);
    }
  }
  group_.broadcast(table, 0);
  auto agree_on_table = [&] {
    if (table.fingerprint != fingerprint_)
      throw InputError("", "inputs", "rank " + std::to_string(group_.rank()) + "'s inputs differ from rank 0's",
                       "the same model, cluster, training and options on every rank");
    if (table.list_digest != digest_ || table.skeletons != skeletons.size())
      throw std::runtime_error("rank " + std::to_string(group_.rank()) +
                               " initialized another skeleton list than rank 0 (mixed autohaap builds in one job?)");
    std::uint64_t previous = 0;
    for (std::uint64_t end : table.chunk_end) {
      if (end <= previous || end > table.skeletons)
        throw InputError(settings_.checkpoint_path, "checkpoint", "chunk boundaries that do not fit the list",
                         "a checkpoint written by this search");
      previous = end;
    }
    if (!table.chunk_end.empty() && previous != table.skeletons)
      throw InputError(settings_.checkpoint_path, "checkpoint", "chunks that do not cover the list",
                       "a checkpoint written by this search");
  };
  if (auto failure = group_.first_failure(agree_on_table)) return failure;

  state = SearchState{};
  state.chunk_end = table.chunk_end;
  state.chunk_done.assign(table.chunk_end.size(), 0);
  if (table.resumed) {
    CerealPayload<SearchCheckpoint> payload;
    if (root) payload.value = std::move(*restored_);
    restored_.reset();
    group_.broadcast(payload, 0);
    SearchCheckpoint& restored = payload.value;
    state.chunk_done = std::move(restored.chunk_done);
    state.resumed = true;
    state.top = std::move(restored.top);
    state.evaluated = restored.evaluated;
    state.pruned = restored.pruned;
    state.cache = std::move(restored.cache);
    const auto chunks = static_cast<std::int64_t>(state.chunk_end.size());
    const auto done = static_cast<std::int64_t>(std::count(state.chunk_done.begin(), state.chunk_done.end(), 1));
    note("resuming from checkpoint " + settings_.checkpoint_path + ": " + std::to_string(done) + " of " +
         std::to_string(chunks) + " chunks restored, " + std::to_string(chunks - done) + " to search");
  }
  return std::nullopt;
}

// Every rank's entries computed since the last exchange, to every other
// rank, imported as peer entries. Alone there is no one to send them to.
void MpiSynchronizer::exchange_cache(LatencyCache& cache, std::uint64_t& mark) {
  if (!settings_.exchange_cache || group_.size() < 2) return;
  CacheEntries mine{cache.delta_since(mark)};
  mark = cache.mark();
  const std::vector<CacheEntries> all = group_.all_gather(mine);
  for (int r = 0; r < group_.size(); ++r) {
    if (r != group_.rank() && !all[r].value.empty()) cache.import(all[r].value, true);
  }
}

std::vector<std::vector<Plan>> MpiSynchronizer::gather_plans(const std::vector<Plan>& mine) {
  std::vector<PlanList> lists = group_.gather(PlanList{mine}, 0);
  std::vector<std::vector<Plan>> plans;
  plans.reserve(lists.size());
  for (PlanList& l : lists) plans.push_back(std::move(l.value));
  return plans;
}

bool MpiSynchronizer::write_checkpoint(const SearchState& state, bool final) {
  SearchCheckpoint checkpoint;
  checkpoint.fingerprint = fingerprint_;
  checkpoint.inputs = inputs_;
  checkpoint.skeletons = skeletons_;
  checkpoint.list_digest = digest_;
  checkpoint.chunk_end = state.chunk_end;
  checkpoint.chunk_done = state.chunk_done;
  checkpoint.top = state.top;
  checkpoint.evaluated = state.evaluated;
  checkpoint.pruned = state.pruned;
  checkpoint.cache = state.cache;
  // The whole initialization, for a resume to skip (moved in and back: it
  // may be most of the file).
  checkpoint.init = std::move(walked_);
  const std::optional<SearchFailure> failure =
      try_step([&] { dist::write_checkpoint(settings_.checkpoint_path, checkpoint); }, group_.rank());
  walked_ = std::move(checkpoint.init);
  if (!failure && final)
    note("checkpoint written to " + settings_.checkpoint_path + ": " + std::to_string(checkpoint.chunks_done()) + " of " +
         std::to_string(checkpoint.chunk_done.size()) + " chunks done");
  // A checkpoint that cannot be written (its folder removed, the disk
  // full) costs only the resume: the search goes on, says so, and tries
  // again at the next interval and at its end; its answer is still
  // written. Ending the job there had lost the whole search and its plan.
  if (failure)
    note("warning: checkpoint not written (" + failure->message + "); the search goes on" +
         (final ? "" : " and tries again at the next interval"));
  return !failure;
}

}  // namespace autohaap::dist
