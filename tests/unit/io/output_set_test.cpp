#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <moeplan/core/error.hpp>
#include <moeplan/io/output_set.hpp>
#include <moeplan/io/temporary_files.hpp>

namespace fs = std::filesystem;
using moeplan::io::OutputSet;

namespace {

// A fresh folder under the system's temporary folder, removed at scope end.
class Folder {
 public:
  explicit Folder(const std::string& tag)
      : path_(fs::temp_directory_path() / ("moeplan-out-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  Folder(const Folder&) = delete;
  Folder& operator=(const Folder&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  // Every entry, hidden temporaries included, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  fs::path path_;
};

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool is_temporary(const std::string& name) { return name.find(".tmp") != std::string::npos; }

// Runs `body` in a child process as a command runs: the default action for
// SIGTERM and SIGHUP (Catch2 handles SIGTERM in tests), then moeplan's
// handlers. Returns the child's wait status; a body that returns exits 0.
int status_of_child(const std::function<void()>& body) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGHUP, SIG_DFL);
    moeplan::io::remove_temporaries_on_signal();
    body();
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return status;
}

}  // namespace

TEST_CASE("io::OutputSet shows no output before commit and every output after", "[io][output]") {
  const Folder dir("commit");
  write(dir / "b.txt", "old");
  {
    OutputSet set;
    set.add(dir / "a.txt", "alpha");
    set.add(dir / "b.txt", "beta");
    // Staged: two hidden temporaries beside untouched targets.
    const std::vector<std::string> staged = dir.entries();
    REQUIRE(staged.size() == 3);
    CHECK(std::count_if(staged.begin(), staged.end(), is_temporary) == 2);
    CHECK(!fs::exists(dir / "a.txt"));
    CHECK(read(dir / "b.txt") == "old");
    set.commit();
  }
  CHECK(dir.entries() == std::vector<std::string>{"a.txt", "b.txt"});
  CHECK(read(dir / "a.txt") == "alpha");
  CHECK(read(dir / "b.txt") == "beta");
}

TEST_CASE("io::OutputSet removes its temporaries when not committed", "[io][output]") {
  const Folder dir("abandon");
  write(dir / "b.txt", "old");
  {
    OutputSet set;
    set.add(dir / "a.txt", "alpha");
    set.add(dir / "b.txt", "beta");
    // A third output that cannot be written (a folder) fails the command.
    fs::create_directories(dir / "c.txt");
    CHECK_THROWS_WITH(set.add(dir / "c.txt", "gamma"), Catch::Contains("c.txt: cannot write the output file: Is a directory"));
  }
  // The earlier two never appear; b.txt keeps its old content.
  CHECK(dir.entries() == std::vector<std::string>{"b.txt", "c.txt"});
  CHECK(read(dir / "b.txt") == "old");
}

TEST_CASE("io::OutputSet keeps an existing file's mode", "[io][output]") {
  const Folder dir("mode");
  write(dir / "secret.txt", "old");
  fs::permissions(dir / "secret.txt", fs::perms::owner_read | fs::perms::owner_write);
  moeplan::io::write_output(dir / "secret.txt", "new");
  CHECK(read(dir / "secret.txt") == "new");
  CHECK(fs::status(dir / "secret.txt").permissions() == (fs::perms::owner_read | fs::perms::owner_write));
}

TEST_CASE("io::OutputSet follows a symbolic link and replaces its target", "[io][output]") {
  // The link in one folder, its target (relative) in another: the temporary
  // must go beside the target, or the rename would replace the link.
  const Folder dir("link");
  fs::create_directories(dir / "real");
  fs::create_directories(dir / "links");
  write(dir / "real/plan.txt", "old");
  fs::create_symlink("../real/plan.txt", dir / "links/plan.txt");
  moeplan::io::write_output(dir / "links/plan.txt", "new");
  CHECK(fs::is_symlink(dir / "links/plan.txt"));
  CHECK(read(dir / "real/plan.txt") == "new");
  CHECK(fs::directory_iterator(dir / "links") != fs::directory_iterator());
  for (const char* folder : {"real", "links"})
    for (const fs::directory_entry& e : fs::directory_iterator(dir / folder))
      CHECK(!is_temporary(e.path().filename().string()));
  // A dangling link is written through, as the shell's `>` does.
  fs::create_symlink("../real/new.txt", dir / "links/new.txt");
  moeplan::io::write_output(dir / "links/new.txt", "fresh");
  CHECK(fs::is_symlink(dir / "links/new.txt"));
  CHECK(read(dir / "real/new.txt") == "fresh");
}

TEST_CASE("io::OutputSet writes a FIFO in place", "[io][output]") {
  const Folder dir("fifo");
  REQUIRE(::mkfifo((dir / "pipe").c_str(), 0600) == 0);
  std::string received;
  std::thread reader([&] { received = read(dir / "pipe"); });  // opening blocks until commit opens the writer
  moeplan::io::write_output(dir / "pipe", "through the pipe");
  reader.join();
  CHECK(received == "through the pipe");
  CHECK(fs::is_fifo(dir / "pipe"));
  CHECK(dir.entries() == std::vector<std::string>{"pipe"});
}

TEST_CASE("io::OutputSet writes a device in place and fails when it is full", "[io][output]") {
  // Copies of /dev/null and /dev/full (needs mknod, i.e. root): never the real ones.
  const Folder dir("device");
  if (::mknod((dir / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
      ::mknod((dir / "full").c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) {
    WARN("mknod not permitted: device outputs not tested here");
    return;
  }
  {
    OutputSet set;
    set.add(dir / "null", "discarded");
    set.add(dir / "null", "twice is fine for a device");
    set.commit();
  }
  CHECK(fs::is_character_file(dir / "null"));
  {
    // A full device fails the whole set: the file staged beside it never appears.
    OutputSet set;
    set.add(dir / "kept-out.txt", "text");
    set.add(dir / "full", "no room");
    CHECK_THROWS_WITH(set.commit(), Catch::Contains("full: cannot write: No space left on device"));
  }
  CHECK(fs::is_character_file(dir / "full"));
  CHECK(!fs::exists(dir / "kept-out.txt"));
  CHECK(dir.entries() == std::vector<std::string>{"full", "null"});
}

TEST_CASE("io::OutputSet refuses one file named by two outputs", "[io][output]") {
  const Folder dir("twice");
  OutputSet set;
  fs::create_directories(dir / "sub");
  fs::create_symlink("t.json", dir / "link.json");
  set.add(dir / "t.json", "one");
  // The same file by another spelling, and through a link: the second would replace the first.
  for (const std::string& same : {dir / "sub/../t.json", dir / "link.json"}) {
    INFO(same);
    try {
      set.add(same, "two");
      FAIL("no error");
    } catch (const moeplan::Error& e) {
      CHECK(e.kind() == moeplan::ErrorKind::Input);
      CHECK_THAT(e.reason(), Catch::Contains("named by two outputs"));
    }
  }
}

TEST_CASE("io::OutputSet's temporaries are removed when SIGTERM ends the process", "[io][output]") {
  const Folder dir("signal");
  // The child stages an output, as a command does before it commits, and is
  // terminated: the handler re-raises with the default action.
  const int status = status_of_child([&] {
    OutputSet set;
    set.add(dir / "trace.json", std::string(1 << 20, 'x'));
    ::raise(SIGTERM);
  });
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK(dir.entries().empty());
}

TEST_CASE("io::OutputSet stages a new output folder: it appears at commit with its files, or never", "[io][output]") {
  const Folder dir("folder");
  SECTION("committed: the folder and its missing parent appear with the files") {
    OutputSet set;
    set.add_folder(dir / "a/b");
    set.add(dir / "a/b/x.txt", "x");
    // Staged: one hidden temporary beside where "a" will be, and no "a".
    const std::vector<std::string> staged = dir.entries();
    REQUIRE(staged.size() == 1);
    CHECK(is_temporary(staged[0]));
    CHECK(!fs::exists(dir / "a"));
    set.commit();
    CHECK(dir.entries() == std::vector<std::string>{"a"});
    CHECK(read(dir / "a/b/x.txt") == "x");
  }
  SECTION("not committed: nothing is left, the folder included") {
    {
      OutputSet set;
      set.add_folder(dir / "a/b");
      set.add(dir / "a/b/x.txt", "x");
    }
    CHECK(dir.entries().empty());
  }
  SECTION("a folder that exists is written into as it is") {
    fs::create_directories(dir / "e");
    write(dir / "e/old.txt", "old");
    OutputSet set;
    set.add_folder(dir / "e/");
    set.add(dir / "e/x.txt", "x");
    set.commit();
    CHECK(dir.entries() == std::vector<std::string>{"e"});
    CHECK(read(dir / "e/x.txt") == "x");
    CHECK(read(dir / "e/old.txt") == "old");
  }
  SECTION("a folder made by someone else meanwhile is left as it is; the staged one goes") {
    OutputSet set;
    set.add_folder(dir / "c");
    set.add(dir / "c/x.txt", "x");
    fs::create_directories(dir / "c");
    write(dir / "c/theirs.txt", "theirs");
    CHECK_THROWS_WITH(set.commit(), Catch::Contains("cannot rename the output folder into place"));
    CHECK(dir.entries() == std::vector<std::string>{"c"});
    CHECK(!fs::exists(dir / "c/x.txt"));
    CHECK(read(dir / "c/theirs.txt") == "theirs");
  }
}

TEST_CASE("io::OutputSet's staged folders are removed when SIGTERM ends the process", "[io][output]") {
  const Folder dir("signal-folder");
  const int status = status_of_child([&] {
    OutputSet set;
    set.add_folder(dir / "a/b/c");
    set.add(dir / "a/b/c/trace.0.et", std::string(1 << 20, 'x'));
    ::raise(SIGTERM);
  });
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK(dir.entries().empty());
}

TEST_CASE("io::DeferSignals holds a signal until it ends, then ends the process with the first one", "[io][output]") {
  const Folder dir("defer");
  // The end of the deferral ends the process: the child never exits 0.
  const int status = status_of_child([&] {
    OutputSet set;
    set.add(dir / "staged.json", "staged");
    const moeplan::io::DeferSignals deferred;
    ::raise(SIGHUP);
    ::raise(SIGTERM);  // a second one waits too, and is not the one reported
    // Still running: this file is the proof.
    write(dir / "after-signals", "ran");
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGHUP);
  // The code after the signals ran; the staged output's temporary went when
  // the signal acted, and the output never appeared.
  CHECK(dir.entries() == std::vector<std::string>{"after-signals"});
  CHECK(read(dir / "after-signals") == "ran");
}

TEST_CASE("io::OutputSet's outputs are all old or all new whenever a signal ends the commit", "[io][output]") {
  // Many files make the renames take long enough for a signal to fall among
  // them at some delay; a commit without DeferSignals then leaves a mix.
  // Each delay's outcome is one of: exit 0 with every file new, or SIGTERM
  // with every file old or every file new (a signal during or after the renames).
  constexpr int kFiles = 200;  // under the 256 temporaries a set may hold at once
  const Folder dir("commit-signal");
  int mixed = 0;
  for (int attempt = 0; attempt < 24; ++attempt) {
    for (int i = 0; i < kFiles; ++i) write(dir / ("f" + std::to_string(i)), "old");
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::signal(SIGTERM, SIG_DFL);
      moeplan::io::remove_temporaries_on_signal();
      OutputSet set;
      for (int i = 0; i < kFiles; ++i) set.add(dir / ("f" + std::to_string(i)), "new");
      const char byte = 'r';
      if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
      set.commit();
      ::_exit(0);
    }
    ::close(ready[1]);
    char byte = 0;
    REQUIRE(::read(ready[0], &byte, 1) == 1);
    ::close(ready[0]);
    std::this_thread::sleep_for(std::chrono::microseconds(150 * attempt));
    ::kill(child, SIGTERM);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    const bool exited = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    REQUIRE((exited || (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)));
    int fresh = 0;
    for (int i = 0; i < kFiles; ++i) fresh += read(dir / ("f" + std::to_string(i))) == "new" ? 1 : 0;
    if (fresh != 0 && fresh != kFiles) ++mixed;
    UNSCOPED_INFO("delay " << 150 * attempt << " us: " << fresh << " new, exited " << exited);
    CHECK((fresh == kFiles || (!exited && fresh == 0)));
    CHECK(dir.entries().size() == static_cast<std::size_t>(kFiles));  // no temporary left
  }
  CHECK(mixed == 0);
}
