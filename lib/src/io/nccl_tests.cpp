#include "specsim/nccl_tests.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <istream>
#include <map>
#include <regex>
#include <set>
#include <string_view>
#include <system_error>

#include "specsim/error.hpp"
#include "specsim/units.hpp"

namespace specsim {
namespace {

// nccl-tests prints time in us since the 2019-03 NCCL 2.4 resync (cbe7f65) and in ms before it;
// bandwidths are GB/s = 1e9 B/s in every version (docs/references/nccl.md#nccl-tests-columns, #nccl-tests-timing).
constexpr double kSecondsPerUs = 1e-6;
constexpr double kSecondsPerMs = 1e-3;
constexpr double kBytesPerSPerGBs = 1e9;
// A root is a rank number; ranks are ints (nccl-tests' `int root`).
constexpr double kMaxRoot = 2147483647.0;

struct Token {
  std::string_view text;
  int column = 0;  // 1-based, in the original line
};

std::vector<Token> split(std::string_view line, int column_offset) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) {
      out.push_back({line.substr(start, i - start), column_offset + static_cast<int>(start) + 1});
    }
  }
  return out;
}

bool is_integer(std::string_view s) {
  if (!s.empty() && s.front() == '-') s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Where each quantity sits in a row, read from the column header line; -1 = absent.
struct Layout {
  std::vector<std::string> names;
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  int time[2] = {-1, -1}, algbw[2] = {-1, -1}, busbw[2] = {-1, -1}, check[2] = {-1, -1};
  double seconds_per_time_unit = kSecondsPerUs;
  std::string time_unit = "us";

  [[nodiscard]] std::string describe() const {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
    return out;
  }
};

// Recognises `size count type redop root time algbw busbw #wrong time ...` and its ancestors
// (docs/references/nccl.md#nccl-tests-columns a-d). Returns nothing for other comment lines.
std::optional<Layout> read_layout(const std::vector<Token>& tokens) {
  Layout layout;
  for (const auto& t : tokens) layout.names.emplace_back(t.text);
  int half = -1;
  for (int i = 0; i < static_cast<int>(layout.names.size()); ++i) {
    const std::string& n = layout.names[static_cast<std::size_t>(i)];
    if (n == "size" || n == "bytes") {
      layout.size = i;
    } else if (n == "count" || n == "N") {
      layout.count = i;
    } else if (n == "type") {
      layout.type = i;
    } else if (n == "redop" || n == "op") {
      layout.redop = i;
    } else if (n == "root") {
      layout.root = i;
    } else if (n == "time") {
      if (++half > 1) return std::nullopt;
      layout.time[half] = i;
    } else if (half >= 0 && n == "algbw" && layout.algbw[half] < 0) {
      layout.algbw[half] = i;
    } else if (half >= 0 && n == "busbw" && layout.busbw[half] < 0) {
      layout.busbw[half] = i;
    } else if (half >= 0 && (n == "#wrong" || n == "wrong" || n == "error" || n == "res") &&
               layout.check[half] < 0) {
      layout.check[half] = i;
    }
  }
  if (layout.size < 0 || layout.time[0] < 0) return std::nullopt;
  // The 2017-2019 layout (header word `bytes`) printed time in ms; a units line, when present,
  // overrides this guess.
  if (layout.names[static_cast<std::size_t>(layout.size)] == "bytes") {
    layout.seconds_per_time_unit = kSecondsPerMs;
    layout.time_unit = "ms";
  }
  return layout;
}

// Strips `[1,0]<stdout>:` (Open MPI --tag-output) and ` 0: ` (srun --label); returns the number
// of characters removed. Written out rather than as a std::regex: it runs on every line, and a
// regex search was a tenth of the time of `calibrate nccl` on a 10^6-row log.
std::size_t launcher_prefix_length(std::string_view line) {
  auto digits_from = [&](std::size_t i) {
    const std::size_t start = i;
    while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
    return i > start ? i : std::string_view::npos;
  };
  if (line.starts_with('[')) {  // [\d+,\d+]<std(out|err)>:
    std::size_t i = digits_from(1);
    if (i == std::string_view::npos || i >= line.size() || line[i] != ',') return 0;
    i = digits_from(i + 1);
    if (i == std::string_view::npos) return 0;
    const std::string_view rest = line.substr(i);
    for (const std::string_view tag : {"]<stdout>:", "]<stderr>:"}) {
      if (rest.starts_with(tag)) return i + tag.size();
    }
    return 0;
  }
  std::size_t i = 0;  // \s*\d+:<space>
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  i = digits_from(i);
  if (i == std::string_view::npos || i + 1 >= line.size() || line[i] != ':' || line[i + 1] != ' ') {
    return 0;
  }
  return i + 2;
}

std::string version_from_code(long code) {
  // NCCL_VERSION_CODE is MMmmpp from 2.9 on and Mmpp before (nccl.h; docs/references/nccl.md#nccl-tests-header).
  const long major = code >= 10000 ? code / 10000 : code / 1000;
  const long minor = code >= 10000 ? (code / 100) % 100 : (code / 100) % 10;
  const long patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

class Parser {
 public:
  Parser(std::string file, const ParseOptions& options) : options_(options) {
    log_.file = std::move(file);
  }

  void line(int number, std::string_view raw) {
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    const std::size_t prefix = launcher_prefix_length(raw);
    const std::string_view text = raw.substr(prefix);
    const auto tokens = split(text, static_cast<int>(prefix));
    if (tokens.empty()) return;
    if (tokens.front().text.front() == '#') {
      comment(number, text, tokens);
    } else if (is_integer(tokens.front().text)) {
      row(number, tokens);
    } else {
      foreign(text);
    }
  }

  NcclTestsLog finish() {
    close_table();
    if (log_.tables.empty()) {
      throw Error(SourceLocation{log_.file, 0, 0}, "",
                  "no nccl-tests table found: expected a '#  size  count  type ... time  algbw  "
                  "busbw' column header followed by rows (is this the stdout of *_perf?)");
    }
    return std::move(log_);
  }

 private:
  void comment(int number, std::string_view text, const std::vector<Token>& tokens) {
    static const std::regex kVersion(R"(nccl-tests version (\S+)(?:.*nccl-library=(\d+))?)");
    static const std::regex kStarting(R"(Collective test starting:\s*(\S+))");
    std::match_results<std::string_view::const_iterator> m;
    const std::string_view first = tokens.front().text;
    // "#" alone, "#wrong" as first token never happens; strip the '#' to read the words.
    std::vector<Token> words(tokens.begin() + 1, tokens.end());
    if (first.size() > 1) words.insert(words.begin(), {first.substr(1), tokens.front().column + 1});

    // Each regex runs only on lines holding its literal words: std::regex searches are slow, and a
    // long log has a comment block per table.
    auto search = [&](std::string_view words_in_line, const std::regex& re) {
      return text.find(words_in_line) != std::string_view::npos && std::regex_search(text.begin(), text.end(), m, re);
    };
    if (search("nccl-tests version", kVersion)) {
      log_.tests_version = m[1].str();
      long code = 0;
      const std::string digits = m[2].str();
      if (m[2].matched && std::from_chars(digits.data(), digits.data() + digits.size(), code).ec == std::errc{}) {
        // NCCL_VERSION_CODE: 2.9.x on is MMmmpp (20900 and up), before that Mmpp (2000-2899); NCCL
        // 1.x never printed one. Anything else is no version, and would be read as "0.0.2".
        if (code < 2000 || (code >= 2900 && code < 20900) || code > 999999) {
          throw Error(SourceLocation{log_.file, number, int(text.find("nccl-library=")) + 1}, "nccl-library",
                      "=" + digits + " is not an NCCL version code (NCCL_VERSION_CODE, e.g. 22907 for 2.29.7)");
        }
        log_.nccl_version = version_from_code(code);
      }
    } else if (search("Collective test starting", kStarting)) {
      close_table();
      std::string name = m[1].str();
      if (name.size() > 5 && name.ends_with("_perf")) name.resize(name.size() - 5);
      pending_collective_ = name;
      new_run();
    } else if (!words.empty() && words.front().text == "nThread") {
      // A new run: device lines and settings that follow belong to it.
      close_table();
      new_run();
      read_settings(words);
    } else if (first == "#" && words.size() >= 2 && words[0].text == "Rank" && is_integer(words[1].text) &&
               words[1].text.front() != '-') {
      // `#  Rank  0 Group  0 Pid  27238 on      crazy device  0 [0000:01:00] NVIDIA GeForce RTX 5090`
      int rank = 0;
      const std::string digits(words[1].text);
      if (std::from_chars(digits.data(), digits.data() + digits.size(), rank).ec != std::errc{}) {
        throw Error(SourceLocation{log_.file, number, 1}, "ranks", "device line's rank number " + digits + " is out of range");
      }
      if (device_ranks_.insert(rank).second) {
        // The GPU model: the words after `device N [bus id]`.
        for (std::size_t j = 2; j + 3 < words.size(); ++j) {
          const std::string_view bus = words[j + 2].text;
          if (words[j].text != "device" || !is_integer(words[j + 1].text) || !bus.starts_with('[') || !bus.ends_with(']')) {
            continue;
          }
          std::string name;
          for (std::size_t w = j + 3; w < words.size(); ++w) name += (name.empty() ? "" : " ") + std::string(words[w].text);
          device_names_.push_back(name);
          break;
        }
        for (std::size_t k = 2; k + 1 < words.size(); ++k) {
          if (words[k].text != "on") continue;
          const std::string host(words[k + 1].text);
          if (std::find(host_names_.begin(), host_names_.end(), host) == host_names_.end()) host_names_.push_back(host);
          break;
        }
      }
    } else if (auto layout = read_layout(words)) {
      start_table(number, *layout);
    } else if (current_ && current_->rows.empty() && !words.empty() &&
               words.front().text.starts_with("(")) {
      for (const auto& w : words) {
        if (w.text == "(us)") set_time_unit(kSecondsPerUs, "us");
        if (w.text == "(ms)") set_time_unit(kSecondsPerMs, "ms");
      }
    }
  }

  void new_run() {
    device_ranks_.clear();
    device_names_.clear();
    host_names_.clear();
    settings_ = Settings{};
  }

  void read_settings(const std::vector<Token>& words) {
    auto int_after = [&](std::size_t i) {
      if (i + 1 >= words.size()) return -1;
      int v = -1;
      const auto t = words[i + 1].text;
      std::from_chars(t.data(), t.data() + t.size(), v);
      return v;
    };
    for (std::size_t i = 0; i < words.size(); ++i) {
      const auto w = words[i].text;
      const auto prev = i > 0 ? words[i - 1].text : std::string_view{};
      if (w == "nThread") settings_.threads = int_after(i);
      if (w == "nGpus") settings_.gpus = int_after(i);
      if (w == "graph:") settings_.graph = int_after(i);
      if (w == "iters:") {
        if (prev == "warmup") {
          settings_.warmup = int_after(i);
        } else if (prev == "agg") {
          settings_.agg = int_after(i);
        } else {
          settings_.iters = int_after(i);
        }
      }
    }
  }

  void set_time_unit(double seconds, const char* name) {
    layout_.seconds_per_time_unit = seconds;
    layout_.time_unit = name;
    current_->time_unit = name;
  }

  void start_table(int number, const Layout& layout) {
    close_table();
    layout_ = layout;
    NcclTestsTable t;
    t.first_line = number;
    t.collective = pending_collective_.empty() ? options_.collective_if_unnamed : pending_collective_;
    t.collective_from_log = !pending_collective_.empty();
    t.iters = settings_.iters;
    t.warmup_iters = settings_.warmup;
    t.agg_iters = settings_.agg;
    t.graph_launches = settings_.graph;
    t.time_unit = layout.time_unit;
    t.devices = device_names_;
    t.hosts = host_names_;
    if (options_.ranks) {
      t.ranks = *options_.ranks;
    } else if (!device_ranks_.empty()) {
      t.ranks = static_cast<int>(device_ranks_.size());
    } else if (settings_.threads > 0 && settings_.gpus > 0) {
      t.ranks = settings_.threads * settings_.gpus;  // one process: no device lines to count
    } else {
      throw Error(SourceLocation{log_.file, number, 1}, "ranks",
                  "cannot tell the rank count of this table: no '#  Rank N ...' device lines and "
                  "no '# nThread N nGpus M' header above it; pass the rank count explicitly");
    }
    if (t.ranks < 1) {
      throw Error(SourceLocation{log_.file, number, 1}, "ranks",
                  "rank count " + std::to_string(t.ranks) + ": must be >= 1");
    }
    current_ = std::move(t);
  }

  void close_table() {
    if (current_ && !current_->rows.empty()) {
      check_unnamed_reduction(*current_);
      note_missing_sizes(*current_);
      log_.tables.push_back(std::move(*current_));
    }
    current_.reset();
  }

  // nccl-tests steps sizes by one factor (-f, 2 by default): a gap of that factor squared or more
  // between two rows, where every other step is the factor, is a row dropped from the log.
  void note_missing_sizes(const NcclTestsTable& t) {
    std::map<long long, int> steps;  // ratio x 1000, rounded -> how often
    for (std::size_t i = 1; i < t.rows.size(); ++i) {
      if (t.rows[i - 1].size_bytes > 0) ++steps[std::llround(1000.0 * t.rows[i].size_bytes / t.rows[i - 1].size_bytes)];
    }
    if (steps.empty()) return;
    const auto common = std::max_element(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    const double factor = double(common->first) / 1000.0;
    if (!(factor > 1.0) || common->second < 3) return;
    for (std::size_t i = 1; i < t.rows.size(); ++i) {
      const double a = t.rows[i - 1].size_bytes, b = t.rows[i].size_bytes;
      if (a > 0 && b / a >= factor * factor * 0.999) {
        log_.warnings.push_back(log_.file + ":" + std::to_string(t.first_line) + ": no row between " +
                                units::format_bytes(a) + " and " + units::format_bytes(b) +
                                " where the table steps by " + units::format_fixed(factor, 2) +
                                "x elsewhere: a row dropped from the log?");
      }
    }
  }

  // A table the log does not name is taken as collective_if_unnamed; rows that reduce with no
  // operation at all ('none': alltoall, all_gather, sendrecv, ...) cannot be a reduction's.
  void check_unnamed_reduction(const NcclTestsTable& t) const {
    static const std::set<std::string> kReductions = {"all_reduce", "reduce_scatter", "reduce"};
    if (t.collective_from_log || !kReductions.count(t.collective)) return;
    const bool no_op = std::all_of(t.rows.begin(), t.rows.end(), [](const NcclTestsRow& r) { return r.redop == "none"; });
    if (!no_op) return;
    throw Error(SourceLocation{log_.file, t.first_line, 1}, "collective",
                "the log does not name this table's collective and its rows reduce with 'none', so it is not " +
                    t.collective + ": add the '# Collective test starting: NAME_perf' line nccl-tests prints, or "
                    "keep the command that ran it (e.g. alltoall_perf -b 8 -e 128M) above the table");
  }

  // A row problem: an error, or in lenient mode a skipped row.
  void reject(int number, int column, const std::string& key, const std::string& message) {
    Error e(SourceLocation{log_.file, number, column}, key, message);
    if (!options_.lenient) throw e;
    ++log_.skipped_rows;
    log_.skipped.emplace_back(e.what());
  }

  // The fields of one table row; the first problem of a row is the one reported, and reads after
  // it return nothing.
  class RowReader {
   public:
    RowReader(Parser& parser, int number, const std::vector<Token>& tokens)
        : parser_(parser), number_(number), tokens_(tokens) {}

    [[nodiscard]] bool ok() const { return ok_; }

    // The number at `index` (0 when the column is absent, -1, or after a problem).
    double number(int index, const char* what, bool integer) {
      if (index < 0 || !ok_) return 0.0;
      const Token& t = tokens_[static_cast<std::size_t>(index)];
      double v = 0.0;
      const char* b = t.text.data();
      const char* e = b + t.text.size();
      const auto res = std::from_chars(b, e, v);
      if (res.ec != std::errc() || res.ptr != e || !std::isfinite(v) || (integer && !is_integer(t.text))) {
        reject(t.column, what,
               std::string("expected ") + (integer ? "an integer" : "a number") + ", got '" + std::string(t.text) + "'");
        return 0.0;
      }
      if (v < 0.0 && std::string_view(what) != "root") {
        reject(t.column, what, "must not be negative, got '" + std::string(t.text) + "'");
      }
      return v;
    }

    [[nodiscard]] std::string text(int index) const {
      return index < 0 ? std::string{} : std::string(tokens_[static_cast<std::size_t>(index)].text);
    }

    // A bound on a parsed value.
    void bound(bool holds, int index, const char* what, const std::string& message) {
      if (ok_ && !holds) reject(tokens_[static_cast<std::size_t>(index)].column, what, message);
    }

   private:
    void reject(int column, const char* what, const std::string& message) {
      parser_.reject(number_, column, what, message);
      ok_ = false;
    }

    Parser& parser_;
    int number_;
    const std::vector<Token>& tokens_;
    bool ok_ = true;
  };

  // A row needs a header above it and exactly the header's columns.
  bool row_fits_table(int number, const std::vector<Token>& tokens) {
    if (!current_) {
      reject(number, tokens.front().column, "header",
             "table row before any column header: expected a line such as '#  size  count  type  "
             "redop  root  time  algbw  busbw #wrong ...' above the rows (header missing?)");
      return false;
    }
    const std::size_t expected = layout_.names.size();
    if (tokens.size() != expected) {
      reject(number, tokens.front().column, "row",
             "row has " + std::to_string(tokens.size()) + " fields, expected " +
                 std::to_string(expected) + " (" + layout_.describe() + ") as in the header on line " +
                 std::to_string(current_->first_line) +
                 (tokens.size() < expected ? "; truncated row?" : ""));
      return false;
    }
    return true;
  }

  // size, count, type, redop and root.
  void read_message(RowReader& read, NcclTestsRow& r) const {
    r.size_bytes = read.number(layout_.size, "size", true);
    read.bound(r.size_bytes <= kMaxNcclTestsBytes, layout_.size, "size",
               read.text(layout_.size) + " B is more than 1 TiB, past any GPU's memory: a damaged log?");
    // Every element is at least one byte, so the size bound holds for the count too (and keeps the
    // conversion to an integer defined).
    const double count = read.number(layout_.count, "count", true);
    read.bound(count <= kMaxNcclTestsBytes, layout_.count, "count",
               read.text(layout_.count) + " elements is more than 2^40, past any GPU's memory: a damaged log?");
    if (read.ok()) r.count = static_cast<long long>(count);
    r.type = read.text(layout_.type);
    r.redop = read.text(layout_.redop);
    if (layout_.root >= 0) {
      const double root = read.number(layout_.root, "root", true);
      read.bound(root >= -1.0 && root <= kMaxRoot, layout_.root, "root",
                 read.text(layout_.root) + ": expected -1 (no root) or a rank number");
      if (read.ok()) r.root = static_cast<int>(root);
    }
  }

  // One half of the row: h = 0 out-of-place, 1 in-place.
  void read_timing(RowReader& read, int h, NcclTestsTiming& timing) const {
    static const char* kHalf[2][4] = {
        {"out-of-place time", "out-of-place algbw", "out-of-place busbw", "out-of-place #wrong"},
        {"in-place time", "in-place algbw", "in-place busbw", "in-place #wrong"}};
    if (layout_.time[h] < 0) return;
    timing.time_s = read.number(layout_.time[h], kHalf[h][0], false) * layout_.seconds_per_time_unit;
    read.bound(timing.time_s <= kMaxNcclTestsSeconds, layout_.time[h], kHalf[h][0],
               read.text(layout_.time[h]) + " " + layout_.time_unit + " is more than an hour per collective: a damaged log?");
    timing.algbw_bytes_per_s = read.number(layout_.algbw[h], kHalf[h][1], false) * kBytesPerSPerGBs;
    timing.busbw_bytes_per_s = read.number(layout_.busbw[h], kHalf[h][2], false) * kBytesPerSPerGBs;
    timing.check = read.text(layout_.check[h]);
    // nccl-tests counts the elements that came out wrong (`#wrong`; N/A when run with -c 0). A
    // row with wrong results timed something other than a correct all-reduce.
    const int check = layout_.check[h];
    if (check >= 0 && layout_.names[static_cast<std::size_t>(check)].ends_with("wrong")) {
      const std::string& v = timing.check;
      read.bound(v == "0" || v == "N/A", check, kHalf[h][3],
                 "'" + v + "': nccl-tests found wrong results in this row, so its time is not that of a correct "
                 "all-reduce (rerun, or pass --lenient to drop such rows)");
    }
  }

  void row(int number, const std::vector<Token>& tokens) {
    if (!row_fits_table(number, tokens)) return;
    RowReader read(*this, number, tokens);
    NcclTestsRow r;
    r.line = number;
    read_message(read, r);
    read_timing(read, 0, r.out_of_place);
    read_timing(read, 1, r.in_place);
    if (read.ok()) current_->rows.push_back(std::move(r));
  }

  // NCCL_DEBUG=INFO lines carry the NCCL version and the variables taken from the environment.
  void foreign(std::string_view text) {
    static const std::regex kCommand(R"((?:^|[/\s])([a-z_]+)_perf(?:_mpi)?(?:\s|$))");
    static const std::regex kNcclVersion(R"(NCCL INFO NCCL version (\d+\.\d+\.\d+))");
    std::match_results<std::string_view::const_iterator> m;
    // The command that ran the test (`./build/alltoall_perf -b 8 ...`) names what follows when an
    // older nccl-tests printed no 'Collective test starting' line.
    if (text.find("_perf") != std::string_view::npos && text.find("NCCL INFO") == std::string_view::npos &&
        std::regex_search(text.begin(), text.end(), m, kCommand)) {
      close_table();
      pending_collective_ = m[1].str();
      return;
    }
    // Newer NCCL ends the line with a full stop ('... set by environment to 0.'), older without.
    static const std::regex kEnv(R"(NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to (\S+?)\.?(?:\s|$))");
    // The library's own banner, printed without the INFO prefix ('NCCL version 2.26.2+cuda12.8').
    static const std::regex kBanner(R"(^\s*NCCL version (\d+\.\d+\.\d+)(?:\+\S*)?\s*$)");
    if (text.find("NCCL INFO") == std::string_view::npos) {
      if (log_.nccl_version.empty() && std::regex_search(text.begin(), text.end(), m, kBanner)) {
        log_.nccl_version = m[1].str();
      }
      return;  // the regexes below need it
    }
    if (std::regex_search(text.begin(), text.end(), m, kNcclVersion)) {
      if (log_.nccl_version.empty()) log_.nccl_version = m[1].str();
    } else if (std::regex_search(text.begin(), text.end(), m, kEnv)) {
      log_.env[m[1].str()] = m[2].str();
    }
  }

  struct Settings {
    int threads = -1, gpus = -1, iters = -1, warmup = -1, agg = -1, graph = -1;
  };

  ParseOptions options_;
  NcclTestsLog log_;
  std::optional<NcclTestsTable> current_;
  Layout layout_;
  Settings settings_;
  std::set<int> device_ranks_;
  std::vector<std::string> device_names_;
  std::vector<std::string> host_names_;
  std::string pending_collective_;
};

}  // namespace

NcclTestsLog parse_nccl_tests(std::istream& in, const std::string& file_name,
                              const ParseOptions& options) {
  if (options.ranks && *options.ranks < 1) {
    throw Error(SourceLocation{file_name, 0, 0}, "ranks",
                std::to_string(*options.ranks) + ": must be >= 1");
  }
  Parser parser(file_name, options);
  std::string text;
  int number = 0;
  while (std::getline(in, text)) parser.line(++number, text);
  if (in.bad()) throw Error(SourceLocation{file_name, number, 0}, "", "read error");
  return parser.finish();
}

NcclTestsLog parse_nccl_tests_file(const std::string& path, const ParseOptions& options) {
  std::ifstream in(path);
  if (!in) throw Error(SourceLocation{path, 0, 0}, "", "cannot open file");
  return parse_nccl_tests(in, path, options);
}

std::vector<CurvePoint> curve_points(const NcclTestsTable& table, NcclTestsColumn column) {
  std::vector<CurvePoint> out;
  for (const auto& row : table.rows) {
    if (row.size_bytes <= 0.0) continue;
    const auto& half = column == NcclTestsColumn::kOutOfPlace ? row.out_of_place : row.in_place;
    out.push_back({row.size_bytes, half.time_s});
  }
  return out;
}

MeasuredCurve curve_from_table(const NcclTestsTable& table, NcclTestsColumn column,
                               CurveOptions options) {
  options.ranks = table.ranks;
  return MeasuredCurve::fit(curve_points(table, column), options);
}

}  // namespace specsim
