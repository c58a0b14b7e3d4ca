#include "specsim/engine_log.hpp"

#include <algorithm>
#include <boost/math/distributions/beta.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "specsim/acceptance.hpp"
#include "specsim/plausibility.hpp"

namespace specsim {

namespace {

// Printed precision of the engines' format strings (%.2f, %.3f, %.1f%%, %0.5f) plus slack: a
// cross-check between two printed numbers fails only beyond what rounding can explain.
constexpr double kTwoDecimals = 0.005 + 1e-9;
constexpr double kThreeDecimals = 0.0005 + 1e-9;
constexpr double kPercentOneDecimal = 0.0005 + 1e-9;
constexpr double kFiveDecimals = 0.000005 + 1e-9;

constexpr std::string_view kSglangMarker = "Decode batch.";
constexpr std::string_view kSglangSpecKey = "accept len";
constexpr std::string_view kVllmV1Marker = "SpecDecoding metrics:";
constexpr std::string_view kVllmV0Marker = "Speculative metrics:";
constexpr std::string_view kLlamaMarker = "draft acceptance =";
constexpr std::string_view kLlamaServerMarker = "draft acceptance rate =";

std::string fmt(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

void check_confidence(double confidence) {
  if (!(confidence > 0.0 && confidence < 1.0)) {
    throw Error("confidence = " + fmt(confidence) + ": must lie in (0, 1)");
  }
}

std::string_view trim(std::string_view s, std::size_t* shift = nullptr) {
  std::size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  std::size_t e = s.size();
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  if (shift) *shift = b;
  return s.substr(b, e - b);
}

// A piece of the line with its 1-based column, for errors that point at it.
struct Piece {
  std::string_view text;
  int column = 0;
};

struct Field {
  std::string key;
  Piece value;
  std::vector<Piece> more;  // further comma-separated values (vLLM's per-position list)
  bool used = false;
};

class LineParser {
 public:
  LineParser(std::string_view line, const SourceLocation& where, std::string_view format_name)
      : line_(line), where_(where), format_name_(format_name) {}

  [[noreturn]] void fail(int column, const std::string& key, const std::string& what) const {
    SourceLocation at = where_;
    at.column = column;
    // The field goes into the message, after the format, so the sentence reads in order.
    throw Error(at, "", std::string(format_name_) + " line: " + (key.empty() ? "" : key + ": ") + what);
  }

  // "key: value, key: value, v, v, ..." starting at byte offset `from`.
  std::vector<Field> split_fields(std::size_t from, std::string_view list_key) const {
    std::vector<Field> fields;
    std::size_t pos = from;
    while (pos <= line_.size()) {
      std::size_t comma = line_.find(',', pos);
      if (comma == std::string_view::npos) comma = line_.size();
      std::size_t shift = 0;
      const std::string_view token = trim(line_.substr(pos, comma - pos), &shift);
      const int column = static_cast<int>(pos + shift) + 1;
      if (!token.empty()) {
        const std::size_t colon = token.find(':');
        if (colon != std::string_view::npos) {
          Field f;
          f.key = std::string(trim(token.substr(0, colon)));
          std::size_t vshift = 0;
          f.value.text = trim(token.substr(colon + 1), &vshift);
          f.value.column = column + static_cast<int>(colon + 1 + vshift);
          fields.push_back(std::move(f));
        } else if (!fields.empty() && fields.back().key == list_key) {
          fields.back().more.push_back({token, column});
        } else {
          fail(column, "", "expected 'key: value', got '" + std::string(token) + "'");
        }
      }
      pos = comma + 1;
    }
    return fields;
  }

  Field* find(std::vector<Field>& fields, std::string_view key) const {
    for (auto& f : fields) {
      if (f.key == key) {
        f.used = true;
        return &f;
      }
    }
    return nullptr;
  }

  Field& require(std::vector<Field>& fields, std::string_view key, std::string_view shape) const {
    if (Field* f = find(fields, key)) return *f;
    fail(0, "", "missing field '" + std::string(key) + ": " + std::string(shape) + "'");
  }

  // A number, optionally followed by exactly `unit` ("tokens/s", "tokens", "%").
  double number(const Field& f, const Piece& piece, std::string_view unit = {}) const {
    std::string_view text = piece.text;
    const std::string expected =
        unit.empty() ? "a number" : "a number followed by '" + std::string(unit) + "'";
    if (!unit.empty()) {
      if (text.size() < unit.size() || text.substr(text.size() - unit.size()) != unit) {
        fail(piece.column, f.key, "expected " + expected + ", got '" + std::string(piece.text) + "'");
      }
      text = trim(text.substr(0, text.size() - unit.size()));
    }
    double value = 0.0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty() ||
        !std::isfinite(value) || value < 0.0) {
      fail(piece.column, f.key,
           "expected " + expected + " (non-negative), got '" + std::string(piece.text) + "'");
    }
    return value;
  }

  std::int64_t count(const Field& f, const Piece& piece, std::string_view unit = {}) const {
    const double v = number(f, piece, unit);
    if (v != std::floor(v)) fail(piece.column, f.key, "expected a whole count, got '" + std::string(piece.text) + "'");
    plausible(piece, f.key, v, Magnitude::kTokenCount);
    return static_cast<std::int64_t>(v);
  }

  // The row of plausibility.hpp for this kind of value (an acceptance length of 1e308 is a typo).
  void plausible(const Piece& piece, const std::string& key, double v, Magnitude m) const {
    if (const std::string why = implausible(v, m, piece.text); !why.empty()) fail(piece.column, key, why);
  }

  double rate(const Field& f, const Piece& piece) const {
    const double v = number(f, piece);
    if (v > 1.0) fail(piece.column, f.key, "expected a rate in [0, 1], got '" + std::string(piece.text) + "'");
    return v;
  }

  std::string_view line() const { return line_; }

 private:
  std::string_view line_;
  SourceLocation where_;
  std::string_view format_name_;
};

LogRecord parse_sglang(std::string_view line, const SourceLocation& where) {
  LineParser p(line, where, "SGLang decode");
  const std::size_t start = line.find(kSglangMarker) + kSglangMarker.size();
  auto fields = p.split_fields(start, {});
  LogRecord r;
  r.format = LogFormat::kSglang;
  r.where = where;
  Field& running = p.require(fields, "#running-req", "<count>");
  p.plausible(running.value, running.key, p.number(running, running.value), Magnitude::kCount);
  r.running_requests = static_cast<int>(p.count(running, running.value));
  Field& len = p.require(fields, "accept len", "<tokens per cycle>");
  r.tokens_per_cycle = p.number(len, len.value);
  if (r.tokens_per_cycle < 1.0) {
    p.fail(len.value.column, len.key,
           "expected a value >= 1 (accept len counts the bonus token), got '" +
               std::string(len.value.text) + "'");
  }
  p.plausible(len.value, len.key, r.tokens_per_cycle, Magnitude::kTokensPerCycle);
  if (Field* rate = p.find(fields, "accept rate")) r.logged_accept_rate = p.rate(*rate, rate->value);
  Field& tput = p.require(fields, "gen throughput (token/s)", "<number>");
  r.throughput_tokens_per_s = p.number(tput, tput.value);
  p.plausible(tput.value, tput.key, *r.throughput_tokens_per_s, Magnitude::kRate);
  r.cycles = *r.running_requests;
  r.cycles_are_counts = false;
  return r;
}

// The interval's generated tokens/s, from "Drafted throughput": generated tokens = accepted + one
// bonus/corrected token per draft, over the interval Drafted / drafted throughput. "Accepted
// throughput" is only checked to be a rate.
void read_vllm_v1_throughput(const LineParser& p, std::vector<Field>& fields, LogRecord& r) {
  if (Field* dtput = p.find(fields, "Drafted throughput")) {
    const double drafted_per_s = p.number(*dtput, dtput->value, "tokens/s");
    const std::int64_t accepted = *r.accepted_tokens, drafted = *r.drafted_tokens;
    if (drafted_per_s > 0.0 && drafted > 0 && r.cycles > 0.0) {
      r.throughput_tokens_per_s = (accepted + r.cycles) * drafted_per_s / double(drafted);
    }
  }
  if (Field* atput = p.find(fields, "Accepted throughput")) {
    (void)p.number(*atput, atput->value, "tokens/s");
  }
}

LogRecord parse_vllm_v1(std::string_view line, const SourceLocation& where) {
  constexpr std::string_view kPerPosition = "Per-position acceptance rate";
  LineParser p(line, where, "vLLM SpecDecoding metrics");
  const std::size_t start = line.find(kVllmV1Marker) + kVllmV1Marker.size();
  auto fields = p.split_fields(start, kPerPosition);
  LogRecord r;
  r.format = LogFormat::kVllmV1;
  r.where = where;
  Field& mean = p.require(fields, "Mean acceptance length", "<number>");
  r.tokens_per_cycle = p.number(mean, mean.value);
  p.plausible(mean.value, mean.key, r.tokens_per_cycle, Magnitude::kTokensPerCycle);
  Field& acc = p.require(fields, "Accepted", "<count> tokens");
  r.accepted_tokens = p.count(acc, acc.value, "tokens");
  Field& dra = p.require(fields, "Drafted", "<count> tokens");
  r.drafted_tokens = p.count(dra, dra.value, "tokens");
  Field* rate = p.find(fields, "Avg Draft acceptance rate");
  if (!rate) rate = p.find(fields, "Draft acceptance rate");  // older V1 builds
  if (rate) r.logged_accept_rate = p.number(*rate, rate->value, "%") / 100.0;
  Field* pp = p.find(fields, kPerPosition);
  if (pp) {
    r.unconditional_rates.push_back(p.rate(*pp, pp->value));
    for (const auto& piece : pp->more) r.unconditional_rates.push_back(p.rate(*pp, piece));
    r.num_draft_positions = static_cast<int>(r.unconditional_rates.size());
  }
  const std::int64_t accepted = *r.accepted_tokens, drafted = *r.drafted_tokens;
  if (accepted > drafted) {
    p.fail(acc.value.column, acc.key, "Accepted (" + std::to_string(accepted) +
                                          ") exceeds Drafted (" + std::to_string(drafted) + ")");
  }
  double drafts = 0.0;
  if (r.num_draft_positions) {
    const int k = *r.num_draft_positions;
    if (drafted % k != 0) {
      p.fail(dra.value.column, dra.key,
             "expected a multiple of the " + std::to_string(k) + " per-position rates (drafts * K), got " +
                 std::to_string(drafted));
    }
    drafts = double(drafted / k);
  } else if (r.tokens_per_cycle > 1.0) {
    drafts = std::round(double(accepted) / (r.tokens_per_cycle - 1.0));  // no K on the line
  }
  if (r.logged_accept_rate && drafted > 0 &&
      std::abs(*r.logged_accept_rate - double(accepted) / drafted) > kPercentOneDecimal) {
    p.fail(rate->value.column, rate->key,
           "expected Accepted/Drafted = " + fmt(100.0 * accepted / drafted) + "%, got '" +
               std::string(rate->value.text) + "'");
  }
  r.cycles = drafts;
  r.cycles_are_counts = drafts > 0.0 || drafted == 0;
  if (drafts > 0.0) {
    // vLLM metrics.py: mean acceptance length = 1 + accepted / num_drafts.
    const double tau = 1.0 + accepted / drafts;
    if (std::abs(tau - r.tokens_per_cycle) > kTwoDecimals) {
      p.fail(mean.value.column, mean.key,
             "expected 1 + Accepted/drafts = 1 + " + std::to_string(accepted) + "/" + fmt(drafts) +
                 " = " + fmt(tau) + ", got '" + std::string(mean.value.text) + "'");
    }
    if (!r.unconditional_rates.empty()) {
      double sum = 0.0;
      for (double a : r.unconditional_rates) sum += a;
      if (std::abs(sum - accepted / drafts) > kThreeDecimals * r.unconditional_rates.size()) {
        p.fail(pp->value.column, pp->key,
               "per-position rates sum to " + fmt(sum) + ", expected Accepted/drafts = " +
                   fmt(accepted / drafts));
      }
    }
  }
  read_vllm_v1_throughput(p, fields, r);
  return r;
}

LogRecord parse_vllm_v0(std::string_view line, const SourceLocation& where) {
  LineParser p(line, where, "vLLM Speculative metrics");
  const std::size_t start = line.find(kVllmV0Marker) + kVllmV0Marker.size();
  auto fields = p.split_fields(start, {});
  if (!fields.empty() && !fields.back().value.text.empty() && fields.back().value.text.back() == '.') {
    fields.back().value.text.remove_suffix(1);  // the line ends with a full stop
  }
  LogRecord r;
  r.format = LogFormat::kVllmV0;
  r.where = where;
  r.cumulative = true;
  Field& rate = p.require(fields, "Draft acceptance rate", "<rate>");
  r.logged_accept_rate = p.rate(rate, rate.value);
  Field& eff = p.require(fields, "System efficiency", "<rate>");
  const double efficiency = p.rate(eff, eff.value);
  Field& kf = p.require(fields, "Number of speculative tokens", "<count>");
  const std::int64_t k = p.count(kf, kf.value);
  if (k < 1) p.fail(kf.value.column, kf.key, "expected at least 1 speculative token, got 0");
  // A chain of K drafts emits at most K + 1 tokens per cycle: an acceptance length.
  p.plausible(kf.value, kf.key, double(k + 1), Magnitude::kTokensPerCycle);
  Field& acc = p.require(fields, "Number of accepted tokens", "<count>");
  const std::int64_t accepted_any = p.count(acc, acc.value);
  Field& dra = p.require(fields, "Number of draft tokens", "<count>");
  const std::int64_t drafted = p.count(dra, dra.value);
  Field& emi = p.require(fields, "Number of emitted tokens", "<count>");
  const std::int64_t emitted = p.count(emi, emi.value);
  if (drafted % k != 0) {
    p.fail(dra.value.column, dra.key,
           "expected a multiple of Number of speculative tokens = " + std::to_string(k) +
               " (steps * K), got " + std::to_string(drafted));
  }
  const std::int64_t steps = drafted / k;
  if (emitted < steps || emitted > steps * (k + 1)) {
    p.fail(emi.value.column, emi.key,
           "expected between steps = " + std::to_string(steps) + " and steps * (K + 1) = " +
               std::to_string(steps * (k + 1)) + " emitted tokens, got " + std::to_string(emitted));
  }
  if (accepted_any > drafted) {
    p.fail(acc.value.column, acc.key, "exceeds Number of draft tokens = " + std::to_string(drafted));
  }
  // vLLM V0 metrics.py: system efficiency = emitted / (steps * (K + 1)); tau = emitted / steps.
  if (steps > 0) {
    const double expected = double(emitted) / double(steps * (k + 1));
    if (std::abs(expected - efficiency) > kThreeDecimals) {
      p.fail(eff.value.column, eff.key,
             "expected emitted/(steps*(K+1)) = " + std::to_string(emitted) + "/" +
                 std::to_string(steps * (k + 1)) + " = " + fmt(expected) + ", got '" +
                 std::string(eff.value.text) + "'");
    }
    r.tokens_per_cycle = double(emitted) / double(steps);
  } else {
    r.tokens_per_cycle = efficiency * double(k + 1);
  }
  r.num_draft_positions = static_cast<int>(k);
  // Chain-accepted drafts (those before the first rejection); "Number of accepted tokens" also
  // counts drafts after a rejection (vLLM issue 9565), so it is kept only as the logged rate.
  r.accepted_tokens = emitted - steps;
  r.drafted_tokens = drafted;
  r.cycles = double(steps);
  r.cycles_are_counts = true;
  return r;
}

// llama.cpp has its own punctuation, so a cursor reads it piece by piece.
class Cursor {
 public:
  Cursor(const LineParser& p, std::size_t pos) : p_(p), pos_(pos) {}

  void skip_spaces() {
    while (pos_ < p_.line().size() && (p_.line()[pos_] == ' ' || p_.line()[pos_] == '\t')) ++pos_;
  }
  bool at_end() {
    skip_spaces();
    return pos_ >= p_.line().size() || p_.line()[pos_] == '\r';
  }
  bool try_literal(std::string_view lit) {
    skip_spaces();
    if (p_.line().substr(pos_, lit.size()) == lit) {
      pos_ += lit.size();
      return true;
    }
    return false;
  }
  void literal(std::string_view lit) {
    if (!try_literal(lit)) {
      p_.fail(col(), "", "expected '" + std::string(lit) + "', got " + rest());
    }
  }
  double number(const std::string& key) {
    skip_spaces();
    std::size_t end = pos_;
    while (end < p_.line().size() && (std::isdigit(static_cast<unsigned char>(p_.line()[end])) ||
                                      p_.line()[end] == '.' || p_.line()[end] == 'e' ||
                                      p_.line()[end] == '-' || p_.line()[end] == '+')) {
      ++end;
    }
    Field f;
    f.key = key;
    const Piece piece{p_.line().substr(pos_, end - pos_), col()};
    if (piece.text.empty()) p_.fail(col(), key, "expected a number, got " + rest());
    pos_ = end;
    return p_.number(f, piece);
  }
  int col() const { return static_cast<int>(pos_) + 1; }
  int next_col() {  // column of the next non-blank character
    skip_spaces();
    return col();
  }
  std::string rest() const {
    const auto text = trim(p_.line().substr(std::min(pos_, p_.line().size())));
    return text.empty() ? "the end of the line" : "'" + std::string(text) + "'";
  }

 private:
  const LineParser& p_;
  std::size_t pos_;
};

LogRecord parse_llama_cpp(std::string_view line, const SourceLocation& where) {
  LineParser p(line, where, "llama.cpp draft acceptance");
  Cursor c(p, line.find(kLlamaMarker) + kLlamaMarker.size());
  LogRecord r;
  r.format = LogFormat::kLlamaCpp;
  r.where = where;
  const int rate_col = c.next_col();
  const double rate = c.number("draft acceptance");
  if (rate > 1.0) p.fail(rate_col, "draft acceptance", "expected a rate in [0, 1], got " + fmt(rate));
  r.logged_accept_rate = rate;
  c.literal("(");
  const int acc_col = c.next_col();
  const double accepted = c.number("accepted");
  c.literal("accepted");
  c.literal("/");
  const double drafted = c.number("generated");
  c.literal("generated");
  c.literal(")");
  const double most = plausible_range(Magnitude::kTokenCount).max;
  if (drafted > most) {
    p.fail(acc_col, "generated", implausible(drafted, Magnitude::kTokenCount));
  }
  if (accepted != std::floor(accepted) || drafted != std::floor(drafted) || accepted > drafted) {
    p.fail(acc_col, "accepted", "expected whole counts with accepted <= generated, got " +
                                    fmt(accepted) + " / " + fmt(drafted));
  }
  if (drafted > 0 && std::abs(rate - accepted / drafted) > kFiveDecimals) {
    p.fail(rate_col, "draft acceptance",
           "expected accepted/generated = " + fmt(accepted / drafted) + ", got " + fmt(rate));
  }
  r.accepted_tokens = static_cast<std::int64_t>(accepted);
  r.drafted_tokens = static_cast<std::int64_t>(drafted);
  c.literal(",");
  c.literal("mean acceptance length");
  c.literal("=");
  const int mean_col = c.next_col();
  r.tokens_per_cycle = c.number("mean acceptance length");
  if (r.tokens_per_cycle < 1.0) {
    p.fail(mean_col, "mean acceptance length",
           "expected a value >= 1 (it counts the bonus token), got " + fmt(r.tokens_per_cycle));
  }
  if (const std::string why = implausible(r.tokens_per_cycle, Magnitude::kTokensPerCycle); !why.empty()) {
    p.fail(mean_col, "mean acceptance length", why);
  }
  if (c.try_literal(",")) {
    c.literal("acceptance rate per position");
    c.literal("=");
    c.literal("(");
    do {
      const int col = c.next_col();
      const double a = c.number("acceptance rate per position");
      if (a > 1.0) p.fail(col, "acceptance rate per position", "expected a rate in [0, 1], got " + fmt(a));
      r.unconditional_rates.push_back(a);
    } while (c.try_literal(","));
    c.literal(")");
    r.num_draft_positions = static_cast<int>(r.unconditional_rates.size());
  }
  if (!c.at_end()) p.fail(c.col(), "", "expected the end of the line, got " + c.rest());

  double sum = 0.0;
  for (double a : r.unconditional_rates) sum += a;
  if (!r.unconditional_rates.empty() &&
      std::abs(1.0 + sum - r.tokens_per_cycle) >
          kTwoDecimals + kThreeDecimals * r.unconditional_rates.size()) {
    p.fail(mean_col, "mean acceptance length",
           "expected 1 + sum of per-position rates = " + fmt(1.0 + sum) + ", got " +
               fmt(r.tokens_per_cycle));
  }
  // The line has no draft count: accepted / (tau - 1), with the finer 3-decimal rates when present.
  const double per_draft = r.unconditional_rates.empty() ? r.tokens_per_cycle - 1.0 : sum;
  r.cycles = per_draft > 0.0 ? std::round(accepted / per_draft) : 0.0;
  r.cycles_are_counts = per_draft > 0.0 || drafted == 0;
  return r;
}


// ---- llama-server's per-request line -----------------------------------------------------------

// llama-server (tools/server/server-context.cpp) ends each request with
//   draft acceptance rate = 0.57576 (  171 accepted /   297 generated)
// and then, per draft implementation, common_speculative_print_stats' line
//   statistics draft: #calls = 10, #gen drafts = 10, #acc drafts = 10, #gen tokens = 110, #acc tokens = 98
// The rate line has no draft count, so tau = 1 + accepted / drafts comes from the statistics, which
// count since the server started: a request's drafts are the growth since the previous request's
// lines (the first request's, their values). The counts must add up to the rate line's.

// The whole number after `key = ` on a statistics line; nullopt when the key is not there.
std::optional<std::int64_t> statistics_count(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t pos = at + key.size();
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '=')) ++pos;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(line.data() + pos, line.data() + line.size(), v);
  if (ec != std::errc() || end == line.data() + pos) return std::nullopt;
  return v;
}

struct DraftCounts {
  std::int64_t drafts = 0, generated = 0, accepted = 0;
};

// Per implementation name, the statistics lines' counts at the last request.
using LlamaServerTotals = std::map<std::string, DraftCounts>;

// The growth of the statistics lines from line k on over `totals` (k ends past them); `now` gets
// their counts per implementation. Every count is a plausible token count (at most 2^53, never
// negative), and so is every running sum: no sum can overflow.
DraftCounts statistics_growth(const std::vector<std::string>& lines, std::size_t& k, const std::string& file,
                              const LlamaServerTotals& totals, LlamaServerTotals& now) {
  DraftCounts request;
  const double limit = plausible_range(Magnitude::kTokenCount).max;
  for (; k < lines.size() && lines[k].find("statistics ") != std::string::npos; ++k) {
    const std::string_view line = lines[k];
    const auto drafts = statistics_count(line, "#gen drafts");
    const auto gen = statistics_count(line, "#gen tokens");
    const auto acc = statistics_count(line, "#acc tokens");
    if (!drafts || !gen || !acc) break;
    const SourceLocation at{file, static_cast<int>(k) + 1, 0};
    for (const auto& [key, v] : {std::pair<const char*, std::int64_t>{"#gen drafts", *drafts},
                                 {"#gen tokens", *gen}, {"#acc tokens", *acc}}) {
      if (const std::string why = implausible(double(v), Magnitude::kTokenCount); !why.empty()) throw Error(at, key, why);
    }
    const std::size_t from = line.find("statistics ") + 11, colon = line.find(':', from);
    const std::string name(trim(line.substr(from, colon - from)));
    const DraftCounts before = totals.count(name) ? totals.at(name) : DraftCounts{};
    request.drafts += *drafts - before.drafts;
    request.generated += *gen - before.generated;
    request.accepted += *acc - before.accepted;
    for (const std::int64_t sum : {request.drafts, request.generated, request.accepted}) {
      if (std::abs(double(sum)) > limit) {
        throw Error(at, "statistics", "the statistics lines grow by more than a token count holds (2^53)");
      }
    }
    now[name] = {*drafts, *gen, *acc};
  }
  return request;
}

std::optional<LogRecord> parse_llama_server(const std::vector<std::string>& lines, std::size_t i,
                                            const std::string& file, LlamaServerTotals& totals) {
  const std::size_t marker = lines[i].find(kLlamaServerMarker);
  if (marker == std::string::npos) return std::nullopt;
  const SourceLocation where{file, static_cast<int>(i) + 1, 0};
  LineParser p(lines[i], where, "llama-server draft acceptance rate");
  Cursor c(p, marker + kLlamaServerMarker.size());
  LogRecord r;
  r.format = LogFormat::kLlamaServer;
  r.where = where;
  const int rate_col = c.next_col();
  const double rate = c.number("draft acceptance rate");
  c.literal("(");
  const int acc_col = c.next_col();
  const double accepted = c.number("accepted");
  c.literal("accepted");
  c.literal("/");
  const double generated = c.number("generated");
  c.literal("generated");
  c.literal(")");
  if (!c.at_end()) p.fail(c.col(), "", "expected the end of the line, got " + c.rest());
  if (generated > plausible_range(Magnitude::kTokenCount).max) {
    p.fail(acc_col, "generated", implausible(generated, Magnitude::kTokenCount));
  }
  if (accepted != std::floor(accepted) || generated != std::floor(generated) || accepted > generated) {
    p.fail(acc_col, "accepted", "expected whole counts with accepted <= generated, got " + fmt(accepted) + " / " +
                                    fmt(generated));
  }
  if (generated > 0 && std::abs(rate - accepted / generated) > kFiveDecimals) {
    p.fail(rate_col, "draft acceptance rate", "expected accepted/generated = " + fmt(accepted / generated) +
                                                  ", got " + fmt(rate));
  }
  LlamaServerTotals now = totals;
  std::size_t k = i + 1;
  const DraftCounts request = statistics_growth(lines, k, file, totals, now);  // this request's drafts
  if (k == i + 1) {
    p.fail(0, "", "no 'statistics NAME: ... #gen drafts = N ...' line after it, so no draft count (llama-server "
                  "prints one per draft implementation after this line; keep them in the log, or give the "
                  "measured tokens per cycle with --accept-length)");
  }
  if (request.generated != std::int64_t(generated) || request.accepted != std::int64_t(accepted)) {
    p.fail(acc_col, "", "the statistics lines after it grew by " + std::to_string(request.accepted) + " accepted / " +
                            std::to_string(request.generated) + " generated tokens, not this request's " +
                            fmt(accepted) + " / " + fmt(generated) +
                            " (they count since the server started: keep the log from its start)");
  }
  totals = std::move(now);
  r.logged_accept_rate = rate;
  r.accepted_tokens = static_cast<std::int64_t>(accepted);
  r.drafted_tokens = static_cast<std::int64_t>(generated);
  r.cycles = double(request.drafts);
  r.cycles_are_counts = true;
  r.tokens_per_cycle = request.drafts > 0 ? 1.0 + accepted / double(request.drafts) : 1.0;
  if (const std::string why = implausible(r.tokens_per_cycle, Magnitude::kTokensPerCycle); !why.empty()) {
    p.fail(acc_col, "accepted", "tokens per cycle 1 + accepted/drafts: " + why);
  }
  return r;
}

// ---- llama-speculative's end summary ----------------------------------------------------------

// "key = value" with the key at the start of the line (after blanks): the value's text and column.
std::optional<Piece> summary_value(std::string_view line, std::string_view key) {
  std::size_t shift = 0;
  const std::string_view t = trim(line, &shift);
  if (!t.starts_with(key)) return std::nullopt;
  std::size_t pos = key.size();
  while (pos < t.size() && t[pos] == ' ') ++pos;
  if (pos >= t.size() || t[pos] != '=') return std::nullopt;
  ++pos;
  while (pos < t.size() && t[pos] == ' ') ++pos;
  return Piece{t.substr(pos), static_cast<int>(shift + pos) + 1};
}

// The summary block speculative.cpp prints at the end of a run, found by its `n_drafted` line:
//   n_draft   = 8 / n_predict = 129 / n_drafted = 132 / n_accept  = 47 / accept    = 35.606%
// Every verify cycle emits its accepted drafts plus one target token, so cycles = n_predict -
// n_accept and tau = n_predict / cycles; the drafts' count per cycle is n_drafted / cycles.
std::optional<LogRecord> parse_llama_speculative(const std::vector<std::string>& lines, std::size_t i,
                                                 const std::string& file) {
  if (!summary_value(lines[i], "n_drafted")) return std::nullopt;
  const SourceLocation where{file, static_cast<int>(i) + 1, 0};
  LineParser p(lines[i], where, "llama-speculative summary");
  // The block's other lines sit within a few lines of n_drafted.
  const auto find = [&](std::string_view key) -> std::pair<Piece, int> {
    const std::size_t from = i >= 3 ? i - 3 : 0, to = std::min(lines.size(), i + 4);
    for (std::size_t k = from; k < to; ++k) {
      if (auto v = summary_value(lines[k], key)) return {*v, static_cast<int>(k) + 1};
    }
    p.fail(0, "", "missing '" + std::string(key) + " = ...' next to n_drafted (the summary prints n_draft, "
                  "n_predict, n_drafted, n_accept and accept on consecutive lines)");
  };
  const auto count_at = [&](std::string_view key) {
    const auto [piece, line_no] = find(key);
    LineParser at(lines[static_cast<std::size_t>(line_no) - 1], SourceLocation{file, line_no, 0},
                  "llama-speculative summary");
    Field f;
    f.key = std::string(key);
    return at.count(f, piece);
  };
  LogRecord r;
  r.format = LogFormat::kLlamaSpeculative;
  r.where = where;
  const std::int64_t k = count_at("n_draft");
  const std::int64_t predicted = count_at("n_predict");
  const std::int64_t drafted = count_at("n_drafted");
  const std::int64_t accepted = count_at("n_accept");
  const auto [rate_piece, rate_line] = find("accept");
  LineParser rate_parser(lines[static_cast<std::size_t>(rate_line) - 1], SourceLocation{file, rate_line, 0},
                         "llama-speculative summary");
  Field rate_field;
  rate_field.key = "accept";
  const double percent = rate_parser.number(rate_field, rate_piece, "%");
  if (percent > 100.0) rate_parser.fail(rate_piece.column, "accept", "expected a percentage in [0, 100], got '" + std::string(rate_piece.text) + "'");
  if (accepted > drafted) p.fail(0, "n_accept", "n_accept = " + std::to_string(accepted) + " exceeds n_drafted = " + std::to_string(drafted));
  if (accepted >= predicted) {
    p.fail(0, "n_accept", "n_accept = " + std::to_string(accepted) + " must be below n_predict = " +
                              std::to_string(predicted) + " (every cycle emits one target token)");
  }
  if (drafted > 0 && std::abs(percent / 100.0 - double(accepted) / double(drafted)) > kThreeDecimals / 100.0 + 1e-9) {
    rate_parser.fail(rate_piece.column, "accept",
                     "expected n_accept/n_drafted = " + fmt(100.0 * double(accepted) / double(drafted)) + "%, got '" +
                         std::string(rate_piece.text) + "'");
  }
  r.num_draft_positions = static_cast<int>(k);
  r.accepted_tokens = accepted;
  r.drafted_tokens = drafted;
  r.logged_accept_rate = percent / 100.0;
  r.cycles = double(predicted - accepted);
  r.cycles_are_counts = true;
  r.tokens_per_cycle = double(predicted) / r.cycles;
  return r;
}

// ---- Prometheus /metrics text ------------------------------------------------------------------

constexpr std::string_view kVllmPrefix = "vllm:spec_decode_";
constexpr std::string_view kSglangPrefix = "sglang:spec_accept";

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0.0;
  int line = 0;
  int value_column = 0;
};

// One exposition line `name{k="v",...} value [timestamp]`.
Sample read_sample(const std::string& line, int line_no, const std::string& file) {
  const SourceLocation where{file, line_no, 0};
  LineParser p(line, where, "Prometheus sample");
  Sample s;
  s.line = line_no;
  std::size_t pos = line.find_first_of("{ ");
  if (pos == std::string::npos) p.fail(static_cast<int>(line.size()) + 1, "", "expected a value after the metric name");
  s.name = line.substr(0, pos);
  if (line[pos] == '{') {
    const std::size_t close = line.find('}', pos);
    if (close == std::string::npos) p.fail(static_cast<int>(pos) + 1, s.name, "label set without a closing '}'");
    std::size_t at = pos + 1;
    while (at < close) {
      const std::size_t eq = line.find('=', at);
      if (eq == std::string::npos || eq > close || eq + 1 >= line.size() || line[eq + 1] != '"') {
        p.fail(static_cast<int>(at) + 1, s.name, "expected label=\"value\" in the label set");
      }
      const std::size_t end = line.find('"', eq + 2);
      if (end == std::string::npos || end > close) p.fail(static_cast<int>(eq) + 2, s.name, "unterminated label value");
      std::string key(trim(std::string_view(line).substr(at, eq - at)));
      s.labels[key] = line.substr(eq + 2, end - eq - 2);
      at = end + 1;
      while (at < close && (line[at] == ',' || line[at] == ' ')) ++at;
    }
    pos = close + 1;
  }
  std::size_t shift = 0;
  std::string_view rest = trim(std::string_view(line).substr(pos), &shift);
  rest = rest.substr(0, rest.find(' '));  // an optional timestamp follows
  s.value_column = static_cast<int>(pos + shift) + 1;
  Field f;
  f.key = s.name;
  s.value = p.number(f, Piece{rest, s.value_column});
  return s;
}

std::string label_text(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [k, v] : labels) out += (out.empty() ? "" : ",") + k + "=\"" + v + "\"";
  return "{" + out + "}";
}

// The samples of the metrics specsim reads: vLLM's spec_decode counters, SGLang's accept length
// and running requests. Creation timestamps (`_created`) are not counts and are left out.
std::vector<Sample> read_metric_samples(const std::vector<std::string>& lines, const std::string& file) {
  std::vector<Sample> samples;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::size_t shift = 0;
    const std::string_view t = trim(lines[i], &shift);
    if (t.empty() || t.front() == '#') continue;
    if (!t.starts_with(kVllmPrefix) && !t.starts_with(kSglangPrefix) && !t.starts_with("sglang:num_running_reqs")) continue;
    if (t.find("_created") != std::string_view::npos) continue;
    samples.push_back(read_sample(std::string(t), static_cast<int>(i) + 1, file));
  }
  return samples;
}

// One model per file: pooling two models' acceptance would mean nothing.
void require_one_model(const std::vector<Sample>& samples, const std::string& file) {
  std::map<std::string, int> models;
  for (const auto& s : samples) {
    if (auto it = s.labels.find("model_name"); it != s.labels.end()) models.emplace(it->second, s.line);
  }
  if (models.size() <= 1) return;
  std::string list;
  for (const auto& [m, line] : models) list += (list.empty() ? "" : ", ") + ("'" + m + "' (line " + std::to_string(line) + ")");
  throw Error({file, 0, 0}, "model_name", "the scrape holds metrics of " + std::to_string(models.size()) + " models: " + list +
                                              "; split it into one file per model");
}

// Series key: the label set without `position`.
std::string series_of(const Sample& s) {
  auto l = s.labels;
  l.erase("position");
  return label_text(l);
}

// A vLLM counter's first and last sample in one series (one scrape: last only, first = 0).
struct Counter {
  const Sample* first = nullptr;
  const Sample* last = nullptr;
  int scrapes = 0;

  // What the counter counted: the difference of two scrapes, or the total of one.
  [[nodiscard]] double count() const { return scrapes == 2 ? last->value - first->value : last->value; }
};

// Counters by name, with `#position` appended to per-position ones.
using SeriesCounters = std::map<std::string, Counter>;

// vLLM's counters grouped by series, each checked: whole, plausible, never falling, at most two
// scrapes.
std::map<std::string, SeriesCounters> vllm_counters(const std::vector<Sample>& samples, const std::string& file) {
  std::map<std::string, SeriesCounters> series;
  for (const auto& s : samples) {
    if (!s.name.starts_with(kVllmPrefix)) continue;
    std::string key = s.name;
    if (auto it = s.labels.find("position"); it != s.labels.end()) key += "#" + it->second;
    Counter& c = series[series_of(s)][key];
    if (c.last && s.value < c.last->value) {
      throw Error({file, s.line, s.value_column}, s.name,
                  "counter fell from " + fmt(c.last->value) + " (line " + std::to_string(c.last->line) + ") to " +
                      fmt(s.value) + ": the server restarted between scrapes; use scrapes of one server run");
    }
    if (!c.first) c.first = &s;
    c.last = &s;
    ++c.scrapes;
    if (c.scrapes > 2) {
      throw Error({file, s.line, 0}, s.name, "a third sample of the same counter: give one scrape (totals) or two "
                                             "(before and after, whose difference is used)");
    }
    if (s.value != std::floor(s.value)) {
      throw Error({file, s.line, s.value_column}, s.name, "expected a whole count, got " + fmt(s.value));
    }
    if (const std::string why = implausible(s.value, Magnitude::kTokenCount); !why.empty()) {
      throw Error({file, s.line, s.value_column}, s.name, why);
    }
  }
  return series;
}

// A counter's count and its last sample (for errors that point at it).
struct Count {
  double value = 0.0;
  const Sample* at = nullptr;
};

Count required_count(const SeriesCounters& counters, const std::string& series, const std::string& name,
                     const std::string& file) {
  const auto it = counters.find(std::string(kVllmPrefix) + name);
  if (it == counters.end()) {
    throw Error({file, 0, 0}, std::string(kVllmPrefix) + name,
                "missing for " + series + ": a scrape needs vllm:spec_decode_num_drafts_total, "
                "_num_draft_tokens_total and _num_accepted_tokens_total");
  }
  return {it->second.count(), it->second.last};
}

// Per position j (labels position="0", "1", ...): the accepted count, positions 0, 1, ... in order,
// each at most the number of drafts.
std::vector<Count> position_counts(const SeriesCounters& counters, double drafts, const std::string& file) {
  std::map<int, Count> per_pos;
  for (const auto& [key, c] : counters) {
    const auto hash = key.find('#');
    if (hash == std::string::npos) continue;
    const std::string pos = key.substr(hash + 1);
    if (pos.empty() || pos.size() > 3 || pos.find_first_not_of("0123456789") != std::string::npos) {
      throw Error({file, c.last->line, 0}, c.last->name, "position=\"" + pos + "\": expected 0, 1, 2, ...");
    }
    per_pos[std::stoi(pos)] = {c.count(), c.last};
  }
  std::vector<Count> out;
  for (const auto& [j, v] : per_pos) {
    const int expect = static_cast<int>(out.size());
    if (j != expect) {
      throw Error({file, v.at->line, 0}, v.at->name,
                  "position " + std::to_string(j) + " without position " + std::to_string(expect));
    }
    if (v.value > drafts) {
      throw Error({file, v.at->line, v.at->value_column}, v.at->name,
                  "position " + std::to_string(j) + " accepted " + fmt(v.value) + " times in " + fmt(drafts) + " drafts");
    }
    // A chain accepts position j only after j - 1: a count that rises with position is not vLLM's.
    if (!out.empty() && v.value > out.back().value) {
      throw Error({file, v.at->line, v.at->value_column}, v.at->name,
                  "position " + std::to_string(j) + " accepted " + fmt(v.value) + " times, more than position " +
                      std::to_string(j - 1) + " (" + fmt(out.back().value) +
                      "): a chain accepts a position only after the one before it");
    }
    out.push_back(v);
  }
  return out;
}

// One series' counters as a record: tau = 1 + accepted / drafts, a_j = count_j / drafts.
LogRecord vllm_record(const std::string& series, const SeriesCounters& counters, const std::string& file) {
  const Count drafts = required_count(counters, series, "num_drafts_total", file);
  const Count drafted = required_count(counters, series, "num_draft_tokens_total", file);
  const Count accepted = required_count(counters, series, "num_accepted_tokens_total", file);
  const auto fail_at = [&](const Count& c, const std::string& what) {
    throw Error({file, c.at->line, c.at->value_column}, c.at->name, what);
  };
  LogRecord r;
  r.format = LogFormat::kVllmMetrics;
  r.where = {file, drafts.at->line, 0};
  r.cumulative = counters.begin()->second.scrapes == 1;
  if (accepted.value > drafted.value) {
    fail_at(accepted, fmt(accepted.value) + " accepted exceeds " + fmt(drafted.value) + " draft tokens (line " +
                          std::to_string(drafted.at->line) + ")");
  }
  if (drafted.value < drafts.value) {
    fail_at(drafted, fmt(drafted.value) + " draft tokens but " + fmt(drafts.value) + " drafts (line " +
                         std::to_string(drafts.at->line) + "): every draft proposes at least one token");
  }
  double sum = 0.0;
  const std::vector<Count> positions = position_counts(counters, drafts.value, file);
  for (const Count& v : positions) {
    sum += v.value;
    r.unconditional_rates.push_back(drafts.value > 0 ? v.value / drafts.value : 0.0);
  }
  // vLLM counts each accepted token at its position, so the positions add up to the total.
  if (!positions.empty() && sum != accepted.value) {
    fail_at(accepted, "the per-position counters add up to " + fmt(sum) + ", not " + fmt(accepted.value));
  }
  if (!r.unconditional_rates.empty()) r.num_draft_positions = static_cast<int>(r.unconditional_rates.size());
  r.accepted_tokens = static_cast<std::int64_t>(accepted.value);
  r.drafted_tokens = static_cast<std::int64_t>(drafted.value);
  r.cycles = drafts.value;
  r.cycles_are_counts = true;
  r.tokens_per_cycle = drafts.value > 0 ? 1.0 + accepted.value / drafts.value : 1.0;
  if (const std::string why = implausible(r.tokens_per_cycle, Magnitude::kTokensPerCycle); !why.empty()) {
    fail_at(accepted, why);
  }
  return r;
}

std::vector<LogRecord> vllm_records(const std::vector<Sample>& samples, const std::string& file) {
  std::vector<LogRecord> out;
  for (const auto& [series, counters] : vllm_counters(samples, file)) out.push_back(vllm_record(series, counters, file));
  return out;
}

// SGLang gauges: every sample of spec_accept_length is one interval's tau, weighted by the latest
// num_running_reqs of its series before it.
std::vector<LogRecord> sglang_records(const std::vector<Sample>& samples, const std::string& file) {
  std::vector<LogRecord> out;
  std::map<std::string, const Sample*> running;  // series -> latest num_running_reqs before it
  for (const auto& s : samples) {
    if (s.name == "sglang:num_running_reqs") {
      // A request count weights the intervals and is kept as an int: whole and plausible first.
      if (s.value != std::floor(s.value)) {
        throw Error({file, s.line, s.value_column}, s.name, "expected a whole number of requests, got " + fmt(s.value));
      }
      if (const std::string why = implausible(s.value, Magnitude::kCount); !why.empty()) {
        throw Error({file, s.line, s.value_column}, s.name, why);
      }
      running[series_of(s)] = &s;
      continue;
    }
    if (s.name == "sglang:spec_accept_rate") {
      if (s.value > 1.0) throw Error({file, s.line, s.value_column}, s.name, "expected a rate in [0, 1], got " + fmt(s.value));
      continue;
    }
    if (s.name != "sglang:spec_accept_length") continue;
    if (s.value < 1.0) {
      throw Error({file, s.line, s.value_column}, s.name,
                  "expected a value >= 1 (the accept length counts the bonus token), got " + fmt(s.value));
    }
    if (const std::string why = implausible(s.value, Magnitude::kTokensPerCycle); !why.empty()) {
      throw Error({file, s.line, s.value_column}, s.name, why);
    }
    LogRecord r;
    r.format = LogFormat::kSglangMetrics;
    r.where = {file, s.line, 0};
    r.tokens_per_cycle = s.value;
    const auto it = running.find(series_of(s));
    r.cycles = it != running.end() && it->second->value > 0 ? it->second->value : 1.0;
    if (it != running.end()) r.running_requests = static_cast<int>(it->second->value);
    r.cycles_are_counts = false;
    out.push_back(std::move(r));
  }
  if (out.empty()) {
    throw Error({file, 0, 0}, "sglang:spec_accept_length",
                "the scrape has SGLang speculative metrics but no sglang:spec_accept_length sample");
  }
  return out;
}

// A Prometheus /metrics scrape: vLLM's counters (one record per series) or SGLang's gauges (one
// record per accept-length sample); no record when the file holds neither.
std::vector<LogRecord> parse_prometheus(const std::vector<std::string>& lines, const std::string& file) {
  const std::vector<Sample> samples = read_metric_samples(lines, file);
  if (samples.empty()) return {};
  require_one_model(samples, file);
  const bool vllm = std::any_of(samples.begin(), samples.end(), [](const Sample& s) { return s.name.starts_with(kVllmPrefix); });
  return vllm ? vllm_records(samples, file) : sglang_records(samples, file);
}

}  // namespace

std::string_view to_string(LogFormat format) {
  switch (format) {
    case LogFormat::kSglang: return "sglang";
    case LogFormat::kVllmV1: return "vllm-v1";
    case LogFormat::kVllmV0: return "vllm-v0";
    case LogFormat::kLlamaCpp: return "llama.cpp";
    case LogFormat::kLlamaServer: return "llama-server";
    case LogFormat::kLlamaSpeculative: return "llama-speculative";
    case LogFormat::kVllmMetrics: return "vllm-metrics";
    case LogFormat::kSglangMetrics: return "sglang-metrics";
  }
  return "?";
}

std::optional<LogRecord> parse_engine_log_line(std::string_view line, const SourceLocation& where) {
  if (line.find(kVllmV1Marker) != std::string_view::npos) return parse_vllm_v1(line, where);
  if (line.find(kVllmV0Marker) != std::string_view::npos) return parse_vllm_v0(line, where);
  if (line.find(kLlamaMarker) != std::string_view::npos) return parse_llama_cpp(line, where);
  // Decode lines without "accept len" come from servers running without speculation.
  const auto sg = line.find(kSglangMarker);
  if (sg != std::string_view::npos && line.find(kSglangSpecKey, sg) != std::string_view::npos) {
    return parse_sglang(line, where);
  }
  return std::nullopt;
}

std::vector<LogRecord> parse_engine_log(std::istream& in, const std::string& file_name) {
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  std::vector<LogRecord> out = parse_prometheus(lines, file_name);
  const bool metrics_file = !out.empty();
  LlamaServerTotals llama_server;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int number = static_cast<int>(i) + 1;
    if (metrics_file) break;
    if (auto r = parse_llama_speculative(lines, i, file_name)) {
      out.push_back(std::move(*r));
      continue;
    }
    if (auto r = parse_llama_server(lines, i, file_name, llama_server)) {
      out.push_back(std::move(*r));
      continue;
    }
    if (auto r = parse_engine_log_line(lines[i], SourceLocation{file_name, number, 0})) {
      out.push_back(std::move(*r));
    }
  }
  return out;
}

std::vector<LogRecord> parse_engine_log_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(SourceLocation{path, 0, 0}, "", "cannot open engine log for reading");
  auto records = parse_engine_log(in, path);
  if (records.empty()) {
    throw Error(SourceLocation{path, 0, 0}, "",
                "no speculative-decoding metrics line found; expected SGLang 'Decode batch. ... "
                "accept len: X', vLLM 'SpecDecoding metrics: ...' or 'Speculative metrics: ...', "
                "llama.cpp 'draft acceptance = ...' or llama-server's 'draft acceptance rate = ...', llama-speculative's 'n_drafted = ...' summary, or a "
                "Prometheus /metrics scrape with vllm:spec_decode_* counters or sglang:spec_accept_length");
  }
  return records;
}

ConfidenceInterval clopper_pearson(std::int64_t successes, std::int64_t trials, double confidence) {
  check_confidence(confidence);
  if (trials < 0 || successes < 0 || successes > trials) {
    throw Error("binomial interval: " + std::to_string(successes) + " successes of " +
                std::to_string(trials) + " trials: need 0 <= successes <= trials");
  }
  ConfidenceInterval ci{0.0, 1.0, confidence};
  if (trials == 0) return ci;
  // Clopper & Pearson 1934: the bounds are Beta quantiles,
  // low = B^-1(alpha/2; s, n-s+1), high = B^-1(1-alpha/2; s+1, n-s).
  const double tail = (1.0 - confidence) / 2.0;
  const auto s = static_cast<double>(successes), n = static_cast<double>(trials);
  if (successes > 0) ci.low = boost::math::quantile(boost::math::beta_distribution<>(s, n - s + 1), tail);
  if (successes < trials) {
    ci.high = boost::math::quantile(boost::math::beta_distribution<>(s + 1, n - s), 1.0 - tail);
  }
  return ci;
}

namespace {

// The records that count: V0 counters accumulate, so within a run of non-decreasing counters only
// the last line counts; a drop (server restart) starts a new run.
// The run between two single-scrape /metrics files of one server: the later totals less the
// earlier, per position too (the counts a_j x drafts); a counter that fell means a restart.
LogRecord scrape_difference(const LogRecord& before, const LogRecord& after) {
  const auto fail = [&](const std::string& what) {
    throw Error(after.where, "", what + " between the scrapes " + before.where.file + " and " + after.where.file);
  };
  if (after.cycles < before.cycles || *after.accepted_tokens < *before.accepted_tokens ||
      *after.drafted_tokens < *before.drafted_tokens) {
    fail("vllm:spec_decode_* counters fell: the server restarted; give two scrapes of one server run");
  }
  LogRecord d = after;
  d.cumulative = false;
  d.cycles = after.cycles - before.cycles;
  d.accepted_tokens = *after.accepted_tokens - *before.accepted_tokens;
  d.drafted_tokens = *after.drafted_tokens - *before.drafted_tokens;
  if (!(d.cycles > 0)) fail("no draft was proposed");
  d.tokens_per_cycle = 1.0 + double(*d.accepted_tokens) / d.cycles;
  d.unconditional_rates.clear();
  if (before.unconditional_rates.size() == after.unconditional_rates.size()) {
    for (std::size_t j = 0; j < after.unconditional_rates.size(); ++j) {
      const double now = std::round(after.unconditional_rates[j] * after.cycles);
      const double then = std::round(before.unconditional_rates[j] * before.cycles);
      if (now < then) fail("the position " + std::to_string(j) + " counter fell");
      d.unconditional_rates.push_back((now - then) / d.cycles);
    }
  }
  d.num_draft_positions = d.unconditional_rates.empty() ? std::nullopt : std::optional<int>(int(d.unconditional_rates.size()));
  return d;
}

// Single-scrape vLLM /metrics records of two or more files are scrapes of one server taken in the
// order given: consecutive files are differenced (their series in file order), never pooled, which
// would count the server's whole life once per scrape. Returns the differences; `used` marks the
// records they replace.
std::vector<LogRecord> difference_scrapes(std::span<const LogRecord> records, std::set<const LogRecord*>& used) {
  std::vector<std::string> files;
  std::map<std::string, std::vector<const LogRecord*>> by_file;
  for (const auto& r : records) {
    if (r.format != LogFormat::kVllmMetrics || !r.cumulative) continue;
    if (!by_file.count(r.where.file)) files.push_back(r.where.file);
    by_file[r.where.file].push_back(&r);
  }
  std::vector<LogRecord> out;
  if (files.size() < 2) return out;
  for (std::size_t f = 1; f < files.size(); ++f) {
    const auto& a = by_file[files[f - 1]];
    const auto& b = by_file[files[f]];
    if (a.size() != b.size()) {
      throw Error({files[f], 0, 0}, "", "holds " + std::to_string(b.size()) + " speculative series, " + files[f - 1] +
                                            " " + std::to_string(a.size()) + ": two scrapes of one server hold the same");
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      out.push_back(scrape_difference(*a[i], *b[i]));
      used.insert(a[i]);
      used.insert(b[i]);
    }
  }
  return out;
}

std::vector<const LogRecord*> records_to_pool(std::span<const LogRecord> records, std::span<const LogRecord> differences,
                                              const std::set<const LogRecord*>& differenced) {
  std::vector<const LogRecord*> pool;
  for (const auto& d : differences) pool.push_back(&d);
  std::map<std::string, const LogRecord*> open_run;  // per file
  for (const auto& r : records) {
    if (differenced.count(&r)) continue;
    if (r.format != LogFormat::kVllmV0) {
      pool.push_back(&r);
      continue;
    }
    const LogRecord*& last = open_run[r.where.file];
    if (last && (r.drafted_tokens < last->drafted_tokens || r.accepted_tokens < last->accepted_tokens)) {
      pool.push_back(last);
    }
    last = &r;
  }
  for (const auto& [file, last] : open_run) {
    if (last) pool.push_back(last);
  }
  return pool;
}

// Formats, cycles and tau weighted by cycles.
void pool_tokens_per_cycle(const std::vector<const LogRecord*>& pool, AcceptanceSummary& s) {
  s.num_records = static_cast<int>(pool.size());
  s.cycles_are_counts = true;
  double weighted_tau = 0.0;
  for (const LogRecord* r : pool) {
    if (std::find(s.formats.begin(), s.formats.end(), r->format) == s.formats.end()) {
      s.formats.push_back(r->format);
    }
    s.cycles += r->cycles;
    weighted_tau += r->cycles * r->tokens_per_cycle;
    s.cycles_are_counts = s.cycles_are_counts && r->cycles_are_counts;
  }
  if (!(s.cycles > 0.0)) {
    throw Error("acceptance summary: the " + std::to_string(pool.size()) +
                " metrics lines cover no verify cycles (no drafts or no running requests)");
  }
  s.tokens_per_cycle = weighted_tau / s.cycles;
}

bool has_position_rates(const LogRecord* r) { return !r->unconditional_rates.empty() && r->cycles > 0.0; }

// Per-position rates over lines that carry them, for the positions they all have, weighted by
// cycles. Returns the number of positions pooled.
std::size_t pool_position_rates(const std::vector<const LogRecord*>& pool, AcceptanceSummary& s) {
  std::size_t positions = 0, most_positions = 0;
  double rate_cycles = 0.0;
  for (const LogRecord* r : pool) {
    if (!has_position_rates(r)) continue;
    positions = rate_cycles == 0.0 ? r->unconditional_rates.size()
                                   : std::min(positions, r->unconditional_rates.size());
    most_positions = std::max(most_positions, r->unconditional_rates.size());
    rate_cycles += r->cycles;
  }
  if (most_positions > positions) {
    s.warnings.push_back("records log " + std::to_string(positions) + " to " + std::to_string(most_positions) +
                         " per-position rates (different draft lengths pooled); only the first " +
                         std::to_string(positions) + ", which every record has, are pooled; positions " +
                         std::to_string(positions + 1) + "-" + std::to_string(most_positions) + " are left out");
  }
  if (positions == 0) return 0;
  s.unconditional_rates.assign(positions, 0.0);
  for (const LogRecord* r : pool) {
    if (!has_position_rates(r)) continue;
    for (std::size_t j = 0; j < positions; ++j) {
      s.unconditional_rates[j] += r->cycles * r->unconditional_rates[j] / rate_cycles;
    }
  }
  // Pooled a_j can exceed a_{j-1} only by float rounding; clamp before converting.
  for (std::size_t j = 1; j < positions; ++j) {
    s.unconditional_rates[j] = std::min(s.unconditional_rates[j], s.unconditional_rates[j - 1]);
  }
  s.conditional_rates = conditional_from_unconditional(s.unconditional_rates);
  return positions;
}

// Total generated tokens over total time, never a mean of per-line rates.
std::optional<double> pooled_throughput(const std::vector<const LogRecord*>& pool) {
  double tokens = 0.0, time = 0.0;
  for (const LogRecord* r : pool) {
    if (!r->throughput_tokens_per_s || *r->throughput_tokens_per_s <= 0.0) continue;
    const double t = r->cycles * r->tokens_per_cycle;
    tokens += t;
    time += t / *r->throughput_tokens_per_s;
  }
  if (time > 0.0) return tokens / time;
  return std::nullopt;
}

// Clopper-Pearson intervals of the draft acceptance rate, tau and each position's rate, from the
// pooled counts; only when every pooled line has counts.
void add_count_intervals(const std::vector<const LogRecord*>& pool, std::size_t positions, double confidence,
                         AcceptanceSummary& s) {
  const bool all_counted = std::all_of(pool.begin(), pool.end(), [](const LogRecord* r) {
    return r->accepted_tokens && r->drafted_tokens && r->cycles_are_counts;
  });
  if (!all_counted) return;
  std::int64_t accepted = 0, drafted = 0;
  for (const LogRecord* r : pool) {
    accepted += *r->accepted_tokens;
    drafted += *r->drafted_tokens;
  }
  s.accepted_tokens = accepted;
  s.drafted_tokens = drafted;
  if (drafted > 0) {
    s.draft_accept_rate = double(accepted) / double(drafted);
    s.draft_accept_rate_interval = clopper_pearson(accepted, drafted, confidence);
    // tau = 1 + accepted / drafts = 1 + (drafted / drafts) * (accepted / drafted); drafted/drafts
    // is K for vLLM, a little less for llama.cpp (drafts cut short).
    const double per_draft = double(drafted) / s.cycles;
    s.tokens_per_cycle_interval =
        ConfidenceInterval{1.0 + per_draft * s.draft_accept_rate_interval->low,
                           1.0 + per_draft * s.draft_accept_rate_interval->high, confidence};
    s.notes.push_back(
        "intervals treat drafted tokens as independent trials; positions within one draft are "
        "correlated, so the true uncertainty is wider");
  }
  if (positions == 0) return;
  double drafts = 0.0;
  std::vector<double> hits(positions, 0.0);
  for (const LogRecord* r : pool) {
    if (!has_position_rates(r)) continue;
    drafts += r->cycles;
    for (std::size_t j = 0; j < positions; ++j) {
      hits[j] += std::round(r->unconditional_rates[j] * r->cycles);
    }
  }
  for (std::size_t j = 0; j < positions; ++j) {
    s.unconditional_rate_intervals.push_back(clopper_pearson(
        static_cast<std::int64_t>(hits[j]), static_cast<std::int64_t>(drafts), confidence));
  }
}

// What each pooled format's numbers mean, and a warning when engines are mixed.
void add_format_notes(const std::vector<const LogRecord*>& pool, AcceptanceSummary& s) {
  const auto has = [&](LogFormat f) {
    return std::find(s.formats.begin(), s.formats.end(), f) != s.formats.end();
  };
  if (has(LogFormat::kSglang)) {
    s.notes.push_back(
        "SGLang lines are weighted by #running-req (each line covers decode_log_interval batches); "
        "they carry no counts, so no interval");
  }
  if (has(LogFormat::kVllmV0)) {
    s.notes.push_back("vLLM V0 counters are cumulative: the last line of each run is used");
  }
  if (has(LogFormat::kLlamaCpp)) {
    s.notes.push_back("llama.cpp drafts estimated as accepted / sum of per-position rates");
  }
  if (has(LogFormat::kLlamaServer)) {
    s.notes.push_back("llama-server drafts counted by the statistics lines after each request's rate line");
  }
  if (has(LogFormat::kLlamaSpeculative)) {
    s.notes.push_back("llama-speculative cycles counted as n_predict - n_accept (each verify emits one target token)");
  }
  if (std::any_of(pool.begin(), pool.end(), [](const LogRecord* r) { return r->format == LogFormat::kVllmMetrics && r->cumulative; })) {
    s.notes.push_back("a single /metrics scrape gives totals since the server started; scrape before and after a run "
                      "to measure that run alone");
  }
  if (s.formats.size() > 1) {
    std::string list;
    for (const auto f : s.formats) list += (list.empty() ? "" : ", ") + std::string(to_string(f));
    s.warnings.push_back("lines from different engines pooled together (" + list +
                         "): their acceptance definitions and workloads may differ");
  }
}

}  // namespace

AcceptanceSummary summarize(std::span<const LogRecord> records, double confidence) {
  if (records.empty()) throw Error("acceptance summary: no metrics lines to pool");
  check_confidence(confidence);
  std::set<const LogRecord*> differenced;
  const std::vector<LogRecord> differences = difference_scrapes(records, differenced);
  const std::vector<const LogRecord*> pool = records_to_pool(records, differences, differenced);
  AcceptanceSummary s;
  s.confidence = confidence;
  if (!differences.empty()) {
    s.notes.push_back(std::to_string(differenced.size()) + " /metrics scrapes differenced in the order given (the "
                      "later totals less the earlier): the run between them");
  }
  pool_tokens_per_cycle(pool, s);
  const std::size_t positions = pool_position_rates(pool, s);
  s.throughput_tokens_per_s = pooled_throughput(pool);
  add_count_intervals(pool, positions, confidence, s);
  add_format_notes(pool, s);
  return s;
}

std::string position_mismatch_warning(std::size_t positions, int num_draft_steps) {
  const auto k = static_cast<std::size_t>(std::max(num_draft_steps, 0));
  if (positions == 0 || positions == k) return {};
  const std::string has = "the measured acceptance has " + std::to_string(positions) + " positions and the scenario drafts " +
                          std::to_string(k);
  if (positions > k) {
    return has + ": position" +
           (positions == k + 1 ? " " + std::to_string(positions) : "s " + std::to_string(k + 1) + "-" + std::to_string(positions)) +
           " not used (set speculation.num_steps=" + std::to_string(positions) + " to use them)";
  }
  return has + ": position" +
         (k == positions + 1 ? " " + std::to_string(k) + " repeats" : "s " + std::to_string(positions + 1) + "-" + std::to_string(k) + " repeat") +
         " position " + std::to_string(positions) + "'s conditional rate";
}

Acceptance acceptance_from_summary(const AcceptanceSummary& summary) {
  Acceptance a;
  if (!summary.unconditional_rates.empty()) {
    a.kind = UnconditionalChain{summary.unconditional_rates};
  } else {
    a.kind = MeasuredTau{summary.tokens_per_cycle};
  }
  return a;
}

}  // namespace specsim
