// Output files that appear whole or not at all.
//
// An AtomicFile writes to a temporary file with a unique name (mkstemp) in the target's folder
// and renames it onto the target in Commit(). So a reader never sees a half-written target, two
// runs writing the same target never share a temporary (the last rename wins, and what it left
// is one run's whole file), and a failed run leaves nothing: the destructor removes an
// uncommitted temporary. InstallInterruptCleanup() extends that to SIGINT and SIGTERM: the
// handler removes every live temporary, says so on stderr, and ends the process with the
// signal's default action. Through a symbolic link the file it names is replaced (the link
// stays); a device or pipe target (/dev/null) is written in place; a folder is an IoError.
//
// Thread safety: AtomicFiles may be created, written and committed from several threads (each
// object by one thread at a time); the registry the signal handler reads is lock-free.

#ifndef PODSIM_SIM_ATOMIC_FILE_H_
#define PODSIM_SIM_ATOMIC_FILE_H_

#include <fstream>
#include <memory>
#include <string>

#include "sim/status.h"

namespace podsim::sim {

class AtomicFile {
 public:
  // Creates the temporary "<folder>/.<name>.XXXXXX" beside `path`. IoError naming `path` if the
  // folder is not writable; OutOfRange if more temporaries are live than the signal registry
  // holds (kMaxLiveTemporaries), which no podsim command reaches.
  static StatusOr<std::unique_ptr<AtomicFile>> Create(const std::string& path);

  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Removes the temporary unless Commit() succeeded.
  ~AtomicFile();

  // Where the content goes (binary mode). REQUIRES: Commit() has not been called.
  std::ostream& stream() { return stream_; }
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

  // Flushes, closes and renames the temporary onto the target. IoError (naming the target) if
  // any write failed or the rename did; the temporary is then removed. Call at most once.
  Status Commit();

  static constexpr int kMaxLiveTemporaries = 64;

 private:
  AtomicFile(std::string path, std::string temp_path, int slot);

  std::string path_;
  std::string temp_path_;
  int slot_;  // Index in the signal handler's registry.
  std::ofstream stream_;
  bool committed_ = false;
};

// The IoError Create(path) would give (a folder, or a folder that is missing or not writable),
// or Ok, leaving nothing behind: for a command to check every output it will write before it
// runs, so that one it cannot write does not fail after others were written. A device or pipe
// target is not opened.
Status CheckCreatable(const std::string& path);

// Writes `data` to `path` through an AtomicFile.
Status WriteFileAtomically(const std::string& path, const std::string& data);

// Installs SIGINT and SIGTERM handlers that remove every live AtomicFile temporary, write
// "podsim: interrupted (SIGINT); partial output removed" to stderr and re-raise the signal with
// its default action (exit status 128 + signal). Idempotent; for the command-line binary.
void InstallInterruptCleanup();

}  // namespace podsim::sim

#endif  // PODSIM_SIM_ATOMIC_FILE_H_
