#include "autohaap/io/megatron_layout.hpp"

#include <cctype>

#include "autohaap/error.hpp"
#include "autohaap/specs/parallel_rules.hpp"

namespace autohaap {
namespace {

const char* const kKey = "--pipeline-model-parallel-layout";
const char* const kGrammar =
    "segments separated by '|' (a multiple of the pipeline size, in model order), of E (embedding, once, "
    "first), t (transformer layer), L (loss, once, last), X*N and (group)*N repeats, ',' ignored";

[[noreturn]] void refuse(const std::string& text, const std::string& why) {
  throw InputError("", kKey, text, why + "; the grammar: " + kGrammar);
}

// "t" once, "t*N" for a run.
std::string layers_text(int n) {
  if (n <= 0) return "";
  return n == 1 ? "t" : "t*" + std::to_string(n);
}

// Reads the count after "*" at text[i] (i points at '*'); advances i past
// the digits. Refuses a '*' without digits.
std::size_t read_count(const std::string& original, const std::string& s, std::size_t& i) {
  std::size_t j = i + 1;
  std::size_t n = 0;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
    n = n * 10 + static_cast<std::size_t>(s[j] - '0');
    if (n > kMaxExpandedLayout) refuse(original, "a repeat count of at most " + std::to_string(kMaxExpandedLayout));
    ++j;
  }
  if (j == i + 1) refuse(original, "a count after '*' (X*N or (group)*N)");
  i = j;
  return n;
}

void append_repeated(const std::string& original, std::string& out, const std::string& unit, std::size_t n) {
  if (!unit.empty() && n > (kMaxExpandedLayout - out.size()) / unit.size())
    refuse(original, "a layout of at most " + std::to_string(kMaxExpandedLayout) + " symbols once expanded");
  for (std::size_t k = 0; k < n; ++k) out += unit;
}

// X*N after groups are gone: X any single symbol ('|' included).
std::string expand_symbols(const std::string& original, const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '*') refuse(original, "a symbol before '*'");
    if (i + 1 < s.size() && s[i + 1] == '*') {
      const char x = s[i];
      std::size_t j = i + 1;
      append_repeated(original, out, std::string(1, x), read_count(original, s, j));
      i = j;
    } else {
      append_repeated(original, out, std::string(1, s[i]), 1);
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string format_megatron_layout(const std::vector<int>& stage_layers, int vpp) {
  return format_megatron_layout(even_chunk_cut(stage_layers, vpp));
}

std::string format_megatron_layout(const std::vector<std::vector<int>>& cut) {
  const int p = static_cast<int>(cut.size());
  const int vpp = static_cast<int>(cut.front().size());
  // Segments in model order: chunk-major (Megatron-Core's virtual stages).
  std::vector<std::string> segments;
  for (int v = 0; v < vpp; ++v) {
    for (int i = 0; i < p; ++i) {
      std::string seg = v == 0 && i == 0 ? "E" : "";
      seg += layers_text(cut[i][v]);
      if (v == vpp - 1 && i == p - 1) seg += "L";
      segments.push_back(seg);
    }
  }
  // A run of three or more equal segments, not the last one, as (seg|)*K.
  std::string out;
  const std::size_t n = segments.size();
  for (std::size_t k = 0; k < n;) {
    std::size_t e = k + 1;
    while (e < n - 1 && segments[e] == segments[k]) ++e;  // the last segment stays out of the group
    const std::size_t run = e - k;
    if (run >= 3) {
      out += "(" + segments[k] + "|)*" + std::to_string(run);
    } else {
      for (std::size_t r = k; r < e; ++r) out += segments[r] + (r + 1 < n ? "|" : "");
    }
    k = e;
  }
  return out;
}

std::vector<int> MegatronLayout::stage_layers() const {
  std::vector<int> out;
  for (const std::vector<int>& chunks : layers) {
    int total = 0;
    for (int c : chunks) total += c;
    out.push_back(total);
  }
  return out;
}

MegatronLayout parse_megatron_layout(const std::string& text, int pipeline_size) {
  if (pipeline_size < 1) throw InputError("", "--pipeline-model-parallel-size", std::to_string(pipeline_size), "at least 1");
  std::string s;
  for (char c : text) {
    if (c != ',') s += c;  // commas are cosmetic
  }
  // Groups first: "(" body ")*N", the body without parentheses.
  std::string ungrouped;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == ')') refuse(text, "')' only closing a group opened by '('");
    if (s[i] != '(') {
      ungrouped += s[i++];
      continue;
    }
    const std::size_t close = s.find_first_of("()", i + 1);
    if (close == std::string::npos || s[close] == '(')
      refuse(text, close == std::string::npos ? "a ')' closing every '('" : "groups that do not nest");
    const std::string body = s.substr(i + 1, close - i - 1);
    if (body.empty()) refuse(text, "a non-empty group");
    if (close + 1 >= s.size() || s[close + 1] != '*') refuse(text, "a count after every group: (group)*N");
    std::size_t j = close + 1;
    const std::size_t n = read_count(text, s, j);
    append_repeated(text, ungrouped, body, n);
    i = j;
  }
  const std::string flat = expand_symbols(text, ungrouped);

  std::vector<int> seg{0};  // transformer layers of each segment, in model order
  std::size_t embeddings = 0, losses = 0;
  for (std::size_t i = 0; i < flat.size(); ++i) {
    const char c = flat[i];
    switch (c) {
      case '|': seg.push_back(0); break;
      case 't': ++seg.back(); break;
      case 'E':
        if (i != 0) refuse(text, "the embedding E as the first symbol of the model");
        ++embeddings;
        break;
      case 'L':
        if (i + 1 != flat.size()) refuse(text, "the loss L as the last symbol of the model");
        ++losses;
        break;
      case 'm': refuse(text, "no multi-token prediction layers (m): the planned model has none");
      default: refuse(text, std::string("the symbols E, t, L, '|', ',', '*', digits and parentheses, not '") + c + "'");
    }
  }
  if (embeddings != 1) refuse(text, "the embedding E exactly once, first");
  if (losses != 1) refuse(text, "the loss L exactly once, last");
  const int segments = static_cast<int>(seg.size());
  if (segments % pipeline_size != 0)
    refuse(text, "a multiple of the pipeline size " + std::to_string(pipeline_size) + " segments, not " +
                     std::to_string(segments));
  MegatronLayout layout;
  layout.vpp = segments / pipeline_size;
  layout.layers.assign(pipeline_size, std::vector<int>(layout.vpp, 0));
  for (int k = 0; k < segments; ++k) layout.layers[k % pipeline_size][k / pipeline_size] = seg[k];
  return layout;
}

}  // namespace autohaap
