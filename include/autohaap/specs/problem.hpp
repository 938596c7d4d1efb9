// Problem: the three inputs of one planning question, plus optional measured
// profiles. Every command (estimate, search, batch) works on one Problem.
#pragma once

#include <string>
#include <vector>

#include "autohaap/cost/profile_table.hpp"
#include "autohaap/specs/cluster.hpp"
#include "autohaap/specs/model.hpp"
#include "autohaap/specs/runnable_by.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

struct Problem {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ProfileTable profiles;  // empty: analytic latencies only
  // Search only the (device, tp, sequences per replica) points the profiles
  // measure a whole layer at (ProfileTable::measures_layer): a plan scored on
  // measurements alone, at the price of the points nobody measured.
  bool profiles_only = false;
  // Search only plans this framework runs as it ships (specs/runnable_by.hpp).
  RunnableBy runnable_by = RunnableBy::any;

  int seq_len() const { return training.seq_len > 0 ? training.seq_len : model.seq_len; }
};

// The same question on only the node groups of device type `device`, in
// their order; `original_group`, when given, receives each kept group's
// index in `problem`'s cluster (to map a plan of the restricted problem
// back). The one place that cuts a cluster to one device type.
Problem restricted_to_device(const Problem& problem, const std::string& device,
                             std::vector<int>* original_group = nullptr);

}  // namespace autohaap
