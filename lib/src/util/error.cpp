#include "specsim/error.hpp"

namespace specsim {

std::string SourceLocation::to_string() const {
  std::string out = file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (column > 0) out += ":" + std::to_string(column);
  }
  return out;
}

namespace {
std::string compose(const SourceLocation& where, const std::string& key, const std::string& msg) {
  std::string out;
  const std::string loc = where.to_string();
  if (!loc.empty()) out += loc + ": ";
  if (!key.empty()) out += key + ": ";
  return out + msg;
}
}  // namespace

Error::Error(std::string message) : std::runtime_error(message), message_(std::move(message)) {}

Error::Error(SourceLocation where, std::string key_path, std::string message)
    : std::runtime_error(compose(where, key_path, message)),
      where_(std::move(where)),
      key_path_(std::move(key_path)),
      message_(std::move(message)) {}

void throw_problems(std::vector<Error> problems) {
  if (problems.empty()) return;
  if (problems.size() == 1) throw problems.front();
  std::string message = std::to_string(problems.size()) + " problems:";
  for (const auto& p : problems) message += "\n  " + std::string(p.what());
  throw Error(message);
}

}  // namespace specsim
