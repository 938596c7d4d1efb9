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
// -1: every layer). Every bad cell is an InputError naming file, row and column.
#pragma once

#include <string>

#include "autohaap/cost/profile_table.hpp"

namespace autohaap {

ProfileTable load_profile_csv(const std::string& path);
void add_profile_csv(ProfileTable& table, const std::string& path);

}  // namespace autohaap
