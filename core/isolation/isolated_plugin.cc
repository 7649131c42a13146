// The core's side of an isolated plugin: a KILN_Api table whose entries forward to a
// kiln-plugin-host process, and what happens when that process dies or stalls.
#include "core/isolation/isolated_plugin.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/isolation/wire.h"
#include "core/plugin_paths.h"
#include "core/run_deadline.h"
#include "fmt/format.h"
#include "kiln_plugin_api.h"

namespace kiln {
namespace {

using isolation::Op;
using isolation::Reader;
using isolation::Writer;

struct ProxyError {
  KILN_ErrorCode code;
  std::string message;
};
KILN_Error* MakeError(KILN_ErrorCode code, std::string message) {
  return reinterpret_cast<KILN_Error*>(new ProxyError{code, std::move(message)});
}
void ErrorDestroy(KILN_Error* e) { delete reinterpret_cast<ProxyError*>(e); }
const char* ErrorMessage(const KILN_Error* e) {
  return reinterpret_cast<const ProxyError*>(e)->message.c_str();
}
KILN_ErrorCode ErrorCode(const KILN_Error* e) {
  return reinterpret_cast<const ProxyError*>(e)->code;
}

// A memfd this process made and keeps mapped read-write, for buffers of at least
// kSharedMemoryMin bytes (wire.h). Sealed so that the helper can neither resize it (which
// would make this mapping SIGBUS) nor, for one lent as a buffer's bytes, write it.
struct Region {
  int fd = -1;
  char* data = nullptr;
  size_t capacity = 0;
  uint64_t token = 0;
  bool helper_writes = false;  // a buffer_to_host region, not a buffer's bytes
  uint64_t last_used = 0;
  ~Region() {
    if (data != nullptr) munmap(data, capacity);
    if (fd >= 0) close(fd);
  }
};

// The regions of one helper, kept for reuse: a fresh shared page costs a fault and zeroing
// (about 4x the copy of its bytes on the 2-vCPU machine of benchmarks/README.md), so moving
// the same sizes again should find them in place. A region is free when no ProxyBuffer holds
// it (use_count 1) and the helper has reported it released; free ones beyond kKeepBytes
// are unmapped, least recently used first.
class RegionPool {
 public:
  static constexpr size_t kKeepBytes = size_t{512} << 20;

  // A free region of `size` to `2 * size` bytes, or null.
  std::shared_ptr<Region> TakeFree(size_t size, bool helper_writes) {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Region> best;
    for (const std::shared_ptr<Region>& r : regions_) {
      if (Free(*r, r.use_count()) && r->helper_writes == helper_writes && r->capacity >= size &&
          r->capacity / 2 <= size && (best == nullptr || r->capacity < best->capacity)) {
        best = r;
      }
    }
    if (best != nullptr) Use(*best);
    return best;
  }

  // True when a region that would fit waits only for the helper's release (no ProxyBuffer
  // holds it): asking the helper then is worth a round trip.
  bool AwaitsRelease(size_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::shared_ptr<Region>& r : regions_) {
      if (r.use_count() == 1 && lent_.count(r->token) != 0 && r->capacity >= size &&
          r->capacity / 2 <= size) {
        return true;
      }
    }
    return false;
  }

  // A new region of at least `size` bytes, mapped and faulted in; null when shared memory
  // cannot be made.
  std::shared_ptr<Region> Make(size_t size, bool helper_writes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    auto r = std::make_shared<Region>();
    r->helper_writes = helper_writes;
    r->capacity = (size + page - 1) / page * page;
    r->fd = memfd_create("kiln-buffer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (r->fd < 0 || ftruncate(r->fd, static_cast<off_t>(r->capacity)) != 0) return nullptr;
    void* p =
        mmap(nullptr, r->capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, 0);
    if (p == MAP_FAILED) return nullptr;
    r->data = static_cast<char*>(p);
    // F_SEAL_FUTURE_WRITE (Linux 5.1) keeps this mapping writable and refuses every later
    // write or writable mapping; without it the helper maps lent regions read-only anyway.
    constexpr int kNoResize = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
    const bool sealed =
        (!helper_writes && fcntl(r->fd, F_ADD_SEALS, kNoResize | F_SEAL_FUTURE_WRITE) == 0) ||
        fcntl(r->fd, F_ADD_SEALS, kNoResize) == 0;
    if (!sealed) return nullptr;  // never lend what the helper could truncate
    std::lock_guard<std::mutex> lock(mu_);
    r->token = next_token_++;
    Use(*r);
    regions_.push_back(r);
    return r;
  }

  // A region about to be lent to the helper as a buffer's bytes: not free until released.
  void Lend(const Region& r) {
    std::lock_guard<std::mutex> lock(mu_);
    lent_.insert(r.token);
  }
  void Released(const std::vector<uint64_t>& tokens) {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t t : tokens) lent_.erase(t);
    TrimLocked();
  }
  // The helper is gone: it reads nothing any more.
  void HelperGone() {
    std::lock_guard<std::mutex> lock(mu_);
    lent_.clear();
    TrimLocked();
  }
  // Unmaps free regions beyond kKeepBytes (after a ProxyBuffer let one go).
  void Trim() {
    std::lock_guard<std::mutex> lock(mu_);
    TrimLocked();
  }

 private:
  bool Free(const Region& r, long use_count) const {
    return use_count == 1 && lent_.count(r.token) == 0;
  }
  void Use(Region& r) { r.last_used = ++clock_; }
  void TrimLocked() {
    std::vector<std::shared_ptr<Region>*> free;
    size_t free_bytes = 0;
    for (std::shared_ptr<Region>& r : regions_) {
      if (Free(*r, r.use_count())) {
        free.push_back(&r);
        free_bytes += r->capacity;
      }
    }
    if (free_bytes <= kKeepBytes) return;
    std::sort(free.begin(), free.end(),
              [](auto* a, auto* b) { return (*a)->last_used < (*b)->last_used; });
    for (std::shared_ptr<Region>* r : free) {
      if (free_bytes <= kKeepBytes) break;
      free_bytes -= (*r)->capacity;
      r->reset();
    }
    std::erase(regions_, nullptr);
  }

  std::mutex mu_;
  std::vector<std::shared_ptr<Region>> regions_;
  std::set<uint64_t> lent_;  // tokens of regions the helper may still read
  uint64_t next_token_ = 1;
  uint64_t clock_ = 0;
};

class Connection;
constexpr uint64_t kAnyGeneration = ~uint64_t{0};

struct ProxyDevice {
  Connection* conn;
  uint64_t id;
  std::string kind;
};
struct ProxyClient {
  Connection* conn;
  uint64_t id;
  std::vector<std::unique_ptr<ProxyDevice>> devices;
  std::vector<KILN_Device*> device_handles;
};
// Executables and buffers live in one helper process: `generation` says which (a restarted
// helper has none of the earlier ones).
struct ProxyExecutable {
  Connection* conn;
  uint64_t id;
  uint64_t generation;
  ProxyClient* client;  // whose first device a run without one goes to
};
struct ProxyBuffer {
  Connection* conn;
  uint64_t id;
  uint64_t generation;
  bool info_known = false;
  KILN_DType dtype = KILN_DTYPE_F32;
  std::vector<int64_t> dims;
  size_t byte_size = 0;
  // For a buffer made from host bytes through shared memory: the region holding them (its
  // first byte_size bytes), which buffer_to_host reads without asking the helper.
  std::shared_ptr<Region> region;
  KILN_Device* device = nullptr;  // the proxy device it lives on (ABI 1.8)
};

// One helper process and the socket to it. Calls are serialized: one request in flight.
// A helper that was lost is started again by Revive while the restart policy allows it.
class Connection {
 public:
  Connection(std::filesystem::path host, std::string path, IsolationOptions options)
      : host_(std::move(host)), path_(std::move(path)), options_(options) {}
  ~Connection() { Stop(); }

  // Starts the helper and reads its first message (name, priority, ABI minor).
  absl::Status Start() {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      return absl::InternalError(fmt::format("socketpair: {}", std::strerror(errno)));
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
      close(sv[0]);
      close(sv[1]);
      return absl::InternalError(fmt::format("fork: {}", std::strerror(errno)));
    }
    if (pid == 0) {
      // The helper's end on fd 3, kept open across exec; everything else is close-on-exec.
      if (sv[1] != 3) dup2(sv[1], 3);
      fcntl(3, F_SETFD, 0);
      if (options_.memory_mb > 0) {  // what the plugin may map, its allocations included
        const rlim_t bytes = static_cast<rlim_t>(options_.memory_mb) << 20;
        rlimit limit{bytes, bytes};
        setrlimit(RLIMIT_AS, &limit);
      }
      execl(host_.c_str(), "kiln-plugin-host", "3", path_.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(sv[1]);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (fd_ >= 0) close(fd_);
      fd_ = sv[0];
      pid_ = pid;
      dead_ = false;
      why_dead_.clear();
    }
    std::string hello;
    if (KILN_Error* e = Call("loading", nullptr, &hello)) {
      std::string message = ErrorMessage(e);
      ErrorDestroy(e);
      return absl::FailedPreconditionError(message);
    }
    Reader r(hello);
    std::string hello_name = r.Str();
    const int hello_priority = static_cast<int32_t>(r.U32());
    const int hello_minor = static_cast<int32_t>(r.U32());
    const uint8_t hello_optional = r.U8();
    if (!r.ok()) return absl::InternalError("malformed first message from kiln-plugin-host");
    if (!name.empty() && hello_name != name)
      return absl::InternalError(fmt::format("the plugin now calls itself '{}'", hello_name));
    name = std::move(hello_name);
    priority = hello_priority;
    minor = hello_minor;
    has_memory_stats = (hello_optional & isolation::kHasMemoryStats) != 0;
    has_copy_to_device = (hello_optional & isolation::kHasCopyToDevice) != 0;
    return absl::OkStatus();
  }

  // Sends `request` (unless empty: then only waits, for the first message) and waits for the
  // reply. Null with the reply's fields in `reply`, or the plugin's error, or UNAVAILABLE /
  // DEADLINE_EXCEEDED when the helper died or did not answer in time: within the plugin
  // deadline, and within what is left of this thread's run deadline (run_deadline.h).
  // `send_fd` (when >= 0) goes right after the request.
  // `made_in` (when not kAnyGeneration) is the generation of the handle the request names: one
  // from a helper since lost fails with UNAVAILABLE. `now_in` (when not null) takes the
  // generation that answered, for the handles the reply makes.
  KILN_Error* Call(const char* entry, const Writer* request, std::string* reply, int send_fd = -1,
                   uint64_t made_in = kAnyGeneration, uint64_t* now_in = nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    if (dead_) return Gone(entry);
    if (made_in != kAnyGeneration && made_in != generation_) return StaleLocked(entry);
    if (now_in != nullptr) *now_in = generation_;
    const bool one_way =
        request != nullptr && isolation::IsOneWay(static_cast<Op>(request->data()[0]));
    std::chrono::milliseconds wait = options_.deadline;
    bool run_bound = false;  // the run's deadline comes first
    if (std::optional<RunClock::time_point> d = CurrentRunDeadline(); d && !one_way) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*d - RunClock::now());
      if (left <= std::chrono::milliseconds(0))
        return MakeError(KILN_ERROR_DEADLINE_EXCEEDED,
                         fmt::format("the run's deadline of {} s passed before {}",
                                     CurrentRunTimeoutSeconds(), entry));
      if (left < wait) {
        wait = left;
        run_bound = true;
      }
    }
    if (request != nullptr && !isolation::SendMessage(fd_, request->data())) return Died(entry);
    if (send_fd >= 0 && !isolation::SendFd(fd_, send_fd)) return Died(entry);
    if (one_way) {
      reply->clear();
      return nullptr;
    }
    pollfd p{fd_, POLLIN, 0};
    int ready = isolation::SpinForInput(fd_, isolation::kSpin) ? 1 : -1;
    const auto give_up = RunClock::now() + wait;
    while (ready < 0) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(give_up - RunClock::now());
      ready = poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
      if (ready < 0 && errno != EINTR) break;
    }
    if (ready == 0) {
      kill(pid_, SIGKILL);
      Reap();
      if (run_bound) {
        // Stopping the helper is how a run is cancelled; it is not the plugin's fault, so
        // the helper starts again for the next call whatever the restart policy says.
        free_restart_ = true;
        why_dead_ = fmt::format("was stopped at the run's deadline during {}", entry);
        return MakeError(KILN_ERROR_DEADLINE_EXCEEDED,
                         fmt::format("the run's deadline of {} s passed during {} on plugin '{}' "
                                     "(isolated); its helper process was stopped and starts "
                                     "again for the next call",
                                     CurrentRunTimeoutSeconds(), entry, name));
      }
      why_dead_ = fmt::format("was killed after {} s without an answer to {}",
                              options_.deadline.count() / 1000.0, entry);
      return MakeError(KILN_ERROR_DEADLINE_EXCEEDED,
                       fmt::format("plugin '{}' (isolated) did not answer {} within {} s; its "
                                   "helper process was killed{}",
                                   name, entry, options_.deadline.count() / 1000.0, RestartNote()));
    }
    uint32_t n = 0;
    std::string body;
    if (!isolation::ReadExactly(fd_, &n, 4)) return Died(entry);
    body.resize(n);
    if (!isolation::ReadExactly(fd_, body.data(), n)) return Died(entry);
    Reader r(body);
    std::vector<uint64_t> released(r.U64());
    for (uint64_t& t : released) t = r.U64();
    const uint32_t code = r.U32();
    std::string message = r.Str();
    if (!r.ok()) return MakeError(KILN_ERROR_INTERNAL, "malformed reply from kiln-plugin-host");
    if (!released.empty()) pool.Released(released);
    if (code != 0) return MakeError(static_cast<KILN_ErrorCode>(code), std::move(message));
    *reply = body.substr(r.position());
    return nullptr;
  }

  // Before a call that needs the plugin's state in the helper (a client, its devices): when
  // the helper was lost and the policy allows, starts it again and rebuilds that state there
  // (initialize, each client, its devices), under the same handles.
  KILN_Error* Revive(const char* entry) {
    std::lock_guard<std::mutex> revive(revive_mu_);
    std::string lost;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!dead_) return nullptr;
      if (!free_restart_ && restarts_used_ >= options_.restarts) return Gone(entry);
      if (free_restart_) {
        free_restart_ = false;
      } else {
        ++restarts_used_;
      }
      lost = why_dead_;
    }
    absl::Status s = Start();
    for (ProxyClient* client : clients_) {
      if (!s.ok()) break;
      s = Rebuild(*client);
    }
    if (!s.ok()) {
      Stop();
      std::lock_guard<std::mutex> lock(mu_);
      dead_ = true;
      ++generation_;
      why_dead_ = fmt::format("{}; starting it again failed: {}", lost, std::string(s.message()));
      return Gone(entry);
    }
    std::fprintf(stderr,
                 "kiln: warning: plugin '%s' (isolated): its helper process %s; started it "
                 "again (pid %d)\n",
                 name.c_str(), lost.c_str(), static_cast<int>(pid_));
    return nullptr;
  }

  void AddClient(ProxyClient* c) {
    std::lock_guard<std::mutex> revive(revive_mu_);
    clients_.push_back(c);
  }
  void RemoveClient(ProxyClient* c) {
    std::lock_guard<std::mutex> revive(revive_mu_);
    clients_.erase(std::remove(clients_.begin(), clients_.end(), c), clients_.end());
  }
  void MarkInitialized() { initialized_ = true; }

  // Whether the helper is gone for good (lost, and not to be started again).
  bool gone() {
    std::lock_guard<std::mutex> lock(mu_);
    return dead_ && !free_restart_ && restarts_used_ >= options_.restarts;
  }
  bool dead() {
    std::lock_guard<std::mutex> lock(mu_);
    return dead_;
  }
  uint64_t generation() const { return generation_.load(); }
  // UNAVAILABLE for a handle made by a helper that has since been lost.
  KILN_Error* Stale(const char* entry) {
    std::lock_guard<std::mutex> lock(mu_);
    return StaleLocked(entry);
  }
  // UNAVAILABLE when the helper is known to be gone (for entries answered on this side).
  KILN_Error* CheckAlive(const char* entry) {
    std::lock_guard<std::mutex> lock(mu_);
    return dead_ ? Gone(entry) : nullptr;
  }

  RegionPool pool;
  pid_t pid() const { return pid_; }

  // From the first message and from initialize/attributes; the table points into these.
  std::string name;
  int priority = 0;
  int minor = 0;
  bool has_memory_stats = false;    // the plugin has device_memory_stats (ABI 1.5)
  bool has_copy_to_device = false;  // ... and buffer_copy_to_device (1.8)
  std::string unavailable_reason;
  std::vector<std::pair<std::string, std::string>> attribute_text;
  std::vector<KILN_Attribute> attributes;

 private:
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) close(fd_);  // the helper sees the end of its input and exits
    fd_ = -1;
    if (!dead_ && pid_ > 0) {
      kill(pid_, SIGKILL);
      while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  // Initialize (when it was) and the client again in a new helper; the devices keep their
  // handles, with the new helper's ids.
  absl::Status Rebuild(ProxyClient& client) {
    std::string reply;
    Writer w;
    auto call = [&](const char* entry) -> absl::Status {
      if (KILN_Error* e = Call(entry, &w, &reply)) {
        std::string message = ErrorMessage(e);
        ErrorDestroy(e);
        return absl::UnavailableError(fmt::format("{}: {}", entry, message));
      }
      return absl::OkStatus();
    };
    if (initialized_) {
      w.U8(static_cast<uint8_t>(Op::kInitialize));
      if (absl::Status s = call("initialize"); !s.ok()) return s;
    }
    w = Writer();
    w.U8(static_cast<uint8_t>(Op::kClientCreate));
    if (absl::Status s = call("client_create"); !s.ok()) return s;
    client.id = Reader(reply).U64();
    if (client.devices.empty()) return absl::OkStatus();
    w = Writer();
    w.U8(static_cast<uint8_t>(Op::kClientDevices)).U64(client.id);
    if (absl::Status s = call("client_devices"); !s.ok()) return s;
    Reader r(reply);
    if (r.U64() != client.devices.size())
      return absl::InternalError("the plugin lists a different number of devices");
    for (auto& d : client.devices) d->id = r.U64();
    return absl::OkStatus();
  }
  void Reap() {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    dead_ = true;
    ++generation_;
    pool.HelperGone();
    if (WIFSIGNALED(status)) {
      why_dead_ =
          fmt::format("crashed: signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
      if (options_.memory_mb > 0)
        why_dead_ += fmt::format(" under its memory limit of {} MiB", options_.memory_mb);
    } else {
      why_dead_ = fmt::format("exited with code {}", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
  }
  KILN_Error* Died(const char* entry) {
    // The socket closed: the helper is exiting or gone. One that closed it and lives on is
    // killed, so reaping cannot wait forever (a dead one keeps its exit status).
    kill(pid_, SIGKILL);
    Reap();
    why_dead_ += fmt::format(" during {}", entry);
    return Gone(entry);
  }
  KILN_Error* StaleLocked(const char* entry) const {
    return MakeError(KILN_ERROR_UNAVAILABLE,
                     fmt::format("{}: made by plugin '{}' (isolated) before its helper process "
                                 "{}; compile again",
                                 entry, name, why_lost_.empty() ? why_dead_ : why_lost_));
  }
  std::string RestartNote() const {
    return free_restart_ || restarts_used_ < options_.restarts
               ? " (it starts again for the next call)"
               : "";
  }
  KILN_Error* Gone(const char* /*entry*/) {
    why_lost_ = why_dead_;
    return MakeError(KILN_ERROR_UNAVAILABLE,
                     fmt::format("plugin '{}' (isolated) is gone: its helper process {}{}",
                                 name.empty() ? path_ : name, why_dead_, RestartNote()));
  }

  std::mutex mu_;         // the socket, the process and the fields below
  std::mutex revive_mu_;  // one restart at a time; the client list
  const std::filesystem::path host_;
  const std::string path_;
  const IsolationOptions options_;
  int fd_ = -1;
  pid_t pid_ = -1;
  bool dead_ = false;
  std::string why_dead_, why_lost_;
  bool free_restart_ = false;  // stopped at a run's deadline: may start again regardless
  int restarts_used_ = 0;
  std::atomic<uint64_t> generation_{0};
  bool initialized_ = false;
  std::vector<ProxyClient*> clients_;
};

template <typename P, typename H>
P* Proxy(H* handle) {
  return reinterpret_cast<P*>(handle);
}
template <typename H, typename P>
H* Handle(P* proxy) {
  return reinterpret_cast<H*>(proxy);
}
uint64_t IdOf(KILN_Device* d) { return d == nullptr ? 0 : Proxy<ProxyDevice>(d)->id; }
// The device a call without one goes to (null before client_devices was asked).
KILN_Device* FirstDevice(const ProxyClient& c) {
  return c.device_handles.empty() ? nullptr : c.device_handles[0];
}

KILN_Error* Initialize(Connection& c, KILN_Initialize_Args* a) {
  std::string reply;
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kInitialize));
  if (KILN_Error* e = c.Call("initialize", &w, &reply)) return e;
  c.MarkInitialized();
  Reader r(reply);
  a->available = static_cast<int32_t>(r.U32());
  c.unavailable_reason = r.Str();
  a->unavailable_reason = a->available ? nullptr : c.unavailable_reason.c_str();
  return nullptr;
}

KILN_Error* Attributes(Connection& c, KILN_Attributes_Args* a) {
  std::string reply;
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kAttributes));
  if (KILN_Error* e = c.Call("attributes", &w, &reply)) return e;
  Reader r(reply);
  c.attribute_text.clear();
  for (uint64_t i = 0, n = r.U64(); i < n && r.ok(); ++i) {
    std::string name = r.Str();
    c.attribute_text.emplace_back(name, r.Str());
  }
  c.attribute_text.emplace_back("isolated", fmt::format("pid {}", c.pid()));
  c.attributes.clear();
  for (const auto& [name, value] : c.attribute_text)
    c.attributes.push_back({name.c_str(), value.c_str()});
  a->attributes = c.attributes.data();
  a->num_attributes = c.attributes.size();
  return nullptr;
}

KILN_Error* ClientCreate(Connection& c, KILN_Client_Create_Args* a) {
  std::string reply;
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kClientCreate));
  if (KILN_Error* e = c.Call("client_create", &w, &reply)) return e;
  Reader r(reply);
  auto* client = new ProxyClient{&c, r.U64(), {}, {}};
  c.AddClient(client);
  a->client = Handle<KILN_Client>(client);
  return nullptr;
}

// A destroy on a helper that is gone succeeds: there is nothing left to free there.
KILN_Error* Destroyed(Connection& c, KILN_Error* e) {
  if (e != nullptr && c.dead()) {
    ErrorDestroy(e);
    return nullptr;
  }
  return e;
}

KILN_Error* ClientDestroy(KILN_Client_Destroy_Args* a) {
  ProxyClient* client = Proxy<ProxyClient>(a->client);
  if (client == nullptr) return nullptr;
  std::string reply;
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kClientDestroy)).U64(client->id);
  KILN_Error* e = Destroyed(*client->conn, client->conn->Call("client_destroy", &w, &reply));
  client->conn->RemoveClient(client);
  delete client;
  return e;
}

KILN_Error* ClientDevices(KILN_Client_Devices_Args* a) {
  ProxyClient* client = Proxy<ProxyClient>(a->client);
  if (client->devices.empty()) {
    if (KILN_Error* e = client->conn->Revive("client_devices")) return e;
    std::string reply;
    Writer w;
    w.U8(static_cast<uint8_t>(Op::kClientDevices)).U64(client->id);
    if (KILN_Error* e = client->conn->Call("client_devices", &w, &reply)) return e;
    Reader r(reply);
    for (uint64_t i = 0, n = r.U64(); i < n && r.ok(); ++i) {
      client->devices.push_back(
          std::make_unique<ProxyDevice>(ProxyDevice{client->conn, r.U64(), ""}));
      client->device_handles.push_back(Handle<KILN_Device>(client->devices.back().get()));
    }
  }
  a->devices = client->device_handles.data();
  a->num_devices = client->device_handles.size();
  return nullptr;
}

KILN_Error* DeviceDescription(KILN_Device_Description_Args* a) {
  ProxyDevice* device = Proxy<ProxyDevice>(a->device);
  if (KILN_Error* e = device->conn->Revive("device_description")) return e;
  std::string reply;
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kDeviceDescription)).U64(device->id);
  if (KILN_Error* e = device->conn->Call("device_description", &w, &reply)) return e;
  Reader r(reply);
  a->id = static_cast<int32_t>(r.U32());
  device->kind = r.Str();
  a->kind = device->kind.c_str();
  return nullptr;
}

KILN_Error* Capability(KILN_Capability_Args* a) {
  ProxyClient* client = Proxy<ProxyClient>(a->client);
  if (KILN_Error* e = client->conn->Revive("capability")) return e;
  std::string reply;
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kCapability)).U64(client->id).Bytes(a->hlo_text, a->hlo_text_size);
  if (KILN_Error* e = client->conn->Call("capability", &w, &reply)) return e;
  Reader r(reply);
  for (uint64_t i = 0, n = r.U64(); i < n && r.ok(); ++i) {
    std::string name = r.Str();
    if (a->report_supported != nullptr) a->report_supported(a->user_data, name.c_str());
  }
  for (uint64_t i = 0, n = r.U64(); i < n && r.ok(); ++i) {
    std::string name = r.Str(), reason = r.Str();
    if (a->report_unsupported != nullptr)
      a->report_unsupported(a->user_data, name.c_str(), reason.c_str());
  }
  return nullptr;
}

KILN_Error* Compile(KILN_Compile_Args* a) {
  ProxyClient* client = Proxy<ProxyClient>(a->client);
  if (KILN_Error* e = client->conn->Revive("compile")) return e;
  const KILN_CompileOptions* o = a->options;
  auto has = [&](size_t end) { return o != nullptr && o->struct_size >= end; };
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kCompile)).U64(client->id).Bytes(a->hlo_text, a->hlo_text_size);
  w.U8(o != nullptr ? 1 : 0);
  w.U32(static_cast<uint32_t>(o != nullptr ? o->optimization_level : 0));
  w.U32(static_cast<uint32_t>(o != nullptr ? o->num_threads : 0));
  const bool v11 = has(KILN_STRUCT_SIZE(KILN_CompileOptions, dump_sequence));
  w.Str(v11 && o->core_passes != nullptr ? o->core_passes : "");
  w.Str(v11 && o->dump_dir != nullptr ? o->dump_dir : "");
  w.U32(static_cast<uint32_t>(v11 ? o->dump_sequence : 0));
  const bool v18 = has(KILN_STRUCT_SIZE(KILN_CompileOptions, num_assigned_devices)) &&
                   o->device_assignment != nullptr;
  w.U64(v18 ? o->num_assigned_devices : 0);
  for (size_t i = 0; v18 && i < o->num_assigned_devices; ++i) w.U64(IdOf(o->device_assignment[i]));
  std::string reply;
  uint64_t generation = 0;
  if (KILN_Error* e = client->conn->Call("compile", &w, &reply, -1, kAnyGeneration, &generation))
    return e;
  Reader r(reply);
  a->executable =
      Handle<KILN_Executable>(new ProxyExecutable{client->conn, r.U64(), generation, client});
  return nullptr;
}

KILN_Error* ExecutableInfo(KILN_Executable_Info_Args* a) {
  ProxyExecutable* exe = Proxy<ProxyExecutable>(a->executable);
  std::string reply;
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kExecutableInfo)).U64(exe->id);
  if (KILN_Error* e = exe->conn->Call("executable_info", &w, &reply, -1, exe->generation)) return e;
  Reader r(reply);
  a->num_parameters = r.U64();
  a->num_outputs = r.U64();
  return nullptr;
}

KILN_Error* ExecutableDestroy(KILN_Executable_Destroy_Args* a) {
  ProxyExecutable* exe = Proxy<ProxyExecutable>(a->executable);
  if (exe == nullptr) return nullptr;
  std::string reply;
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kExecutableDestroy)).U64(exe->id);
  // One from a helper since lost has nothing left to free.
  KILN_Error* e = exe->generation != exe->conn->generation()
                      ? nullptr
                      : Destroyed(*exe->conn, exe->conn->Call("executable_destroy", &w, &reply));
  delete exe;
  return e;
}

KILN_Error* Execute(KILN_Execute_Args* a) {
  ProxyExecutable* exe = Proxy<ProxyExecutable>(a->executable);
  if (KILN_ARGS_HAS(a, KILN_Execute_Args, collectives) && a->collectives != nullptr)
    return MakeError(KILN_ERROR_FAILED_PRECONDITION,
                     "an isolated plugin runs no collectives (their transport does not cross "
                     "processes): run it in process for a run on several devices");
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kExecute)).U64(exe->id).U64(IdOf(a->device)).U64(a->num_arguments);
  for (size_t i = 0; i < a->num_arguments; ++i) {
    if (a->arguments[i] == nullptr)
      return MakeError(KILN_ERROR_INVALID_ARGUMENT, fmt::format("argument {} is null", i));
    const ProxyBuffer* arg = Proxy<ProxyBuffer>(a->arguments[i]);
    if (arg->generation != exe->generation) return exe->conn->Stale("execute: an argument");
    w.U64(arg->id);
  }
  const bool donates = KILN_ARGS_HAS(a, KILN_Execute_Args, donated) && a->donated != nullptr;
  w.U8(donates ? 1 : 0);
  for (size_t i = 0; donates && i < a->num_arguments; ++i) w.U8(a->donated[i] != 0 ? 1 : 0);
  w.U64(a->num_outputs);
  std::string reply;
  if (KILN_Error* e = exe->conn->Call("execute", &w, &reply, -1, exe->generation)) return e;
  Reader r(reply);
  for (size_t i = 0; i < a->num_outputs; ++i) {
    auto* b = new ProxyBuffer{exe->conn, r.U64(), exe->generation};
    b->device = a->device != nullptr ? a->device : FirstDevice(*exe->client);
    if (r.U8() != 0) {  // its info came along
      b->dtype = static_cast<KILN_DType>(r.U32());
      b->dims.resize(r.U64());
      for (int64_t& d : b->dims) d = r.I64();
      b->byte_size = r.U64();
      b->info_known = r.ok();
    }
    a->outputs[i] = Handle<KILN_Buffer>(b);
  }
  return nullptr;
}

// A region of at least `size` bytes for one transfer, in `*out`: a free one, or one the
// helper is asked to release first, or a new one; null (the bytes then go inside the
// message) when no shared memory can be made. An error only when the helper is gone.
KILN_Error* TakeRegion(Connection& c, size_t size, bool helper_writes,
                       std::shared_ptr<Region>* out) {
  *out = c.pool.TakeFree(size, helper_writes);
  if (*out == nullptr && !helper_writes && c.pool.AwaitsRelease(size)) {
    Writer w;
    w.U8(static_cast<uint8_t>(Op::kReleased));
    std::string reply;
    if (KILN_Error* e = c.Call("buffer_from_host", &w, &reply)) return e;
    *out = c.pool.TakeFree(size, helper_writes);
  }
  if (*out == nullptr) *out = c.pool.Make(size, helper_writes);
  return nullptr;
}

KILN_Error* BufferFromHost(KILN_Buffer_FromHost_Args* a) {
  ProxyClient* client = Proxy<ProxyClient>(a->client);
  if (KILN_Error* e = client->conn->Revive("buffer_from_host")) return e;
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kBufferFromHost)).U64(client->id).U64(IdOf(a->device));
  w.U32(static_cast<uint32_t>(a->dtype)).U64(a->num_dims);
  for (size_t i = 0; i < a->num_dims; ++i) w.I64(a->dims[i]);
  // A large buffer goes through shared memory (wire.h): one copy here, none in a 1.2 plugin.
  std::shared_ptr<Region> region;
  if (a->data_size >= isolation::kSharedMemoryMin) {
    if (KILN_Error* e = TakeRegion(*client->conn, a->data_size, false, &region)) return e;
  }
  if (region != nullptr) {
    std::memcpy(region->data, a->data, a->data_size);
    client->conn->pool.Lend(*region);
    w.U8(1).U64(a->data_size).U64(region->token);
  } else {
    w.U8(0).Bytes(a->data, a->data_size);
  }
  std::string reply;
  uint64_t generation = 0;
  if (KILN_Error* e =
          client->conn->Call("buffer_from_host", &w, &reply, region != nullptr ? region->fd : -1,
                             kAnyGeneration, &generation)) {
    return e;
  }
  Reader r(reply);
  auto* b = new ProxyBuffer{client->conn, r.U64(), generation};
  b->device = a->device != nullptr ? a->device : FirstDevice(*client);
  // What the plugin accepted is the buffer's info: no round trip to ask for it.
  b->info_known = true;
  b->dtype = a->dtype;
  b->dims.assign(a->dims, a->dims + a->num_dims);
  b->byte_size = a->data_size;
  b->region = std::move(region);
  a->buffer = Handle<KILN_Buffer>(b);
  // The bytes were copied into the region or the message: done with the caller's memory.
  if (KILN_ARGS_HAS(a, KILN_Buffer_FromHost_Args, on_done) && a->on_done != nullptr)
    a->on_done(a->on_done_arg);
  return nullptr;
}

KILN_Error* BufferToHost(KILN_Buffer_ToHost_Args* a) {
  ProxyBuffer* b = Proxy<ProxyBuffer>(a->buffer);
  if (b->region != nullptr) {  // its bytes are here too: one copy, no message
    if (KILN_Error* e = b->conn->CheckAlive("buffer_to_host")) return e;
    if (a->dst_size != b->byte_size) {
      return MakeError(KILN_ERROR_INVALID_ARGUMENT,
                       fmt::format("dst_size {} does not match the buffer's {} bytes", a->dst_size,
                                   b->byte_size));
    }
    std::memcpy(a->dst, b->region->data, a->dst_size);
    return nullptr;
  }
  Writer w;
  std::shared_ptr<Region> region;  // the helper writes it, this side copies out of it
  if (a->dst_size >= isolation::kSharedMemoryMin) {
    if (KILN_Error* e = TakeRegion(*b->conn, a->dst_size, true, &region)) return e;
  }
  w.U8(static_cast<uint8_t>(Op::kBufferToHost)).U64(b->id).U64(a->dst_size);
  w.U8(region != nullptr ? 1 : 0);
  std::string reply;
  if (region != nullptr) {
    if (KILN_Error* e = b->conn->Call("buffer_to_host", &w, &reply, region->fd, b->generation))
      return e;
    std::memcpy(a->dst, region->data, a->dst_size);
    return nullptr;
  }
  if (KILN_Error* e = b->conn->Call("buffer_to_host", &w, &reply, -1, b->generation)) return e;
  Reader r(reply);
  std::string_view bytes = r.Bytes();
  if (!r.ok() || bytes.size() != a->dst_size)
    return MakeError(KILN_ERROR_INTERNAL, "buffer_to_host: the helper sent the wrong byte count");
  std::memcpy(a->dst, bytes.data(), bytes.size());
  return nullptr;
}

KILN_Error* BufferInfo(KILN_Buffer_Info_Args* a) {
  ProxyBuffer* b = Proxy<ProxyBuffer>(a->buffer);
  if (!b->info_known) {
    Writer w;
    w.U8(static_cast<uint8_t>(Op::kBufferInfo)).U64(b->id);
    std::string reply;
    if (KILN_Error* e = b->conn->Call("buffer_info", &w, &reply, -1, b->generation)) return e;
    Reader r(reply);
    b->dtype = static_cast<KILN_DType>(r.U32());
    b->dims.resize(r.U64());
    for (int64_t& d : b->dims) d = r.I64();
    b->byte_size = r.U64();
    if (!r.ok()) return MakeError(KILN_ERROR_INTERNAL, "buffer_info: malformed reply");
    b->info_known = true;
  }
  a->dtype = b->dtype;
  a->dims = b->dims.data();
  a->num_dims = b->dims.size();
  a->byte_size = b->byte_size;
  if (KILN_ARGS_HAS(a, KILN_Buffer_Info_Args, device)) a->device = b->device;
  return nullptr;
}

KILN_Error* BufferCopyToDevice(KILN_Buffer_CopyToDevice_Args* a) {
  ProxyBuffer* b = Proxy<ProxyBuffer>(a->buffer);
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kCopyToDevice)).U64(b->id).U64(IdOf(a->device));
  std::string reply;
  if (KILN_Error* e = b->conn->Call("buffer_copy_to_device", &w, &reply, -1, b->generation))
    return e;
  Reader r(reply);
  auto* copy = new ProxyBuffer{b->conn, r.U64(), b->generation};
  copy->device = a->device;
  copy->info_known = b->info_known;
  copy->dtype = b->dtype;
  copy->dims = b->dims;
  copy->byte_size = b->byte_size;
  a->copy = Handle<KILN_Buffer>(copy);
  return nullptr;
}

KILN_Error* DeviceMemoryStats(KILN_Device_MemoryStats_Args* a) {
  ProxyClient* client = Proxy<ProxyClient>(a->client);
  if (KILN_Error* e = client->conn->Revive("device_memory_stats")) return e;
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kMemoryStats)).U64(client->id).U64(IdOf(a->device));
  std::string reply;
  if (KILN_Error* e = client->conn->Call("device_memory_stats", &w, &reply)) return e;
  Reader r(reply);
  a->bytes_in_use = r.I64();
  a->peak_bytes_in_use = r.I64();
  a->num_buffers = r.I64();
  a->bytes_limit = r.I64();
  if (!r.ok()) return MakeError(KILN_ERROR_INTERNAL, "device_memory_stats: malformed reply");
  return nullptr;
}

KILN_Error* BufferDestroy(KILN_Buffer_Destroy_Args* a) {
  ProxyBuffer* b = Proxy<ProxyBuffer>(a->buffer);
  if (b == nullptr) return nullptr;
  Writer w;
  w.U8(static_cast<uint8_t>(Op::kBufferDestroy)).U64(b->id);
  std::string reply;
  // One from a helper since lost has nothing left to free there.
  KILN_Error* e = b->generation != b->conn->generation()
                      ? nullptr
                      : Destroyed(*b->conn, b->conn->Call("buffer_destroy", &w, &reply));
  const bool had_region = b->region != nullptr;
  Connection* conn = b->conn;
  delete b;
  if (had_region) conn->pool.Trim();
  return e;
}

// The entries without a handle to find their connection by: one instance per slot.
constexpr int kSlots = 16;
Connection* slots[kSlots] = {};
KILN_Api tables[kSlots];
std::mutex slots_mu;

template <int N>
KILN_Error* SlotInitialize(KILN_Initialize_Args* a) {
  return Initialize(*slots[N], a);
}
template <int N>
KILN_Error* SlotAttributes(KILN_Attributes_Args* a) {
  return Attributes(*slots[N], a);
}
template <int N>
KILN_Error* SlotClientCreate(KILN_Client_Create_Args* a) {
  return ClientCreate(*slots[N], a);
}

template <int... N>
void FillSlotEntries(std::integer_sequence<int, N...>) {
  ((tables[N].initialize = &SlotInitialize<N>, tables[N].attributes = &SlotAttributes<N>,
    tables[N].client_create = &SlotClientCreate<N>),
   ...);
}

// Fills slot `n`'s table for `c`.
const KILN_Api* MakeTable(int n, Connection& c) {
  static std::once_flag filled;
  std::call_once(filled, [] { FillSlotEntries(std::make_integer_sequence<int, kSlots>()); });
  KILN_Api& t = tables[n];
  t.struct_size = sizeof(KILN_Api);
  t.api_major = KILN_API_MAJOR;
  // What the proxy forwards: up to 1.8, without buffer_host_data (1.2), collectives (1.4),
  // host custom-call handlers (1.5) and events (1.7), none of which crosses processes; the
  // helper builds 1.6's walkable module itself.
  t.api_minor = std::min(c.minor, 8);
  t.plugin_name = c.name.c_str();
  t.default_priority = c.priority;
  t.error_destroy = ErrorDestroy;
  t.error_message = ErrorMessage;
  t.error_code = ErrorCode;
  t.client_destroy = ClientDestroy;
  t.client_devices = ClientDevices;
  t.device_description = DeviceDescription;
  t.capability = Capability;
  t.compile = Compile;
  t.executable_info = ExecutableInfo;
  t.executable_serialize = nullptr;
  t.executable_deserialize = nullptr;
  t.executable_destroy = ExecutableDestroy;
  t.execute = Execute;
  t.buffer_from_host = BufferFromHost;
  t.buffer_to_host = BufferToHost;
  t.buffer_info = BufferInfo;
  t.buffer_destroy = BufferDestroy;
  t.buffer_host_data = nullptr;  // the bytes live in the helper
  // Counted in the helper, where the buffers are (the entry is optional: only when it has it).
  t.device_memory_stats = c.has_memory_stats ? DeviceMemoryStats : nullptr;
  t.buffer_copy_to_device = c.has_copy_to_device ? BufferCopyToDevice : nullptr;
  return &t;
}

}  // namespace

std::filesystem::path PluginHostPath(const std::filesystem::path& plugin) {
  if (const char* env = std::getenv("KILN_PLUGIN_HOST"); env != nullptr && env[0] != '\0')
    return env;
  const std::filesystem::path beside = plugin.parent_path() / "kiln-plugin-host";
  if (access(beside.c_str(), X_OK) == 0) return beside;
  return DefaultPluginDir() / "kiln-plugin-host";
}

absl::StatusOr<std::unique_ptr<Plugin>> LoadIsolatedPlugin(const std::filesystem::path& path,
                                                           const IsolationOptions& options) {
  const std::filesystem::path host = PluginHostPath(path);
  if (access(host.c_str(), X_OK) != 0)
    return absl::FailedPreconditionError(fmt::format(
        "cannot isolate: no kiln-plugin-host at {} (set KILN_PLUGIN_HOST)", host.string()));
  auto conn = std::make_unique<Connection>(host, path.string(), options);
  if (absl::Status s = conn->Start(); !s.ok()) {
    if (s.code() == absl::StatusCode::kFailedPrecondition) return s;
    return absl::Status(s.code(), fmt::format("cannot isolate: {}", std::string(s.message())));
  }
  int slot = -1;
  {
    std::lock_guard<std::mutex> lock(slots_mu);
    for (int i = 0; i < kSlots && slot < 0; ++i)
      if (slots[i] == nullptr) slot = i;
    if (slot < 0)
      return absl::ResourceExhaustedError(
          fmt::format("cannot isolate more than {} plugins in one process", kSlots));
    slots[slot] = conn.release();  // lives as long as the process: the table points into it
  }
  Connection* c = slots[slot];
  PluginHealth health;
  health.alive = [c] { return !c->gone(); };
  health.generation = [c] { return c->generation(); };
  return Plugin::FromApi(MakeTable(slot, *c), path.string(), std::move(health));
}

}  // namespace kiln
