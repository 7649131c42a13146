// The Communicator over Open MPI: one rank per device. Each group gets its own communicator
// (made once, by its members only), so a collective is one MPI call on it. Collectives are
// MPI's blocking calls (its nonblocking ones take several times as long for small messages)
// under a watchdog: a call still waiting at the deadline ends the process with the reason,
// and mpirun then ends the job, so a peer that never comes cannot hang the others. Point to
// point transfers (permute, the groups' handshake) are nonblocking, polled against the
// deadline.
#include "core/collectives/mpi_world.h"

#include <mpi.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln {
namespace {

absl::Status MpiError(int code, const std::string& what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return absl::InternalError(absl::StrCat(what, ": MPI error: ", std::string(text, len)));
}

// MPI's type for elements of `t` that it can reduce natively, or MPI_DATATYPE_NULL.
MPI_Datatype MpiType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::PRED:
      return MPI_C_BOOL;
    case PrimitiveType::S8:
      return MPI_INT8_T;
    case PrimitiveType::S16:
      return MPI_INT16_T;
    case PrimitiveType::S32:
      return MPI_INT32_T;
    case PrimitiveType::S64:
      return MPI_INT64_T;
    case PrimitiveType::U8:
      return MPI_UINT8_T;
    case PrimitiveType::U16:
      return MPI_UINT16_T;
    case PrimitiveType::U32:
      return MPI_UINT32_T;
    case PrimitiveType::U64:
      return MPI_UINT64_T;
    case PrimitiveType::F32:
      return MPI_FLOAT;
    case PrimitiveType::F64:
      return MPI_DOUBLE;
    case PrimitiveType::C64:
      return MPI_C_FLOAT_COMPLEX;
    case PrimitiveType::C128:
      return MPI_C_DOUBLE_COMPLEX;
    default:
      return MPI_DATATYPE_NULL;  // f16, bf16, f8, sub-byte: the evaluator reduces them
  }
}

// MPI's operation for `kind` on `t`, or MPI_OP_NULL where MPI defines none.
MPI_Op MpiOp(PrimitiveType t, ReductionKind kind) {
  const bool pred = t == PrimitiveType::PRED;
  const bool integer = IsInteger(t) && !pred;
  const bool complex = IsComplex(t);
  switch (kind) {
    case ReductionKind::kSum:
      return pred ? MPI_LOR : MPI_SUM;
    case ReductionKind::kProduct:
      return pred ? MPI_LAND : MPI_PROD;
    case ReductionKind::kMin:
      return complex ? MPI_OP_NULL : pred ? MPI_LAND : MPI_MIN;
    case ReductionKind::kMax:
      return complex ? MPI_OP_NULL : pred ? MPI_LOR : MPI_MAX;
    case ReductionKind::kAnd:
      return pred ? MPI_LAND : integer ? MPI_BAND : MPI_OP_NULL;
    case ReductionKind::kOr:
      return pred ? MPI_LOR : integer ? MPI_BOR : MPI_OP_NULL;
  }
  return MPI_OP_NULL;
}

// Ends the process when a blocking call outlives its deadline. Arming is two atomic stores,
// so the calls pay nothing measurable; the thread looks ten times a second.
class Watchdog {
 public:
  explicit Watchdog(double timeout_s) : timeout_s_(timeout_s), thread_([this] { Watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // `what` must live until Disarm.
  void Arm(const std::string* what) {
    what_.store(what, std::memory_order_relaxed);
    started_ns_.store(NowNs(), std::memory_order_release);
  }
  void Disarm() { started_ns_.store(0, std::memory_order_release); }

 private:
  static int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void Watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; })) {
      const int64_t started = started_ns_.load(std::memory_order_acquire);
      if (started == 0 || NowNs() - started < static_cast<int64_t>(timeout_s_ * 1e9)) continue;
      const std::string* what = what_.load(std::memory_order_relaxed);
      std::fprintf(stderr, "kiln run: error: %s\n", what ? what->c_str() : "a collective");
      std::fflush(stderr);
      std::_Exit(1);  // mpirun sees the exit and ends the other ranks
    }
  }

  double timeout_s_;
  std::atomic<int64_t> started_ns_{0};
  std::atomic<const std::string*> what_{nullptr};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

class MpiCommunicator : public Communicator {
 public:
  // Collective over the world: every rank makes its communicator at the same point.
  MpiCommunicator(DeviceGrid grid, int rank, double timeout_s)
      : grid_(grid), rank_(rank), timeout_s_(timeout_s), watchdog_(timeout_s) {
    MPI_Comm world;
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    std::vector<int> all(grid.num_devices());
    for (int i = 0; i < grid.num_devices(); ++i) all[i] = i;
    comms_.emplace(all, world);
  }
  ~MpiCommunicator() override {
    for (auto& [group, comm] : comms_) MPI_Comm_free(&comm);
  }
  int device_id() const override { return rank_; }
  DeviceGrid grid() const override { return grid_; }

  absl::Status AllGather(std::span<const int> group, const void* in, void* out,
                         size_t bytes) override {
    if (bytes > INT_MAX) return TooLarge("all-gather", bytes);
    absl::StatusOr<MPI_Comm> comm = CommOf(group);
    if (!comm.ok()) return comm.status();
    Guard guard(*this, "all-gather", group);
    int e = MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                          MPI_BYTE, *comm);
    if (e != MPI_SUCCESS) return MpiError(e, "all-gather");
    return absl::OkStatus();
  }

  absl::StatusOr<bool> AllReduce(std::span<const int> group, PrimitiveType type, ReductionKind kind,
                                 const void* in, void* out, size_t count) override {
    MPI_Datatype t = MpiType(type);
    if (t == MPI_DATATYPE_NULL || MpiOp(type, kind) == MPI_OP_NULL) return false;
    if (count > INT_MAX) return TooLarge("all-reduce", count);
    absl::StatusOr<MPI_Comm> comm = CommOf(group);
    if (!comm.ok()) return comm.status();
    Guard guard(*this, "all-reduce", group);
    int e = MPI_Allreduce(in, out, static_cast<int>(count), t, MpiOp(type, kind), *comm);
    if (e != MPI_SUCCESS) return MpiError(e, "all-reduce");
    return true;
  }

  absl::Status AllToAll(std::span<const int> group, const void* in, void* out,
                        size_t chunk_bytes) override {
    if (chunk_bytes > INT_MAX) return TooLarge("all-to-all", chunk_bytes);
    absl::StatusOr<MPI_Comm> comm = CommOf(group);
    if (!comm.ok()) return comm.status();
    Guard guard(*this, "all-to-all", group);
    int e = MPI_Alltoall(in, static_cast<int>(chunk_bytes), MPI_BYTE, out,
                         static_cast<int>(chunk_bytes), MPI_BYTE, *comm);
    if (e != MPI_SUCCESS) return MpiError(e, "all-to-all");
    return absl::OkStatus();
  }

  absl::StatusOr<bool> Permute(std::span<const int> group,
                               std::span<const std::pair<int, int>> pairs, const void* in,
                               void* out, size_t bytes) override {
    if (bytes > INT_MAX) return TooLarge("collective-permute", bytes);
    // Point to point on the world; the tag tells this permute from the group's earlier ones.
    std::vector<int> key(group.begin(), group.end());
    const int tag = static_cast<int>(permutes_[key]++ % 30000);
    std::vector<MPI_Request> requests;
    bool received = false;
    for (const auto& [source, target] : pairs) {
      MPI_Request r;
      if (source == rank_) {
        int e = MPI_Isend(in, static_cast<int>(bytes), MPI_BYTE, target, tag, MPI_COMM_WORLD, &r);
        if (e != MPI_SUCCESS) return MpiError(e, "collective-permute");
        requests.push_back(r);
      }
      if (target == rank_) {
        int e = MPI_Irecv(out, static_cast<int>(bytes), MPI_BYTE, source, tag, MPI_COMM_WORLD, &r);
        if (e != MPI_SUCCESS) return MpiError(e, "collective-permute");
        requests.push_back(r);
        received = true;
      }
    }
    if (absl::Status s = Wait(requests, "collective-permute", group); !s.ok()) return s;
    return received;
  }

 private:
  absl::Status TooLarge(const char* what, size_t n) {
    return absl::UnimplementedError(
        absl::StrCat(what, " of ", n, " units is over MPI's 2^31-1 per call"));
  }

  // The group's communicator, its ranks in the group's order; made by the group's members
  // alone (MPI_Comm_create_group), the first time they meet. Making one blocks until every
  // member calls, so the members first exchange a byte each way under the deadline: a member
  // that never comes fails the call instead of hanging it.
  absl::StatusOr<MPI_Comm> CommOf(std::span<const int> group) {
    std::vector<int> key(group.begin(), group.end());
    auto it = comms_.find(key);
    if (it != comms_.end()) return it->second;
    static const char token = 0;
    std::vector<char> got(key.size());
    std::vector<MPI_Request> hello;
    for (size_t i = 0; i < key.size(); ++i) {
      if (key[i] == rank_) continue;
      MPI_Request send, recv;
      MPI_Isend(&token, 1, MPI_BYTE, key[i], kHelloTag, MPI_COMM_WORLD, &send);
      MPI_Irecv(&got[i], 1, MPI_BYTE, key[i], kHelloTag, MPI_COMM_WORLD, &recv);
      hello.push_back(send), hello.push_back(recv);
    }
    if (absl::Status s = Wait(hello, "meeting a replica group", group); !s.ok()) return s;
    MPI_Group world, sub;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, static_cast<int>(key.size()), key.data(), &sub);
    MPI_Comm comm;
    int e = MPI_Comm_create_group(MPI_COMM_WORLD, sub, /*tag=*/0, &comm);
    MPI_Group_free(&sub);
    MPI_Group_free(&world);
    if (e != MPI_SUCCESS) return MpiError(e, "making the communicator of a replica group");
    comms_.emplace(key, comm);
    return comm;
  }

  std::string WaitedMessage(const char* what, std::span<const int> group) const {
    return absl::StrCat(what, " on ranks {", absl::StrJoin(group, ","), "}: rank ", rank_,
                        " waited ", timeout_s_,
                        " s for the others (KILN_COLLECTIVE_TIMEOUT_S); a rank of the job died, "
                        "hung or took another path");
  }

  // Arms the watchdog for one blocking call.
  class Guard {
   public:
    Guard(MpiCommunicator& c, const char* what, std::span<const int> group)
        : c_(c), message_(c.WaitedMessage(what, group)) {
      c_.watchdog_.Arm(&message_);
    }
    ~Guard() { c_.watchdog_.Disarm(); }

   private:
    MpiCommunicator& c_;
    std::string message_;
  };

  // Polls `requests` until they complete or the deadline passes. Spinning is what MPI_Wait
  // does too; yielding between polls leaves the core to the peers when ranks outnumber cores.
  absl::Status Wait(std::vector<MPI_Request> requests, const char* what,
                    std::span<const int> group) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(timeout_s_));
    for (int polls = 0;; ++polls) {
      int done = 0;
      int e = MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                          MPI_STATUSES_IGNORE);
      if (e != MPI_SUCCESS) return MpiError(e, what);
      if (done) return absl::OkStatus();
      if (polls > 64) sched_yield();
      if ((polls & 255) == 0 && std::chrono::steady_clock::now() > deadline)
        return absl::DeadlineExceededError(WaitedMessage(what, group));
    }
  }

  static constexpr int kHelloTag = 32001;  // above the permutes' tags (0..29999)

  DeviceGrid grid_;
  int rank_;
  double timeout_s_;
  std::map<std::vector<int>, MPI_Comm> comms_;
  std::map<std::vector<int>, uint64_t> permutes_;
  Watchdog watchdog_;
};

class OpenMpiWorld : public MpiWorld {
 public:
  OpenMpiWorld() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~OpenMpiWorld() override { MPI_Finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::unique_ptr<Communicator> MakeCommunicator(DeviceGrid grid, double timeout_s) override {
    return std::make_unique<MpiCommunicator>(grid, rank_, timeout_s);
  }
  [[noreturn]] void Abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);
  }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MpiWorld>> MpiWorld::Init() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return absl::FailedPreconditionError("MPI is initialized already");
  int provided = 0;
  // Collectives are called from the thread that runs the module, which need not be main.
  int e = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  if (e != MPI_SUCCESS) return MpiError(e, "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::make_unique<OpenMpiWorld>();
}

}  // namespace kiln
