#include "sim/atomic_file.h"

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace podsim::sim {

namespace {

// The temporaries the signal handler removes. A slot is claimed (`claimed`), filled, then
// published (`live`); the handler reads only published slots, and only async-signal-safe calls.
constexpr size_t kMaxPath = 4096;
struct Registry {
  std::atomic<bool> claimed[AtomicFile::kMaxLiveTemporaries] = {};
  std::atomic<bool> live[AtomicFile::kMaxLiveTemporaries] = {};
  char paths[AtomicFile::kMaxLiveTemporaries][kMaxPath] = {};
};
Registry registry;

// mkstemp creates files readable by their owner only; targets get the usual 0666 & ~umask. Read
// once, during static initialisation, because umask() can only be read by setting it.
const mode_t kUmask = [] {
  const mode_t mask = umask(0);
  umask(mask);
  return mask;
}();

// Blocks SIGINT and SIGTERM in this thread for its lifetime, so a temporary is never created
// without being registered (or registered without existing).
class BlockInterrupts {
 public:
  BlockInterrupts() {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &saved_);
  }
  ~BlockInterrupts() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }

 private:
  sigset_t saved_;
};

int ClaimSlot() {
  for (int i = 0; i < AtomicFile::kMaxLiveTemporaries; ++i) {
    bool expected = false;
    if (registry.claimed[i].compare_exchange_strong(expected, true)) return i;
  }
  return -1;
}

void ReleaseSlot(int slot) {
  registry.live[slot].store(false, std::memory_order_release);
  registry.claimed[slot].store(false, std::memory_order_release);
}

void WriteAll(int fd, const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = write(fd, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

extern "C" void OnInterrupt(int signal_number) {
  for (int i = 0; i < AtomicFile::kMaxLiveTemporaries; ++i) {
    if (registry.live[i].load(std::memory_order_acquire)) unlink(registry.paths[i]);
  }
  WriteAll(STDERR_FILENO, signal_number == SIGINT
                              ? "podsim: interrupted (SIGINT); partial output removed\n"
                              : "podsim: terminated (SIGTERM); partial output removed\n");
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

}  // namespace

StatusOr<std::unique_ptr<AtomicFile>> AtomicFile::Create(const std::string& requested) {
  // Through a symbolic link, the file it names is replaced and the link stays.
  std::string path = requested;
  struct stat info {};
  if (lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
    char* resolved = realpath(path.c_str(), nullptr);
    if (resolved != nullptr) {
      path = resolved;
      std::free(resolved);
    }
  }
  if (stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) return Status::IoError(requested + ": is a folder, not a file");
    // A device or a pipe (/dev/null, /dev/stdout) is written in place: there is nothing to
    // replace, and renaming onto it would replace the device itself.
    if (!S_ISREG(info.st_mode)) {
      std::unique_ptr<AtomicFile> file(new AtomicFile(requested, "", -1));
      file->stream_.open(path, std::ios::binary);
      if (!file->stream_) {
        return Status::IoError(requested + ": cannot open: " + std::strerror(errno));
      }
      return file;
    }
  }
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty()) return Status::IoError(path + ": names a folder, not a file");
  std::string temp = folder + "." + name + ".XXXXXX";
  if (temp.size() >= kMaxPath) return Status::IoError(path + ": path too long");
  BlockInterrupts blocked;
  const int slot = ClaimSlot();
  if (slot < 0) {
    return Status::OutOfRange(path + ": more than " + std::to_string(kMaxLiveTemporaries) +
                              " output files open at once");
  }
  std::vector<char> buffer(temp.begin(), temp.end());
  buffer.push_back('\0');
  const int fd = mkstemp(buffer.data());
  if (fd < 0) {
    const int error = errno;
    ReleaseSlot(slot);
    return Status::IoError(path + ": cannot create a file in " +
                           (folder.empty() ? std::string("the current folder") : folder) + ": " +
                           std::strerror(error));
  }
  fchmod(fd, 0666 & ~kUmask);
  close(fd);
  temp.assign(buffer.data());
  std::memcpy(registry.paths[slot], temp.c_str(), temp.size() + 1);
  registry.live[slot].store(true, std::memory_order_release);
  std::unique_ptr<AtomicFile> file(new AtomicFile(path, std::move(temp), slot));
  if (!file->stream_) {
    return Status::IoError(path + ": cannot open " + file->temp_path_ + ": " +
                           std::strerror(errno));
  }
  return file;
}

Status CheckCreatable(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode)) {
    return Status::Ok();  // Written in place (Create).
  }
  return AtomicFile::Create(path).status();  // Its temporary goes with it.
}

AtomicFile::AtomicFile(std::string path, std::string temp_path, int slot)
    : path_(std::move(path)), temp_path_(std::move(temp_path)), slot_(slot) {
  if (slot_ >= 0) stream_.open(temp_path_, std::ios::binary | std::ios::trunc);
}

AtomicFile::~AtomicFile() {
  if (committed_ || slot_ < 0) return;
  BlockInterrupts blocked;
  stream_.close();
  std::remove(temp_path_.c_str());
  ReleaseSlot(slot_);
}

Status AtomicFile::Commit() {
  PODSIM_CHECK(!committed_) << path_ << ": committed twice";
  stream_.flush();
  const bool written = static_cast<bool>(stream_);
  stream_.close();
  if (!written || !stream_) return Status::IoError(path_ + ": writing failed");
  if (slot_ < 0) {  // Written in place.
    committed_ = true;
    return Status::Ok();
  }
  BlockInterrupts blocked;
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    return Status::IoError(path_ + ": cannot replace it: " + std::strerror(errno));
  }
  committed_ = true;
  ReleaseSlot(slot_);
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, const std::string& data) {
  PODSIM_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  file->stream().write(data.data(), static_cast<std::streamsize>(data.size()));
  return file->Commit();
}

void InstallInterruptCleanup() {
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace podsim::sim
