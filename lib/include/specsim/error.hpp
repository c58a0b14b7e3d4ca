// specsim::Error is the one exception type the library throws. It says what went wrong and
// where: a file with line and column (1-based) when the problem came from a file, the key path
// inside it, or the command-line option that carried the bad value. The library never exits;
// only main() turns an Error into an exit code.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace specsim {

struct SourceLocation {
  std::string file;  // path as given, or an origin such as "--set" or "<string>"
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based; 0 when unknown

  [[nodiscard]] std::string to_string() const;  // "file:line:column", parts omitted when unknown
};

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message);
  Error(SourceLocation where, std::string key_path, std::string message);

  [[nodiscard]] const SourceLocation& where() const { return where_; }
  [[nodiscard]] const std::string& key_path() const { return key_path_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  SourceLocation where_;
  std::string key_path_;
  std::string message_;
};

// Validation reports every problem at once: throws the one problem as it is (its location and key
// kept), or several as one Error, "N problems:" then one line each; returns when there are none.
void throw_problems(std::vector<Error> problems);

}  // namespace specsim
