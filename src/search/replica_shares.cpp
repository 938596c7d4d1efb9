#include "autohaap/search/replica_shares.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace autohaap {
namespace {

const StagePlan& stage_of_sets(const Plan& plan, int i) {
  const StagePlan& s = plan.stages.at(i);
  if (!s.has_replica_sets())
    throw std::invalid_argument("choose_replica_shares: stage " + std::to_string(i) + " has no replica sets");
  return s;
}

}  // namespace

ReplicaShares choose_replica_shares(const CostModel& model, const Plan& plan, int i, const StopCondition& stop) {
  const StagePlan& s = stage_of_sets(plan, i);
  const std::size_t S = s.replicas.size();
  std::vector<int> r(S);
  int all = 0;
  for (std::size_t k = 0; k < S; ++k) all += r[k] = s.set_replicas(k);
  if (plan.micro_batch_size < all) return {};  // not one sequence per replica
  // Every share is a multiple of its set's replicas, so every sum is one of
  // their gcd g: the table runs over B / g units of g sequences, not B
  // sequences (a cluster of millions of GPUs offers sets of a million
  // replicas and B in the millions; the same answer).
  int g = 0;
  for (std::size_t k = 0; k < S; ++k) g = std::gcd(g, r[k]);
  if (plan.micro_batch_size % g != 0) return {};
  const int B = plan.micro_batch_size / g;
  all /= g;
  for (std::size_t k = 0; k < S; ++k) r[k] /= g;

  // Each set's largest share leaves one sequence to every other replica.
  std::vector<int> most(S);
  int Q = 0;
  for (std::size_t k = 0; k < S; ++k) Q = std::max(Q, most[k] = (B - all + r[k]) / r[k]);

  // c_k(q) and fits_k(q) for q = 1..most[k]: every set priced at once per
  // q (a set's estimate reads its own share alone, so the others' shares,
  // here not summing to B, do not matter).
  std::vector<std::vector<StageEstimate>> at(S, std::vector<StageEstimate>(Q + 1));
  Plan p = plan;
  for (int q = 1; q <= Q; ++q) {
    if (stop()) return {};
    for (std::size_t k = 0; k < S; ++k) p.stages[i].replicas[k].sequences = std::min(q, most[k]) * r[k] * g;
    const std::vector<StageEstimate> sets = model.replica_set_estimates(p, i);
    for (std::size_t k = 0; k < S; ++k)
      if (q <= most[k]) at[k][q] = sets[k];
  }

  // f[k][b]: the least pace of the first k sets taking b sequences;
  // choice[k][b] the share of set k - 1 that reaches it.
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> f(S + 1, std::vector<double>(B + 1, kNone));
  std::vector<std::vector<int>> choice(S + 1, std::vector<int>(B + 1, 0));
  f[0][0] = 0;
  for (std::size_t k = 1; k <= S; ++k) {
    const int rk = r[k - 1];
    for (int b = 0; b <= B; ++b) {
      if (b % 4096 == 0 && stop()) return {};
      for (int q = 1; q <= most[k - 1] && q * rk <= b; ++q) {
        const StageEstimate& e = at[k - 1][q];
        const double rest = f[k - 1][b - q * rk];
        if (!e.fits() || rest == kNone) continue;
        const double v = std::max(e.pace_s(), rest);
        if (v < f[k][b]) f[k][b] = v, choice[k][b] = q;  // strict: the least optimal share of set k - 1
      }
    }
  }
  if (f[S][B] == kNone) return {};

  ReplicaShares out;
  out.sequences.assign(S, 0);
  out.pace_s = f[S][B];
  for (std::size_t k = S, b = static_cast<std::size_t>(B); k >= 1; --k) {
    const int q = choice[k][b];
    out.sequences[k - 1] = q * r[k - 1] * g;
    out.sets.insert(out.sets.begin(), at[k - 1][q]);
    b -= static_cast<std::size_t>(q * r[k - 1]);
  }
  return out;
}

}  // namespace autohaap
