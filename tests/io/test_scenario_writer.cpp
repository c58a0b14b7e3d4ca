// `specsim init`'s generator: the scenario it writes loads, predicts from priors only, and says for
// every value where it comes from; every bad input names its option.
#include <catch2/catch.hpp>

#include <iterator>
#include <sstream>
#include <string>

#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/scenario_writer.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using specsim::ScenarioInit;

namespace {

ScenarioInit llama_8b_one_h200() {
  ScenarioInit init;
  init.model = "llama-3.1-8b";
  init.draft = "llama-3.1-8b-eagle3";
  init.topology = "8x-h200-nvswitch";
  init.engine = "sglang";
  init.tp = 1;
  return init;
}

// The message of the specsim::Error that render_scenario_init throws for `init`.
std::string error_of(const ScenarioInit& init) {
  try {
    (void)specsim::render_scenario_init(init);
  } catch (const specsim::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("init: a dense 8B on one H200 loads and predicts from priors only", "[init]") {
  const std::string text = specsim::render_scenario_init(llama_8b_one_h200());
  const specsim::Scenario s = specsim::load_scenario_text(text, "init.yaml");
  CHECK(s.name == "llama-3.1-8b-eagle3-8x-h200-nvswitch-tp1");
  CHECK(s.model.name == "llama-3.1-8b");
  CHECK(s.draft.name == "llama-3.1-8b-eagle3");
  CHECK(s.gpu.name == "h200");
  CHECK(s.parallel.tp == 1);
  CHECK(s.batch == 1);
  CHECK(s.context_tokens == 2048);
  const specsim::CycleModel model(s);
  const specsim::Calibration& cal = model.calibration();
  // Nothing measured: every calibrated value is a prior, none reads "set".
  CHECK_THAT(cal.bandwidth_efficiency.origin, StartsWith("prior"));
  CHECK_THAT(cal.routing_skew.origin, StartsWith("prior"));
  CHECK_THAT(cal.host_decode_s.origin, StartsWith("prior"));
  CHECK_THAT(cal.spec_extra_per_cycle_s.origin, StartsWith("prior: engine sglang"));
  CHECK_THAT(cal.draft_step_overhead_s.origin, StartsWith("prior: engine sglang"));
  CHECK(cal.warnings.empty());
  const specsim::Prediction p = model.predict();
  CHECK(p.spec_tokens_per_s > 0);
  CHECK(p.baseline_tokens_per_s > 0);
}

TEST_CASE("init: an EAGLE-1 head is written with speculation.method eagle", "[init]") {
  ScenarioInit init = llama_8b_one_h200();
  init.draft = "llama-3.1-8b-eagle1";
  const std::string text = specsim::render_scenario_init(init);
  CHECK_THAT(text, Contains("method: eagle ") && Contains("--draft is an EAGLE-1/2 head"));
  const specsim::Scenario s = specsim::load_scenario_text(text, "init.yaml");
  CHECK(s.speculation.method == "eagle");
  REQUIRE(s.draft.eagle3);
  CHECK(s.draft.eagle3->version == 1);
  // The EAGLE-3 head keeps method eagle3.
  CHECK(specsim::load_scenario_text(specsim::render_scenario_init(llama_8b_one_h200()), "init.yaml").speculation.method ==
        "eagle3");
}

TEST_CASE("init: every value says where it comes from", "[init]") {
  const std::string text = specsim::render_scenario_init(llama_8b_one_h200());
  // Header keys describe the file itself; every other value has a comment on its line or just above.
  std::istringstream lines(text);
  std::string previous;
  int values = 0;
  for (std::string line; std::getline(lines, line); previous = line) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#') continue;
    if (line.find(": ") == std::string::npos) continue;
    if (line.starts_with("schema_version") || line.starts_with("kind") || line.starts_with("name") ||
        line.starts_with("description") || line.starts_with("source")) {
      continue;
    }
    ++values;
    INFO(line);
    const auto lead = previous.find_first_not_of(' ');
    const bool commented = line.find(" # ") != std::string::npos || (lead != std::string::npos && previous[lead] == '#');
    CHECK(commented);
  }
  CHECK(values >= 12);  // model, draft, topology, tp, batch, context, engine and speculation keys, accept
  // Guesses are marked, priors named with their files.
  CHECK_THAT(text, Contains("# assumption: one request at a time"));
  CHECK_THAT(text, Contains("assumption: EAGLE-3 heads accept 0.7-0.8"));
  CHECK_THAT(text, Contains("docs/references/measured-compute.md#gemm-efficiency"));
  CHECK_THAT(text, Contains("the prior of models/engines/sglang.yaml"));
  CHECK_THAT(text, Contains("comm: one GPU (TP1), no all-reduce"));
}

TEST_CASE("init: given values are written as inputs, not assumptions", "[init]") {
  ScenarioInit init = llama_8b_one_h200();
  init.batch = 8;
  init.context = 8192;
  init.accept = 0.75;
  init.name = "mine";
  const std::string text = specsim::render_scenario_init(init);
  CHECK_THAT(text, Contains("batch: 8") && Contains("# --batch"));
  CHECK_THAT(text, Contains("context: 8192") && Contains("# --context"));
  CHECK_THAT(text, Contains("accept: 0.750") && Contains("# --accept"));
  const specsim::Scenario s = specsim::load_scenario_text(text, "init.yaml");
  CHECK(s.name == "mine");
  CHECK(s.batch == 8);
  CHECK(std::get<specsim::ConstantChain>(s.acceptance.kind).accept == 0.75);
}

// What a new user has from a published run: the plain rate and the acceptance the engine printed.
TEST_CASE("init: a published plain rate and the engine's own acceptance are written as measured", "[init]") {
  ScenarioInit init = llama_8b_one_h200();
  init.draft_acceptance_rate = 0.691;  // vLLM "Avg Draft acceptance rate: 69.1%" at K = 3
  init.plain_rate = "141.4tok/s";
  const std::string text = specsim::render_scenario_init(init);
  CHECK_THAT(text, Contains("draft_acceptance_rate: 0.691") && Contains("# --draft-acceptance-rate"));
  CHECK_THAT(text, Contains("tokens_per_s: 141.4tok/s") && Contains("# --plain-rate"));
  const specsim::Scenario s = specsim::load_scenario_text(text, "init.yaml");
  CHECK(std::get<specsim::MeasuredTau>(s.acceptance.kind).tokens_per_cycle == Approx(1.0 + 0.691 * 3));
  REQUIRE(s.measurements.baseline_tokens_per_s);
  CHECK(*s.measurements.baseline_tokens_per_s == Approx(141.4));
  // The cycle calibrates on it: the plain step is the measured one.
  const specsim::CycleModel model(s);
  CHECK(model.predict().baseline_tokens_per_s == Approx(141.4));

  ScenarioInit length = llama_8b_one_h200();
  length.accept_length = 2.9;
  CHECK(std::get<specsim::MeasuredTau>(specsim::load_scenario_text(specsim::render_scenario_init(length), "init.yaml")
                                           .acceptance.kind)
            .tokens_per_cycle == 2.9);
  length.accept_length = 9.0;  // a chain of 3 emits at most 4
  CHECK_THAT(error_of(length), StartsWith("--accept-length: acceptance.tokens_per_cycle: = 9: must lie in [1,"));
  ScenarioInit end_to_end = llama_8b_one_h200();
  end_to_end.plain_rate = "133tok/s";
  end_to_end.plain_end_to_end = true;
  const std::string e2e = specsim::render_scenario_init(end_to_end);
  CHECK_THAT(e2e, Contains("includes_prefill: true") && Contains("# --plain-end-to-end"));
  CHECK(specsim::load_scenario_text(e2e, "init.yaml").measurements.baseline_includes_prefill);
  ScenarioInit unitless = llama_8b_one_h200();
  unitless.plain_rate = "141";
  CHECK_THAT(error_of(unitless), StartsWith("--plain-rate: measurements.baseline.tokens_per_s: expected a rate with unit"));
}

// A published run states its draft shape (K, a tree's top-k and tokens) and, for a benchmark's
// end-to-end rate, its prompt and output lengths: init writes them as given, and refuses the shapes
// the loader would otherwise settle on its own.
TEST_CASE("init: a published draft shape and benchmark lengths are written as given", "[init]") {
  ScenarioInit tree = llama_8b_one_h200();
  tree.num_steps = 4;
  tree.eagle_topk = 4;
  tree.num_draft_tokens = 16;
  tree.accept_length = 2.553;
  const std::string text = specsim::render_scenario_init(tree);
  CHECK_THAT(text, Contains("num_steps: 4") && Contains("# --num-steps: as published"));
  CHECK_THAT(text, Contains("eagle_topk: 4") && Contains("# --topk: as published"));
  CHECK_THAT(text, Contains("num_draft_tokens: 16") && Contains("# --num-draft-tokens: as published"));
  const specsim::Scenario s = specsim::load_scenario_text(text, "init.yaml");
  CHECK(s.speculation.shape.num_steps == 4);
  CHECK(s.speculation.shape.eagle_topk == 4);
  CHECK(s.speculation.shape.num_draft_tokens == 16);

  // A chain: K alone, its tokens K + 1; the rate read at that shape (1 + 0.691 x 2 at K = 2).
  ScenarioInit chain = llama_8b_one_h200();
  chain.num_steps = 2;
  chain.draft_acceptance_rate = 0.691;
  const specsim::Scenario c = specsim::load_scenario_text(specsim::render_scenario_init(chain), "init.yaml");
  CHECK(c.speculation.shape.num_draft_tokens == 3);
  CHECK(std::get<specsim::MeasuredTau>(c.acceptance.kind).tokens_per_cycle == Approx(2.382));

  ScenarioInit wrong_chain = llama_8b_one_h200();
  wrong_chain.num_steps = 3;
  wrong_chain.num_draft_tokens = 9;
  CHECK_THAT(error_of(wrong_chain),
             StartsWith("--num-draft-tokens: speculation.num_draft_tokens: 9 with a chain of 3 steps, which verifies 4"));
  ScenarioInit bare_tree = llama_8b_one_h200();
  bare_tree.eagle_topk = 4;
  CHECK_THAT(error_of(bare_tree), StartsWith("--num-draft-tokens: speculation.num_draft_tokens: required with a tree"));
  ScenarioInit too_wide = tree;
  too_wide.num_draft_tokens = 400;  // 4 steps of top-4 offer 1 + 4 + 3 x 16 = 53 candidates
  CHECK_THAT(error_of(too_wide), StartsWith("--num-draft-tokens: speculation.num_draft_tokens: = 400: must lie in [2,") &&
                                 Contains("= [2, 53] for num_steps = 4, eagle_topk = 4"));
  ScenarioInit block;
  block.model = "qwen3-8b";
  block.draft = "qwen3-8b-dflash-b16";
  block.topology = "8x-h200-nvswitch";
  block.tp = 1;
  block.num_steps = 3;
  CHECK_THAT(error_of(block), StartsWith("--num-steps: speculation: method dflash drafts one block"));

  ScenarioInit bench = llama_8b_one_h200();
  bench.plain_rate = "133tok/s";
  bench.plain_end_to_end = true;
  bench.prompt_tokens = 1000;
  bench.output_tokens = 250;
  const std::string e2e = specsim::render_scenario_init(bench);
  CHECK_THAT(e2e, Contains("prompt_tokens: 1000") && Contains("# --prompt-tokens"));
  const specsim::Scenario b = specsim::load_scenario_text(e2e, "init.yaml");
  CHECK(b.measurements.baseline_prompt_tokens == 1000);
  CHECK(b.measurements.baseline_output_tokens == 250);
  // vllm bench serve prints Mean TPOT beside the output throughput: 7.5 ms per token of one request
  // at batch 1, within the end-to-end step 1 / 133 tok/s = 7.52 ms.
  ScenarioInit tpot = bench;
  tpot.plain_tpot = "7.5ms";
  const specsim::Scenario t = specsim::load_scenario_text(specsim::render_scenario_init(tpot), "init.yaml");
  REQUIRE(t.measurements.baseline_tpot_s);
  CHECK_THAT(*t.measurements.baseline_tpot_s, Catch::Matchers::WithinRel(7.5e-3, 1e-12));
  tpot.plain_tpot = "9ms";  // longer than the end-to-end step: refused at the option
  CHECK_THAT(error_of(tpot), StartsWith("--plain-tpot: measurements.baseline.tpot: = 9 ms is longer than"));
  ScenarioInit half = bench;
  half.output_tokens.reset();
  CHECK_THAT(error_of(half), StartsWith("--prompt-tokens: measurements.baseline"));
}

TEST_CASE("init: vLLM, a measured table at another rank count, and the engine's own sequencing", "[init]") {
  ScenarioInit init;
  init.model = "qwen3-30b-a3b";
  init.draft = "qwen3-30b-a3b-eagle3";
  init.topology = "8x-rtx-pro-6000-pcie5";  // its table was measured at 8 ranks
  init.engine = "vllm";
  init.tp = 4;
  const std::string text = specsim::render_scenario_init(init);
  CHECK_THAT(text, Contains("vLLM V1 EagleProposer.propose"));
  CHECK_THAT(text, Contains("measured at 8 ranks, not 4"));
  CHECK_THAT(text, Contains("rank_scaling: nccl"));
  CHECK_THAT(text, Contains("routing_skew 1: uniform routing"));  // a MoE target
  CHECK_THAT(text, Contains("interventions: `specsim rank` tries models/interventions/any-box.yaml") &&
                       Contains("what models/topology/8x-rtx-pro-6000-pcie5.yaml measured on this box"));
  const specsim::Scenario s = specsim::load_scenario_text(text, "init.yaml");
  CHECK(s.engine.name == "vllm");
  CHECK(s.comm.rank_scaling == "nccl");
  CHECK(s.comm_profile->ranks == 8);
}

TEST_CASE("init: nvidia-smi topo -m output becomes an inline topology, the GPU must be named", "[init]") {
  ScenarioInit init;
  init.model = "qwen3-30b-a3b";
  // An HF checkpoint directory holding config.json, as the draft.
  init.draft = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/hf/qwen3-30b-a3b-eagle3";
  init.topology = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/topo/club-3090-46-5gpu-sys-phb-node.txt";
  init.tp = 4;
  CHECK_THAT(error_of(init), StartsWith("--gpu: topology.gpu: required with nvidia-smi topo -m output") &&
                                 Contains("known: ") && Contains("rtx-4090"));
  init.gpu = "rtx-4090";
  const std::string text = specsim::render_scenario_init(init);
  CHECK_THAT(text, Contains("topology:\n  name: \"club-3090-46-5gpu-sys-phb-node\""));
  CHECK_THAT(text, Contains("imported from club-3090-46-5gpu-sys-phb-node.txt"));
  CHECK_THAT(text, Contains("NCCL's own cost model"));  // no table for an imported box
  const specsim::Scenario s = specsim::load_scenario_text(text, "init.yaml");
  CHECK(s.topology.gpus == 5);
  CHECK(s.gpu.name == "rtx-4090");
  CHECK(s.draft.eagle3.has_value());
  CHECK_THAT(s.draft.file, Contains("qwen3-30b-a3b-eagle3/config.json"));
  const specsim::CycleModel model(s);
  CHECK_FALSE(model.calibration().comm_calibrated);
}

TEST_CASE("init: every bad input names its option and key", "[init][invalid]") {
  struct Case {
    const char* what;
    void (*edit)(ScenarioInit&);
    const char* message;
  };
  const Case cases[] = {
      {"unknown model", [](ScenarioInit& i) { i.model = "llama-9"; }, "--model: model: unknown model 'llama-9' (known in "},
      {"missing model file", [](ScenarioInit& i) { i.model = "no/such.json"; }, "--model: model: no/such.json: no such model file"},
      {"unknown draft", [](ScenarioInit& i) { i.draft = "eagle-9"; }, "--draft: draft: unknown model 'eagle-9'"},
      // A full model as --draft is a draft_model; with --method eagle3 it is refused as no EAGLE head.
      {"target as an EAGLE-3 draft", [](ScenarioInit& i) { i.draft = "llama-3.1-8b"; i.method = "eagle3"; },
       "--draft: draft: 'llama-3.1-8b' is not an EAGLE draft head"},
      {"unknown method", [](ScenarioInit& i) { i.method = "medusa"; }, "--method: speculation.method: 'medusa' is not a speculation method (eagle3, eagle, mtp, draft_model, ngram, dflash)"},
      {"draft of another shape", [](ScenarioInit& i) { i.draft = "qwen3-8b-eagle3"; }, "does not fit the model 'llama-3.1-8b'"},
      {"draft as target", [](ScenarioInit& i) { i.model = "llama-3.1-8b-eagle3"; }, "--model: model: 'llama-3.1-8b-eagle3' is an EAGLE-3 draft head"},
      {"unknown topology", [](ScenarioInit& i) { i.topology = "9x-h900"; }, "--topology: topology: unknown topology '9x-h900' (known in "},
      {"unknown gpu", [](ScenarioInit& i) { i.gpu = "h900"; }, "--gpu: gpu: unknown GPU 'h900'"},
      {"unknown engine", [](ScenarioInit& i) { i.engine = "lmdeploy"; }, "--engine: engine.name: unknown engine 'lmdeploy' (known in "},
      {"tp above the box", [](ScenarioInit& i) { i.tp = 16; }, "--tp: parallel.tp: = 16: the topology '8x-h200-nvswitch' has only 8 GPUs"},
      // Llama-3.1-8B: 32 heads, 8 KV heads; 3 divides neither.
      {"tp not dividing heads", [](ScenarioInit& i) { i.tp = 3; }, "--tp: parallel.tp: tp = 3 on llama-3.1-8b: tp must divide the 32 attention heads"},
      {"tp 0", [](ScenarioInit& i) { i.tp = 0; }, "--tp: parallel.tp: = 0: must be >= 1"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    ScenarioInit init = llama_8b_one_h200();
    c.edit(init);
    CHECK_THAT(error_of(init), Contains(c.message));
  }
  // The list of known names comes with an unknown one.
  ScenarioInit init = llama_8b_one_h200();
  init.engine = "lmdeploy";
  CHECK_THAT(error_of(init), Contains("sglang, trtllm, vllm"));
}

TEST_CASE("init: every method writes a scenario that predict accepts", "[init]") {
  struct Case {
    const char* method;
    const char* model;
    const char* draft;  // "" for methods without a draft model
    const char* topology;
    int tp;
  };
  const Case cases[] = {
      {"eagle3", "llama-3.1-8b", "llama-3.1-8b-eagle3", "8x-h200-nvswitch", 1},
      {"eagle", "llama-3.1-8b", "llama-3.1-8b-eagle1", "8x-h200-nvswitch", 1},
      {"mtp", "deepseek-v3", "", "8x-h200-nvswitch", 8},
      {"draft_model", "llama-3.3-70b", "llama-3.2-1b", "4x-h100-nvswitch", 4},
      {"ngram", "qwen3-8b", "", "8x-h200-nvswitch", 1},
      {"dflash", "qwen3-8b", "qwen3-8b-dflash-b16", "1x-b200", 1},
  };
  REQUIRE(std::size(cases) == specsim::init_methods().size());
  for (const char* engine : {"sglang", "vllm"}) {
    for (const Case& c : cases) {
      INFO(c.method << " on " << engine);
      ScenarioInit init;
      init.model = c.model;
      init.draft = c.draft;
      init.method = c.method;
      init.topology = c.topology;
      init.engine = engine;
      init.tp = c.tp;
      const specsim::Scenario s = specsim::load_scenario_text(specsim::render_scenario_init(init), "init.yaml");
      CHECK(s.speculation.method == c.method);
      CHECK(s.engine.name == engine);
      CHECK_NOTHROW(specsim::require_memory_fit(s));  // what predict asks first
      const specsim::Prediction p = specsim::CycleModel(s).predict();
      CHECK(p.spec_tokens_per_s > 0);
      // Without --method the draft (or the model's MTP layers) says the same method, but for ngram,
      // which nothing names.
      if (std::string(c.method) != "ngram") {
        init.method.clear();
        CHECK(specsim::load_scenario_text(specsim::render_scenario_init(init), "init.yaml").speculation.method == c.method);
      }
    }
  }
}

TEST_CASE("init: the DFlash drafter's trained block is written as the block", "[init]") {
  ScenarioInit init;
  init.model = "qwen3-8b";
  init.draft = "qwen3-8b-dflash-b16";
  init.topology = "1x-b200";
  init.tp = 1;
  const std::string text = specsim::render_scenario_init(init);
  CHECK_THAT(text, Contains("method: dflash"));
  CHECK_THAT(text, Contains("block_size: 16"));
  CHECK(specsim::load_scenario_text(text, "init.yaml").speculation.shape.num_draft_tokens == 16);
}

TEST_CASE("init: a deployment that does not fit in memory is refused, naming the tp that fits", "[init]") {
  // Kimi-K2.5 (about 590 GB of int4 weights) at TP1 on one 141 GB H200: predict would refuse it, so
  // init does, and names TP8, the smallest of the box that holds it (64 heads; TP4 holds 564 GB).
  ScenarioInit init;
  init.model = "kimi-k2.5";
  init.draft = "kimi-k2.5-eagle3";
  init.topology = "8x-h200-nvswitch";
  init.tp = 1;
  const std::string message = error_of(init);
  CHECK_THAT(message, StartsWith("--tp: parallel.tp:"));
  CHECK_THAT(message, Contains("the smallest tp that fits on 8x-h200-nvswitch is 8 (--tp 8)"));
  init.tp = 8;
  CHECK_NOTHROW(specsim::render_scenario_init(init));
}

TEST_CASE("init: a method that drafts without a model refuses --draft, and one that needs it asks", "[init]") {
  ScenarioInit init;
  init.model = "qwen3-8b";
  init.draft = "qwen3-8b-eagle3";
  init.method = "ngram";
  init.topology = "1x-b200";
  init.tp = 1;
  CHECK_THAT(error_of(init), Contains("--method ngram drafts without a draft model (prompt lookup): leave --draft out"));
  init.draft = "";
  init.method = "dflash";
  CHECK_THAT(error_of(init), Contains("required with --method dflash"));
  init.method = "";
  CHECK_THAT(error_of(init), Contains("'qwen3-8b' has no MTP layers; give --draft, or --method ngram"));
}
