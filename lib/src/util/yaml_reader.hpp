// The one wrapper around yaml-cpp. Every read says where it came from: file, line, column and the
// dotted key path; unknown keys are errors (they catch typos); values with a dimension must carry
// a unit. Private to the library: public headers never mention yaml-cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "specsim/error.hpp"
#include "specsim/origins.hpp"
#include "specsim/units.hpp"

namespace specsim::detail {

// Where the values of one document came from, shared by all readers of that document.
struct YamlOrigin {
  std::string file;
  std::map<std::string, std::string> patches;  // dotted path -> "--set path=value" text
};

// The largest data file read (YAML or JSON): the largest shipped file is well under 1 MiB.
inline constexpr std::size_t kMaxDataFileBytes = std::size_t(64) << 20;

class YamlReader {
 public:
  YamlReader(YAML::Node node, std::shared_ptr<const YamlOrigin> origin, std::string path = "");
  // A copy reads the same document, as a YAML::Node copy does. Assigning rebinds this reader to
  // the other's node: YAML::Node's own operator= writes the other node's value into the node it
  // refers to, so a defaulted assignment would overwrite the map this reader was reading (an HF
  // config's root with its text_config, losing the quantization_config beside it).
  YamlReader(const YamlReader&) = default;
  YamlReader(YamlReader&&) = default;
  YamlReader& operator=(const YamlReader& other);
  YamlReader& operator=(YamlReader&& other) noexcept;
  ~YamlReader() = default;

  // Loads a file (YAML or JSON) and returns a reader on its root; parse errors name the line.
  static YamlReader load_file(const std::string& path);
  static YamlReader load_string(const std::string& text, const std::string& name);
  // How many files load_file has read in this process (data_files_read in load.hpp).
  static std::size_t files_read();

  [[nodiscard]] bool has(const std::string& key) const;
  [[nodiscard]] const YAML::Node& node() const { return node_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string key_path(const std::string& key) const;
  [[nodiscard]] SourceLocation location() const;
  [[nodiscard]] SourceLocation location_of(const std::string& key) const;
  [[nodiscard]] const std::string& file() const { return origin_->file; }
  // Where every key under this reader's node came from (as location_of finds each), and the
  // document's patches: what rules on the values read here report against.
  [[nodiscard]] Origins origins() const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  [[noreturn]] void fail_here(const std::string& message) const;

  YamlReader child(const std::string& key);
  std::optional<YamlReader> optional_child(const std::string& key);
  std::vector<YamlReader> sequence(const std::string& key);

  std::string string(const std::string& key);
  std::string optional_string(const std::string& key, const std::string& fallback);
  bool boolean(const std::string& key);
  bool optional_boolean(const std::string& key, bool fallback);
  long long integer(const std::string& key, long long min, long long max);
  long long optional_integer(const std::string& key, long long fallback, long long min, long long max);
  double number(const std::string& key, double min, double max);
  double optional_number(const std::string& key, double fallback, double min, double max);
  double quantity(const std::string& key, units::Quantity q);
  std::optional<double> optional_quantity(const std::string& key, units::Quantity q);
  // A list of plain numbers: a YAML sequence or a comma-separated string ("0.8,0.7").
  std::vector<double> numbers(const std::string& key, double min, double max);
  // A list of integers in [min, max], written the same two ways ("1, 4, 16"); at least one.
  std::vector<long long> integers(const std::string& key, long long min, long long max);
  // A list of names, written the same two ways ("a, b"); absent or "" is an empty list.
  std::vector<std::string> optional_names(const std::string& key);
  // A YAML list of non-empty texts (items may hold commas: nothing is split).
  std::vector<std::string> texts(const std::string& key);
  // One of `allowed`; the error lists them.
  std::string choice(const std::string& key, const std::vector<std::string>& allowed);
  std::string optional_choice(const std::string& key, const std::vector<std::string>& allowed,
                              const std::string& fallback);
  // "calibrate" or a quantity; nullopt means calibrate.
  std::optional<double> quantity_or_calibrate(const std::string& key, units::Quantity q);
  std::optional<double> number_or_calibrate(const std::string& key, double min, double max);

  // Marks a key as known without reading it (e.g. free-text `source`).
  void ignore(const std::string& key);
  // Every key of this map must have been read or ignored; otherwise the first stranger is an error.
  void finish() const;
  // Checks `schema_version: 1` and `kind: <kind>` at a document root.
  void expect_header(const std::string& kind);

 private:
  // The items of a YAML sequence of scalars or of a comma-separated scalar, trimmed of spaces;
  // `what` names the expected list in the error ("a list of numbers").
  std::vector<std::string> list_items(const std::string& key, const char* what);
  YAML::Node get(const std::string& key) const;
  std::string scalar(const std::string& key) const;

  YAML::Node node_;
  std::shared_ptr<const YamlOrigin> origin_;
  std::string path_;
  std::set<std::string> seen_;
};

// Applies one `dotted.path=value` patch to a YAML tree, creating maps on the way only where the
// parent exists. The value is parsed as YAML (so `[1,2]` is a list, `30ms` a string).
void apply_patch(YAML::Node root, const std::string& assignment, YamlOrigin& origin);

}  // namespace specsim::detail
