// SVG and HTML reports: structure a reader (and a tool) can rely on, drawn
// from real plans scored by the cost model.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "autohaap/cost/cost_model.hpp"
#include "autohaap/error.hpp"
#include "autohaap/io/atomic_file.hpp"
#include "autohaap/io/catalog.hpp"
#include "autohaap/io/plan_io.hpp"
#include "autohaap/plan_builder.hpp"
#include "autohaap/report/html_report.hpp"
#include "autohaap/report/report_writer.hpp"
#include "autohaap/report/svg_report.hpp"
#include "autohaap/report/timeline.hpp"
#include "autohaap/units.hpp"

namespace autohaap {
namespace {

namespace fs = std::filesystem;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

Problem mixed_problem() {
  return Problem{catalog_model("gpt3-1.3b"), catalog_cluster("mixed-a100-v100"), TrainingSpec{}, {}};
}

StagePlan make_stage(int group, const std::string& device, int first_gpu, int tp, int dp, int begin, int end,
                     Recompute r) {
  StagePlan s;
  s.group = group, s.device = device, s.first_gpu = first_gpu, s.tp = tp, s.dp = dp, s.gpus = tp * dp;
  s.layer_begin = begin, s.layer_end = end, s.recompute = r;
  return s;
}

// Three asymmetric stages over both device types of the default cluster.
Plan mixed_plan() {
  Plan p;
  p.model = "gpt3-1.3b";
  p.cluster = "mixed-a100-v100";
  p.global_batch = 512;
  p.micro_batch_size = 8;
  p.num_micro_batches = 64;
  p.zero = 1;
  p.stages = {make_stage(0, "a100-40gb", 0, 4, 2, 0, 10, Recompute::none),
              make_stage(0, "a100-40gb", 8, 2, 4, 10, 18, Recompute::selective),
              make_stage(1, "v100-32gb", 0, 4, 4, 18, 24, Recompute::full)};
  return p;
}

TEST(SvgReport, OneRowPerStageAndOneBoxPerPass) {
  const Problem pb = mixed_problem();
  const CostModel model(pb);
  const Plan plan = mixed_plan();
  const std::string svg = render_svg_report(model, plan);

  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "class=\"stage-row\""), 3u);
  EXPECT_EQ(count(svg, "class=\"fwd\""), 3u * 64);
  EXPECT_EQ(count(svg, "class=\"bwd\""), 3u * 64);

  // Every (stage, micro-batch) has exactly one forward and one backward box.
  const std::regex box(R"re(class="(fwd|bwd)" data-stage="(\d+)" data-mb="(\d+)")re");
  std::map<std::tuple<std::string, int, int>, int> seen;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), box); it != std::sregex_iterator(); ++it) {
    seen[{(*it)[1], std::stoi((*it)[2]), std::stoi((*it)[3])}]++;
  }
  EXPECT_EQ(seen.size(), 2u * 3 * 64);
  for (const auto& [key, n] : seen) EXPECT_EQ(n, 1);

  // Row labels name device, GPUs, tp x dp and layers; sends, axis, bars, legend.
  EXPECT_NE(svg.find("Stage 0 — a100-40gb"), std::string::npos);
  EXPECT_NE(svg.find("Stage 2 — v100-32gb"), std::string::npos);
  EXPECT_NE(svg.find("8 GPUs (tp 2 × dp 4)"), std::string::npos);
  EXPECT_NE(svg.find("layers 18–23 (6), recompute full"), std::string::npos);
  EXPECT_NE(svg.find("class=\"sends\""), std::string::npos);
  EXPECT_NE(svg.find("time (s)"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"time-bar\""), 3u);
  EXPECT_EQ(count(svg, "class=\"mem-bar\""), 3u);
  EXPECT_EQ(count(svg, "class=\"capacity\""), 3u);
  EXPECT_EQ(count(svg, "class=\"mem-activations\""), 3u);
  EXPECT_NE(svg.find("optimizer states"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"sync\""), 3u);
  EXPECT_EQ(count(svg, "class=\"opt\""), 3u);
  // Device types get different colours: the V100 row does not reuse the A100's.
  const std::size_t row2 = svg.find("data-stage=\"2\" data-device");
  const std::size_t row0 = svg.find("data-stage=\"0\" data-device");
  const std::string fill = "<g fill=\"";
  EXPECT_NE(svg.substr(svg.find(fill, row0), 17), svg.substr(svg.find(fill, row2), 17));
  // Self-contained: nothing fetched, nothing run.
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);
}

TEST(SvgReport, PipelineSendsAreDrawnForEveryBoundaryCrossing) {
  const Problem pb = mixed_problem();
  const CostModel model(pb);
  const std::string svg = render_svg_report(model, mixed_plan());
  const std::size_t begin = svg.find("<g class=\"sends\"");
  ASSERT_NE(begin, std::string::npos);
  const std::string sends = svg.substr(begin, svg.find("</g>", begin) - begin);
  // Each micro-batch crosses 2 boundaries forward and 2 backward.
  EXPECT_EQ(count(sends, "<line "), 2u * 2 * 64);
}

TEST(SvgReport, InterleavedPlanDrawsABoxPerChunkPassAndTheWrapAroundSends) {
  // Four A100 stages of 6 layers in 2 chunks of 3, 8 micro-batches.
  const Problem pb = mixed_problem();
  UniformPlanRequest r;
  r.tp = 2, r.pp = 4, r.dp = 2, r.micro_batch_per_replica = 2, r.vpp = 2, r.global_batch = 32;
  const Plan plan = make_uniform_plan(pb, r);
  ASSERT_EQ(plan.num_micro_batches, 8);
  const CostModel model(pb);
  const std::string svg = render_svg_report(model, plan);
  EXPECT_EQ(count(svg, "class=\"fwd\""), 4u * 2 * 8);
  EXPECT_EQ(count(svg, "class=\"bwd\""), 4u * 2 * 8);
  // Every (kind, stage, micro-batch, chunk) once.
  const std::regex box(R"re(class="(fwd|bwd)" data-stage="(\d+)" data-mb="(\d+)" data-chunk="(\d+)")re");
  std::set<std::tuple<std::string, int, int, int>> seen;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), box); it != std::sregex_iterator(); ++it)
    seen.insert({(*it)[1], std::stoi((*it)[2]), std::stoi((*it)[3]), std::stoi((*it)[4])});
  EXPECT_EQ(seen.size(), 2u * 4 * 8 * 2);
  EXPECT_NE(svg.find("Interleaved 1F1B schedule"), std::string::npos);
  EXPECT_NE(svg.find("in chunks 3+3"), std::string::npos);
  EXPECT_NE(svg.find("stage 1 chunk 1 backward of micro-batch 7"), std::string::npos);
  EXPECT_EQ(svg.find("without interleaving"), std::string::npos);
  // Chunk 1 is shaded apart from chunk 0: the two forward groups of a row differ.
  const std::size_t row = svg.find("data-stage=\"1\" data-device");
  const std::size_t f0 = svg.find("<g fill=\"", row), f1 = svg.rfind("<g fill=\"", svg.find("data-chunk=\"1\"", row));
  EXPECT_NE(svg.substr(f0, 17), svg.substr(f1, 17));
  // Within the pipeline: 3 boundaries down and up per chunk; around it: the
  // last stage's chunk 0 to the first stage's chunk 1 and back.
  const std::size_t begin = svg.find("<g class=\"sends\"");
  const std::string sends = svg.substr(begin, svg.find("</g>", begin) - begin);
  EXPECT_EQ(count(sends, "<line "), 2u * 3 * 2 * 8);
  const std::size_t wrap = svg.find("<g class=\"wrap-sends\"");
  ASSERT_NE(wrap, std::string::npos);
  EXPECT_EQ(count(svg.substr(wrap, svg.find("</g>", wrap) - wrap), "<line "), 2u * 8);
}

TEST(SvgReport, StatedChunksAreDrawnAndSaidAsStated) {
  // The same four stages of 6 layers, the plan stating 5 + 1 layers on
  // each: the rows and the caption say so, and chunk 0's boxes are the
  // longer (five times the compute; the sends are shared evenly).
  const Problem pb = mixed_problem();
  UniformPlanRequest r;
  r.tp = 2, r.pp = 4, r.dp = 2, r.micro_batch_per_replica = 2, r.vpp = 2, r.global_batch = 32;
  Plan plan = make_uniform_plan(pb, r);
  const CostModel model(pb);
  EXPECT_NE(render_svg_report(model, plan).find("near-equal shares"), std::string::npos);
  for (StagePlan& s : plan.stages) s.chunks = {5, 1};
  const std::string svg = render_svg_report(model, plan);
  EXPECT_NE(svg.find("in chunks 5+1"), std::string::npos);
  EXPECT_NE(svg.find("the layers the plan states for it"), std::string::npos);
  EXPECT_EQ(svg.find("near-equal shares"), std::string::npos);
  const Timeline t = plan_timeline(model, plan);
  double chunk0 = 0, chunk1 = 0;
  for (const PipelineOp& op : t.stages[1].ops)
    if (op.kind == PassKind::forward && op.micro_batch == 0) (op.chunk == 0 ? chunk0 : chunk1) = op.end_s - op.start_s;
  EXPECT_GT(chunk0, 0);
  EXPECT_GT(chunk0, 2 * chunk1);
}

TEST(SvgReport, ManyMicroBatchesStayLight) {
  // 8 stages x 256 micro-batches: every box drawn, without tooltips or numbers.
  const Problem pb = mixed_problem();
  UniformPlanRequest r;
  r.tp = 1, r.pp = 8, r.dp = 2, r.micro_batch_per_replica = 1;
  const Plan plan = make_uniform_plan(pb, r);
  ASSERT_EQ(plan.num_micro_batches, 256);
  const CostModel model(pb);
  const std::string svg = render_svg_report(model, plan);
  EXPECT_EQ(count(svg, "class=\"stage-row\""), 8u);
  EXPECT_EQ(count(svg, "class=\"fwd\""), 8u * 256);
  EXPECT_EQ(count(svg, "class=\"bwd\""), 8u * 256);
  EXPECT_EQ(count(svg, "<title>"), 1u);  // the document's own title only
  EXPECT_LT(svg.size(), 200u * 2 * 8 * 256);
}

TEST(SvgReport, ALongIterationIsDrawnInPartAndSaysSo) {
  // 16,777,216 micro-batches once made a 500 MB picture or bad_alloc: now
  // the start and end of the schedule and a band for the middle.
  Plan plan = mixed_plan();
  plan.global_batch = 1 << 24;
  plan.micro_batch_size = 8;
  plan.num_micro_batches = 1 << 21;
  const Problem pb = mixed_problem();
  const CostModel model(pb);
  const std::string svg = render_svg_report(model, plan);
  EXPECT_LT(svg.size(), 2'000'000u);
  EXPECT_LE(count(svg, "class=\"fwd\""), 3u * 2 * (3 + kEdgeMicroBatches));
  EXPECT_NE(svg.find("micro-batches, one box per forward and backward; grey lane = idle (pipeline bubble); " +
                     std::to_string((1 << 21) - 2 * (3 + kEdgeMicroBatches)) + " in the middle elided"),
            std::string::npos);
  EXPECT_EQ(count(svg, "class=\"elided\""), 1u);
  EXPECT_NE(svg.find("data-mb=\"2097151\""), std::string::npos);  // the last micro-batch, by its number
  EXPECT_NE(svg.find("data-micro-batches=\"2097152\""), std::string::npos);
}

TEST(SvgReport, SmallSchedulesCarryTooltips) {
  const Problem pb = mixed_problem();
  const CostModel model(pb);
  const std::string svg = render_svg_report(model, mixed_plan());
  EXPECT_NE(svg.find("<title>stage 1 backward of micro-batch 5: "), std::string::npos);
}

TEST(SvgReport, StageThatDoesNotFitIsFlagged) {
  Problem pb = mixed_problem();
  pb.model = catalog_model("gpt3-13b");
  Plan plan = mixed_plan();
  plan.model = pb.model.name;
  plan.stages = {make_stage(0, "a100-40gb", 0, 1, 1, 0, 40, Recompute::none)};
  plan.micro_batch_size = 1;
  plan.num_micro_batches = 512;
  const CostModel model(pb);
  const std::string svg = render_svg_report(model, plan);
  EXPECT_NE(svg.find("DOES NOT FIT: stage 0 needs"), std::string::npos);
  EXPECT_NE(svg.find(" GiB over"), std::string::npos);
}

TEST(HtmlReport, WrapsThePictureWithSummaryAndStageTables) {
  const Problem pb = mixed_problem();
  const CostModel model(pb);
  const Plan plan = mixed_plan();
  const std::string html = render_html_report(model, plan);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_NE(html.find("<table class=\"summary\">"), std::string::npos);
  EXPECT_NE(html.find("<th>model</th><td>gpt3-1.3b (24 layers"), std::string::npos);
  EXPECT_NE(html.find("<th>throughput</th>"), std::string::npos);
  EXPECT_NE(html.find("<th>MFU / HFU</th>"), std::string::npos);
  // The stage table: a header row plus one row per stage.
  const std::size_t table = html.find("<table class=\"stages\">");
  ASSERT_NE(table, std::string::npos);
  const std::string stages = html.substr(table, html.find("</table>", table) - table);
  EXPECT_EQ(count(stages, "<tr"), 4u);
  EXPECT_NE(stages.find("v100-32gb"), std::string::npos);
  EXPECT_NE(stages.find("4 × 4"), std::string::npos);
  // The picture inline, without its own summary lines (the page has them).
  EXPECT_EQ(count(html, "<svg "), 1u);
  EXPECT_EQ(count(html, "class=\"fwd\""), 3u * 64);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  EXPECT_EQ(html.find("class=\"title\""), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("href"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
}

// tests/data/replicas/mixed_stage.yaml: stage 1 is two A100 replicas with
// 3 sequences each (set 1a, GPUs 4-5 of group 0) and two V100 replicas
// with 1 each (set 1b, GPUs 0-1 of group 1); the A100 set paces it.
Plan replica_set_plan() {
  const std::string file = std::string(AUTOHAAP_TEST_DATA_DIR) + "/replicas/mixed_stage.yaml";
  Plan p = read_plan(file);
  check_plan_against(p, mixed_problem().model, mixed_problem().cluster, mixed_problem().seq_len(), file);
  return p;
}

// The <tr ...> row of the stage table whose first cell is `label`.
std::string table_row(const std::string& html, const std::string& label) {
  const std::size_t cell = html.find("<td class=\"num\">" + label + "</td>");
  if (cell == std::string::npos) return "";
  const std::size_t begin = html.rfind("<tr", cell);
  return html.substr(begin, html.find("</tr>", cell) - begin);
}

// With measured profiles the stage table says where each row's times come
// from, as estimate's does (a report of a profiled plan had said nothing).
TEST(HtmlReport, StageTimesSayWhereTheyComeFrom) {
  Problem pb = mixed_problem();
  const Plan plan = mixed_plan();
  EXPECT_EQ(render_html_report(CostModel(pb), plan).find("<th>times</th>"), std::string::npos);
  // Every layer of the plan's A100 stage measured at its tp and micro-batch;
  // the V100 stage's corrected by that device's factor, none measured.
  const StagePlan& a100 = plan.stages[0];
  const int per_replica = plan.micro_batch_size / a100.dp;
  pb.profiles.add(ProfileKey{"a100-40gb", "layer", a100.tp, per_replica, pb.seq_len(), -1}, 0.02);
  const CostModel model(pb);
  const std::string html = render_html_report(model, plan);
  EXPECT_NE(html.find("<th>times</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>" + std::string(to_string(model.stage(plan, 0).time_source))), std::string::npos);
  EXPECT_NE(html.find("<td>analytic</td>"), std::string::npos);  // the V100 stage: nothing of it measured
}

TEST(HtmlReport, OneRowPerReplicaSetWithItsOwnPlaceShareAndCost) {
  const Problem pb = mixed_problem();
  const CostModel model(pb);
  const Plan plan = replica_set_plan();
  const std::vector<StageEstimate> sets = model.replica_set_estimates(plan, 1);
  ASSERT_EQ(sets.size(), 2u);
  ASSERT_GT(sets[0].pace_s(), sets[1].pace_s());  // the A100 set paces
  const std::string html = render_html_report(model, plan);
  const std::size_t table = html.find("<table class=\"stages\">");
  ASSERT_NE(table, std::string::npos);
  const std::string stages = html.substr(table, html.find("</table>", table) - table);
  // Header, stage 0, and the two sets of stage 1.
  EXPECT_EQ(count(stages, "<tr"), 4u);
  EXPECT_EQ(table_row(stages, "1"), "");

  const std::string a = table_row(stages, "1a"), b = table_row(stages, "1b");
  EXPECT_EQ(a.rfind("<tr class=\"set slowest\">", 0), 0u) << a;
  EXPECT_EQ(b.rfind("<tr class=\"set\">", 0), 0u) << b;
  EXPECT_NE(a.find("a100-40gb</td>"), std::string::npos);
  EXPECT_NE(b.find("v100-32gb</td>"), std::string::npos);
  // Each set's own GPUs, not the stage's 4 GPUs from the first set's first.
  EXPECT_NE(a.find("2 (group 0, GPUs 4–5)"), std::string::npos) << a;
  EXPECT_NE(b.find("2 (group 1, GPUs 0–1)"), std::string::npos) << b;
  EXPECT_NE(a.find(">1 × 2<"), std::string::npos);
  EXPECT_NE(a.find(">6 of 8, slowest<"), std::string::npos);
  EXPECT_NE(b.find(">2 of 8<"), std::string::npos);
  // Its own forward, backward, memory and device capacity (ms, GiB as printed).
  for (std::size_t k = 0; k < 2; ++k) {
    const std::string& row = k == 0 ? a : b;
    auto num = [](double v, int decimals) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "<td class=\"num\">%.*f</td>", decimals, v);
      return std::string(buf);
    };
    EXPECT_NE(row.find(num(sets[k].forward_s * 1e3, 2)), std::string::npos) << k;
    EXPECT_NE(row.find(num(sets[k].backward_s * 1e3, 2)), std::string::npos) << k;
    EXPECT_NE(row.find(num(sets[k].memory.total() / kGiB, 2)), std::string::npos) << k;
    EXPECT_NE(row.find(num(sets[k].capacity_bytes / kGiB, 1)), std::string::npos) << k;
  }
  EXPECT_NE(sets[0].capacity_bytes, sets[1].capacity_bytes);
  EXPECT_NE(html.find("class=\"sets-note\""), std::string::npos);
}

TEST(SvgReport, AStageOfReplicaSetsIsOneScheduleRowAndABarPerSet) {
  const Problem pb = mixed_problem();
  const CostModel model(pb);
  const Plan plan = replica_set_plan();
  const std::vector<StageEstimate> sets = model.replica_set_estimates(plan, 1);
  const std::string svg = render_svg_report(model, plan);
  // The schedule: one row per stage, paced by (and coloured as) the A100
  // set, naming both devices.
  EXPECT_EQ(count(svg, "class=\"stage-row\""), 2u);
  EXPECT_EQ(count(svg, "class=\"fwd\""), 2u * 64);
  EXPECT_NE(svg.find("data-stage=\"1\" data-device=\"a100-40gb+v100-32gb\""), std::string::npos);
  EXPECT_NE(svg.find("Stage 1 — a100-40gb+v100-32gb"), std::string::npos);
  EXPECT_NE(svg.find("4 GPUs (tp 1 × dp 2+2)"), std::string::npos);
  // Bars: stage 0, then one per set, each against its own device.
  EXPECT_EQ(count(svg, "class=\"mem-bar\""), 3u);
  EXPECT_EQ(count(svg, "class=\"time-bar\""), 3u);
  EXPECT_EQ(count(svg, "class=\"capacity\""), 3u);
  EXPECT_NE(svg.find("class=\"mem-bar\" data-stage=\"1\" data-set=\"1a\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"mem-bar\" data-stage=\"1\" data-set=\"1b\""), std::string::npos);
  for (std::size_t k = 0; k < 2; ++k) {
    const std::string device = plan.stages[1].replicas[k].device;
    char value[96];
    std::snprintf(value, sizeof value, "%.1f / %.0f GiB %s", sets[k].memory.total() / kGiB,
                  sets[k].capacity_bytes / kGiB, device.c_str());
    EXPECT_NE(svg.find(value), std::string::npos) << value;
  }
  EXPECT_NE(svg.find("a100-40gb, 6 of 8 seq."), std::string::npos);
  EXPECT_NE(svg.find("v100-32gb, 2 of 8 seq."), std::string::npos);
}

TEST(HtmlReport, EscapesNames) {
  Problem pb = mixed_problem();
  pb.cluster.name = "lab <A&B>";
  Plan plan = mixed_plan();
  plan.cluster = pb.cluster.name;
  const CostModel model(pb);
  const std::string html = render_html_report(model, plan);
  EXPECT_NE(html.find("lab &lt;A&amp;B&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<A&B>"), std::string::npos);
}

class ReportWriter : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("autohaap_report_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ReportWriter, ChoosesTheFormatByExtension) {
  const Problem pb = mixed_problem();
  const CostModel model(pb);
  const Plan plan = mixed_plan();
  const std::string svg = (dir_ / "plan.SVG").string(), html = (dir_ / "plan.html").string();
  write_report(model, plan, svg);
  write_report(model, plan, html);
  EXPECT_EQ(read_file(svg).rfind("<?xml", 0), 0u);
  EXPECT_EQ(read_file(html).rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(report_format_for("a/b.htm"), ReportFormat::html);
}

TEST_F(ReportWriter, RejectsOtherExtensionsNamingPathAndChoices) {
  const Problem pb = mixed_problem();
  const CostModel model(pb);
  const std::string png = (dir_ / "plan.png").string();
  try {
    write_report(model, mixed_plan(), png);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), png);
    EXPECT_EQ(e.value(), ".png");
    EXPECT_EQ(e.allowed(), ".svg, .html or .htm");
  }
  EXPECT_FALSE(fs::exists(png));
  EXPECT_THROW(report_format_for("dir.svg/report"), InputError);
  // Named by a flag, the error names the flag and the path.
  try {
    report_format_for("plan.png", "--report");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "command line");
    EXPECT_EQ(e.key(), "--report");
    EXPECT_EQ(e.value(), "plan.png");
  }
}

TEST_F(ReportWriter, UnwritablePathIsInputError) {
  const Problem pb = mixed_problem();
  const CostModel model(pb);
  EXPECT_THROW(write_report(model, mixed_plan(), (dir_ / "missing" / "plan.svg").string()), InputError);
}

}  // namespace
}  // namespace autohaap
