#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli.hpp"
#include "cli_run.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/nccl_prior.hpp"
#include "specsim/load.hpp"
#include "specsim/nccl_tests.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace fs = std::filesystem;

namespace {

using specsim::test::Result;
using specsim::test::run;

std::string shipped_log(const std::string& name) {
  return std::string(SPECSIM_SOURCE_DIR) + "/calibration/nccl/" + name;
}

using specsim::test::TempDir;

}  // namespace

TEST_CASE("calibrate nccl: round trip from a shipped log to comm --json", "[calibrate]") {
  TempDir dir("specsim_test_calibrate_roundtrip");
  const std::string log = shipped_log("aikitoria-8x5090-p2p-turin.log");
  const std::string profile_path = (dir.path / "nccl-8x5090.yaml").string();
  const auto cal = run({"calibrate", "nccl", log, "-o", profile_path, "--holdout-every", "4"});
  INFO(cal.err);
  REQUIRE(cal.code == 0);
  CHECK_THAT(cal.out, Contains("fit residuals per regime") && Contains("held-out error: median"));
  CHECK_FALSE(fs::exists(profile_path + ".tmp"));

  // The profile loads with the library's own reader (provenance mapping accepted).
  const specsim::CommProfile profile = specsim::load_comm_profile(profile_path);
  CHECK(profile.name == "nccl-8x5090");
  CHECK(profile.ranks == 8);                               // `-g 8`, eight `#  Rank` lines
  CHECK(profile.mode == specsim::LaunchMode::kEager);      // header `graph: 0`
  const specsim::NcclTestsLog parsed = specsim::parse_nccl_tests_file(log);
  const auto& rows = parsed.tables.at(0).rows;
  REQUIRE(profile.points.size() == rows.size());           // 8 B .. 128 MiB by 2x: 25 rows

  // comm at every measured size returns the measured out-of-place time: the curve passes through
  // its points and the profile keeps six significant digits of nccl-tests' four or five.
  std::string sizes;
  for (const auto& r : rows) sizes += (sizes.empty() ? "" : ",") + std::to_string(static_cast<long long>(r.size_bytes));
  const auto comm = run({"comm", "--profile", profile_path, "--ranks", "8", "--size", sizes, "--json"});
  INFO(comm.err);
  REQUIRE(comm.code == 0);
  const auto j = nlohmann::json::parse(comm.out);
  // The points, and the NCCL release the log printed (nccl-library=22907).
  REQUIRE(j.size() == 2);
  CHECK(j["nccl_version"] == "2.29.7");
  REQUIRE(j["points"].size() == rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO("size " << rows[i].size_bytes);
    CHECK(j["points"][i].size() == 2);
    CHECK(j["points"][i]["bytes"].get<double>() == rows[i].size_bytes);
    CHECK_THAT(j["points"][i]["time_s"].get<double>(), WithinRel(rows[i].out_of_place.time_s, 0.01));
  }
  // Units work as well as byte counts: 14KiB = 14336 B.
  const auto unit = run({"comm", "--profile", profile_path, "--ranks", "8", "--size", "14KiB", "--json"});
  REQUIRE(unit.code == 0);
  CHECK(nlohmann::json::parse(unit.out)["points"][0]["bytes"].get<double>() == 14336.0);
}

TEST_CASE("calibrate nccl: provenance names the file's sha256 and the NCCL version", "[calibrate]") {
  TempDir dir("specsim_test_calibrate_provenance");
  const std::string out = (dir.path / "p.yaml").string();
  REQUIRE(run({"calibrate", "nccl", shipped_log("aikitoria-8x5090-p2p-turin.log"), "-o", out}).code == 0);
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Contains("provenance:") && Contains("sha256: ") && Contains("nccl_version: 2.29.7") &&
                       Contains("date_utc: ") && Contains("tool: specsim ") && Contains("rows_used: 25"));
  // The release is also the profile's own key, which the model reads (provenance is for people).
  CHECK(specsim::load_comm_profile(out).nccl_version == "2.29.7");
  // A log that prints no version leaves the key out.
  REQUIRE(run({"calibrate", "nccl", shipped_log("chlc-8x4090-nop2p-sys.log"), "-o", out, "--force"}).code == 0);
  CHECK(specsim::load_comm_profile(out).nccl_version.empty());
}

TEST_CASE("calibrate nccl: logs of two NCCL releases are refused unless --allow-mixed", "[calibrate][invalid]") {
  TempDir dir("specsim_test_calibrate_releases");
  const std::string out = (dir.path / "p.yaml").string();
  const std::string v2297 = shipped_log("aikitoria-8x5090-p2p-turin.log");
  // The same log as if run under NCCL 2.28.9: its header's library code rewritten.
  const fs::path v2289 = dir.path / "8x5090-2.28.9.log";
  {
    std::ifstream in(v2297);
    std::ofstream f(v2289);
    for (std::string line; std::getline(in, line);) {
      if (const auto at = line.find("nccl-library=22907"); at != std::string::npos) line.replace(at, 18, "nccl-library=22809");
      if (const auto at = line.find("nccl-headers=22907"); at != std::string::npos) line.replace(at, 18, "nccl-headers=22809");
      f << line << "\n";
    }
  }
  REQUIRE(specsim::parse_nccl_tests_file(v2289.string()).nccl_version == "2.28.9");
  const auto r = run({"calibrate", "nccl", v2297, v2289.string(), "-o", out});
  CHECK(r.code == specsim::cli::kExitInput);
  CHECK_THAT(r.err, Contains(v2289.string() + ": nccl_version: log ran NCCL 2.28.9 but " + v2297 + " ran NCCL 2.29.7") &&
                        Contains("--allow-mixed"));
  CHECK_FALSE(fs::exists(out));
  const auto mixed = run({"calibrate", "nccl", v2297, v2289.string(), "-o", out, "--allow-mixed"});
  INFO(mixed.err);
  REQUIRE(mixed.code == 0);
  CHECK_THAT(mixed.err, Contains("pooled, and the profile states no release (--allow-mixed)"));
  const auto profile = specsim::load_comm_profile(out);
  CHECK(profile.nccl_version.empty());
  CHECK_THAT(profile.description, Contains("NCCL (mixed releases)"));
}

TEST_CASE("calibrate nccl: a bad log fails with file:line and writes nothing", "[calibrate][invalid]") {
  TempDir dir("specsim_test_calibrate_bad");
  const fs::path log = dir.path / "bad.log";
  {
    // Line 4 has a non-numeric time.
    std::ofstream f(log);
    f << "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      << "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      << "           8             2     float     sum      -1    12.25    0.00    0.00      0    12.00    0.00    0.00      0\n"
      << "          16             4     float     sum      -1    abc    0.00    0.00      0    11.69    0.00    0.00      0\n";
  }
  const std::string out = (dir.path / "p.yaml").string();
  const auto r = run({"calibrate", "nccl", log.string(), "-o", out});
  CHECK(r.code == specsim::cli::kExitInput);
  CHECK_THAT(r.err, Contains(log.string() + ":4"));
  CHECK_FALSE(fs::exists(out));
  CHECK_FALSE(fs::exists(out + ".tmp"));

  // --lenient drops the row, warns with its place, and still writes the profile from the rest.
  const auto lenient = run({"calibrate", "nccl", log.string(), "-o", out, "--lenient"});
  CHECK(lenient.code == 0);
  CHECK_THAT(lenient.err, Contains(log.string() + ":4"));
  CHECK(specsim::load_comm_profile(out).points.size() == 1);
}

TEST_CASE("comm: ranks and mode must match the profile", "[calibrate][invalid]") {
  TempDir dir("specsim_test_comm_mismatch");
  const std::string out = (dir.path / "p.yaml").string();
  REQUIRE(run({"calibrate", "nccl", shipped_log("anthonyhoo-2x2080ti-nop2p-pix.log"), "-o", out}).code == 0);
  const auto ranks = run({"comm", "--profile", out, "--ranks", "8", "--size", "8"});
  CHECK(ranks.code == specsim::cli::kExitInput);
  CHECK_THAT(ranks.err, Contains("--ranks") && Contains("8") && Contains("2 ranks"));
  const auto mode = run({"comm", "--profile", out, "--ranks", "2", "--size", "8", "--mode", "graph"});
  CHECK(mode.code == specsim::cli::kExitInput);
  CHECK_THAT(mode.err, Contains("graph") && Contains("eager"));
  const auto size = run({"comm", "--profile", out, "--ranks", "2", "--size", "14 parsecs"});
  CHECK(size.code == specsim::cli::kExitInput);
  CHECK_THAT(size.err, Contains("--size"));
}

TEST_CASE("comm: an unmeasured rank count is estimated from profiles at others", "[calibrate][comm_scaling]") {
  const std::string two = "rtx-pro-6000-2x-pcie5-aic-nccl", four = "rtx-pro-6000-4x-pcie5-aic-nccl",
                    eight = "rtx-pro-6000-8x-pcie5-aic-nccl";
  // 8 KiB is measured at 2 ranks (6.8 us) and 4 ranks (13.5 us): the power law gives 13.5^2 / 6.8
  // = 26.80 us at 8 ranks (measured there: 26.7 us, held out).
  const auto est = run({"comm", "--profile", two + "," + four, "--ranks", "8", "--size", "8KiB", "--json"});
  REQUIRE(est.code == 0);
  const auto j = nlohmann::json::parse(est.out);
  CHECK(j["ranks"] == 8);
  CHECK(j["measured_at_ranks"] == false);
  CHECK(j["from_ranks"] == nlohmann::json::array({2, 4}));
  CHECK(j["rank_scaling"] == "power");
  CHECK_THAT(j["points"][0]["time_s"].get<double>(), WithinRel(13.5e-6 * 13.5 / 6.8, 1e-9));
  // Text output says it is an estimate.
  const auto text = run({"comm", "--profile", two, "--profile", four, "--ranks", "8", "--size", "8KiB"});
  CHECK_THAT(text.out, Contains("NOT MEASURED") && Contains("power law in ranks"));
  // The measured count among several profiles is that profile, unchanged.
  const auto exact = run({"comm", "--profile", two + "," + eight, "--ranks", "8", "--size", "8KiB", "--json"});
  const auto je = nlohmann::json::parse(exact.out);
  CHECK(je.size() == 2);  // {"points": [...], "nccl_version": ...}, as for one profile
  CHECK(je["nccl_version"] == "2.29.2");
  CHECK_THAT(je["points"][0]["time_s"].get<double>(), WithinRel(26.7e-6, 1e-9));
  // One profile: NCCL's model ratio, which needs the box's topology.
  const auto ratio = run({"comm", "--profile", four, "--ranks", "8", "--size", "8KiB", "--topology",
                          "8x-rtx-pro-6000-pcie5", "--json"});
  REQUIRE(ratio.code == 0);
  CHECK(nlohmann::json::parse(ratio.out)["rank_scaling"] == "nccl");
  const auto no_topology = run({"comm", "--profile", four, "--ranks", "8", "--size", "8KiB"});
  CHECK(no_topology.code == specsim::cli::kExitInput);
  CHECK_THAT(no_topology.err, Contains("--topology"));
  const auto twice = run({"comm", "--profile", four + "," + four, "--ranks", "8", "--size", "8KiB"});
  CHECK(twice.code == specsim::cli::kExitInput);
  CHECK_THAT(twice.err, Contains("both 4 ranks"));
  const auto power_one = run({"comm", "--profile", four, "--ranks", "8", "--size", "8KiB", "--rank-scaling", "power",
                              "--topology", "8x-rtx-pro-6000-pcie5"});
  CHECK(power_one.code == specsim::cli::kExitInput);
  CHECK_THAT(power_one.err, Contains("two rank counts"));
}

TEST_CASE("comm: with --topology NCCL's model is printed beside the measured time", "[calibrate]") {
  // The 8x H200 table (AIConfigurator, graph mode) at 64 KiB: 19.9 us measured. NCCL's model of
  // that box (NVSwitch, 8 ranks) is what specsim would use without the table.
  const std::string h200 = std::string(SPECSIM_SOURCE_DIR) + "/calibration/profiles/h200-8x-nvswitch-aic-nccl.yaml";
  const auto out = run({"comm", "--profile", h200, "--ranks", "8", "--size", "64KiB", "--topology", "8x-h200-nvswitch",
                        "--json"});
  REQUIRE(out.code == 0);
  const auto point = nlohmann::json::parse(out.out)["points"][0];
  const specsim::DataDir data(SPECSIM_SOURCE_DIR);
  const auto topology = specsim::load_topology(data.resolve(specsim::DataKind::kTopology, "8x-h200-nvswitch"));
  const auto gpu = specsim::load_gpu(data.resolve(specsim::DataKind::kGpu, topology.gpu));
  const double prior = specsim::nccl_prior_pick(specsim::nccl_prior_config(topology, gpu, 8), 65536).time_s;
  CHECK_THAT(point["prior_s"].get<double>(), WithinRel(prior, 1e-12));
  CHECK_THAT(point["measured_over_prior"].get<double>(), WithinRel(point["time_s"].get<double>() / prior, 1e-12));
  const auto text = run({"comm", "--profile", h200, "--ranks", "8", "--size", "64KiB", "--topology", "8x-h200-nvswitch"});
  CHECK_THAT(text.out, Contains("NCCL prior") && Contains("(x 1.26)"));
  const auto csv = run({"comm", "--profile", h200, "--ranks", "8", "--size", "64KiB", "--topology", "8x-h200-nvswitch",
                        "--format", "csv"});
  CHECK_THAT(csv.out, Contains("bytes,time_s,prior_s,measured_over_prior"));
  // Without a topology the output is as before: no prior.
  const auto plain = nlohmann::json::parse(run({"comm", "--profile", h200, "--ranks", "8", "--size", "64KiB", "--json"}).out);
  CHECK_FALSE(plain["points"][0].contains("prior_s"));
}

TEST_CASE("calibrate nccl: shipped profiles load and match their logs", "[calibrate]") {
  // calibration/profiles/nccl-<log>.yaml were written by `specsim calibrate nccl`.
  for (const char* name : {"aikitoria-8x5090-p2p-turin", "anthonyhoo-2x2080ti-nop2p-pix", "chlc-8x4090-nop2p-sys",
                           "ncclt290-8xH100-nvswitch-large"}) {
    INFO(name);
    const auto profile = specsim::load_comm_profile(std::string(SPECSIM_SOURCE_DIR) + "/calibration/profiles/nccl-" +
                                                    name + ".yaml");
    const auto log = specsim::parse_nccl_tests_file(shipped_log(std::string(name) + ".log"));
    REQUIRE(profile.points.size() == log.tables.at(0).rows.size());
    CHECK(profile.ranks == log.tables.at(0).ranks);
    for (std::size_t i = 0; i < profile.points.size(); ++i) {
      CHECK_THAT(profile.points[i].time_s, WithinRel(log.tables.at(0).rows[i].out_of_place.time_s, 1e-9));
    }
  }
}

TEST_CASE("calibrate nccl: rows with #wrong != 0 are refused, or dropped with --lenient and a warning",
          "[calibrate][invalid]") {
  TempDir dir("specsim_test_calibrate_wrong");
  // Line 30 is the 8 KiB row; nccl-tests counted 3 wrong elements in its out-of-place result.
  const std::string log = std::string(SPECSIM_TEST_DATA_DIR) + "/invalid/nccl/wrong_nonzero.log";
  const std::string out = (dir.path / "p.yaml").string();
  const auto r = run({"calibrate", "nccl", log, "-o", out});
  CHECK(r.code == specsim::cli::kExitInput);
  CHECK_THAT(r.err, Contains(log + ":30:") && Contains("out-of-place #wrong: '3'"));
  CHECK_FALSE(fs::exists(out));

  const auto lenient = run({"calibrate", "nccl", log, "-o", out, "--lenient"});
  INFO(lenient.err);
  REQUIRE(lenient.code == 0);
  CHECK_THAT(lenient.err, Contains("warning: skipped " + log + ":30:"));
  const auto profile = specsim::load_comm_profile(out);
  // 8 B .. 1 GiB by 2x is 28 rows; the 8 KiB one is dropped.
  CHECK(profile.points.size() == 27);
  for (const auto& p : profile.points) CHECK(p.message_bytes != 8192.0);
}

TEST_CASE("calibrate nccl: logs of different GPUs or rank counts are refused unless --allow-mixed",
          "[calibrate][invalid]") {
  TempDir dir("specsim_test_calibrate_mixed");
  const std::string out = (dir.path / "p.yaml").string();
  const std::string rtx5090 = shipped_log("aikitoria-8x5090-p2p-turin.log");
  const std::string rtx4090 = shipped_log("chlc-8x4090-nop2p-sys.log");
  const auto r = run({"calibrate", "nccl", rtx5090, rtx4090, "-o", out});
  CHECK(r.code == specsim::cli::kExitInput);
  CHECK_THAT(r.err, Contains(rtx4090 + ":") && Contains("devices: table ran on NVIDIA GeForce RTX 4090 but " + rtx5090) &&
                        Contains("ran on NVIDIA GeForce RTX 5090") && Contains("--allow-mixed"));
  CHECK_FALSE(fs::exists(out));
  const auto mixed = run({"calibrate", "nccl", rtx5090, rtx4090, "-o", out, "--allow-mixed"});
  INFO(mixed.err);
  REQUIRE(mixed.code == 0);
  CHECK_THAT(mixed.err, Contains("warning: ") && Contains("pooled (--allow-mixed)"));

  // The same box at 4 ranks: the 5090 log with the device lines of ranks 4-7 taken out.
  const fs::path four = dir.path / "4x5090.log";
  {
    std::ifstream in(rtx5090);
    std::ofstream f(four);
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("#  Rank  ") && line[9] >= '4' && line[9] <= '7') continue;
      f << line << "\n";
    }
  }
  const auto ranks = run({"calibrate", "nccl", rtx5090, four.string(), "-o", out});
  CHECK(ranks.code == specsim::cli::kExitInput);
  CHECK_THAT(ranks.err, Contains("ranks: table has 4 ranks but " + rtx5090) && Contains("has 8"));
  const auto pooled = run({"calibrate", "nccl", rtx5090, four.string(), "-o", out, "--allow-mixed"});
  REQUIRE(pooled.code == 0);
  CHECK_THAT(pooled.err, Contains("pooled as 8 ranks (--allow-mixed)"));
  CHECK(specsim::load_comm_profile(out).ranks == 8);
}

TEST_CASE("nccl-tests: device lines give each table's GPU models", "[nccl_tests]") {
  const auto log = specsim::parse_nccl_tests_file(shipped_log("aikitoria-8x5090-p2p-turin.log"));
  REQUIRE(log.tables.size() == 1);
  CHECK(log.tables[0].devices == std::vector<std::string>(8, "NVIDIA GeForce RTX 5090"));
}

TEST_CASE("calibrate nccl: an alltoall_perf log makes an all_to_all profile only when asked", "[calibrate][all_to_all]") {
  // nccl-tests issue 314's 8x H20-3e run: no 'Collective test starting' line, the command above the
  // table names alltoall_perf; rows at 1, 2 and 4 MiB (58.14, 58.94, 59.35 us out of place), graph: 0.
  TempDir dir("specsim_test_calibrate_alltoall");
  const std::string log = shipped_log("paggyzhang-8xh20-alltoall-partial.log");
  const specsim::NcclTestsLog parsed = specsim::parse_nccl_tests_file(log);
  REQUIRE(parsed.tables.size() == 1);
  CHECK(parsed.tables[0].collective == "alltoall");
  CHECK(parsed.tables[0].collective_from_log);
  CHECK(parsed.tables[0].ranks == 8);

  const std::string path = (dir.path / "h20-a2a.yaml").string();
  const auto refused = run({"calibrate", "nccl", log, "-o", path});
  CHECK(refused.code != 0);
  CHECK_THAT(refused.err, Contains("no all_reduce rows with size > 0 (tables found: alltoall); --collective all_to_all"));
  CHECK_FALSE(fs::exists(path));

  const auto cal = run({"calibrate", "nccl", log, "-o", path, "--collective", "all_to_all"});
  INFO(cal.err);
  REQUIRE(cal.code == 0);
  const specsim::CommProfile p = specsim::load_comm_profile(path);
  CHECK(p.collective == "all_to_all");
  CHECK(p.implementation == "nccl");
  CHECK(p.ranks == 8);
  CHECK(p.mode == specsim::LaunchMode::kEager);
  REQUIRE(p.points.size() == 3);
  CHECK(p.points[0].message_bytes == 1048576.0);
  CHECK_THAT(p.points[2].time_s, WithinRel(59.35e-6, 1e-9));
  CHECK_THAT(p.description, Contains("alltoall, 8 ranks, eager"));
}

TEST_CASE("calibrate compute: a model named in the CSV may be a Hugging Face config", "[calibrate][hf]") {
  // docs/schema.md: a model is a models/llm file, a config.json or a checkpoint directory wherever
  // one is named. The Llama-3.3-70B rows of h200-forward.csv, fitted with the model described by
  // its HF config saved as NAME.json, then as the checkpoint directory NAME/config.json: both load,
  // the provenance names the file used, and the two fits are the same (one file, two places).
  const TempDir dir("specsim-calibrate-compute-hf");
  const fs::path csv = dir.path / "steps.csv";
  {
    std::ifstream in(std::string(SPECSIM_SOURCE_DIR) + "/calibration/compute/h200-forward.csv");
    std::ofstream out(csv);
    std::string line;
    int rows = 0;
    while (std::getline(in, line)) {
      if (line.starts_with("model,") || line.starts_with("llama-3.3-70b,")) out << line << "\n";
      rows += line.starts_with("llama-3.3-70b,");
    }
    REQUIRE(rows == 72);  // TP8: 9 token counts (1..256) x 4 contexts x 2 launch modes
  }
  const std::string config = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/hf/llama-3.3-70b.config.json";
  fs::create_directories(dir.path / "as-json");
  fs::copy_file(config, dir.path / "as-json" / "llama-3.3-70b.json");
  fs::create_directories(dir.path / "as-checkpoint" / "llama-3.3-70b");
  fs::copy_file(config, dir.path / "as-checkpoint" / "llama-3.3-70b" / "config.json");

  auto fit = [&](const std::string& models_dir, const std::string& used) {
    const fs::path profile = dir.path / (models_dir + ".yaml");
    const Result r = run({"calibrate", "compute", csv.string(), "-o", profile.string(), "--models-dir",
                          (dir.path / models_dir).string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    std::ifstream in(profile);
    std::stringstream text;
    text << in.rdbuf();
    CHECK_THAT(text.str(), Contains("llama-3.3-70b -> " + (dir.path / models_dir / used).string()));
    // What the fit found, without the lines that name where the inputs were.
    std::string fitted;
    std::string line;
    while (std::getline(text, line)) {
      if (line.find(models_dir) == std::string::npos && line.find("date") == std::string::npos) fitted += line + "\n";
    }
    return fitted;
  };
  CHECK(fit("as-json", "llama-3.3-70b.json") == fit("as-checkpoint", "llama-3.3-70b/config.json"));
}

TEST_CASE("calibrate nccl: a bad version code, an unversioned log beside a versioned one, and another host are refused",
          "[calibrate]") {
  TempDir dir("specsim_test_calibrate_mixed");
  const std::string text = specsim::test::read_text(shipped_log("aikitoria-8x5090-p2p-turin.log"));
  const auto write = [&](const std::string& name, const std::string& body) {
    const std::string p = (dir.path / name).string();
    std::ofstream(p) << body;
    return p;
  };
  const std::string out = (dir.path / "p.yaml").string();
  // nccl-library=2 is no NCCL_VERSION_CODE: read before as 0.0.2.
  const std::string bad = write("bad.log", specsim::test::replaced_once(text, "nccl-library=22907\n", "nccl-library=2\n"));
  const auto b = run({"calibrate", "nccl", bad, "-o", out});
  CHECK(b.code == 1);
  CHECK_THAT(b.err, Contains("bad.log:11:") && Contains("nccl-library") && Contains("is not an NCCL version code"));
  // The same log without its version header, pooled with the original: the release is unknown, not 2.29.7.
  std::string unversioned = text;
  for (std::size_t at = 0; (at = unversioned.find("nccl-library=22907", at)) != std::string::npos;) {
    unversioned.replace(at, 18, "");
  }
  const std::string bare = write("bare.log", unversioned);
  const auto u = run({"calibrate", "nccl", shipped_log("aikitoria-8x5090-p2p-turin.log"), bare, "-o", out});
  CHECK(u.code == 1);
  CHECK_THAT(u.err, Contains("bare.log") && Contains("prints no NCCL release but") && Contains("2.29.7"));
  const auto um = run({"calibrate", "nccl", shipped_log("aikitoria-8x5090-p2p-turin.log"), bare, "-o", out, "--allow-mixed"});
  REQUIRE(um.code == 0);
  CHECK_FALSE(specsim::load_comm_profile(out).nccl_version == "2.29.7");
  // The same GPUs on another host are another box.
  std::string other = text;
  for (std::size_t at = 0; (at = other.find(" on      crazy device", at)) != std::string::npos;) {
    other.replace(at, 21, " on      other device");
  }
  const std::string elsewhere = write("elsewhere.log", other);
  const auto h = run({"calibrate", "nccl", shipped_log("aikitoria-8x5090-p2p-turin.log"), elsewhere, "-o", (dir.path / "h.yaml").string()});
  CHECK(h.code == 1);
  CHECK_THAT(h.err, Contains("elsewhere.log") && Contains("ran on host other") && Contains("crazy"));
}

TEST_CASE("calibrate nccl: a size row missing from a table's even steps is warned about, shipped logs are not",
          "[calibrate]") {
  TempDir dir("specsim_test_calibrate_dropped_row");
  const std::string text = specsim::test::read_text(shipped_log("aikitoria-8x5090-p2p-turin.log"));
  const auto row = text.find("\n        8192 ");
  REQUIRE(row != std::string::npos);
  const std::string dropped = (dir.path / "dropped.log").string();
  std::ofstream(dropped) << text.substr(0, row) + text.substr(text.find('\n', row + 1));
  const auto r = run({"calibrate", "nccl", dropped, "-o", (dir.path / "p.yaml").string()});
  REQUIRE(r.code == 0);  // still a table; the gap is said, not guessed at
  CHECK_THAT(r.err, Contains("dropped.log:") && Contains("no row between 4 KiB and 16 KiB") &&
                        Contains("steps by 2.00x elsewhere"));
  const auto shipped = run({"calibrate", "nccl", shipped_log("aikitoria-8x5090-p2p-turin.log"), "-o",
                            (dir.path / "q.yaml").string()});
  REQUIRE(shipped.code == 0);
  CHECK_THAT(shipped.err, !Contains("no row between"));
}

TEST_CASE("calibrate nccl: one run over two hosts is a 2-node profile", "[calibrate][multinode]") {
  // GCP A3 Mega, 16 ranks, 8 per host (calibration/nccl/SOURCES.md): one table whose device lines
  // name two hosts.
  const std::string log = shipped_log("ztan-2x8xH100-a3mega-tcpxo.log");
  const specsim::NcclTestsLog parsed = specsim::parse_nccl_tests_file(log, {});
  REQUIRE(parsed.tables.size() == 1);
  const specsim::NcclTestsTable& t = parsed.tables.front();
  CHECK(t.ranks == 16);
  CHECK(t.hosts == std::vector<std::string>{"ztan-mig-235z", "ztan-mig-gq73"});
  // The worked number: 8 GiB in 47535 us out of place. nccl-tests' busbw for an all-reduce is
  // algbw x 2 (r-1)/r = 8589934592 B / 47535 us x 30/16 = 180.71 GB/s x 1.875 = 338.8 GB/s, as the
  // log prints (338.82): the network's share of the two nodes' ring carries it.
  const specsim::NcclTestsRow& last = t.rows.back();
  REQUIRE(last.size_bytes == 8589934592.0);
  CHECK_THAT(last.out_of_place.time_s, WithinRel(47535e-6, 1e-12));
  CHECK_THAT(last.size_bytes / last.out_of_place.time_s * 2.0 * 15.0 / 16.0, WithinRel(338.82e9, 1e-4));

  TempDir dir("specsim_test_calibrate_two_nodes");
  const std::string profile_path = (dir.path / "nccl-2x8.yaml").string();
  const auto cal = run({"calibrate", "nccl", log, "-o", profile_path});
  INFO(cal.err);
  REQUIRE(cal.code == 0);
  CHECK_THAT(cal.out, Contains("16 ranks on 2 nodes (hosts ztan-mig-235z + ztan-mig-gq73)"));
  const specsim::CommProfile p = specsim::load_comm_profile(profile_path);
  CHECK(p.ranks == 16);
  CHECK(p.nodes == 2);
  CHECK(p.mode == specsim::LaunchMode::kEager);
  REQUIRE(p.points.size() == 31);  // 8 B .. 8 GiB, every power of two
  CHECK_THAT(p.points.back().time_s, WithinRel(47535e-6, 1e-12));

  // The shipped profile prices a TP16 scenario on the 2-node topology that names it, and says the
  // inter-node part is in the measured table.
  const specsim::DataDir root(SPECSIM_SOURCE_DIR);
  const specsim::Scenario s =
      specsim::load_scenario("deepseek-v3-mtp-2x8-h100-ib", {"topology=2x8-h100-a3mega"}, root);
  REQUIRE(s.comm_profile);
  CHECK(s.comm_profile->nodes == 2);
  const specsim::CommModel m = specsim::CommModel::baseline(s);
  CHECK(m.calibrated());
  CHECK_THAT(m.source(), Contains("inter-node: in the measured table (8x 25 GB/s Ethernet)"));
  // At a measured size the curve is the table: 8 GiB in 47.535 ms.
  CHECK_THAT(m.allreduce_s(8589934592.0, specsim::LaunchMode::kGraph), WithinRel(47535e-6, 1e-3));
}
