// Topology files with per-pair link matrices, and `specsim topology import` of real
// `nvidia-smi topo -m` outputs (tests/data/valid/topo/SOURCES.md says where each comes from).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli.hpp"
#include "cli_run.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/topo_import.hpp"

using Catch::Matchers::Contains;
using specsim::LinkClass;

namespace fs = std::filesystem;

namespace {

const std::string kData = SPECSIM_TEST_DATA_DIR;
const std::string kModels = std::string(SPECSIM_SOURCE_DIR) + "/models/topology/";

std::string real(const std::string& name) { return kData + "/valid/topo/" + name; }
std::string damaged(const std::string& name) { return kData + "/invalid/topo/" + name; }

specsim::Topology import(const std::string& path) {
  specsim::TopoImportOptions o;
  o.name = "t";
  o.gpu = "rtx-4090";
  o.pcie_generation = 4;
  return specsim::import_nvidia_smi_topo(path, o);
}

std::string pair(const specsim::Topology& t, int i, int j) {
  return specsim::link_name(t.pair_links[i][j], t.pair_nvlinks[i][j]);
}

using specsim::test::TempDir;

using specsim::test::Result;
using specsim::test::run;

// A topology YAML with the given extra lines, loaded from a temporary file.
specsim::Topology load_with(const TempDir& dir, const std::string& body) {
  const std::string path = (dir.path / "t.yaml").string();
  std::ofstream(path) << "schema_version: 1\nkind: topology\nname: t\ngpu: rtx-4090\n" << body;
  return specsim::load_topology(path);
}

}  // namespace

TEST_CASE("topo import: 8x RTX 4090, PIX per socket and SYS across (nccl-tests#307)", "[topology]") {
  const auto t = import(real("nccl-tests-307-8x4090-pix-sys.txt"));
  REQUIRE(t.gpus == 8);
  // As printed: GPU0 row "X PIX PIX PIX SYS SYS SYS SYS", GPU4 row "SYS SYS SYS SYS X PIX PIX PIX".
  CHECK(pair(t, 0, 1) == "PIX");
  CHECK(pair(t, 2, 3) == "PIX");
  CHECK(pair(t, 0, 4) == "SYS");
  CHECK(pair(t, 3, 7) == "SYS");
  CHECK(pair(t, 5, 6) == "PIX");
  // The NIC0 column and row are not GPU pairs; the ring's slowest hop is SYS.
  CHECK(t.link == LinkClass::kSys);
  CHECK(t.numa_nodes == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(t.p2p);                   // the default: topo -m does not say
  CHECK(t.pcie_generation == 4);  // as the caller passed it: topo -m does not say
}

TEST_CASE("topo import: PHB, NODE and SYS mixed on 5 GPUs (club-3090#46)", "[topology]") {
  const auto t = import(real("club-3090-46-5gpu-sys-phb-node.txt"));
  REQUIRE(t.gpus == 5);
  CHECK(pair(t, 0, 1) == "SYS");  // GPU0 sits alone on NUMA node 1
  CHECK(pair(t, 1, 2) == "PHB");
  CHECK(pair(t, 1, 3) == "NODE");
  CHECK(pair(t, 3, 4) == "PHB");
  CHECK(pair(t, 2, 4) == "NODE");
  CHECK(t.link == LinkClass::kSys);
  CHECK(t.numa_nodes == std::vector<int>{1, 0, 0, 0, 0});
}

TEST_CASE("topo import: 4x L40S, NODE in a socket and SYS across (miss-alignment#106)", "[topology]") {
  const auto t = import(real("miss-alignment-106-4xl40s-node-sys.txt"));
  REQUIRE(t.gpus == 4);
  CHECK(pair(t, 0, 1) == "NODE");
  CHECK(pair(t, 1, 2) == "SYS");
  CHECK(pair(t, 2, 3) == "NODE");
  CHECK(t.link == LinkClass::kSys);
  CHECK(t.numa_nodes == std::vector<int>{0, 0, 1, 1});
}

TEST_CASE("topo import: PCIe switches PIX/PXB, old driver with an mlx5 column (quda#669)", "[topology]") {
  const auto t = import(real("quda-669-8gpu-pix-pxb-sys.txt"));
  REQUIRE(t.gpus == 8);
  CHECK(pair(t, 0, 1) == "PIX");
  CHECK(pair(t, 0, 2) == "PXB");
  CHECK(pair(t, 2, 3) == "PIX");
  CHECK(pair(t, 3, 4) == "SYS");
  CHECK(pair(t, 6, 7) == "PIX");
  CHECK(pair(t, 4, 6) == "PXB");
  CHECK(t.link == LinkClass::kSys);
  CHECK(t.numa_nodes.empty());  // this driver printed only CPU Affinity
}

TEST_CASE("topo import: NVSwitch box, every pair NV18 (nccl#1453)", "[topology]") {
  const auto t = import(real("nccl-1453-8x-nv18-nvswitch.txt"));
  REQUIRE(t.gpus == 8);
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      if (i != j) CHECK(pair(t, i, j) == "NV18");
    }
  }
  CHECK(t.link == LinkClass::kNvlink);
  CHECK(t.nvlinks == 18);
  CHECK(t.numa_nodes == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("topo import: a NUMA Affinity the loader would refuse is left unknown, not written", "[topology]") {
  // Found by fuzz_topo_import: the importer took any 1-4 digit NUMA value, the loader only
  // 0..4095, so `topology import` wrote `numa: [..., 9151, ...]`, a file its own loader refused.
  // Both now read numbers with parse_numa_node.
  // GPU6's row ends "80-159\t1\t\tN/A": its NUMA Affinity 1 becomes 9151.
  const std::string edited = specsim::test::replaced_once(specsim::test::read_text(real("nccl-1453-8x-nv18-nvswitch.txt")),
                                                          "80-159\t1\t\tN/A\nGPU7", "80-159\t9151\t\tN/A\nGPU7");
  specsim::TopoImportOptions o;
  o.name = "t";
  o.gpu = "rtx-4090";
  o.pcie_generation = 4;
  const auto t = specsim::parse_nvidia_smi_topo(edited, "edited", o);
  CHECK(t.numa_nodes.empty());  // one GPU without a node number: no `numa:` at all
  TempDir dir("specsim_test_topology_numa");
  const std::string path = (dir.path / "t.yaml").string();
  std::ofstream(path) << specsim::render_topology_yaml(t, "edited", "# test");
  CHECK(specsim::load_topology(path).gpus == 8);
  CHECK(specsim::parse_numa_node("4095") == 4095);
  CHECK_FALSE(specsim::parse_numa_node("4096"));
  CHECK_FALSE(specsim::parse_numa_node("9151"));
  CHECK_FALSE(specsim::parse_numa_node("0-1"));
  CHECK_FALSE(specsim::parse_numa_node("N/A"));
}

TEST_CASE("topo import: the old SOC class reads as SYS (TensorFlow GDR README)", "[topology]") {
  const auto t = import(real("tensorflow-gdr-4xk40m-phb-soc.txt"));
  REQUIRE(t.gpus == 4);
  CHECK(pair(t, 0, 1) == "PHB");
  CHECK(pair(t, 0, 2) == "SYS");  // printed "SOC"
  CHECK(pair(t, 2, 3) == "PHB");
  CHECK(t.link == LinkClass::kSys);
}

TEST_CASE("topo import: damaged outputs name file, line and what is wrong", "[topology]") {
  const specsim::TopoImportOptions o{"t", "rtx-4090", true, 4};
  // Each copy of nccl-tests-307-8x4090-pix-sys.txt has one damage (invalid/topo/SOURCES.md).
  CHECK_THROWS_WITH(specsim::import_nvidia_smi_topo(damaged("ragged-row.txt"), o),
                    Contains("ragged-row.txt:5: row GPU3 has 11 fields, the header (line 1) has 12 columns "
                             "(GPU0..GPU7, 1 NIC column, CPU Affinity, NUMA Affinity, GPU NUMA ID)"));
  CHECK_THROWS_WITH(specsim::import_nvidia_smi_topo(damaged("unknown-class.txt"), o),
                    Contains("unknown-class.txt:8:14: GPU6 to GPU2: 'PXN' is not a link class"));
  CHECK_THROWS_WITH(specsim::import_nvidia_smi_topo(damaged("missing-header.txt"), o),
                    Contains("missing-header.txt:1:1: row GPU0 before the header line"));
  CHECK_THROWS_WITH(specsim::import_nvidia_smi_topo(damaged("asymmetric.txt"), o),
                    Contains("asymmetric.txt:7:6: GPU5 to GPU0 is PIX but GPU0 to GPU5 (line 2) is SYS: "
                             "the matrix must be symmetric"));
  CHECK_THROWS_WITH(specsim::parse_nvidia_smi_topo("Legend:\n  X = Self\n", "empty.txt", o),
                    Contains("empty.txt: no nvidia-smi topo -m matrix"));
}

TEST_CASE("topology import CLI: writes a file the loader reads back with the same pairs", "[topology]") {
  TempDir dir("specsim_test_topology_import");
  const std::string out = (dir.path / "box.yaml").string();
  const auto r = run({"topology", "import", real("nccl-tests-307-8x4090-pix-sys.txt"), "-o", out, "--gpu",
                      "rtx-4090", "--p2p", "off", "--pcie-generation", "4"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("8 GPUs, ring link SYS") && Contains("pairs: PIX 12 SYS 16"));
  CHECK_FALSE(fs::exists(out + ".tmp"));
  const auto t = specsim::load_topology(out);
  CHECK(t.name == "box");  // the output file's stem
  CHECK(t.gpu == "rtx-4090");
  CHECK_FALSE(t.p2p);
  CHECK(t.pcie_generation == 4);
  CHECK(t.link == LinkClass::kSys);
  CHECK(pair(t, 0, 1) == "PIX");
  CHECK(pair(t, 0, 4) == "SYS");
  CHECK(t.numa_nodes == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("topology import CLI: --gpu is required and must name a GPU", "[topology]") {
  TempDir dir("specsim_test_topology_import_gpu");
  const std::string out = (dir.path / "box.yaml").string();
  const std::string in = real("nccl-1453-8x-nv18-nvswitch.txt");
  auto r = run({"topology", "import", in, "-o", out});
  CHECK(r.code == specsim::cli::kExitInput);
  CHECK_THAT(r.err, Contains("--gpu: required") && Contains("pass --gpu NAME") && Contains("h200"));
  r = run({"topology", "import", in, "-o", out, "--gpu", "h300"});
  CHECK(r.code == specsim::cli::kExitInput);
  CHECK_THAT(r.err, Contains("--gpu: unknown GPU 'h300'"));
  r = run({"topology", "import", in, "-o", out, "--gpu", "h200", "--p2p", "maybe"});
  CHECK(r.code == specsim::cli::kExitUsage);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("topology files: a links matrix gives the ring link as the slowest pair", "[topology]") {
  TempDir dir("specsim_test_topology_links");
  // PIX < PXB < SYS: the slowest pair is SYS.
  auto t = load_with(dir, "gpus: 3\nlinks:\n  - X PIX SYS\n  - PIX X PXB\n  - SYS PXB X\nnuma: [0, 0, 1]\n");
  CHECK(t.link == LinkClass::kSys);
  CHECK(t.pair_links[1][2] == LinkClass::kPxb);
  CHECK(t.numa_nodes == std::vector<int>{0, 0, 1});
  // Between NVLink classes fewer links is slower: NV1 rules a NV2/NV1 mesh.
  t = load_with(dir, "gpus: 3\nlinks: ['X NV2 NV1', 'NV2 X NV2', 'NV1 NV2 X']\n");
  CHECK(t.link == LinkClass::kNvlink);
  CHECK(t.nvlinks == 1);
  // A given `link` wins (a ring may avoid the slowest pair) if some pair has that class.
  t = load_with(dir, "gpus: 3\nlink: PIX\nlinks: ['X PIX SYS', 'PIX X PIX', 'SYS PIX X']\n");
  CHECK(t.link == LinkClass::kPix);
}

TEST_CASE("topology files: bad links and numa name the row and the rule", "[topology]") {
  TempDir dir("specsim_test_topology_bad_links");
  const std::string f = (dir.path / "t.yaml").string();
  CHECK_THROWS_WITH(load_with(dir, "gpus: 3\nlinks: ['X PIX', 'PIX X']\n"),
                    Contains(f + ":6:8: links: has 2 rows: needs one per GPU (gpus = 3)"));
  CHECK_THROWS_WITH(load_with(dir, "gpus: 2\nlinks:\n  - X PIX\n  - PIX\n"),
                    Contains(f + ":8:5: links[1]: has 1 classes: needs one per GPU (gpus = 2)"));
  CHECK_THROWS_WITH(load_with(dir, "gpus: 2\nlinks:\n  - PIX X\n  - X PIX\n"),
                    Contains("links[0]: entry 0 (GPU0 to GPU0) is 'PIX': the diagonal must be X"));
  CHECK_THROWS_WITH(load_with(dir, "gpus: 2\nlinks:\n  - X PCIE\n  - PIX X\n"),
                    Contains("links[0]: entry 1 (GPU0 to GPU1): 'PCIE' is not a link class"));
  CHECK_THROWS_WITH(load_with(dir, "gpus: 2\nlinks:\n  - X PIX\n  - SYS X\n"),
                    Contains(f + ":8:5: links[1]: entry 0 (GPU1 to GPU0) is SYS but links[0] entry 1 is PIX: "
                                 "the matrix must be symmetric"));
  CHECK_THROWS_WITH(load_with(dir, "gpus: 2\nlink: SYS\nlinks: ['X PIX', 'PIX X']\n"),
                    Contains("link: 'SYS' is not the class of any GPU pair in links"));
  CHECK_THROWS_WITH(load_with(dir, "gpus: 2\nlink: PIX\nnuma: [0]\n"),
                    Contains("numa: has 1 entries: needs one per GPU (gpus = 2)"));
  CHECK_THROWS_WITH(load_with(dir, "gpus: 2\nlink: PIX\nnuma: [0, -1]\n"),
                    Contains("numa[1]: '-1' is not a NUMA node number"));
  CHECK_THROWS_WITH(load_with(dir, "gpus: 2\n"), Contains("link: required key is missing"));
}

TEST_CASE("topology files: the shipped boxes load with their matrices", "[topology]") {
  const auto sw = specsim::load_topology(kModels + "8x-rtx-pro-6000-pcie5-switch.yaml");
  CHECK(sw.link == LinkClass::kPxb);  // derived: pairs on one leaf switch PIX, the rest PXB
  CHECK(sw.pair_links[0][1] == LinkClass::kPix);
  CHECK(sw.pair_links[1][2] == LinkClass::kPxb);
  const auto two = specsim::load_topology(kModels + "8x-rtx-pro-6000-pcie5-2socket.yaml");
  CHECK(two.link == LinkClass::kSys);
  CHECK(two.pair_links[0][3] == LinkClass::kNode);
  CHECK(two.numa_nodes == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  const auto p2p = specsim::load_topology(kModels + "8x-rtx-4090-pcie4-p2p.yaml");
  const auto nop2p = specsim::load_topology(kModels + "8x-rtx-4090-pcie4-nop2p.yaml");
  CHECK(p2p.p2p);
  CHECK_FALSE(nop2p.p2p);
  CHECK(p2p.pair_links == nop2p.pair_links);  // same host, only the driver differs
  CHECK(p2p.comm_profile.empty());            // no profile fitted for the P2P run
  CHECK(nop2p.comm_profile == "nccl-chlc-8x4090-nop2p-sys");
  for (const char* name : {"8x-h100-nvswitch", "8x-h200-nvswitch", "4x-h200-nvswitch", "2x-h200-nvswitch"}) {
    INFO(name);
    const auto t = specsim::load_topology(kModels + name + ".yaml");
    CHECK(t.link == LinkClass::kNvlink);
    CHECK(t.nvlinks == 18);
    CHECK(t.pair_links.size() == static_cast<std::size_t>(t.gpus));
  }
  CHECK(specsim::load_topology(kModels + "4x-h200-nvswitch.yaml").comm_profile.empty());
  CHECK(specsim::load_topology(kModels + "2x-h200-nvswitch.yaml").comm_profile.empty());
}

TEST_CASE("topo import: a DGX-1V rings over NVLink, not over its SYS pairs (DLPerf HugeCTR report)", "[topology]") {
  const auto t = import(real("dlperf-hugectr-dgx1v-nv1-nv2-sys.txt"));
  REQUIRE(t.gpus == 8);
  CHECK(pair(t, 0, 1) == "NV1");
  CHECK(pair(t, 0, 3) == "NV2");
  CHECK(pair(t, 0, 5) == "SYS");
  // The slowest pair is SYS, but the NV2 pairs alone close a ring through all eight GPUs:
  // 0-3 NV2, 3-2 NV2, 2-1 NV2, 1-5 NV2, 5-6 NV2, 6-7 NV2, 7-4 NV2, 4-0 NV2. NCCL's search starts
  // at NVLink paths and only widens when no ring is found, so the ring's slowest hop is NV2.
  CHECK(specsim::slowest_pair_link(t).first == LinkClass::kSys);
  CHECK(t.link == LinkClass::kNvlink);
  CHECK(t.nvlinks == 2);
  CHECK(t.numa_nodes.empty());  // CPU Affinity only
}

TEST_CASE("ring link: NVLink only where NV pairs close a ring through every GPU", "[topology]") {
  TempDir dir("specsim_test_topology_ring");
  // 4 GPUs, NV pairs 0-1 and 2-3 only: no ring over NVLink (GPUs 1 and 2 have no NV pair), so the
  // ring needs PIX hops 1-2 and 3-0: its link is PIX, faster than the SYS pairs 0-2 and 1-3 it avoids.
  auto t = load_with(dir, "gpus: 4\nlinks: ['X NV4 SYS PIX', 'NV4 X PIX SYS', 'SYS PIX X NV4', 'PIX SYS NV4 X']\n");
  CHECK(t.link == LinkClass::kPix);
  // Two GPUs: the ring is their one pair.
  t = load_with(dir, "gpus: 2\nlinks: ['X NV12', 'NV12 X']\n");
  CHECK(t.link == LinkClass::kNvlink);
  CHECK(t.nvlinks == 12);
  // A star over PIX (GPU0 to all) and SYS elsewhere: a ring through 4 GPUs needs a SYS hop.
  t = load_with(dir, "gpus: 4\nlinks: ['X PIX PIX PIX', 'PIX X SYS SYS', 'PIX SYS X SYS', 'PIX SYS SYS X']\n");
  CHECK(t.link == LinkClass::kSys);
}

TEST_CASE("topology import CLI: the DGX-1V file says NV2 and why", "[topology]") {
  TempDir dir("specsim_test_topology_dgx1");
  const std::string out = (dir.path / "dgx1.yaml").string();
  const auto r = run({"topology", "import", real("dlperf-hugectr-dgx1v-nv1-nv2-sys.txt"), "-o", out, "--gpu", "a100-sxm"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("ring link NV2 (a ring over NV2 pairs avoids the slowest pair, SYS"));
  const auto t = specsim::load_topology(out);
  CHECK(t.link == LinkClass::kNvlink);
  CHECK(t.nvlinks == 2);
}

TEST_CASE("topology import CLI: PCIe generation from the GPU file, --pcie-generation overrides", "[topology]") {
  TempDir dir("specsim_test_topology_pcie");
  const std::string out = (dir.path / "box.yaml").string();
  const std::string in = real("nccl-tests-307-8x4090-pix-sys.txt");
  // models/gpu/rtx-4090.yaml: pcie_generation: 4 (Ada); the importer used to write 5.
  auto r = run({"topology", "import", in, "-o", out, "--gpu", "rtx-4090"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("PCIe Gen4 (from the GPU file rtx-4090.yaml)"));
  CHECK(specsim::load_topology(out).pcie_generation == 4);
  // models/gpu/h200.yaml: Gen5.
  r = run({"topology", "import", real("nccl-1453-8x-nv18-nvswitch.txt"), "-o", out, "--gpu", "h200", "--force"});
  REQUIRE(r.code == 0);
  CHECK(specsim::load_topology(out).pcie_generation == 5);
  r = run({"topology", "import", in, "-o", out, "--gpu", "rtx-4090", "--pcie-generation", "3", "--force"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("PCIe Gen3 (from --pcie-generation)"));
  CHECK(specsim::load_topology(out).pcie_generation == 3);
  // The library refuses an import without a generation rather than guessing one.
  specsim::TopoImportOptions o;
  o.name = "t";
  o.gpu = "rtx-4090";
  CHECK_THROWS_WITH(specsim::import_nvidia_smi_topo(in, o), Contains("pcie_generation = 0: must lie in [3, 7]"));
}

TEST_CASE("topology import CLI: a one-GPU box has no ring link and predicts at TP1", "[topology]") {
  TempDir dir("specsim_test_topology_one");
  // What `nvidia-smi topo -m` prints on a one-GPU host (driver 5xx columns): one X cell.
  const std::string in = (dir.path / "one.txt").string();
  std::ofstream(in) << "        GPU0    CPU Affinity    NUMA Affinity   GPU NUMA ID\n"
                       "GPU0     X      0-15            0               N/A\n";
  const std::string out = (dir.path / "one.yaml").string();
  const auto r = run({"topology", "import", in, "-o", out, "--gpu", "a100-40gb"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("1 GPU, no ring (no GPU-to-GPU link; TP1 only)"));
  std::ifstream written(out);
  const std::string yaml((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  CHECK(yaml.find("\nlink:") == std::string::npos);
  const auto t = specsim::load_topology(out);
  CHECK(t.gpus == 1);
  CHECK(t.numa_nodes == std::vector<int>{0});
  // An 8B model: the default Kimi-K2.5 (594 GB of weights) does not fit one 40 GB A100.
  const auto p = run({"predict", "--scenario", "llama-3.1-8b-eagle3-1x-h200", "--set", "topology=" + out, "--json"});
  INFO(p.err);
  CHECK(p.code == 0);
}

TEST_CASE("topology import CLI: --help says --gpu is required", "[topology]") {
  const auto r = run({"topology", "import", "--help"});
  CHECK_THAT(r.out, Contains("Required. GPU model"));
}

namespace {

specsim::Topology import_rocm(const std::string& path, const std::string& gpu = "mi300x") {
  specsim::TopoImportOptions o;
  o.name = "t";
  o.gpu = gpu;
  o.pcie_generation = 5;
  return specsim::import_topo(path, o);
}

}  // namespace

TEST_CASE("rocm-smi import: 8 gfx942 GPUs, every pair a direct xGMI link (ms-swift AMD page)", "[topology][amd]") {
  const auto t = import_rocm(real("ms-swift-amd-8x-gfx942-xgmi.txt"));
  REQUIRE(t.gpus == 8);
  // Link Type XGMI, Weight 15 (one physical xGMI hop at 15 each), Hops 1 for every pair.
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      if (i != j) CHECK(pair(t, i, j) == "XGMI");
    }
  }
  CHECK(t.link == LinkClass::kXgmi);
  // Numa Nodes block: GPU[0..3] node 0, GPU[4..7] node 1.
  CHECK(t.numa_nodes == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK_THAT(t.description, Contains("rocm-smi --showtopo"));
}

TEST_CASE("rocm-smi import: PCIE at 3 hops reads as SYS, no Numa block leaves numa unknown (rocm_smi_lib#108)",
          "[topology][amd]") {
  const auto t = import_rocm(real("rocm-smi-lib-108-4x-pcie-3hops.txt"));
  REQUIRE(t.gpus == 4);
  CHECK(pair(t, 0, 1) == "SYS");  // PCIE, 3 hops: across CPU sockets (AMD's MI200 guide)
  CHECK(pair(t, 2, 3) == "SYS");
  CHECK(t.link == LinkClass::kSys);
  CHECK(t.numa_nodes.empty());
}

TEST_CASE("topo import: the format is detected from the text", "[topology][amd]") {
  std::ifstream a(real("ms-swift-amd-8x-gfx942-xgmi.txt"));
  std::ifstream b(real("nccl-tests-307-8x4090-pix-sys.txt"));
  std::stringstream rocm, nvidia;
  rocm << a.rdbuf();
  nvidia << b.rdbuf();
  CHECK(std::string(specsim::topo_format(rocm.str())) == "rocm-smi");
  CHECK(std::string(specsim::topo_format(nvidia.str())) == "nvidia-smi");
  // import_topo reads either: the nvidia-smi copy gives the same matrix as import_nvidia_smi_topo.
  specsim::TopoImportOptions o{"t", "rtx-4090", true, 4};
  CHECK(specsim::import_topo(real("nccl-tests-307-8x4090-pix-sys.txt"), o).pair_links ==
        specsim::import_nvidia_smi_topo(real("nccl-tests-307-8x4090-pix-sys.txt"), o).pair_links);
}

TEST_CASE("rocm-smi import: damaged outputs name file, line and what is wrong", "[topology][amd]") {
  // Each copy of ms-swift-amd-8x-gfx942-xgmi.txt has one damage (invalid/topo/SOURCES.md).
  CHECK_THROWS_WITH(import_rocm(damaged("rocm-smi-truncated.txt")),
                    Contains("rocm-smi-truncated.txt:33: 'Link Type between two GPUs' (line 26) names 8 GPUs but has 6 rows"));
  CHECK_THROWS_WITH(import_rocm(damaged("rocm-smi-ragged-row.txt")),
                    Contains("rocm-smi-ragged-row.txt:31:") && Contains("row GPU3 has 7 cells, the header names 8 GPUs"));
  CHECK_THROWS_WITH(import_rocm(damaged("rocm-smi-unknown-link.txt")),
                    Contains("rocm-smi-unknown-link.txt:30:86: 'Link Type between two GPUs': GPU2-GPU6 is 'PCIX'"));
  // Weight 30 = two xGMI hops at 15 each: an indirect path, which specsim has no class for.
  CHECK_THROWS_WITH(import_rocm(damaged("rocm-smi-xgmi-two-hops.txt")),
                    Contains("rocm-smi-xgmi-two-hops.txt:6:73: GPU0-GPU5: XGMI at weight 30 (2 xGMI hops"));
  const specsim::TopoImportOptions o{"t", "mi300x", true, 5};
  CHECK_THROWS_WITH(specsim::parse_rocm_smi_topo("=== Weight between two GPUs ===\n       GPU0\nGPU0   0\n", "w.txt", o),
                    Contains("w.txt: no 'Link Type between two GPUs' table"));
}

TEST_CASE("topology import CLI: a rocm-smi output writes an XGMI file the loader reads back", "[topology][amd]") {
  TempDir dir("specsim_test_topology_import_rocm");
  const std::string out = (dir.path / "mi300x-box.yaml").string();
  auto r = run({"topology", "import", real("ms-swift-amd-8x-gfx942-xgmi.txt"), "-o", out, "--gpu", "mi300x"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("8 GPUs, ring link XGMI") && Contains("pairs: XGMI 28"));
  const auto t = specsim::load_topology(out);
  CHECK(t.link == LinkClass::kXgmi);
  CHECK(t.pcie_generation == 5);  // the GPU file's
  CHECK(t.numa_nodes == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  std::ifstream written(out);
  std::stringstream text;
  text << written.rdbuf();
  CHECK_THAT(text.str(), Contains("(rocm-smi --showtopo)"));
  // A card without Infinity Fabric cannot have taken this output.
  r = run({"topology", "import", real("ms-swift-amd-8x-gfx942-xgmi.txt"), "-o", (dir.path / "x.yaml").string(),
           "--gpu", "h200"});
  CHECK(r.code != 0);
  CHECK_THAT(r.err, Contains("has no Infinity Fabric (no xgmi_link_bandwidth)"));
}
