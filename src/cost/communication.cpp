#include "autohaap/cost/communication.hpp"

#include <algorithm>
#include <cmath>

namespace autohaap {
namespace {

double ring_s(double bytes, int participants, const Link& link, int phases) {
  if (participants <= 1 || bytes <= 0) return 0.0;
  const double n = participants;
  const double steps = phases * (n - 1);
  return steps * link.latency_us * 1e-6 + phases * (n - 1) / n * bytes / (link.GBps * 1e9);
}

}  // namespace

double ring_allreduce_s(double bytes, int participants, const Link& link) {
  return ring_s(bytes, participants, link, 2);
}
double ring_allgather_s(double bytes, int participants, const Link& link) {
  return ring_s(bytes, participants, link, 1);
}
double ring_reduce_scatter_s(double bytes, int participants, const Link& link) {
  return ring_s(bytes, participants, link, 1);
}
double nccl_allreduce_s(double bytes, int participants, const Link& link) {
  if (participants <= 1 || bytes <= 0) return 0.0;
  const double n = participants;
  const double steps = std::min(2 * (n - 1), 2 * std::ceil(std::log2(n)));
  return steps * link.latency_us * 1e-6 + 2 * (n - 1) / n * bytes / (link.GBps * 1e9);
}

double point_to_point_s(double bytes, const Link& link) {
  if (bytes <= 0) return 0.0;
  return link.latency_us * 1e-6 + bytes / (link.GBps * 1e9);
}

}  // namespace autohaap
