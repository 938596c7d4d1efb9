#include "autohaap/io/launch_manifest.hpp"

#include "json_input.hpp"  // rapidjson as cereal configures it, first

#include <algorithm>
#include <concepts>
#include <type_traits>
#include <map>
#include <set>
#include <utility>

#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/hostfile.hpp"
#include "autohaap/io/spec_loader.hpp"  // limits
#include "autohaap/io/yaml_value.hpp"
#include "autohaap/specs/parallel_rules.hpp"  // even_chunk_cut, chunks_violation
#include "document_writer.hpp"
#include "job_precision.hpp"

namespace autohaap {
namespace {

using detail::DocumentWriter;

// Part k of [0, total) cut into n parts in order: [⌊k·total/n⌋,
// ⌊(k+1)·total/n⌋) — equal parts when n divides total.
IndexRange part(int k, int n, int total) {
  const long long t = total;
  return {static_cast<int>(k * t / n), static_cast<int>((k + 1LL) * t / n)};
}

IndexRange intersect(IndexRange a, IndexRange b) { return {std::max(a.first, b.first), std::min(a.end, b.end)}; }

bool empty(IndexRange r) { return r.first >= r.end; }

// The parts of [0, total) cut into n that overlap `r`, in order.
std::vector<std::pair<int, IndexRange>> overlapping_parts(IndexRange r, int n, int total) {
  std::vector<std::pair<int, IndexRange>> out;
  int k = static_cast<int>(static_cast<long long>(r.first) * n / total);
  while (k > 0 && part(k, n, total).first > r.first) --k;
  for (; k < n; ++k) {
    const IndexRange p = part(k, n, total);
    if (p.first >= r.end) break;
    const IndexRange overlap = intersect(r, p);
    if (!empty(overlap)) out.emplace_back(k, overlap);
  }
  return out;
}

}  // namespace

IndexRange replica_sequences(const LaunchStage& s, int d, int micro_batch_size) {
  if (s.replica_sets.empty()) return part(d, s.dp, micro_batch_size);
  int offset = 0;
  for (const LaunchReplicaSet& set : s.replica_sets) {
    if (d < set.replicas) {
      const int share = set.sequences / set.replicas;
      return {offset + d * share, offset + (d + 1) * share};
    }
    d -= set.replicas;
    offset += set.sequences;
  }
  return {offset, offset};
}

const std::string& replica_device(const LaunchStage& s, int d) {
  for (const LaunchReplicaSet& set : s.replica_sets) {
    if (d < set.replicas) return set.device;
    d -= set.replicas;
  }
  return s.device;
}

namespace {

std::string range_text(IndexRange r) { return "[" + std::to_string(r.first) + ", " + std::to_string(r.end) + ")"; }

std::string peer_text(const LaunchPeer& p) {
  return "{rank: " + std::to_string(p.rank) + ", sequences: " + range_text(p.sequences) +
         ", tokens: " + range_text(p.tokens) + "}";
}

// Error messages quote peer lists; a long one would drown the message.
std::string peers_text(const std::vector<LaunchPeer>& peers) {
  constexpr std::size_t kShown = 4;
  std::string out = "[";
  for (std::size_t i = 0; i < peers.size() && i < kShown; ++i) out += (i ? ", " : "") + peer_text(peers[i]);
  if (peers.size() > kShown) out += ", ... (" + std::to_string(peers.size()) + " in all)";
  return out + "]";
}

std::string rank_key(std::size_t k, const std::string& key) { return "ranks[" + std::to_string(k) + "]." + key; }
std::string stage_key(std::size_t i, const std::string& key) { return "stages[" + std::to_string(i) + "]." + key; }

// The position of a rank inside its stage, in host_slots' order: tensor-
// parallel rank fastest, then context-parallel, then data-parallel.
int position(const LaunchStage& s, int tp_rank, int cp_rank, int dp_rank) {
  return (dp_rank * s.cp + cp_rank) * s.tp + tp_rank;
}

// ------------------------------------------------------- the document
// One description per manifest struct: its keys in document order, each
// with the member that holds it. The writer, the reader and the keys a
// mapping may hold all follow it (as io/plan_schema.hpp does for plans).

template <class S, class T>
concept Of = std::same_as<std::remove_const_t<S>, T>;

template <class V, Of<LaunchPeer> P>
void describe(V& v, P& p) {
  v.field("rank", p.rank);
  v.field("sequences", p.sequences);
  v.field("tokens", p.tokens);
}

template <class V, Of<LaunchReplicaSet> R>
void describe(V& v, R& r) {
  v.field("device", r.device);
  v.field("group", r.group);
  v.field("replicas", r.replicas);
  v.field("sequences", r.sequences);
}

template <class V, Of<LaunchChunk> C>
void describe(V& v, C& c) {
  v.field("layers", c.layers);
}

template <class V, Of<LaunchStage> S>
void describe(V& v, S& s) {
  v.field("index", s.index);
  v.field("device", s.device);
  v.field("group", s.group);
  v.field("tp", s.tp);
  v.field("cp", s.cp);
  v.field("dp", s.dp);
  v.field("layers", s.layers);
  v.field("recompute", s.recompute);
  v.field("sequences_per_replica", s.sequences_per_replica);
  // Only a stage of replica sets on different devices writes it.
  v.optional_list("replica_sets", s.replica_sets, "replica sets {device, group, replicas, sequences}");
  // Only an interleaved pipeline (vpp > 1, several stages) writes it.
  v.optional_list("chunks", s.chunks, "chunks {layers}");
}

template <class V, Of<LaunchRank> R>
void describe(V& v, R& r) {
  v.field("rank", r.rank);
  v.field("node", r.node);
  v.field("local_gpu", r.local_gpu);
  v.field("device", r.device);
  v.field("stage", r.stage);
  v.field("tp_rank", r.tp_rank);
  v.field("cp_rank", r.cp_rank);
  v.field("dp_rank", r.dp_rank);
  v.field("layers", r.layers);
  v.field("sequences", r.sequences);
  v.field("sequences_per_replica", r.sequences_per_replica);
  v.field("tokens", r.tokens);
  v.list("recv_from", r.recv_from, "peers {rank, sequences, tokens}");
  v.list("send_to", r.send_to, "peers {rank, sequences, tokens}");
}

template <class V, Of<LaunchManifest> M>
void describe(V& v, M& m) {
  v.tag("format", kLaunchManifestFormat);
  v.field("model", m.model);
  v.field("cluster", m.cluster);
  v.field("layers", m.layers);
  v.field("seq_len", m.seq_len);
  v.field("world_size", m.world_size);
  v.field("global_batch", m.global_batch);
  v.field("micro_batch_size", m.micro_batch_size);
  v.field("num_micro_batches", m.num_micro_batches);
  v.field("vpp", m.vpp);
  v.field("precision", m.precision);
  v.field("pipeline_p2p", m.pipeline_p2p);
  v.list("stages", m.stages, "stages (mappings)");
  v.list("ranks", m.ranks, "ranks (mappings)");
}

// The names of an enum's values, in the order a reader offers them.
constexpr Precision kPrecisionValues[] = {Precision::bf16, Precision::fp16, Precision::fp32, Precision::tf32, Precision::fp8};
constexpr PipelineP2P kP2PModes[] = {PipelineP2P::scatter_gather, PipelineP2P::full};
constexpr Recompute kRecomputeValues[] = {Recompute::none, Recompute::selective, Recompute::full};
const auto& values_of(Precision) { return kPrecisionValues; }
const auto& values_of(PipelineP2P) { return kP2PModes; }
const auto& values_of(Recompute) { return kRecomputeValues; }

template <class E>
concept ManifestEnum = std::is_enum_v<E>;

class Writer {
 public:
  explicit Writer(DocumentWriter& out) : out_(out) {}
  void tag(const char* key, const char* text) { field(key, std::string(text)); }
  void field(const char* key, int v) {
    out_.key(key);
    out_.value(v);
  }
  void field(const char* key, const std::string& v) {
    out_.key(key);
    out_.value(v);
  }
  void field(const char* key, IndexRange r) {
    out_.key(key);
    out_.begin_list(true);
    out_.value(r.first);
    out_.value(r.end);
    out_.end_list();
  }
  template <ManifestEnum E>
  void field(const char* key, E v) {
    field(key, std::string(to_string(v)));
  }
  template <class T>
  void list(const char* key, const std::vector<T>& items, const char*) {
    out_.key(key);
    out_.begin_list(false);
    for (const T& item : items) {
      out_.begin_map();
      describe(*this, item);
      out_.end_map();
    }
    out_.end_list();
  }
  template <class T>
  void optional_list(const char* key, const std::vector<T>& items, const char* kind) {
    if (!items.empty()) list(key, items, kind);
  }

 private:
  DocumentWriter& out_;
};

// The keys a description lists, for the check that a mapping holds no other.
class KeyList {
 public:
  void tag(const char* key, const char*) { keys.emplace_back(key); }
  template <class T>
  void field(const char* key, const T&) {
    keys.emplace_back(key);
  }
  template <class T>
  void list(const char* key, const T&, const char*) {
    keys.emplace_back(key);
  }
  template <class T>
  void optional_list(const char* key, const T&, const char*) {
    keys.emplace_back(key);
  }
  std::vector<std::string> keys;
};

template <class T>
std::vector<std::string> keys_of() {
  KeyList k;
  T scratch;
  describe(k, scratch);
  return k.keys;
}

// Typed reading of one mapping by its description. JSON is strict about
// types: a number in quotes is not a number, a name without quotes not a
// name.
class ManifestReader {
 public:
  ManifestReader(const std::string& file, const YamlObject& o) : file_(file), o_(o) {}

  template <class T>
  static T read(const std::string& file, const YamlObject& o) {
    const std::vector<std::string> keys = keys_of<T>();
    o.check_keys(keys);
    T value;
    ManifestReader r(file, o);
    describe(r, value);
    return value;
  }

  void tag(const char* key, const char* text) {
    const YamlValue v = o_.at(key, text);
    if (!v.is_scalar() || v.node().Scalar() != text) v.fail(text);
  }
  void field(const char* key, int& out) {
    const YamlValue v = o_.at(key, "an integer");
    if (v.node().Tag() == "!") v.fail("an integer (without quotes)");
    out = v.as_int();
  }
  void field(const char* key, std::string& out) {
    const YamlValue v = o_.at(key, "a string");
    if (!v.is_scalar() || v.node().Tag() != "!") v.fail("a string (in quotes)");
    out = v.as_string();
  }
  void field(const char* key, IndexRange& out) {
    const YamlValue v = o_.at(key, "[first, end): a list of 2 integers");
    if (!v.is_list() || v.node().size() != 2) v.fail("[first, end): a list of 2 integers");
    const std::vector<YamlValue> pair = v.as_list();
    for (const YamlValue& x : pair)
      if (x.node().Tag() == "!") x.fail("an integer (without quotes)");
    out = {pair[0].as_int(), pair[1].as_int()};
  }
  template <ManifestEnum E>
  void field(const char* key, E& out) {
    std::string name;
    field(key, name);
    std::string allowed;
    for (E v : values_of(E{})) {
      if (name == to_string(v)) {
        out = v;
        return;
      }
      allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(v));
    }
    throw InputError(file_, o_.key_path(key), name, "one of " + allowed);
  }
  template <class T>
  void list(const char* key, std::vector<T>& out, const char* kind) {
    const std::string what = std::string("a list of ") + kind;
    const YamlValue v = o_.at(key, what);
    if (!v.is_list()) v.fail(what);
    for (const YamlValue& item : v.as_list()) {
      if (!item.is_map()) item.fail(kind);
      out.push_back(read<T>(file_, item.as_object()));
    }
  }
  template <class T>
  void optional_list(const char* key, std::vector<T>& out, const char* kind) {
    if (o_.find(key)) list(key, out, kind);
  }

 private:
  const std::string& file_;
  const YamlObject& o_;
};

// The layers of each stage's chunks under an interleaved pipeline
// (LaunchStage::chunks), chunk-major, from each stage's layers per chunk
// (cut[i][c]); none for vpp 1 or one stage.
std::vector<std::vector<LaunchChunk>> interleaved_chunks(const std::vector<std::vector<int>>& cut) {
  std::vector<std::vector<LaunchChunk>> out(cut.size());
  const int vpp = cut.empty() ? 1 : static_cast<int>(cut.front().size());
  if (vpp <= 1 || cut.size() <= 1) return out;
  int next = 0;
  for (int v = 0; v < vpp; ++v)
    for (std::size_t i = 0; i < cut.size(); ++i) {
      const int n = cut[i][v];
      out[i].push_back({{next, next + n}});
      next += n;
    }
  return out;
}

std::vector<int> stage_layer_counts(const LaunchManifest& m) {
  std::vector<int> counts;
  for (const LaunchStage& s : m.stages) counts.push_back(s.layers.end - s.layers.first);
  return counts;
}

// Per stage, the index into m.ranks of each position (-1 while empty).
std::vector<std::vector<int>> position_index(const LaunchManifest& m) {
  std::vector<std::vector<int>> at;
  for (const LaunchStage& s : m.stages) at.emplace_back(static_cast<std::size_t>(s.tp) * s.cp * s.dp, -1);
  return at;
}

}  // namespace

// ---------------------------------------------------------------- public

int next_stage(const LaunchManifest& m, int stage) {
  const int p = static_cast<int>(m.stages.size());
  if (stage + 1 < p) return stage + 1;
  return m.vpp > 1 && p > 1 ? 0 : -1;
}

int previous_stage(const LaunchManifest& m, int stage) {
  const int p = static_cast<int>(m.stages.size());
  if (stage > 0) return stage - 1;
  return m.vpp > 1 && p > 1 ? p - 1 : -1;
}

std::vector<LaunchPeer> exchange_peers(const LaunchManifest& m, const std::vector<std::vector<int>>& rank_at,
                                       int from, int tp_rank, int cp_rank, int dp_rank, int to) {
  const LaunchStage& a = m.stages.at(from);
  const LaunchStage& b = m.stages.at(to);
  std::vector<LaunchPeer> peers;
  if (tp_rank >= std::min(a.tp, b.tp)) return peers;
  const IndexRange sequences = replica_sequences(a, dp_rank, m.micro_batch_size);
  const IndexRange tokens = part(cp_rank, a.cp, m.seq_len);
  std::vector<std::pair<int, IndexRange>> replicas;
  if (b.replica_sets.empty()) {
    replicas = overlapping_parts(sequences, b.dp, m.micro_batch_size);
  } else {
    for (int d = 0; d < b.dp; ++d)
      if (const IndexRange o = intersect(sequences, replica_sequences(b, d, m.micro_batch_size)); !empty(o))
        replicas.emplace_back(d, o);
  }
  for (const auto& [d, shared_sequences] : replicas) {
    for (const auto& [c, shared_tokens] : overlapping_parts(tokens, b.cp, m.seq_len))
      peers.push_back({rank_at.at(to).at(position(b, tp_rank, c, d)), shared_sequences, shared_tokens});
  }
  std::sort(peers.begin(), peers.end(), [](const LaunchPeer& x, const LaunchPeer& y) { return x.rank < y.rank; });
  return peers;
}

LaunchManifest launch_manifest(const Plan& plan, const Problem& problem) {
  LaunchManifest m;
  m.model = plan.model;
  m.cluster = plan.cluster;
  m.layers = problem.model.layers;
  m.seq_len = problem.seq_len();
  m.global_batch = plan.global_batch;
  m.micro_batch_size = plan.micro_batch_size;
  m.num_micro_batches = plan.num_micro_batches;
  m.vpp = plan.vpp;
  m.precision = detail::job_precision(problem, plan);  // one dtype a job
  m.pipeline_p2p = pipeline_p2p(problem.training);
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const StagePlan& s = plan.stages[i];
    LaunchStage st{static_cast<int>(i), s.device, s.group, s.tp, s.cp, s.dp, {s.layer_begin, s.layer_end},
                   s.recompute, s.has_replica_sets() ? 0 : plan.micro_batch_size / s.dp, {}, {}};
    for (std::size_t k = 0; k < s.replicas.size(); ++k)
      st.replica_sets.push_back({s.replicas[k].device, s.replicas[k].group, s.set_replicas(k), s.replicas[k].sequences});
    m.stages.push_back(std::move(st));
  }
  const std::vector<std::vector<LaunchChunk>> chunks = interleaved_chunks(plan.chunk_cut());
  for (std::size_t i = 0; i < m.stages.size(); ++i) m.stages[i].chunks = chunks[i];
  std::vector<std::vector<int>> rank_at = position_index(m);
  for (const HostSlot& slot : host_slots(plan, problem.cluster)) {
    const LaunchStage& s = m.stages.at(slot.stage);
    LaunchRank r;
    r.rank = slot.rank;
    r.node = slot.node;
    r.local_gpu = slot.local_gpu;
    r.device = slot.device;
    r.stage = slot.stage;
    r.tp_rank = slot.tp_rank;
    r.cp_rank = slot.cp_rank;
    r.dp_rank = slot.dp_rank;
    r.layers = s.layers;
    r.sequences = replica_sequences(s, slot.dp_rank, m.micro_batch_size);
    r.sequences_per_replica = r.sequences.end - r.sequences.first;
    r.tokens = part(slot.cp_rank, s.cp, m.seq_len);
    rank_at[slot.stage].at(position(s, slot.tp_rank, slot.cp_rank, slot.dp_rank)) = slot.rank;
    m.ranks.push_back(std::move(r));
  }
  m.world_size = static_cast<int>(m.ranks.size());
  for (LaunchRank& r : m.ranks) {
    if (const int next = next_stage(m, r.stage); next >= 0)
      r.send_to = exchange_peers(m, rank_at, r.stage, r.tp_rank, r.cp_rank, r.dp_rank, next);
    if (const int previous = previous_stage(m, r.stage); previous >= 0)
      r.recv_from = exchange_peers(m, rank_at, r.stage, r.tp_rank, r.cp_rank, r.dp_rank, previous);
  }
  return m;
}

std::string launch_manifest_to_json(const LaunchManifest& m) {
  return detail::json_document([&](DocumentWriter& out) {
    Writer w(out);
    describe(w, m);
  });
}

LaunchManifest launch_manifest_from_string(const std::string& text, const std::string& file) {
  rj::Document doc;
  parse_json(text, file, doc);
  if (!doc.IsObject())
    throw InputError(file, "", YamlValue(yaml_of_json(doc), file, "").text(),
                     std::string("a JSON object (format: ") + kLaunchManifestFormat + ")");
  const LaunchManifest m = ManifestReader::read<LaunchManifest>(file, YamlObject(yaml_of_json(doc), file, ""));
  check_launch_manifest(m, file);
  return m;
}

LaunchManifest read_launch_manifest(const std::string& path) {
  return launch_manifest_from_string(read_file(path), path);
}

void check_launch_manifest(const LaunchManifest& m, const std::string& file) {
  auto within = [&](const std::string& key, long long value, long long min, long long max) {
    if (value < min || value > max)
      throw InputError(file, key, std::to_string(value),
                       "an integer from " + std::to_string(min) + " to " + std::to_string(max));
  };
  auto equal = [&](const std::string& key, IndexRange got, IndexRange want, const std::string& why) {
    if (got != want) throw InputError(file, key, range_text(got), range_text(want) + " (" + why + ")");
  };
  if (m.model.empty()) throw InputError(file, "model", "", "a model name");
  if (m.cluster.empty()) throw InputError(file, "cluster", "", "a cluster name");
  within("layers", m.layers, 1, limits::kMaxLayers);
  within("seq_len", m.seq_len, 1, limits::kMaxSeqLen);
  within("world_size", m.world_size, 1, limits::kMaxClusterGpus);
  within("global_batch", m.global_batch, 1, limits::kMaxGlobalBatch);
  within("micro_batch_size", m.micro_batch_size, 1, limits::kMaxGlobalBatch);
  within("num_micro_batches", m.num_micro_batches, 1, limits::kMaxGlobalBatch);
  within("vpp", m.vpp, 1, limits::kMaxLayers);
  const long long batch = static_cast<long long>(m.micro_batch_size) * m.num_micro_batches;
  if (batch != m.global_batch)
    throw InputError(file, "global_batch", std::to_string(m.global_batch),
                     "micro_batch_size * num_micro_batches = " + std::to_string(batch));

  // Stages: degrees in range, B split evenly over the replicas, layers
  // covering the model once along the chain.
  if (m.stages.empty()) throw InputError(file, "stages", "[]", "at least one stage");
  within("stages", static_cast<long long>(m.stages.size()), 1, m.layers);
  const int B = m.micro_batch_size;
  long long gpus = 0;
  int next_layer = 0;
  for (std::size_t i = 0; i < m.stages.size(); ++i) {
    const LaunchStage& s = m.stages[i];
    within(stage_key(i, "index"), s.index, static_cast<long long>(i), static_cast<long long>(i));
    if (s.device.empty()) throw InputError(file, stage_key(i, "device"), "", "a device name");
    within(stage_key(i, "group"), s.group, 0, limits::kMaxClusterGpus);
    within(stage_key(i, "tp"), s.tp, 1, limits::kMaxClusterGpus);
    within(stage_key(i, "cp"), s.cp, 1, std::min(limits::kMaxClusterGpus, m.seq_len));
    within(stage_key(i, "dp"), s.dp, 1, B);
    if (!s.replica_sets.empty()) {
      // Replica sets: whole shares per replica, the replicas and sequences
      // of the stage together.
      long long replicas = 0, sequences = 0;
      for (std::size_t k = 0; k < s.replica_sets.size(); ++k) {
        const LaunchReplicaSet& set = s.replica_sets[k];
        const std::string key = stage_key(i, "replica_sets") + "[" + std::to_string(k) + "].";
        if (set.device.empty()) throw InputError(file, key + "device", "", "a device name");
        within(key + "group", set.group, 0, limits::kMaxClusterGpus);
        within(key + "replicas", set.replicas, 1, s.dp);
        within(key + "sequences", set.sequences, 1, B);
        if (set.sequences % set.replicas != 0)
          throw InputError(file, key + "sequences", std::to_string(set.sequences),
                           "a multiple of the set's " + std::to_string(set.replicas) + " replicas");
        replicas += set.replicas;
        sequences += set.sequences;
      }
      if (replicas != s.dp)
        throw InputError(file, stage_key(i, "dp"), std::to_string(s.dp),
                         "the replica sets' replicas together: " + std::to_string(replicas));
      if (sequences != B)
        throw InputError(file, stage_key(i, "replica_sets"), "sequences summing to " + std::to_string(sequences),
                         "sequences summing to micro_batch_size = " + std::to_string(B));
      if (s.sequences_per_replica != 0)
        throw InputError(file, stage_key(i, "sequences_per_replica"), std::to_string(s.sequences_per_replica),
                         "0 (each replica set has its own share)");
    } else if (B % s.dp != 0) {
      throw InputError(file, stage_key(i, "dp"), std::to_string(s.dp),
                       "a divisor of micro_batch_size (" + std::to_string(B) + ")");
    } else if (s.sequences_per_replica != B / s.dp)
      throw InputError(file, stage_key(i, "sequences_per_replica"), std::to_string(s.sequences_per_replica),
                       "micro_batch_size / dp = " + std::to_string(B / s.dp) +
                           ", so that the replicas' sequences add up to " + std::to_string(B));
    const bool last = i + 1 == m.stages.size();
    // As a plan's: the first or last of several stages may hold no layer
    // (the word embedding or the output layer alone, plan.hpp).
    const bool may_be_empty = m.stages.size() > 1 && (i == 0 || last);
    const bool empty_ok = may_be_empty && s.layers.end == s.layers.first;
    if (s.layers.first != next_layer || (s.layers.end <= s.layers.first && !empty_ok) || s.layers.end > m.layers ||
        (last && s.layers.end != m.layers))
      throw InputError(file, stage_key(i, "layers"), range_text(s.layers),
                       "[" + std::to_string(next_layer) + ", " + (last ? std::to_string(m.layers) : "end") +
                           "): the stages' layer ranges run one after another from 0 to the model's " +
                           std::to_string(m.layers) + " layers, each layer once (the first or last of several "
                           "stages may hold none)");
    next_layer = s.layers.end;
    gpus += static_cast<long long>(s.tp) * s.cp * s.dp;
    if (gpus > limits::kMaxClusterGpus) break;  // world_size's check below names it
  }
  // An interleaved pipeline's chunks, exactly the rule's; none otherwise.
  if (gpus <= limits::kMaxClusterGpus) {
    // The cut the manifest states (any that chunks_violation allows), else
    // the even one, and its chunks placed chunk-major.
    const std::vector<int> counts = stage_layer_counts(m);
    const std::vector<std::vector<int>> even = even_chunk_cut(counts, std::max(1, m.vpp));
    std::vector<std::vector<int>> cut = even;
    for (std::size_t i = 0; i < m.stages.size(); ++i) {
      std::vector<int> sizes;
      for (const LaunchChunk& c : m.stages[i].chunks) sizes.push_back(c.layers.end - c.layers.first);
      if (m.vpp > 1 && static_cast<int>(sizes.size()) == m.vpp && counts[i] >= m.vpp &&
          chunks_violation(sizes, m.vpp, counts[i]).empty())
        cut[i] = std::move(sizes);
    }
    const bool any_stated = cut != even;  // a cut other than the even one
    const std::vector<std::vector<LaunchChunk>> chunks = interleaved_chunks(cut);
    for (std::size_t i = 0; i < m.stages.size(); ++i)
      if (m.stages[i].chunks != chunks[i]) {
        // The ranges themselves where every stage keeps the even cut; where
        // some state another, one stage's ranges move with the others', so
        // the rule is said instead.
        std::string want;
        for (const LaunchChunk& c : chunks[i]) want += (want.empty() ? "" : ", ") + range_text(c.layers);
        const std::string rule = "the layers of its " + std::to_string(m.vpp) +
                                 " chunks, chunk-major as Megatron-Core places them (chunk 0 of every stage in "
                                 "stage order, then chunk 1, ...), each at least one layer, together the stage's " +
                                 std::to_string(counts[i]) + " layers";
        throw InputError(file, stage_key(i, "chunks"), std::to_string(m.stages[i].chunks.size()) + " chunks",
                         chunks[i].empty() ? std::string("none (vpp 1 or one stage: the stage runs its layers)")
                         : any_stated      ? rule
                                           : rule + ": with the even cut, " + want);
      }
  }
  if (gpus != m.world_size)
    throw InputError(file, "world_size", std::to_string(m.world_size),
                     "the stages' GPUs, sum of tp * cp * dp = " + std::to_string(gpus));
  if (m.ranks.size() != static_cast<std::size_t>(m.world_size))
    throw InputError(file, "ranks", std::to_string(m.ranks.size()) + " entries",
                     "one entry per rank (world_size " + std::to_string(m.world_size) + ")");

  // Ranks: each once, at a position and a GPU of its own, consistent with
  // its stage.
  std::vector<int> entry_of(m.world_size, -1);
  std::vector<std::vector<int>> rank_at = position_index(m);
  std::map<std::pair<std::string, int>, std::size_t> gpu_of;
  for (std::size_t k = 0; k < m.ranks.size(); ++k) {
    const LaunchRank& r = m.ranks[k];
    within(rank_key(k, "rank"), r.rank, 0, m.world_size - 1);
    if (entry_of[r.rank] >= 0)
      throw InputError(file, rank_key(k, "rank"), std::to_string(r.rank),
                       "each rank 0.." + std::to_string(m.world_size - 1) + " once (ranks[" +
                           std::to_string(entry_of[r.rank]) + "] is rank " + std::to_string(r.rank) + " too)");
    entry_of[r.rank] = static_cast<int>(k);
    if (r.node.empty()) throw InputError(file, rank_key(k, "node"), "", "a node name");
    within(rank_key(k, "local_gpu"), r.local_gpu, 0, limits::kMaxGpusPerNode - 1);
    const auto [gpu, fresh] = gpu_of.emplace(std::make_pair(r.node, r.local_gpu), k);
    if (!fresh)
      throw InputError(file, rank_key(k, "local_gpu"), std::to_string(r.local_gpu),
                       "a GPU of node " + r.node + " no other rank uses (ranks[" + std::to_string(gpu->second) +
                           "] runs there)");
    within(rank_key(k, "stage"), r.stage, 0, static_cast<long long>(m.stages.size()) - 1);
    const LaunchStage& s = m.stages[r.stage];
    within(rank_key(k, "tp_rank"), r.tp_rank, 0, s.tp - 1);
    within(rank_key(k, "cp_rank"), r.cp_rank, 0, s.cp - 1);
    within(rank_key(k, "dp_rank"), r.dp_rank, 0, s.dp - 1);
    int& slot = rank_at[r.stage][position(s, r.tp_rank, r.cp_rank, r.dp_rank)];
    if (slot >= 0)
      throw InputError(file, rank_key(k, "dp_rank"), std::to_string(r.dp_rank),
                       "a (tp_rank, cp_rank, dp_rank) of stage " + std::to_string(r.stage) +
                           " no other rank holds (rank " + std::to_string(slot) + " holds this one)");
    slot = r.rank;
    const std::string stage_name = "stages[" + std::to_string(r.stage) + "]";
    const std::string& device = replica_device(s, r.dp_rank);
    if (r.device != device)
      throw InputError(file, rank_key(k, "device"), r.device, "'" + device + "' (the device of " + stage_name +
                                                                  (s.replica_sets.empty() ? ")" : "'s replica " + std::to_string(r.dp_rank) + ")"));
    equal(rank_key(k, "layers"), r.layers, s.layers, "the layers of " + stage_name);
    const IndexRange sequences = replica_sequences(s, r.dp_rank, B);
    equal(rank_key(k, "sequences"), r.sequences, sequences,
          "replica " + std::to_string(r.dp_rank) + " of " + std::to_string(s.dp) + " over B = " + std::to_string(B) +
              (s.replica_sets.empty() ? "" : " (by its replica set's share)"));
    if (r.sequences_per_replica != sequences.end - sequences.first)
      throw InputError(file, rank_key(k, "sequences_per_replica"), std::to_string(r.sequences_per_replica),
                       std::to_string(sequences.end - sequences.first) + " (its sequences)");
    equal(rank_key(k, "tokens"), r.tokens, part(r.cp_rank, s.cp, m.seq_len),
          "chunk " + std::to_string(r.cp_rank) + " of " + std::to_string(s.cp) + " of the " +
              std::to_string(m.seq_len) + " tokens");
  }

  // Peers: within range, each listed back by its peer, and exactly the
  // rule's (launch_manifest.hpp).
  auto check_back = [&](std::size_t k, const char* list, const char* back) {
    const LaunchRank& r = m.ranks[k];
    const std::vector<LaunchPeer>& peers = std::string(list) == "send_to" ? r.send_to : r.recv_from;
    for (std::size_t j = 0; j < peers.size(); ++j) {
      const LaunchPeer& p = peers[j];
      const std::string key = rank_key(k, list) + "[" + std::to_string(j) + "]";
      within(key + ".rank", p.rank, 0, m.world_size - 1);
      const std::size_t other = static_cast<std::size_t>(entry_of[p.rank]);
      const LaunchRank& o = m.ranks[other];
      const std::vector<LaunchPeer>& theirs = std::string(back) == "send_to" ? o.send_to : o.recv_from;
      const LaunchPeer mirror{r.rank, p.sequences, p.tokens};
      if (std::find(theirs.begin(), theirs.end(), mirror) == theirs.end())
        throw InputError(file, key, peer_text(p),
                         "a peer that lists this rank back: " + rank_key(other, back) + " (rank " +
                             std::to_string(p.rank) + ") has no entry " + peer_text(mirror));
    }
  };
  for (std::size_t k = 0; k < m.ranks.size(); ++k) {
    check_back(k, "send_to", "recv_from");
    check_back(k, "recv_from", "send_to");
  }
  for (std::size_t k = 0; k < m.ranks.size(); ++k) {
    const LaunchRank& r = m.ranks[k];
    auto rule = [&](const char* list, const std::vector<LaunchPeer>& listed, int stage) {
      const std::vector<LaunchPeer> wanted =
          stage < 0 ? std::vector<LaunchPeer>{}
                    : exchange_peers(m, rank_at, r.stage, r.tp_rank, r.cp_rank, r.dp_rank, stage);
      if (listed != wanted)
        throw InputError(file, rank_key(k, list), peers_text(listed),
                         peers_text(wanted) + " (" +
                             (stage < 0 ? std::string("no neighbouring stage on this side")
                                        : "the ranks of stages[" + std::to_string(stage) +
                                              "] with tp rank " + std::to_string(r.tp_rank) +
                                              " (below both stages' tp) whose sequences and tokens overlap") +
                             ", ordered by rank)");
    };
    rule("send_to", r.send_to, next_stage(m, r.stage));
    rule("recv_from", r.recv_from, previous_stage(m, r.stage));
  }
}

}  // namespace autohaap
