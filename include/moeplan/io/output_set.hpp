#pragma once
// The files one command writes appear together or not at all (issue 14). Each
// output is staged as a temporary file beside its target, written and fsynced;
// commit() renames them all at the end; anything that fails first removes every
// temporary, and so does SIGINT or SIGTERM (temporary_files.hpp).
//
// What a path names decides how it is written:
// - a regular file, or none yet: replaced atomically by the rename, keeping an
//   existing file's mode and owner;
// - a symbolic link: followed; its final target is replaced as above (the
//   temporary goes in the target's folder), the link stays a link;
// - a character or block device or a FIFO (/dev/null, a named pipe): written
//   in place at commit, never replaced;
// - "-": standard output (file descriptor 1), at commit;
// - a file directly inside a folder given to add_folder() that does not exist
//   yet: staged in a temporary folder that commit() renames into place after
//   its files, so that the folder too appears with the other outputs or not at all.

#include <string>
#include <string_view>
#include <vector>

namespace moeplan::io {

/// @brief The outputs of one command, staged until commit().
class OutputSet {
 public:
  OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  /// Removes the temporaries of an output set that was not committed.
  ~OutputSet();

  /// Stages content for path (see above). A file that cannot be created or
  /// written, a directory, or a socket is a runtime Error naming path; a
  /// target named by two outputs is an input Error.
  void add(const std::string& path, std::string_view content);
  /// A folder for outputs (add(path + "/NAME")). One that exists is used as
  /// it is. One that does not, and any of its parents that do not, is staged
  /// now as a hidden temporary `.NAME.tmpPID.N` beside the first missing
  /// one, renamed into place by commit() after the files in it, removed by
  /// discard() and by a signal (temporary_files.hpp). A folder that cannot be
  /// made is a runtime Error naming path.
  void add_folder(const std::string& path);
  /// Whether an output is "-" (standard output).
  bool writes_stdout() const;
  /// Writes the in-place outputs in the order added, then renames every
  /// temporary over its target and fsyncs the folders, with signals deferred
  /// (DeferSignals) from the first rename to the last. A failure before the
  /// renames removes every temporary (nothing appears) and throws a runtime
  /// Error naming the output; in-place outputs written before it keep what
  /// they received.
  void commit();
  /// Removes every temporary; nothing is written.
  void discard() noexcept;

 private:
  // Removes what staged folders not yet renamed into place hold, and them.
  void remove_staged_folders() noexcept;

  struct Output;  // output_set.cpp
  struct Folder;  // output_set.cpp
  std::vector<Output> outputs_;
  std::vector<Folder> folders_;
  bool committed_ = false;
};

/// Writes one output with an OutputSet of its own: add(path, content), commit().
void write_output(const std::string& path, std::string_view content);

}  // namespace moeplan::io
