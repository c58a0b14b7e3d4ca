// Every file a command writes (-o) goes through write_file_atomically (output_file.hpp): these tests
// try to lose data through it the ways a user can: the output naming an input, a stale or foreign
// temporary file, a symlink, a device, a read-only file, a directory, and concurrent writers.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "cli.hpp"
#include "cli_run.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/output_file.hpp"

using Catch::Matchers::Contains;

namespace fs = std::filesystem;

namespace {

using specsim::test::run;
using specsim::test::TempDir;

const std::string kLog = std::string(SPECSIM_SOURCE_DIR) + "/calibration/nccl/aikitoria-8x5090-p2p-turin.log";
const std::string kTopo = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/topo/nccl-tests-307-8x4090-pix-sys.txt";
const std::string kSteps = std::string(SPECSIM_SOURCE_DIR) + "/calibration/compute/h200-forward.csv";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// Names in a directory, to show that nothing (no temporary file) was left behind.
std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

std::vector<std::string> calibrate(const std::string& log, const std::string& out) {
  return {"calibrate", "nccl", log, "-o", out};
}

}  // namespace

TEST_CASE("output: -o naming the command's own input is refused, by inode not by string", "[output]") {
  TempDir dir("specsim_test_output_input");
  const fs::path log = dir.path / "a.log";
  fs::copy_file(kLog, log);
  const std::string before = slurp(log);
  fs::create_hard_link(log, dir.path / "hard.log");
  fs::create_symlink(log, dir.path / "soft.log");
  // The same file under four names: as given, through "..", a hard link and a symlink.
  for (const fs::path& out : {log, dir.path / ".." / dir.path.filename() / "a.log", dir.path / "hard.log",
                              dir.path / "soft.log"}) {
    INFO(out);
    const auto r = run(calibrate(log.string(), out.string()));
    CHECK(r.code == specsim::cli::kExitInput);
    CHECK_THAT(r.err, Contains("-o " + out.string() + ": is the input " + log.string() + " of this command"));
    CHECK(slurp(log) == before);
  }
  CHECK(listing(dir.path) == std::set<std::string>{"a.log", "hard.log", "soft.log"});

  // The second log of several counts too.
  const auto second = run({"calibrate", "nccl", kLog, log.string(), "-o", log.string()});
  CHECK(second.code == specsim::cli::kExitInput);
  CHECK_THAT(second.err, Contains("is the input " + log.string()));

  // topology import and calibrate compute read other inputs and refuse them the same way.
  const fs::path topo = dir.path / "topo.txt";
  fs::copy_file(kTopo, topo);
  const auto t = run({"topology", "import", topo.string(), "-o", topo.string(), "--gpu", "rtx-4090"});
  CHECK(t.code == specsim::cli::kExitInput);
  CHECK_THAT(t.err, Contains("is the input " + topo.string()));
  CHECK(slurp(topo) == slurp(kTopo));
  const fs::path steps = dir.path / "steps.csv";
  fs::copy_file(kSteps, steps);
  const auto c = run({"calibrate", "compute", steps.string(), "-o", steps.string()});
  CHECK(c.code == specsim::cli::kExitInput);
  CHECK_THAT(c.err, Contains("is the input " + steps.string()));
  CHECK(slurp(steps) == slurp(kSteps));
}

TEST_CASE("output: the temporary file is unique, so a user's X.tmp survives", "[output]") {
  TempDir dir("specsim_test_output_tmp");
  const fs::path out = dir.path / "p.yaml";
  spit(dir.path / "p.yaml.tmp", "mine\n");
  const auto r = run(calibrate(kLog, out.string()));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(slurp(dir.path / "p.yaml.tmp") == "mine\n");
  CHECK(listing(dir.path) == std::set<std::string>{"p.yaml", "p.yaml.tmp"});
  CHECK(specsim::load_comm_profile(out.string()).points.size() == 25);
}

namespace {

// Sets a file's modification time `seconds` into the past.
void age(const fs::path& p, int seconds) {
  struct timespec times[2];
  ::clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= seconds;
  times[1] = times[0];
  REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, 0) == 0);
}

}  // namespace

TEST_CASE("output: a temporary left by a writer killed with SIGKILL is removed by the next write", "[output]") {
  TempDir dir("specsim_test_output_sigkill");
  const fs::path out = dir.path / "p.yaml";
  // A child killed between writing its temporary and renaming it: nothing runs after SIGKILL.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    specsim::write_file_atomically(out.string(), "half\n", {}, [](const std::string&) { ::raise(SIGKILL); });
    ::_exit(0);  // not reached
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
  auto left = listing(dir.path);
  REQUIRE(left.size() == 1);
  const std::string stale = *left.begin();
  CHECK(stale.rfind(".p.yaml.specsim-" + std::to_string(child) + "-", 0) == 0);

  // Other files that look alike: a live writer's (this process's parent), another target's, a
  // user's own; all a minute old. None of them may go.
  const std::string live = ".p.yaml.specsim-" + std::to_string(::getppid()) + "-abcdef";
  const std::string other = ".q.yaml.specsim-" + std::to_string(child) + "-abcdef";
  const std::string mine = ".p.yaml.specsim-notes";
  for (const auto& name : {live, other, mine}) {
    spit(dir.path / name, "x\n");
    age(dir.path / name, 120);
  }

  // Too young (the writer might be in another pid namespace): kept.
  specsim::write_file_atomically(out.string(), "one\n");
  CHECK(listing(dir.path).count(stale) == 1);
  // A minute old and its writer gone: removed by the next write.
  age(dir.path / stale, 120);
  specsim::write_file_atomically(out.string(), "two\n");
  CHECK(listing(dir.path) == std::set<std::string>{"p.yaml", live, other, mine});
  CHECK(slurp(out) == "two\n");
}

TEST_CASE("output: through a symlink the link's target is written and the link stays", "[output]") {
  TempDir dir("specsim_test_output_symlink");
  fs::create_directories(dir.path / "real");
  const fs::path target = dir.path / "real" / "p.yaml";
  spit(target, "old\n");
  const fs::path link = dir.path / "link.yaml";
  fs::create_symlink(fs::path("real") / "p.yaml", link);  // relative, as `ln -s` usually makes them
  const auto r = run(calibrate(kLog, link.string()));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(fs::is_symlink(link));
  CHECK(fs::read_symlink(link) == fs::path("real") / "p.yaml");
  CHECK(specsim::load_comm_profile(target.string()).points.size() == 25);
  CHECK(listing(dir.path / "real") == std::set<std::string>{"p.yaml"});

  // A dangling link: the file it points to is created.
  const fs::path dangling = dir.path / "dangling.yaml";
  fs::create_symlink(dir.path / "real" / "new.yaml", dangling);
  REQUIRE(run(calibrate(kLog, dangling.string())).code == 0);
  CHECK(fs::is_symlink(dangling));
  CHECK(fs::is_regular_file(dir.path / "real" / "new.yaml"));
}

TEST_CASE("output: a device is refused unless --force, which writes into it in place", "[output]") {
  const auto refused = run(calibrate(kLog, "/dev/null"));
  CHECK(refused.code == specsim::cli::kExitInput);
  CHECK_THAT(refused.err, Contains("-o /dev/null: is a character device, not a regular file; pass --force"));
  CHECK(fs::is_character_file("/dev/null"));

  auto forced = calibrate(kLog, "/dev/null");
  forced.push_back("--force");
  const auto r = run(forced);
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(fs::is_character_file("/dev/null"));  // not replaced by a regular file

  // /dev/full takes the write and fails it (ENOSPC): an error, and the device stays a device.
  auto full = calibrate(kLog, "/dev/full");
  full.push_back("--force");
  const auto f = run(full);
  CHECK(f.code == specsim::cli::kExitInput);
  CHECK_THAT(f.err, Contains("-o /dev/full: write failed: No space left on device"));
  CHECK(fs::is_character_file("/dev/full"));

  TempDir dir("specsim_test_output_dir");
  const auto d = run(calibrate(kLog, dir.path.string()));
  CHECK(d.code == specsim::cli::kExitInput);
  CHECK_THAT(d.err, Contains("-o " + dir.path.string() + ": is a directory"));
}

TEST_CASE("output: a read-only (0444) file is refused unless --force, and keeps its mode", "[output]") {
  // The mode is what is checked: the suite may run as root, for whom access(W_OK) always succeeds.
  TempDir dir("specsim_test_output_readonly");
  const fs::path out = dir.path / "p.yaml";
  spit(out, "keep me\n");
  fs::permissions(out, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const auto r = run(calibrate(kLog, out.string()));
  CHECK(r.code == specsim::cli::kExitInput);
  CHECK_THAT(r.err, Contains("-o " + out.string() + ": is read-only (mode 0444); pass --force to replace it"));
  CHECK(slurp(out) == "keep me\n");

  auto forced = calibrate(kLog, out.string());
  forced.push_back("--force");
  REQUIRE(run(forced).code == 0);
  CHECK(specsim::load_comm_profile(out.string()).points.size() == 25);
  CHECK((fs::status(out).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read));
  CHECK(listing(dir.path) == std::set<std::string>{"p.yaml"});
}

TEST_CASE("output: a failed check or a missing directory leaves the target and no temporary file", "[output]") {
  TempDir dir("specsim_test_output_check");
  const fs::path out = dir.path / "p.txt";
  spit(out, "old\n");
  const auto reject = [](const std::string&) { throw specsim::Error("check failed"); };
  CHECK_THROWS_WITH(specsim::write_file_atomically(out.string(), "new\n", {}, reject), "check failed");
  CHECK(slurp(out) == "old\n");
  CHECK(listing(dir.path) == std::set<std::string>{"p.txt"});
  CHECK_THROWS_WITH(specsim::write_file_atomically((dir.path / "no" / "p.txt").string(), "x"),
                    Contains("cannot create a file in " + (dir.path / "no").string()));
  // A new file gets the mode open(2) with 0666 would give it, not mkstemp's 0600.
  specsim::write_file_atomically((dir.path / "new.txt").string(), "x");
  const mode_t mask = ::umask(022);
  ::umask(mask);
  struct stat st {};
  REQUIRE(::stat((dir.path / "new.txt").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));
}

TEST_CASE("output: 8 concurrent writers x 200 rounds leave one complete output and no temporaries",
          "[output][concurrency]") {
  TempDir dir("specsim_test_output_concurrent");
  const fs::path out = dir.path / "p.txt";
  // Each output is a header naming its writer and round, 64 KiB of a pattern derived from both, and
  // an end marker: an interleaving of two outputs or a truncated one fails `valid`. 64 KiB is more
  // than one write(2) to a pipe-sized buffer, so a torn write would show.
  const auto output = [](int writer, int round) {
    std::string text = "writer " + std::to_string(writer) + " round " + std::to_string(round) + "\n";
    for (int i = 0; i < 65536; ++i) text += static_cast<char>('a' + (writer * 7 + round + i) % 26);
    return text + "\nend\n";
  };
  const auto valid = [&](const std::string& text) {
    int writer = -1, round = -1;
    if (std::sscanf(text.c_str(), "writer %d round %d", &writer, &round) != 2) return false;
    return text == output(writer, round);
  };
  constexpr int kWriters = 8, kRounds = 200;
  std::atomic<int> failures{0}, torn_reads{0}, reads{0};
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) {
      const std::string text = slurp(out);
      if (text.empty()) continue;  // not written yet
      ++reads;
      if (!valid(text)) ++torn_reads;
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int r = 0; r < kRounds; ++r) {
        try {
          specsim::write_file_atomically(out.string(), output(w, r));
        } catch (const std::exception&) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  done = true;
  reader.join();
  CHECK(failures == 0);
  CHECK(torn_reads == 0);
  INFO(reads << " concurrent reads");
  CHECK(valid(slurp(out)));
  CHECK(listing(dir.path) == std::set<std::string>{"p.txt"});
}

TEST_CASE("output: concurrent `calibrate nccl -o` to one file leave one loadable profile", "[output][concurrency]") {
  // The command itself, in-process, 4 at a time: before, they shared p.yaml.tmp, failed to rename
  // and once left two profiles interleaved.
  TempDir dir("specsim_test_output_concurrent_cli");
  const fs::path out = dir.path / "p.yaml";
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&] {
      for (int r = 0; r < 5; ++r) {
        if (run(calibrate(kLog, out.string())).code != 0) ++failures;
      }
    });
  }
  for (auto& t : writers) t.join();
  CHECK(failures == 0);
  CHECK(specsim::load_comm_profile(out.string()).points.size() == 25);
  CHECK(listing(dir.path) == std::set<std::string>{"p.yaml"});
}

TEST_CASE("output: exclusive creation lets exactly one of concurrent writers win", "[output]") {
  TempDir dir("specsim-output-exclusive");
  const std::string target = (dir.path / "new.yaml").string();
  specsim::OutputOptions o;
  o.exclusive = true;
  std::atomic<int> won{0}, refused{0};
  std::vector<std::thread> writers;
  for (int i = 0; i < 8; ++i) {
    writers.emplace_back([&, i] {
      try {
        specsim::write_file_atomically(target, "writer " + std::to_string(i) + "\n", o);
        ++won;
      } catch (const specsim::Error& e) {
        if (std::string(e.what()).find("already exists") != std::string::npos) ++refused;
      }
    });
  }
  for (auto& t : writers) t.join();
  CHECK(won == 1);
  CHECK(refused == 7);
  CHECK(listing(dir.path) == std::set<std::string>{"new.yaml"});  // no temporary left behind
  CHECK_THAT(slurp(target), Contains("writer "));
}

TEST_CASE("output: a target with a legal 255-byte name is writable (the temporary's name is cut)", "[output]") {
  TempDir dir("specsim-output-long-name");
  const std::string name = std::string(250, 'a') + ".yaml";
  REQUIRE(name.size() == 255);
  const std::string target = (dir.path / name).string();
  specsim::write_file_atomically(target, "x: 1\n");
  CHECK(slurp(target) == "x: 1\n");
  specsim::write_file_atomically(target, "x: 2\n");  // replaced the same way
  CHECK(slurp(target) == "x: 2\n");
  CHECK(listing(dir.path) == std::set<std::string>{name});
}

TEST_CASE("output: OutputFile writes in pieces, and uncommitted it leaves the target and no temporary", "[output]") {
  TempDir dir("specsim_test_output_stream");
  const fs::path target = dir.path / "grid.csv";
  spit(target, "old\n");
  {
    specsim::OutputFile file(target.string());
    // 100,000 rows of 11 bytes = 1.1 MB, past the 64 KiB buffer many times: the temporary holds
    // what was written so far, the target still the old text.
    for (int i = 0; i < 100000; ++i) file.write("row,123456\n");
    CHECK(slurp(target) == "old\n");
    CHECK(listing(dir.path).size() == 2);  // the target and one temporary
  }  // destroyed without a commit: an exception or a run that keeps nothing
  CHECK(slurp(target) == "old\n");
  CHECK(listing(dir.path) == std::set<std::string>{"grid.csv"});
  {
    specsim::OutputFile file(target.string());
    file.write("a,b\n");
    file.write("1,2\n");
    file.commit();
    CHECK_THROWS_WITH(file.write("3,4\n"), Contains("written after it was committed"));
  }
  CHECK(slurp(target) == "a,b\n1,2\n");
  CHECK(listing(dir.path) == std::set<std::string>{"grid.csv"});
}

TEST_CASE("output: OutputFile on /dev/full with force fails at the write that fills it", "[output]") {
  specsim::OutputOptions force;
  force.force = true;
  specsim::OutputFile file("/dev/full", force);
  // The first 64 KiB go to the buffer; the write that passes it reaches the device and fails.
  const std::string row(1024, 'x');
  CHECK_THROWS_WITH(
      [&] {
        for (int i = 0; i < 100; ++i) file.write(row);
      }(),
      Contains("-o /dev/full: write failed: No space left on device"));
}
