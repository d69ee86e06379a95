#include <moeplan/io/output_set.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/temporary_files.hpp>

namespace moeplan::io {
namespace fs = std::filesystem;

struct OutputSet::Output {
  enum class Kind { File, InPlace, Stdout };
  Kind kind = Kind::File;
  std::string path;     // as given, for messages
  std::string target;   // what is replaced or written in place (symbolic links followed)
  std::string temp;     // Kind::File: the staged temporary
  int slot = -1;        // Kind::File: its entry in the signal handler's table
  std::string content;  // Kind::InPlace, Kind::Stdout: written at commit
  std::string key;      // the target's canonical path ("-" for standard output), to find one named twice
  bool shareable = false;  // a character device (/dev/null) may take several outputs
  bool in_folder = false;  // Kind::File: its target lies in a staged folder (add_folder)
  int placed_slot = -1;    // such a file once renamed there: listed until the folder is renamed into place
};

// A folder of add_folder() that did not exist: `top`, the first missing one
// on its path, is staged as `temp`, and the folder asked for is `inner` inside it.
struct OutputSet::Folder {
  std::string path;               // as given, for messages
  fs::path asked;                 // path, lexically normal, to find the outputs inside it
  fs::path top;                   // what commit() renames into place
  fs::path inner;                 // where `asked` lies inside temp
  std::vector<std::string> made;  // temp, then each folder made inside it
  std::vector<int> slots;         // their entries in the signal handler's table
};

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int error) {
  throw_runtime_error(fmt::format("{}: {}: {}", path, what, std::strerror(error)));
}

// The file a path finally names: symbolic links followed, a relative link
// read against the folder of the link. The last one may not exist yet (a
// dangling link is written through, as the shell's `>` does).
std::string follow_links(const std::string& path) {
  fs::path current(path);
  for (int hops = 0; hops < 40; ++hops) {  // Linux's own limit (ELOOP)
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current.string();
    std::error_code ec;
    const fs::path link = fs::read_symlink(current, ec);
    if (ec) fail(path, "cannot read the symbolic link", ec.value());
    current = link.is_absolute() ? link : current.parent_path() / link;
  }
  fail(path, "cannot follow", ELOOP);
}

void write_all(int fd, std::string_view content, const std::string& path) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, "cannot write", errno);
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Creates the temporary beside target, listed for the signal handler before it
// exists, so that no moment leaves a file the handler does not know.
int create_temporary(const std::string& path, const fs::path& target, std::string& temp, int& slot) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = (target.parent_path() / fmt::format(".{}.tmp{}.{}", target.filename().string(), ::getpid(), counter++))
               .string();
    slot = register_temporary(temp);
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    const int error = errno;
    unregister_temporary(slot);
    slot = -1;
    if (error != EEXIST) fail(path, "cannot create the output file", error);
  }
  fail(path, "cannot create the output file", EEXIST);
}

// Best effort: makes the renames durable. Some file systems refuse fsync on a
// folder; the files themselves were already synced.
void sync_folder(const std::string& folder) {
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void remove_temporary(std::string& temp, int& slot) noexcept {
  if (temp.empty()) return;
  ::unlink(temp.c_str());
  unregister_temporary(slot);
  slot = -1;
  temp.clear();
}

// "a/b/" and "a/./b" name the folder "a/b" names.
fs::path folder_key(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty() && p.has_parent_path()) p = p.parent_path();
  return p;
}

// Makes the temporary stand-in for `top` beside it, listed for the signal
// handler before it exists.
std::string create_temporary_folder(const std::string& path, const fs::path& top, int& slot) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string temp =
        (top.parent_path() / fmt::format(".{}.tmp{}.{}", top.filename().string(), ::getpid(), counter++)).string();
    slot = register_temporary(temp);
    if (::mkdir(temp.c_str(), 0777) == 0) return temp;
    const int error = errno;
    unregister_temporary(slot);
    slot = -1;
    if (error != EEXIST) fail(path, "cannot create the output folder", error);
  }
  fail(path, "cannot create the output folder", EEXIST);
}

// Best effort, in reverse order of making: the folders of a staged output
// folder, empty once their files are removed.
void remove_folders(std::vector<std::string>& made, std::vector<int>& slots) noexcept {
  for (std::size_t k = made.size(); k-- > 0;) ::rmdir(made[k].c_str());
  for (int slot : slots) unregister_temporary(slot);
  made.clear();
  slots.clear();
}

}  // namespace

OutputSet::OutputSet() = default;

OutputSet::~OutputSet() { discard(); }

void OutputSet::add_folder(const std::string& path) {
  MOEPLAN_CHECK(!committed_, "output folder added after commit");
  MOEPLAN_CHECK(!path.empty(), "an output folder with no path");
  std::error_code ec;
  if (fs::is_directory(path, ec)) return;
  if (fs::exists(fs::symlink_status(path, ec))) fail(path, "cannot create the output folder", EEXIST);
  Folder folder;
  folder.path = path;
  folder.asked = folder_key(path);
  // The first missing folder on the path: every one below it is made inside the stand-in.
  folder.top = folder.asked;
  while (folder.top.has_parent_path() && folder.top.parent_path() != folder.top &&
         !fs::exists(folder.top.parent_path(), ec))
    folder.top = folder.top.parent_path();
  int slot = -1;
  const std::string temp = create_temporary_folder(path, folder.top.empty() ? fs::path(".") : folder.top, slot);
  folder.made.push_back(temp);
  folder.slots.push_back(slot);
  folder.inner = fs::path(temp) / folder.asked.lexically_relative(folder.top);
  folders_.push_back(std::move(folder));
  Folder& staged = folders_.back();
  fs::path at = temp;
  for (const fs::path& part : staged.asked.lexically_relative(staged.top)) {
    if (part == ".") continue;
    at /= part;
    staged.slots.push_back(register_temporary(at.string()));
    if (::mkdir(at.c_str(), 0777) != 0) fail(path, "cannot create the output folder", errno);
    staged.made.push_back(at.string());
  }
}

bool OutputSet::writes_stdout() const {
  for (const Output& o : outputs_)
    if (o.kind == Output::Kind::Stdout) return true;
  return false;
}

void OutputSet::add(const std::string& path, std::string_view content) {
  MOEPLAN_CHECK(!committed_, "output added after commit");
  MOEPLAN_CHECK(!path.empty(), "an output with no path");
  Output output;
  output.path = path;
  output.key = path;
  if (path == "-") {
    output.kind = Output::Kind::Stdout;
  } else {
    // The kernel follows every link first: a device or FIFO, also one reached
    // through a link the kernel alone can read (/dev/stdout ->
    // /proc/self/fd/1 -> pipe:[...]), is written in place by the name given.
    struct stat st {};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    if (!exists && errno != ENOENT) fail(path, "cannot write the output file", errno);
    if (exists && S_ISDIR(st.st_mode)) fail(path, "cannot write the output file", EISDIR);
    if (exists && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode))) {
      output.kind = Output::Kind::InPlace;
      output.target = path;
    } else if (exists && !S_ISREG(st.st_mode)) {
      throw_runtime_error(fmt::format("{}: cannot write the output file: not a regular file, device or FIFO", path));
    } else {
      output.target = follow_links(path);  // the regular file to replace, or to create
      // Inside a folder that is staged until commit: the file goes there.
      const fs::path in = fs::path(output.target).lexically_normal();
      for (const Folder& f : folders_)
        if (in.parent_path() == f.asked) {
          output.target = (f.inner / in.filename()).string();
          output.in_folder = true;
        }
    }
    output.shareable = exists && S_ISCHR(st.st_mode);
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(output.target, ec);
    output.key = ec ? output.target : canonical.string();
  }
  // Two outputs into one file would leave only one of them.
  for (const Output& o : outputs_)
    if (o.key == output.key && !output.shareable)
      throw Error(ErrorKind::Input, fmt::format("{}: named by two outputs ({} and {})", path, o.path, path));
  if (output.kind != Output::Kind::File) {
    output.content.assign(content);
    outputs_.push_back(std::move(output));
    return;
  }
  outputs_.push_back(std::move(output));
  Output& staged = outputs_.back();
  struct stat existing {};
  const bool replaces = ::stat(staged.target.c_str(), &existing) == 0;
  const int fd = create_temporary(path, fs::path(staged.target), staged.temp, staged.slot);
  try {
    // An existing file keeps its owner and mode (owner first: chown clears set-id bits).
    // Giving a file away needs privilege; without it the file becomes ours.
    if (replaces) {
      if ((existing.st_uid != ::geteuid() || existing.st_gid != ::getegid()) &&
          ::fchown(fd, existing.st_uid, existing.st_gid) != 0 && errno != EPERM)
        fail(path, "cannot keep the owner of the output file", errno);
      if (::fchmod(fd, existing.st_mode & 07777) != 0) fail(path, "cannot keep the mode of the output file", errno);
    }
    write_all(fd, content, path);
    if (::fsync(fd) != 0) fail(path, "cannot write", errno);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) fail(path, "cannot write", errno);
}

void OutputSet::commit() {
  MOEPLAN_CHECK(!committed_, "output set committed twice");
  try {
    for (Output& o : outputs_) {
      if (o.kind == Output::Kind::Stdout) {
        write_all(STDOUT_FILENO, o.content, "standard output");
      } else if (o.kind == Output::Kind::InPlace) {
        // No O_TRUNC: a device or FIFO has nothing to truncate. A FIFO waits here for its reader.
        const int fd = ::open(o.target.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) fail(o.path, "cannot open the output", errno);
        try {
          write_all(fd, o.content, o.path);
        } catch (...) {
          ::close(fd);
          throw;
        }
        if (::close(fd) != 0) fail(o.path, "cannot write", errno);
      }
    }
  } catch (...) {
    discard();
    throw;
  }
  committed_ = true;
  // From the first rename to the last, a signal waits: the outputs appear
  // together, and the signal then ends the process after them.
  const DeferSignals deferred;
  std::set<std::string> folders;
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    Output& o = outputs_[i];
    if (o.kind != Output::Kind::File) continue;
    // A file of a staged folder stays listed for the signal handler, by its
    // new name, until its folder is renamed into place.
    if (o.in_folder) o.placed_slot = register_temporary(o.target);
    if (::rename(o.temp.c_str(), o.target.c_str()) != 0) {
      const int error = errno;
      for (std::size_t k = i; k < outputs_.size(); ++k) remove_temporary(outputs_[k].temp, outputs_[k].slot);
      remove_staged_folders();
      fail(o.path, "cannot rename the output into place", error);
    }
    unregister_temporary(o.slot);
    o.slot = -1;
    o.temp.clear();
    folders.insert(fs::path(o.target).parent_path().string());
  }
  for (const std::string& folder : folders) sync_folder(folder);
  // The staged folders last, with their files in them: each appears whole.
  std::set<std::string> parents;
  for (Folder& f : folders_) {
    if (::rename(f.made.front().c_str(), f.top.c_str()) != 0) {
      const int error = errno;
      remove_staged_folders();
      fail(f.path, "cannot rename the output folder into place", error);
    }
    for (Output& o : outputs_)
      if (o.placed_slot >= 0 && fs::path(o.target).parent_path() == f.inner) {
        unregister_temporary(o.placed_slot);
        o.placed_slot = -1;
      }
    for (int slot : f.slots) unregister_temporary(slot);
    f.slots.clear();
    f.made.clear();
    parents.insert(f.top.parent_path().string());
  }
  for (const std::string& folder : parents) sync_folder(folder);
}

void OutputSet::remove_staged_folders() noexcept {
  for (Output& o : outputs_)
    if (o.placed_slot >= 0) {
      ::unlink(o.target.c_str());
      unregister_temporary(o.placed_slot);
      o.placed_slot = -1;
    }
  for (Folder& f : folders_) remove_folders(f.made, f.slots);
}

void OutputSet::discard() noexcept {
  for (Output& o : outputs_) remove_temporary(o.temp, o.slot);
  remove_staged_folders();
}

void write_output(const std::string& path, std::string_view content) {
  OutputSet set;
  set.add(path, content);
  set.commit();
}

}  // namespace moeplan::io
