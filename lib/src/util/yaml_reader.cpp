#include "util/yaml_reader.hpp"

#include "specsim/suggest.hpp"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

namespace specsim::detail {

namespace {
SourceLocation from_mark(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return {file, 0, 0};
  return {file, mark.line + 1, mark.column + 1};
}

// Records where a document's first value starts; a document with none (a lone `---`, or only
// comments) holds nothing to lose.
class FirstValue : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> mark;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { see(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { see(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    see(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    see(m);
  }
  void OnMapEnd() override {}

 private:
  void see(const YAML::Mark& m) {
    if (!mark) mark = m;
  }
};

// Where a second document with content starts, if the text has one. yaml-cpp 0.7's LoadAll never
// returns on some damaged input (found by fuzz_interventions: `,null"` then bytes 0xff and 0x00),
// its parser handing out empty documents without moving on; so documents are walked one at a
// time and the walk stops after kMaxEmptyDocuments empty ones.
// Whether a line of `text` starts with a document marker (`---` or `...`; after a byte-order
// mark on the first line). A later document needs one, so text without any holds one document
// and the second walk below, which costs as much as the load, is skipped.
bool has_document_marker(const std::string& text) {
  const auto marker_at = [&](std::size_t at) {
    return text.compare(at, 3, "---") == 0 || text.compare(at, 3, "...") == 0;
  };
  if (marker_at(0) || (text.rfind("\xEF\xBB\xBF", 0) == 0 && marker_at(3))) return true;
  for (std::size_t at = text.find_first_of("\n\r"); at != std::string::npos; at = text.find_first_of("\n\r", at + 1)) {
    if (marker_at(at + 1)) return true;
  }
  return false;
}

std::optional<YAML::Mark> second_document(const std::string& text) {
  if (!has_document_marker(text)) return std::nullopt;
  constexpr int kMaxEmptyDocuments = 64;
  std::istringstream in(text);
  YAML::Parser parser(in);
  try {
    FirstValue first;
    if (!parser.HandleNextDocument(first)) return std::nullopt;
    for (int i = 0; i < kMaxEmptyDocuments; ++i) {
      FirstValue next;
      if (!parser.HandleNextDocument(next)) return std::nullopt;
      if (next.mark) return next.mark;
    }
  } catch (const YAML::Exception& e) {
    // YAML::Load read the first document, so the damage is in a later one: still a second document.
    return e.mark;
  }
  return std::nullopt;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}
}  // namespace

YamlReader::YamlReader(YAML::Node node, std::shared_ptr<const YamlOrigin> origin, std::string path)
    : node_(std::move(node)), origin_(std::move(origin)), path_(std::move(path)) {
  // yaml-cpp keeps both entries of a repeated key and answers lookups with the first, so the second
  // value would never be read or checked. Checked here, on every mapping a reader is opened on.
  if (!node_.IsMap()) return;
  std::set<std::string> keys;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) continue;
    if (!keys.insert(kv.first.Scalar()).second) {
      throw Error(from_mark(origin_->file, kv.first.Mark()), key_path(kv.first.Scalar()),
                  "duplicate key: the mapping already has '" + kv.first.Scalar() + "' (one value per key)");
    }
  }
}

YamlReader& YamlReader::operator=(const YamlReader& other) {
  if (this == &other) return *this;
  node_.reset(other.node_);  // rebind; node_ = other.node_ would overwrite the shared document
  origin_ = other.origin_;
  path_ = other.path_;
  seen_ = other.seen_;
  return *this;
}

YamlReader& YamlReader::operator=(YamlReader&& other) noexcept {
  if (this == &other) return *this;
  node_.reset(other.node_);
  origin_ = std::move(other.origin_);
  path_ = std::move(other.path_);
  seen_ = std::move(other.seen_);
  return *this;
}

namespace {

// The text of a file that is not a regular one (a pipe: /dev/stdin), kept after its first read: a
// pipe can be read once, and a command may load the same input twice (check reads its kind first).
std::mutex& pipe_texts_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::string>& pipe_texts() {
  static std::map<std::string, std::string> texts;
  return texts;
}

}  // namespace

namespace {
std::atomic<std::size_t> g_files_read{0};
}  // namespace

std::size_t YamlReader::files_read() { return g_files_read.load(); }

YamlReader YamlReader::load_file(const std::string& path) {
  ++g_files_read;
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  if (!regular) {
    const std::lock_guard<std::mutex> lock(pipe_texts_mutex());
    const auto it = pipe_texts().find(path);
    if (it != pipe_texts().end()) return load_string(it->second, path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error({path, 0, 0}, "", "cannot open file");
  // Read in blocks up to a cap: a device or pipe (/dev/zero) never grows memory without bound, and
  // a pipe (/dev/stdin) is read as a file is.
  std::string text;
  char block[65536];
  while (in.read(block, sizeof block) || in.gcount() > 0) {
    text.append(block, std::size_t(in.gcount()));
    if (text.size() > kMaxDataFileBytes) {
      throw Error({path, 0, 0}, "", "is larger than " + std::to_string(kMaxDataFileBytes >> 20) +
                                        " MiB: not a data file specsim reads (a device or a wrong path?)");
    }
  }
  if (in.bad()) throw Error({path, 0, 0}, "", "cannot read file");
  if (!regular) {
    const std::lock_guard<std::mutex> lock(pipe_texts_mutex());
    pipe_texts()[path] = text;
  }
  return load_string(text, path);
}

namespace {

// The first byte offset where `text` is not UTF-8 (RFC 3629: no overlongs, no surrogates, at most
// U+10FFFF), or npos. YAML and JSON files are UTF-8; a Latin-1 byte would otherwise pass the
// parser and break every JSON output that carries the text.
std::size_t invalid_utf8_at(const std::string& text) {
  const auto* b = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = b[i];
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the second byte's range
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (std::size_t k = 1; k < len; ++k) {
      const unsigned char x = b[i + k];
      if (x < (k == 1 ? lo : 0x80) || x > (k == 1 ? hi : 0xBF)) return i;
    }
    i += len;
  }
  return std::string::npos;
}

}  // namespace

YamlReader YamlReader::load_string(const std::string& text, const std::string& name) {
  if (const std::size_t at = invalid_utf8_at(text); at != std::string::npos) {
    const int line = 1 + int(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n'));
    const std::size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const int column = int(at - (line_start == std::string::npos || at == 0 ? 0 : line_start + 1)) + 1;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[at])));
    throw Error({name, line, column}, "", std::string("byte ") + byte +
                                              " is not UTF-8: data files are UTF-8 text (re-save it as UTF-8)");
  }
  auto origin = std::make_shared<YamlOrigin>();
  origin->file = name;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(from_mark(name, e.mark), "", "invalid YAML/JSON: " + e.msg);
  }
  // One document per file: a second one (after `---`) would otherwise be silently ignored.
  if (const auto second = second_document(text)) {
    throw Error(from_mark(name, *second), "",
                "a second YAML document starts here: a data file holds exactly one (remove the '---' "
                "and merge it, or move it to its own file)");
  }
  if (!root.IsMap()) throw Error({name, 1, 1}, "", "expected a mapping at the top of the document");
  return YamlReader(root, origin);
}

std::string YamlReader::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

SourceLocation YamlReader::location() const {
  if (auto it = origin_->patches.find(path_); it != origin_->patches.end()) return {it->second, 0, 0};
  return from_mark(origin_->file, node_.Mark());
}

SourceLocation YamlReader::location_of(const std::string& key) const {
  const std::string full = key_path(key);
  if (auto it = origin_->patches.find(full); it != origin_->patches.end()) return {it->second, 0, 0};
  if (node_.IsMap()) {
    for (const auto& kv : node_) {
      if (kv.first.Scalar() == key) {
        const YAML::Mark m = kv.second.Mark();
        if (!m.is_null() && m.line >= 0) return from_mark(origin_->file, m);
        return from_mark(origin_->file, kv.first.Mark());
      }
    }
  }
  return location();
}

namespace {
void add_places(const YAML::Node& node, const std::string& prefix, const std::string& file, Origins& out) {
  if (!node.IsMap()) return;
  for (const auto& kv : node) {
    const std::string key = prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
    const YAML::Mark m = kv.second.Mark();
    out.add(key, !m.is_null() && m.line >= 0 ? from_mark(file, m) : from_mark(file, kv.first.Mark()));
    add_places(kv.second, key, file, out);
  }
}
}  // namespace

Origins YamlReader::origins() const {
  Origins out(location());
  add_places(node_, path_, origin_->file, out);
  for (const auto& [key, patch] : origin_->patches) out.add_patch(key, patch);
  return out;
}

void YamlReader::fail(const std::string& key, const std::string& message) const {
  throw Error(location_of(key), key_path(key), message);
}

void YamlReader::fail_here(const std::string& message) const {
  throw Error(location(), path_, message);
}

bool YamlReader::has(const std::string& key) const {
  return node_.IsMap() && node_[key].IsDefined() && !node_[key].IsNull();
}


YAML::Node YamlReader::get(const std::string& key) const {
  if (!node_.IsMap()) fail_here("expected a mapping");
  YAML::Node v = node_[key];
  if (v.IsDefined() && v.IsNull()) fail(key, "required key has no value");
  if (!v.IsDefined()) {
    // A near miss is more likely a typo than an omission, but it may also be a valid key of its
    // own (`gpus` next to a missing `gpu`), so the message asks rather than calls it unknown.
    for (const auto& kv : node_) {
      const std::string other = kv.first.Scalar();
      if (other != key && edit_distance(other, key) <= 2) {
        throw Error(from_mark(origin_->file, kv.first.Mark()), key_path(key),
                    "required key is missing; is '" + other + "' here a misspelling of it?");
      }
    }
    throw Error(location(), key_path(key), "required key is missing");
  }
  return v;
}

std::string YamlReader::scalar(const std::string& key) const {
  YAML::Node v = get(key);
  if (!v.IsScalar()) fail(key, "expected a single value, not a list or mapping");
  return v.Scalar();
}

YamlReader YamlReader::child(const std::string& key) {
  seen_.insert(key);
  YAML::Node v = get(key);
  if (!v.IsMap()) fail(key, "expected a mapping");
  return YamlReader(v, origin_, key_path(key));
}

std::optional<YamlReader> YamlReader::optional_child(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return child(key);
}

std::vector<YamlReader> YamlReader::sequence(const std::string& key) {
  seen_.insert(key);
  YAML::Node v = get(key);
  if (!v.IsSequence()) fail(key, "expected a list");
  std::vector<YamlReader> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.emplace_back(v[i], origin_, key_path(key) + "[" + std::to_string(i) + "]");
  }
  return out;
}

std::string YamlReader::string(const std::string& key) {
  seen_.insert(key);
  return scalar(key);
}

std::string YamlReader::optional_string(const std::string& key, const std::string& fallback) {
  seen_.insert(key);
  return has(key) ? scalar(key) : fallback;
}

bool YamlReader::boolean(const std::string& key) {
  seen_.insert(key);
  const std::string s = scalar(key);
  if (s == "true") return true;
  if (s == "false") return false;
  fail(key, "expected true or false, got '" + s + "'");
}

bool YamlReader::optional_boolean(const std::string& key, bool fallback) {
  return has(key) ? boolean(key) : (seen_.insert(key), fallback);
}

namespace {
// The whole text as a base-10 integer; false for anything else ("1.5", "4x", "", out of range).
bool parse_plain_integer(const std::string& s, long long& out) {
  std::size_t used = 0;
  try {
    out = std::stoll(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used != 0 && used == s.size();
}
}  // namespace

long long YamlReader::integer(const std::string& key, long long min, long long max) {
  seen_.insert(key);
  const std::string s = scalar(key);
  long long v = 0;
  if (!parse_plain_integer(s, v)) fail(key, "expected an integer, got '" + s + "'");
  if (v < min || v > max) {
    fail(key, "= " + s + ": must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

long long YamlReader::optional_integer(const std::string& key, long long fallback, long long min,
                                       long long max) {
  return has(key) ? integer(key, min, max) : (seen_.insert(key), fallback);
}

namespace {
bool parse_plain_number(const std::string& s, double& out) {
  std::size_t used = 0;
  try {
    out = std::stod(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == s.size() && std::isfinite(out);
}

std::string show(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

double YamlReader::number(const std::string& key, double min, double max) {
  seen_.insert(key);
  const std::string s = scalar(key);
  double v = 0.0;
  if (!parse_plain_number(s, v)) fail(key, "expected a finite number, got '" + s + "'");
  if (v < min || v > max) fail(key, "= " + s + ": must be in [" + show(min) + ", " + show(max) + "]");
  return v;
}

double YamlReader::optional_number(const std::string& key, double fallback, double min, double max) {
  return has(key) ? number(key, min, max) : (seen_.insert(key), fallback);
}

double YamlReader::quantity(const std::string& key, units::Quantity q) {
  seen_.insert(key);
  const std::string s = scalar(key);
  try {
    return units::parse(s, q);
  } catch (const Error& e) {
    // Datasheets quote links in bits (Gb/s, Gbps); specsim reads bytes only (units.cpp).
    const bool bits = q == units::Quantity::kBandwidth &&
                      (s.find("b/s") != std::string::npos || s.find("bps") != std::string::npos);
    fail(key, e.message() + (bits ? " (bits are not read: divide by 8 and write bytes, e.g. 400Gb/s = 50GB/s)" : ""));
  }
}

std::optional<double> YamlReader::optional_quantity(const std::string& key, units::Quantity q) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return quantity(key, q);
}

std::vector<std::string> YamlReader::list_items(const std::string& key, const char* what) {
  seen_.insert(key);
  YAML::Node v = get(key);
  std::vector<std::string> items;
  if (v.IsSequence()) {
    for (const auto& item : v) {
      if (!item.IsScalar()) fail(key, std::string("expected ") + what);
      items.push_back(item.Scalar());
    }
  } else if (v.IsScalar()) {
    std::stringstream ss(v.Scalar());
    std::string part;
    while (std::getline(ss, part, ',')) items.push_back(part);
  } else {
    fail(key, std::string("expected ") + what);
  }
  for (std::string& s : items) {
    while (!s.empty() && s.front() == ' ') s.erase(s.begin());
    while (!s.empty() && s.back() == ' ') s.pop_back();
  }
  return items;
}

std::vector<std::string> YamlReader::optional_names(const std::string& key) {
  seen_.insert(key);
  if (!has(key) || get(key).IsNull()) return {};
  std::vector<std::string> names = list_items(key, "a list of names");
  if (names.size() == 1 && names.front().empty()) return {};
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) fail(key, "item " + std::to_string(i + 1) + ": empty name");
  }
  return names;
}

std::vector<std::string> YamlReader::texts(const std::string& key) {
  seen_.insert(key);
  YAML::Node v = get(key);
  if (!v.IsSequence()) fail(key, "expected a list of texts (one '- ...' line each)");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].IsScalar() || v[i].Scalar().empty()) {
      fail(key, "item " + std::to_string(i + 1) + ": expected a non-empty text");
    }
    out.push_back(v[i].Scalar());
  }
  return out;
}

std::vector<double> YamlReader::numbers(const std::string& key, double min, double max) {
  const std::vector<std::string> items = list_items(key, "a list of numbers");
  if (items.empty()) fail(key, "expected at least one number");
  std::vector<double> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    double d = 0.0;
    const std::string& s = items[i];
    if (!parse_plain_number(s, d)) {
      fail(key, "item " + std::to_string(i + 1) + ": expected a finite number, got '" + s + "'");
    }
    if (d < min || d > max) {
      fail(key, "item " + std::to_string(i + 1) + " = " + s + ": must be in [" + show(min) + ", " +
                    show(max) + "]");
    }
    out.push_back(d);
  }
  return out;
}

std::vector<long long> YamlReader::integers(const std::string& key, long long min, long long max) {
  const std::vector<std::string> items = list_items(key, "a list of integers");
  if (items.empty() || (items.size() == 1 && items.front().empty())) fail(key, "expected at least one integer");
  std::vector<long long> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    long long v = 0;
    const std::string& s = items[i];
    if (!parse_plain_integer(s, v)) {
      fail(key, "item " + std::to_string(i + 1) + ": expected an integer, got '" + s + "'");
    }
    if (v < min || v > max) {
      fail(key, "item " + std::to_string(i + 1) + " = " + s + ": must be in [" + std::to_string(min) + ", " +
                    std::to_string(max) + "]");
    }
    out.push_back(v);
  }
  return out;
}

std::string YamlReader::choice(const std::string& key, const std::vector<std::string>& allowed) {
  const std::string s = string(key);
  for (const auto& a : allowed) {
    if (a == s) return s;
  }
  fail(key, "'" + s + "' is not one of: " + join(allowed));
}

std::string YamlReader::optional_choice(const std::string& key, const std::vector<std::string>& allowed,
                                        const std::string& fallback) {
  return has(key) ? choice(key, allowed) : (seen_.insert(key), fallback);
}

std::optional<double> YamlReader::quantity_or_calibrate(const std::string& key, units::Quantity q) {
  seen_.insert(key);
  if (scalar(key) == "calibrate") return std::nullopt;
  return quantity(key, q);
}

std::optional<double> YamlReader::number_or_calibrate(const std::string& key, double min, double max) {
  seen_.insert(key);
  if (scalar(key) == "calibrate") return std::nullopt;
  return number(key, min, max);
}

void YamlReader::ignore(const std::string& key) { seen_.insert(key); }

void YamlReader::finish() const {
  if (!node_.IsMap()) return;
  for (const auto& kv : node_) {
    const std::string k = kv.first.Scalar();
    if (!seen_.count(k)) {
      const std::string full = key_path(k);
      SourceLocation where = from_mark(origin_->file, kv.first.Mark());
      if (auto it = origin_->patches.find(full); it != origin_->patches.end()) where = {it->second, 0, 0};
      std::vector<std::string> known(seen_.begin(), seen_.end());
      throw Error(where, full, "unknown key (known keys here: " + join(known) + ")");
    }
  }
}

void YamlReader::expect_header(const std::string& kind) {
  if (!has("schema_version")) {
    throw Error(location(), "schema_version", "required key is missing (add 'schema_version: 1')");
  }
  const long long version = integer("schema_version", 1, 1000);
  if (version != 1) fail("schema_version", "unsupported schema version " + std::to_string(version) + " (this specsim reads 1)");
  const std::string k = string("kind");
  if (k != kind) fail("kind", "expected '" + kind + "', got '" + k + "'");
}

namespace {

// The components of a dotted key path; an empty one is an error.
std::vector<std::string> key_components(const std::string& path, const std::string& where) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (part.empty()) throw Error({where, 0, 0}, path, "empty component in the key path");
    parts.push_back(part);
  }
  return parts;
}

// `key*=factor`: the key's current value times the factor, keeping its unit ("1.3us" *= 2 gives
// "2.6us").
YAML::Node scaled_value(YAML::Node root, const std::vector<std::string>& parts, const std::string& path,
                        const std::string& value, const std::string& where) {
  double factor = 0.0;
  std::size_t used = 0;
  try {
    factor = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || !std::isfinite(factor) || factor < 0) {
    throw Error({where, 0, 0}, path, "expected a non-negative factor after '*=', got '" + value + "'");
  }
  YAML::Node cur = root;
  for (const auto& p : parts) {
    if (!cur.IsMap() || !cur[p].IsDefined() || cur[p].IsNull()) {
      throw Error({where, 0, 0}, path, "cannot scale a key the scenario does not set");
    }
    cur.reset(cur[p]);
  }
  if (!cur.IsScalar()) throw Error({where, 0, 0}, path, "only a single value can be scaled");
  const std::string text = cur.Scalar();
  double number = 0.0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    throw Error({where, 0, 0}, path, "current value '" + text + "' is not a number");
  }
  std::ostringstream os;
  os.precision(12);
  os << number * factor << text.substr(used);
  return YAML::Node(os.str());
}

// `key=value`: the value read as YAML, a scalar or a list; anything else (or what does not parse)
// stays text. `key=` sets an empty text (clears an optional name such as comm.custom_profile); a
// number or a quantity read from it fails with the reader's own message.
YAML::Node given_value(const std::string& value) {
  YAML::Node parsed;
  if (value.empty()) {
    parsed = YAML::Node(std::string());
  } else try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception&) {
    parsed = YAML::Node(value);
  }
  if (!parsed.IsScalar() && !parsed.IsSequence()) parsed = YAML::Node(value);
  return parsed;
}

}  // namespace

void apply_patch(YAML::Node root, const std::string& assignment, YamlOrigin& origin) {
  const auto eq = assignment.find('=');
  const std::string where = "--set " + assignment;
  if (eq == std::string::npos || eq == 0) {
    throw Error({"--set", 0, 0}, assignment, "expected key=value (e.g. speculation.num_steps=2)");
  }
  const bool scale = assignment[eq - 1] == '*';
  const std::string path = assignment.substr(0, scale ? eq - 1 : eq);
  const std::string value = assignment.substr(eq + 1);
  if (value.empty() && scale) throw Error({where, 0, 0}, path, "the factor is empty");
  if (path.empty()) throw Error({where, 0, 0}, assignment, "expected key=value (e.g. speculation.num_steps=2)");
  const std::vector<std::string> parts = key_components(path, where);
  const YAML::Node parsed = scale ? scaled_value(root, parts, path, value, where) : given_value(value);
  // yaml-cpp's operator[] on a non-const node creates entries; walk with explicit checks instead.
  std::vector<YAML::Node> chain{root};
  std::vector<std::string> created;
  std::string prefix;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    prefix += (i ? "." : "") + parts[i];
    YAML::Node cur = chain.back();
    YAML::Node next = cur[parts[i]];
    if (!next.IsDefined() || next.IsNull()) {
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = cur[parts[i]];
      created.push_back(prefix);
    } else if (!next.IsMap()) {
      throw Error({where, 0, 0}, path, "'" + parts[i] + "' is not a mapping");
    }
    chain.push_back(next);
  }
  chain.back()[parts.back()] = parsed;
  origin.patches[path] = where;
  // Maps created on the way are reported as coming from this patch too.
  for (const auto& p : created) origin.patches.emplace(p, where);
}

}  // namespace specsim::detail
