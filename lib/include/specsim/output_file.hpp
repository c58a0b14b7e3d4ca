// How specsim writes every file a command produces (`-o`): nothing lost, nothing half-written.
//   - The text goes to a temporary file made with mkstemp in the target's own directory (so the
//     rename stays on one file system and concurrent writers never share a temporary name), is
//     fsynced, checked (e.g. read back by the loader), then renamed over the target; the directory
//     is fsynced so the rename survives a crash. A reader sees the old file or the new one, never a
//     mix; of concurrent writers the last rename wins and the file is always one complete output.
//   - A target that is one of the command's inputs is refused. Files are compared by device and
//     inode (st_dev, st_ino), so `./a.log`, `a.log`, a symlink to it and a hard link all count.
//   - A symlink is followed: the file it points to is replaced and the link stays.
//   - An existing target that is not a regular file (a device such as /dev/full, a FIFO) is
//     refused; with `force` the text is written into it in place (no temporary, no rename), which
//     is what `-o /dev/stdout --force` means. A directory is always refused.
//   - With `exclusive` the target must not exist: the finished temporary is hard-linked to it, so
//     of concurrent writers exactly one succeeds (`init -o` without --force).
//   - A target name of up to NAME_MAX works: the temporary's name cuts a long one.
//   - A read-only target (no write bit in its mode, mode & 0222 == 0) is refused unless `force`.
//     The mode is checked, not access(2): root may write anything, but a 0444 file says "keep".
// Every refusal and failure is a specsim::Error naming the path; on failure the target is untouched
// and no temporary file is left behind. A writer killed outright (SIGKILL) cannot clean up: its
// temporary `.<name>.specsim-<pid>-XXXXXX` is removed by the next write to the same target once
// that pid has no process and the file is a minute old.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace specsim {

struct OutputOptions {
  // Files the command read; the output must not be any of them. Missing files are skipped.
  std::vector<std::string> inputs;
  // Replace a read-only target, or write into a non-regular one (device, FIFO) in place.
  bool force = false;
  // How the target is named in messages: the command-line option that carried it ("-o").
  std::string option = "-o";
  // Create the target, never replace one: of concurrent writers exactly one succeeds (link(2)),
  // the others fail with "already exists".
  bool exclusive = false;
};

// Throws specsim::Error when writing `path` would be refused (see the header comment). Commands
// call it before their work so that a refusal costs nothing; write_file_atomically calls it again.
void check_output_target(const std::string& path, const OutputOptions& options = {});

// The same, a piece at a time, for an output written while it is computed (`sweep --stream -o`):
// the constructor checks the target and creates the temporary file; write() appends (buffered);
// commit() fsyncs, runs `check` and renames (or links, with `exclusive`). Destroyed without a commit
// (an exception, an interrupted run that chose not to keep its output) it removes the temporary,
// and the target is untouched. A device or FIFO target (with `force`) is written in place as the
// pieces come. Errors are specsim::Error naming the path, as write_file_atomically's.
class OutputFile {
 public:
  OutputFile(const std::string& path, const OutputOptions& options = {});
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view text);
  void commit(const std::function<void(const std::string& tmp_path)>& check = {});

 private:
  void flush();

  static constexpr std::size_t kBufferBytes = 1 << 16;  // one write(2) per 64 KiB, not per row
  std::string path_;       // as given, for messages
  OutputOptions options_;
  std::string target_;     // the file the rename replaces (symlinks followed)
  std::string dir_;        // its directory, fsynced after the rename
  std::string tmp_;        // the temporary file; "" once renamed, or when writing in place
  int fd_ = -1;            // -1 once committed
  bool in_place_ = false;  // a device or FIFO, written directly (force)
  mode_t mode_ = 0;        // the mode the target ends with
  std::string buffer_;
};

// Writes `text` to `path` as the header comment describes. `check`, when given, runs on the
// complete temporary file before the rename (it is not run for an in-place write to a device).
void write_file_atomically(const std::string& path, const std::string& text, const OutputOptions& options = {},
                           const std::function<void(const std::string& tmp_path)>& check = {});

}  // namespace specsim
