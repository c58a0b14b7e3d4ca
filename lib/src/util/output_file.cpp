#include "specsim/output_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "specsim/error.hpp"

namespace specsim {

namespace {

namespace fs = std::filesystem;

// Linux's own limit on links followed in one path (MAXSYMLINKS, path_resolution(7)).
constexpr int kMaxSymlinkHops = 40;

Error output_error(const OutputOptions& o, const std::string& path, const std::string& message) {
  return Error(o.option + " " + path + ": " + message);
}

std::string errno_text(int e) { return std::strerror(e); }

// The file `path` names once symlinks are followed, the last component included; a dangling link
// resolves to the (missing) file it points to, which is then created.
fs::path resolve_links(const std::string& path, const OutputOptions& o) {
  fs::path p = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    if (hops == kMaxSymlinkHops) throw output_error(o, path, "too many levels of symbolic links");
    std::error_code ec;
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) throw output_error(o, path, "cannot read the symbolic link: " + ec.message());
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
}

std::optional<struct stat> stat_of(const fs::path& p) {
  struct stat st {};
  if (stat(p.c_str(), &st) != 0) return std::nullopt;
  return st;
}

// Where the text goes. An existing regular file: its real path (the kernel follows every link),
// whose directory gets the temporary file. An existing device or FIFO: the path as given, opened
// as given (so /dev/stdout, a link to /proc/self/fd/1 and from there to a pipe, keeps working).
// No file yet: the path, or where its dangling symlink points.
fs::path target_of(const std::string& path, const OutputOptions& o) {
  if (const auto st = stat_of(path)) {
    if (!S_ISREG(st->st_mode)) return path;
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      fs::path p(real);
      std::free(real);
      return p;
    }
  }
  return resolve_links(path, o);
}

std::string kind_of(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

void write_all(int fd, const std::string& text, const OutputOptions& o, const std::string& shown) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw output_error(o, shown, "write failed: " + errno_text(n < 0 ? errno : EIO));
    done += static_cast<std::size_t>(n);
  }
}

// The mode a newly created file gets from open(2) with 0666: the process umask applied. umask(2)
// can only be read by setting it, so it is read once.
mode_t new_file_mode() {
  static const mode_t mask = [] {
    const mode_t m = ::umask(022);
    ::umask(m);
    return m;
  }();
  return 0666 & ~mask;
}

void fsync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // the rename is done; durability of the directory entry is best effort
  (void)::fsync(fd);
  ::close(fd);
}

// The temporary file of a write to `target`: hidden, in the target's directory, carrying the
// writer's pid so that one a killed writer left can be told from one a live writer is filling.
// A long target name is cut so that the temporary's name stays within NAME_MAX (255 bytes) with
// the 24 bytes around it; a target of a legal 255-byte name is then still writable.
constexpr std::size_t kTempNameRoom = 255 - 24;
std::string temp_prefix(const fs::path& target) {
  return "." + target.filename().string().substr(0, kTempNameRoom) + ".specsim-";
}

std::string temp_template(const fs::path& dir, const fs::path& target) {
  return (dir / (temp_prefix(target) + std::to_string(::getpid()) + "-XXXXXX")).string();
}

// A writer killed between mkstemp and rename (SIGKILL, a power cut) cannot clean up, so each
// write to a target first removes that target's temporaries whose writer is gone: the name's pid
// has no process (kill(pid, 0) fails with ESRCH), the file is ours and older than kStaleTempAge.
// The age guards a writer in another pid namespace sharing the directory, whose pid means nothing
// here: a live writer renames within milliseconds, or, streaming (OutputFile), touches the file at
// every buffer it writes. Best effort: a directory that cannot be listed is left as it is.
constexpr auto kStaleTempAge = std::chrono::seconds(60);

std::optional<pid_t> temp_writer(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string rest = name.substr(prefix.size());  // "<pid>-XXXXXX"
  const auto dash = rest.find('-');
  if (dash == 0 || dash == std::string::npos || dash > 9 || rest.size() - dash - 1 != 6) return std::nullopt;
  if (rest.find_first_not_of("0123456789") != dash) return std::nullopt;
  return static_cast<pid_t>(std::stol(rest.substr(0, dash)));
}

void remove_stale_temps(const fs::path& dir, const fs::path& target) {
  const std::string prefix = temp_prefix(target);
  const auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto pid = temp_writer(it->path().filename().string(), prefix);
    if (!pid || *pid == ::getpid()) continue;
    struct stat st {};
    if (lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    const auto modified = std::chrono::system_clock::from_time_t(st.st_mtime);
    if (now - modified < kStaleTempAge) continue;
    if (::kill(*pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to ask (EPERM)
    ::unlink(it->path().c_str());
  }
}

}  // namespace

void check_output_target(const std::string& path, const OutputOptions& o) {
  if (path.empty()) throw Error(o.option + ": empty file name");
  const fs::path target = target_of(path, o);
  const auto st = stat_of(target);
  if (!st) {
    if (errno == ENOENT) return;  // a new file; a missing directory shows when the file is created
    throw output_error(o, path, "cannot stat: " + errno_text(errno));
  }
  if (S_ISDIR(st->st_mode)) throw output_error(o, path, "is a directory");
  for (const std::string& input : o.inputs) {
    const auto in = stat_of(input);
    if (in && in->st_dev == st->st_dev && in->st_ino == st->st_ino) {
      throw output_error(o, path,
                         "is the input " + input + " of this command; writing it would destroy the data it "
                         "is computed from (choose another output file)");
    }
  }
  if (!S_ISREG(st->st_mode)) {
    if (!o.force) {
      throw output_error(o, path, "is " + kind_of(st->st_mode) +
                                      ", not a regular file; pass --force to write into it in place");
    }
    return;
  }
  if ((st->st_mode & 0222) == 0 && !o.force) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st->st_mode & 07777));
    throw output_error(o, path, std::string("is read-only (mode ") + mode + "); pass --force to replace it");
  }
}

OutputFile::OutputFile(const std::string& path, const OutputOptions& options) : path_(path), options_(options) {
  check_output_target(path, options);
  target_ = target_of(path, options).string();
  const auto existing = stat_of(target_);
  if (existing && !S_ISREG(existing->st_mode)) {  // allowed by --force: write in place
    fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw output_error(options, path, "cannot open: " + errno_text(errno));
    in_place_ = true;
    return;
  }
  // A replaced file keeps its mode; a new one gets what open(2) would have given it.
  mode_ = existing ? (existing->st_mode & 07777) : new_file_mode();
  const fs::path target(target_);
  dir_ = (target.has_parent_path() ? target.parent_path() : fs::path(".")).string();
  remove_stale_temps(dir_, target);
  tmp_ = temp_template(dir_, target);
  fd_ = ::mkostemp(tmp_.data(), O_CLOEXEC);
  if (fd_ < 0) throw output_error(options, path, "cannot create a file in " + dir_ + ": " + errno_text(errno));
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void OutputFile::write(std::string_view text) {
  if (fd_ < 0) throw output_error(options_, path_, "written after it was committed");
  buffer_.append(text);
  if (buffer_.size() >= kBufferBytes) flush();
}

void OutputFile::flush() {
  write_all(fd_, buffer_, options_, in_place_ ? path_ : tmp_);
  buffer_.clear();
}

void OutputFile::commit(const std::function<void(const std::string& tmp_path)>& check) {
  flush();
  const int fd = std::exchange(fd_, -1);
  if (in_place_) {
    if (::close(fd) != 0) throw output_error(options_, path_, "write failed: " + errno_text(errno));
    return;
  }
  if (::fchmod(fd, mode_) != 0) {
    ::close(fd);
    throw output_error(options_, tmp_, "cannot set the file mode: " + errno_text(errno));
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    throw output_error(options_, tmp_, "fsync failed: " + errno_text(errno));
  }
  if (::close(fd) != 0) throw output_error(options_, tmp_, "write failed: " + errno_text(errno));
  if (check) check(tmp_);
  if (options_.exclusive) {
    // A new file only: link(2) fails with EEXIST where another writer got there first, which a
    // check before the write cannot see (two `init -o new.yaml` at once).
    if (::link(tmp_.c_str(), target_.c_str()) != 0) {
      const int e = errno;
      throw output_error(options_, path_, e == EEXIST ? "already exists; pass --force to replace it"
                                                      : "cannot create it: " + errno_text(e));
    }
    ::unlink(tmp_.c_str());
  } else if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
    throw output_error(options_, path_, "cannot rename " + tmp_ + " to it: " + errno_text(errno));
  }
  tmp_.clear();
  fsync_directory(dir_);
}

void write_file_atomically(const std::string& path, const std::string& text, const OutputOptions& o,
                           const std::function<void(const std::string& tmp_path)>& check) {
  OutputFile file(path, o);
  file.write(text);
  file.commit(check);
}

}  // namespace specsim
