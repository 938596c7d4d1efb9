// Communication: time of the collectives and transfers a plan performs, over
// the link each one actually crosses.
//
// Ring algorithms (Thakur, Rabenseifner, Gropp 2005, "Optimization of
// Collective Communication Operations in MPICH", Sec. 4; the NCCL bus
// bandwidth convention): with n participants and a message of M bytes
//   all-reduce      2·(n−1) steps, each moving M/n  -> 2·(n−1)/n · M / bw
//   all-gather      (n−1) steps                     ->   (n−1)/n · M / bw
//   reduce-scatter  (n−1) steps                     ->   (n−1)/n · M / bw
// plus a per-step latency α. `bw` is the per-GPU unidirectional bandwidth
// times an achievable efficiency.
#pragma once

namespace autohaap {

// A link as seen by one GPU: bandwidth and per-message latency.
struct Link {
  double GBps = 0;       // achievable per-GPU unidirectional bandwidth
  double latency_us = 0;
};

double ring_allreduce_s(double bytes, int participants, const Link& link);
double ring_allgather_s(double bytes, int participants, const Link& link);
double ring_reduce_scatter_s(double bytes, int participants, const Link& link);
double point_to_point_s(double bytes, const Link& link);
// All-reduce as NCCL runs it: the ring's bandwidth term, and the latency of
// whichever of ring (2·(n−1) steps) or double binary tree (2·⌈log2 n⌉
// steps, Sanders, Speck, Träff 2009; NCCL 2.4+) is shorter — at a few
// hundred ranks the tree's latency is what NCCL picks for small messages.
double nccl_allreduce_s(double bytes, int participants, const Link& link);

}  // namespace autohaap
