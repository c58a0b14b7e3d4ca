// The catalogue for any box (models/interventions/any-box.yaml, plus what a box's topology file
// adds) against every shipped box: rank on each shipped scenario, and on each shipped topology at
// the TP sizes it takes, offers only what is true there. The truths below are the references' (the
// engines' custom all-reduce guards, docs/references/nccl.md#engine-custom-allreduce; FlashInfer's
// fusion gates, docs/references/hardware.md#sm120-gates; which engine drafts trees or a TP1 draft,
// docs/references/specdec.md#draft-tp), written
// from the box's own files, not from the catalogue's `when:`: an entry whose preconditions are
// wrong, or a text that names another box, fails here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/preconditions.hpp"
#include "specsim/scenario_writer.hpp"
#include "specsim/whatif.hpp"

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

bool has(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

// The box as its files describe it.
struct BoxTruth {
  int tp = 1;
  bool nvlink = false, xgmi = false, pcie = false, across_nodes = false;
  bool p2p = false, amd = false, any_graph = false;
  int cc = 0;
  std::string engine, method, topology;
};

BoxTruth truth_of(const specsim::Scenario& s) {
  BoxTruth b;
  b.tp = s.parallel.tp;
  b.across_nodes = s.topology.nodes_spanned(s.parallel.tp) > 1;
  b.nvlink = !b.across_nodes && s.topology.link == specsim::LinkClass::kNvlink;
  b.xgmi = !b.across_nodes && s.topology.link == specsim::LinkClass::kXgmi;
  b.pcie = !b.across_nodes && !b.nvlink && !b.xgmi;
  b.p2p = s.topology.p2p && s.gpu.p2p_supported;
  b.amd = s.gpu.architecture == specsim::GpuArch::kCdna3 || s.gpu.architecture == specsim::GpuArch::kCdna4;
  b.cc = s.gpu.compute_capability;
  b.any_graph = s.engine.decode_mode == specsim::LaunchMode::kGraph || s.engine.verify_mode == specsim::LaunchMode::kGraph ||
                s.engine.draft_mode == specsim::LaunchMode::kGraph;
  b.engine = s.engine.name;
  b.method = s.speculation.method;
  b.topology = s.topology.name;
  return b;
}

// What would be untrue of `name` (offered, with `text` printed) on box `b`; "" when all holds.
std::string untrue(const std::string& name, const std::string& text, const BoxTruth& b) {
  const bool multi_gpu = name.rfind("nccl-", 0) == 0 || has(name, "allreduce") || name == "overlap-comm-compute" ||
                         name == "draft-tp1" || name == "tp4-pp2";
  if (multi_gpu && b.tp < 2) return "a multi-GPU change at TP 1";
  if (name == "custom-oneshot-allreduce" && !(b.pcie && b.p2p && !b.amd && b.engine == "sglang")) {
    return "the PCIe one-shot kernel (SGLang, NVIDIA, P2P) off a PCIe P2P SGLang box";
  }
  if (name == "custom-allreduce-engine") {
    const bool size = b.tp == 2 || b.tp == 4 || b.tp == 6 || b.tp == 8;
    const bool vllm_sm12x = b.engine == "vllm" && b.cc / 10 == 12 && b.any_graph;
    if (!(b.engine == "vllm" || b.engine == "sglang") || !size || !(b.tp == 2 || b.nvlink || b.xgmi) ||
        b.across_nodes || !b.p2p || vllm_sm12x) {
      return "the engines' custom all-reduce where their guards refuse it";
    }
  }
  if (name == "nccl-proto-ll128" && !(b.pcie && !b.amd)) return "NCCL's PCIe LL128 default off a PCIe NVIDIA box";
  if (name == "fuse-allreduce-residual-norm") {
    const bool flashinfer = b.nvlink && (b.cc == 90 || b.cc == 100 || b.cc == 103);
    const bool oneshot = b.pcie && b.p2p && b.engine == "sglang" && b.cc / 10 == 12;
    if (!flashinfer && !oneshot) return "an all-reduce + RMSNorm fusion no kernel offers on this GPU and link";
  }
  if (name == "draft-tp1" && b.engine != "vllm") return "a TP1 draft on an engine that runs the draft at the target's TP";
  if (name.rfind("tree-", 0) == 0 && b.engine != "sglang") return "a tree on an engine that drafts chains";
  if ((name == "nccl-graph-file" || name == "tp4-pp2") && b.topology != "8x-rtx-pro-6000-pcie5") {
    return "a figure measured on 8x-rtx-pro-6000-pcie5 said of another box";
  }
  if (has(text, "{library}")) return "an unwritten {library}";
  if (b.amd && (has(text, "NCCL returns") || has(text, "NCCL runs") || has(text, "NCCL's lowest"))) {
    return "NCCL named as the library of an AMD box (RCCL)";
  }
  if (!b.amd && has(text, "RCCL")) return "RCCL named on an NVIDIA box";
  if (has(text, "seen on ") && !has(text, "seen on " + b.topology + ":")) return "another box's measured failure";
  if (has(text, "PCIe one-shot kernel fuses") && !(b.pcie && b.cc / 10 == 12)) return "the SM120 PCIe fusion note off such a box";
  return "";
}

// Every claim rank makes on `s` (the ranked interventions and the plan) that the box contradicts.
std::vector<std::string> untrue_claims(const specsim::RankReport& r, const specsim::Scenario& s) {
  const BoxTruth b = truth_of(s);
  std::vector<std::string> out;
  for (const auto& x : r.ranked) {
    std::string why = untrue(x.intervention.name, x.intervention.description + " " + x.intervention.risk + " " + x.reason, b);
    // "[all-reduce uncalibrated]" on a deployment with no collective at all.
    const bool collectives = x.prediction.decode.collectives.size() + x.prediction.verify.collectives.size() > 0;
    if (why.empty() && !x.comm_calibrated && !collectives && x.reason.empty()) why = "an uncalibrated all-reduce where none runs";
    if (!why.empty()) out.push_back(x.intervention.name + " on " + s.name + " (" + b.topology + ", tp " + std::to_string(b.tp) + "): " + why);
  }
  for (const auto& step : r.path) {
    const std::string why = untrue(step.name, "", b);
    if (!why.empty()) out.push_back("plan step " + step.name + ": " + why);
  }
  return out;
}

struct Ranked {
  specsim::Scenario scenario;
  specsim::RankReport report;
};

Ranked rank_on(const std::string& scenario, const std::vector<std::string>& patches, int path_steps = 1) {
  specsim::Scenario s = specsim::load_scenario(scenario, patches, kRoot);
  const specsim::InterventionCatalogue c = specsim::rank_catalogue(s, "", kRoot);
  specsim::RankReport r = specsim::rank(s, patches, c, kRoot, path_steps);
  return {std::move(s), std::move(r)};
}

bool offers(const specsim::RankReport& r, const std::string& name) {
  return std::any_of(r.ranked.begin(), r.ranked.end(), [&](const auto& x) { return x.intervention.name == name; });
}

}  // namespace

TEST_CASE("catalogue: rank on every shipped scenario offers only what is true of its box", "[rank][catalogue]") {
  for (const auto& path : specsim::test::shipped_scenarios()) {
    const std::string name = path.string();
    INFO(name);
    const Ranked got = rank_on(name, {});
    CHECK(untrue_claims(got.report, got.scenario).empty());
    for (const auto& claim : untrue_claims(got.report, got.scenario)) UNSCOPED_INFO(claim);
  }
}

TEST_CASE("catalogue: an intervention set on the loaded scenario predicts what the loader's patches do",
          "[rank][catalogue]") {
  // rank sets field patches on the loaded value and shares its calibration (whatif.hpp); the loader
  // reading the file again with the same patches must give the same figures, to the last bit.
  for (const auto& path : specsim::test::shipped_scenarios()) {
    const std::string name = path.string();
    const Ranked got = rank_on(name, {}, 0);
    for (const auto& x : got.report.ranked) {
      if (!x.feasible) continue;
      INFO(name << ": " << x.intervention.name);
      const auto loaded = specsim::CycleModel(specsim::load_scenario(name, x.intervention.patches, kRoot)).predict();
      CHECK(x.tokens_per_s == loaded.spec_tokens_per_s);
      CHECK(x.prediction.baseline_tokens_per_s == loaded.baseline_tokens_per_s);
    }
  }
}

TEST_CASE("catalogue: rank on every shipped topology, at each TP it takes, on SGLang and vLLM", "[rank][catalogue]") {
  // A MoE target that fits a range of boxes, moved to each topology. A 2-node box's profile was
  // measured at 16 ranks: rank scaling estimates it at 8.
  const std::string base = "qwen3-30b-a3b-eagle3-4x-rtx-pro-6000";
  int ranked = 0;
  for (const std::string& topology : kRoot.names(specsim::DataKind::kTopology)) {
    const specsim::Topology t = specsim::load_topology(kRoot.resolve(specsim::DataKind::kTopology, topology));
    std::vector<int> tps{1, t.node_gpus(), t.gpus};
    tps.erase(std::unique(tps.begin(), tps.end()), tps.end());
    for (const int tp : tps) {
      for (const char* engine : {"sglang", "vllm"}) {
        INFO(topology << " tp " << tp << " " << engine);
        const Ranked got = rank_on(base, {"topology=" + topology, "parallel.tp=" + std::to_string(tp),
                                          "engine.name=" + std::string(engine), "comm.rank_scaling=nccl"});
        const auto claims = untrue_claims(got.report, got.scenario);
        for (const auto& claim : claims) UNSCOPED_INFO(claim);
        CHECK(claims.empty());
        // Every offered entry's own preconditions hold there, and every other one does not apply.
        for (const auto& x : got.report.ranked) CHECK(specsim::holds(x.intervention.when, got.scenario));
        if (tp > 1) CHECK(offers(got.report, "nccl-proto-ll"));
        if (tp == 1) CHECK_FALSE(offers(got.report, "nccl-proto-ll"));
        ++ranked;
      }
    }
  }
  CHECK(ranked >= 2 * 2 * 20);
}

TEST_CASE("catalogue: rank on every imported topology (nvidia-smi topo -m, rocm-smi --showtopo)", "[rank][catalogue]") {
  // `specsim init` writes the box inline: no box facts, the catalogue for any box alone.
  specsim::test::TempDir dir("specsim-catalogue-imported");
  int ranked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(SPECSIM_TEST_DATA_DIR) + "/valid/topo")) {
    if (entry.path().extension() != ".txt") continue;
    const std::string text = specsim::test::read_text(entry.path());
    specsim::ScenarioInit init;
    init.model = "qwen3-8b";  // fits two 24 GB cards
    init.draft = "qwen3-8b-eagle3";
    init.topology = entry.path().string();
    // The card the output never names: one whose links the output shows.
    init.gpu = has(text, "XGMI") || has(text, "ROCm") ? "mi300x" : has(text, "NV") ? "h100-sxm" : "rtx-4090";
    init.tp = 2;
    const auto file = dir.path / (entry.path().stem().string() + ".yaml");
    std::ofstream(file) << specsim::render_scenario_init(init, kRoot);
    INFO(entry.path().filename().string());
    const Ranked got = rank_on(file.string(), {});
    CHECK(got.report.catalogue == "any-box");
    const auto claims = untrue_claims(got.report, got.scenario);
    for (const auto& claim : claims) UNSCOPED_INFO(claim);
    CHECK(claims.empty());
    CHECK(offers(got.report, "nccl-proto-ll"));
    ++ranked;
  }
  CHECK(ranked >= 8);
}

TEST_CASE("catalogue: the box's own facts are said on that box only", "[rank][catalogue]") {
  // The home box's topology file adds nccl-graph-file (its measured 0.544) and tp4-pp2, and the
  // Tree failure it saw; the same GPUs behind a PCIe switch are another box.
  const Ranked home = rank_on(specsim::kDefaultScenario, {}, 0);
  CHECK(home.report.catalogue == "any-box + 8x-rtx-pro-6000-pcie5");
  CHECK(offers(home.report, "nccl-graph-file"));
  CHECK(offers(home.report, "tp4-pp2"));
  const auto tree = std::find_if(home.report.ranked.begin(), home.report.ranked.end(),
                                 [](const auto& x) { return x.intervention.name == "nccl-algo-tree"; });
  REQUIRE(tree != home.report.ranked.end());
  CHECK_FALSE(tree->feasible);
  CHECK_THAT(tree->reason, Catch::Matchers::Contains("ncclInvalidUsage during CUDA graph capture") &&
                               Catch::Matchers::Contains("seen on 8x-rtx-pro-6000-pcie5: NCCL_ALGO=Tree failed"));
  const Ranked other = rank_on(specsim::kDefaultScenario, {"topology=8x-rtx-pro-6000-pcie5-switch"}, 0);
  CHECK(other.report.catalogue == "any-box");
  CHECK_FALSE(offers(other.report, "nccl-graph-file"));
  const auto other_tree = std::find_if(other.report.ranked.begin(), other.report.ranked.end(),
                                       [](const auto& x) { return x.intervention.name == "nccl-algo-tree"; });
  REQUIRE(other_tree != other.report.ranked.end());
  // The rule holds on every box (one check, launch_checks.cpp); the measured failure is the home box's.
  CHECK_FALSE(other_tree->feasible);
  CHECK_THAT(other_tree->reason, Catch::Matchers::Contains("ncclInvalidUsage") && !Catch::Matchers::Contains("seen on"));
  // predict's launch check says the same, from the same rule.
  const auto predict = specsim::test::run({"predict", "--set", "comm.nccl_algo=tree"});
  CHECK_THAT(predict.out, Catch::Matchers::Contains("seen on 8x-rtx-pro-6000-pcie5: NCCL_ALGO=Tree failed"));
}

TEST_CASE("catalogue: an intervention whose precondition is false is not offered, and the check above sees it",
          "[rank][catalogue]") {
  // Negative case: an NVLink-only entry and an SGLang PCIe entry in a catalogue of one's own.
  specsim::InterventionCatalogue c;
  c.name = "mine";
  specsim::Intervention nvlink;
  nvlink.name = "custom-allreduce-engine";
  nvlink.patches = {"comm.implementation=engine"};
  nvlink.when.any = {{{"link", {"nvlink"}}}};
  specsim::Intervention pcie = nvlink;
  pcie.name = "custom-oneshot-allreduce";
  pcie.patches = {"comm.implementation=custom_oneshot"};
  pcie.when.any = {{{"link", {"pcie"}}, {"engine", {"sglang"}}}};
  c.interventions = {nvlink, pcie};
  const specsim::Scenario home = specsim::load_scenario(specsim::kDefaultScenario, {}, kRoot);
  const auto r = specsim::rank(home, {}, c, kRoot, 0);
  CHECK_FALSE(offers(r, "custom-allreduce-engine"));
  CHECK(std::find(r.not_offered.begin(), r.not_offered.end(), "custom-allreduce-engine") != r.not_offered.end());
  CHECK(offers(r, "custom-oneshot-allreduce"));
  CHECK(untrue_claims(r, home).empty());
  // Offered anyway (the precondition dropped), the same entry is what the check above refuses on
  // this 8-GPU PCIe box: the engines keep their custom all-reduce off beyond two PCIe-only GPUs.
  specsim::RankReport forced = r;
  forced.ranked.push_back({});
  forced.ranked.back().intervention = nvlink;
  const auto claims = untrue_claims(forced, home);
  REQUIRE(claims.size() == 1);
  CHECK_THAT(claims[0], Catch::Matchers::Contains("custom-allreduce-engine") &&
                            Catch::Matchers::Contains("guards refuse it"));
  // And on an NVLink box the PCIe kernel is refused by the same check.
  const specsim::Scenario h200 = specsim::load_scenario("kimi-k2.5-eagle3-8x-h200-nvswitch", {}, kRoot);
  specsim::RankReport wrong;
  wrong.ranked.push_back({});
  wrong.ranked.back().intervention = pcie;
  CHECK(untrue_claims(wrong, h200).size() == 1);
}
