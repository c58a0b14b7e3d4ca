// Where each key of a loaded scenario came from: the file, line and column the loader read it at,
// or the `--set` patch that gave it. Rules on values (scenario_rules.hpp) name a key; this says
// where, so a rule broken by a file points at its line and one broken by a what-if at its patch.
#pragma once

#include <map>
#include <string>

#include "specsim/error.hpp"

namespace specsim {

class Origins {
 public:
  // `fallback`: where a key that no map holds is said to be (the document's start, or "--set").
  explicit Origins(SourceLocation fallback = {}) : fallback_(std::move(fallback)) {}

  // The key's value as the file placed it ("parallel.tp").
  void add(const std::string& key, SourceLocation where);
  // The key as a patch gave it: `patch` is the option's text ("--set parallel.tp=4").
  void add_patch(const std::string& key, const std::string& patch);

  // Where `key` came from: its patch, else its place in the file, else its nearest enclosing
  // key's (a rule about a key the file left out points at the block it belongs in), else the fallback.
  [[nodiscard]] SourceLocation of(const std::string& key) const;
  // An error at `key`, located as `of` says.
  [[nodiscard]] Error error(const std::string& key, const std::string& message) const {
    return Error(of(key), key, message);
  }

 private:
  SourceLocation fallback_;
  std::map<std::string, SourceLocation> places_;
  std::map<std::string, std::string> patches_;
};

}  // namespace specsim
