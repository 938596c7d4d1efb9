// RunnableBy: which training framework a searched plan must be runnable by
// as it ships (`search --runnable`). AutoHAAP's own plans give every stage
// its own devices, tp, dp and recompute mode; a heterogeneous runtime can
// run them, stock Megatron-LM cannot. `megatron` keeps the search to the
// plans stock Megatron-LM (Megatron-Core) runs, so the price of the runtime
// is visible next to the unrestricted best:
//   - one tensor-, context- and data-parallel degree for every stage
//     (--tensor-model-parallel-size, --context-parallel-size; dp follows
//     from the world size), hence one micro-batch per replica;
//   - one recompute mode (--recompute-granularity applies to every layer);
//   - any number of layers per stage (--pipeline-model-parallel-layout) and
//     any order of device groups along the pipeline: ranks are ordered
//     tensor-parallel fastest, then cp, dp, pipeline stage, so the launcher
//     places each pipeline rank by ordering the nodes (export --to nodelist);
//   - one precision for every rank: Megatron's --fp8-format applies to every
//     rank, so an fp8 plan does not mix devices with and without FP8 tensor
//     cores (bf16 on a device without BF16 runs every rank in FP16, as the
//     cost model prices it);
//   - ZeRO at most 1 (--use-distributed-optimizer shards optimizer states
//     only).
// The search applies these rules (search/memory_pruning.hpp counts the
// skeletons they remove under not_runnable; the load balancer keeps one
// recompute mode; refinement keeps one cp and vpp); the Megatron export
// checks a finished plan against the same ones (io/megatron_export.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autohaap/specs/device.hpp"
#include "autohaap/specs/training.hpp"

namespace autohaap {

enum class RunnableBy { any, megatron };

const char* to_string(RunnableBy runnable);
std::optional<RunnableBy> parse_runnable_by(std::string_view name);
// Names in declaration order (what --runnable accepts).
const std::vector<std::string>& runnable_by_names();

// The largest ZeRO stage stock Megatron-LM runs (its distributed optimizer).
inline constexpr int kMegatronMaxZero = 1;

// Whether stages on devices `a` and `b` can share one Megatron-LM job in
// `precision`: --fp8-format puts every rank's GEMMs in FP8, and FP8 GEMMs
// need FP8 tensor cores, so in fp8 training either both devices have them
// or neither does (a job with no FP8 device at all trains in BF16, as the
// cost model prices it). Every other precision runs on any mix (bf16 as
// FP16 where a device has no BF16).
inline bool megatron_shares_precision(Precision precision, const DeviceSpec& a, const DeviceSpec& b) {
  return precision != Precision::fp8 || gemms_in_fp8(precision, a) == gemms_in_fp8(precision, b);
}

// Whether a search for `runnable` must give every stage one recompute mode
// (and one cp and vpp, one tp and dp): true for megatron.
inline bool uniform_stages_required(RunnableBy runnable) { return runnable == RunnableBy::megatron; }

}  // namespace autohaap
