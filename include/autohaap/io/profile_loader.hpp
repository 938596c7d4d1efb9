// Profile loader: reads a measured operator-latency table into a
// ProfileTable (cost/profile_table.hpp). The format is CSV with a header:
//
//   device,op,tp,micro_batch,seq_len,latency_ms[,layer]
//   a100-80gb,layer,8,1,2048,31.2
//   a100-80gb,layer_backward,8,1,2048,60.5
//
// `device` is a catalog device name, `op` one of the ProfileTable op names,
// `micro_batch` sequences per replica, `latency_ms` the measured forward (or
// `<op>_backward`) time on one GPU, `layer` an optional layer index (empty or
// -1: every layer). Every bad cell is an InputError naming file, row and column;
// so is a second row for the same (device, op, tp, micro_batch, seq_len,
// layer), whose latency would silently replace the first's, and a file
// without any row.
#pragma once

#include <string>

#include "autohaap/cost/profile_table.hpp"
#include "autohaap/specs/problem.hpp"

namespace autohaap {

ProfileTable load_profile_csv(const std::string& path);
void add_profile_csv(ProfileTable& table, const std::string& path);

// A table read from `path` against the problem it is to time: an
// InputError when a row names a layer the model does not have, or when no
// row is at the training's sequence length (then no measurement could ever
// be used). Rows of devices the cluster lacks are kept: a table may serve
// several clusters.
void check_profile_fits(const ProfileTable& table, const Problem& problem, const std::string& path);

// A table (CSV or Metis's) that measures at least one of the cluster's
// devices: one of none would price every stage analytically without a
// word (and leave --profiles-only nothing); InputError naming the devices
// measured and those of the cluster.
void check_profile_serves_cluster(const ProfileTable& table, const Problem& problem, const std::string& path);

}  // namespace autohaap
