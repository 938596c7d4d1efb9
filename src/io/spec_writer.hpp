// Spec writer: the inverse of the spec loader (io/spec_loader.hpp). Writes a
// model, cluster or training spec in the form of its YAML file, every field
// explicit (a cluster's devices inline), so that reading it back with
// read_model / read_cluster / read_training gives the very spec written,
// whatever the catalog or the architecture defaults say by then. Used for
// the specs a plan file embeds (io/plan_io.hpp); written as YAML or JSON
// through a DocumentWriter, into the mapping the caller opened.
//
// Internal to src/io. Cost: linear in the spec. Stateless; thread-safe.
#pragma once

#include "autohaap/specs/cluster.hpp"
#include "autohaap/specs/device.hpp"
#include "autohaap/specs/model.hpp"
#include "autohaap/specs/training.hpp"
#include "document_writer.hpp"

namespace autohaap::detail {

// The keys of a device file (what read back gives the very spec).
void write_device(DocumentWriter& out, const DeviceSpec& device);
void write_model(DocumentWriter& out, const ModelSpec& model);
void write_cluster(DocumentWriter& out, const ClusterSpec& cluster);
void write_training(DocumentWriter& out, const TrainingSpec& training);

}  // namespace autohaap::detail
