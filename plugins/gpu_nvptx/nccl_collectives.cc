// Loading NCCL with dlopen, making a communicator per group through the run's host
// transport, and running collectives on device memory.
#include "plugins/gpu_nvptx/nccl_collectives.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "hlo/collectives/local_communicator.h"

#if __has_include(<nccl.h>)
#include <nccl.h>
#define KILN_HAVE_NCCL_H 1
#endif

namespace kiln::gpu {
namespace {

// NCCL's ABI, as nccl.h defines it: ncclResult_t, ncclDataType_t and ncclRedOp_t are int
// enums; ncclUniqueId is 128 bytes passed by value.
struct UniqueId {
  char internal[128];
};
constexpr int kSuccess = 0, kInProgress = 7;
constexpr int kInt8 = 0, kUint8 = 1, kInt32 = 2, kUint32 = 3, kInt64 = 4, kUint64 = 5, kFloat16 = 6,
              kFloat32 = 7, kFloat64 = 8, kBfloat16 = 9;  // ncclDataType_t
constexpr int kSum = 0, kProd = 1, kMax = 2, kMin = 3;    // ncclRedOp_t

#ifdef KILN_HAVE_NCCL_H
static_assert(sizeof(UniqueId) == sizeof(ncclUniqueId));
static_assert(kSuccess == ncclSuccess && kInProgress == ncclInProgress);
static_assert(kInt8 == ncclInt8 && kUint8 == ncclUint8 && kInt32 == ncclInt32 &&
              kUint32 == ncclUint32 && kInt64 == ncclInt64 && kUint64 == ncclUint64 &&
              kFloat16 == ncclFloat16 && kFloat32 == ncclFloat32 && kFloat64 == ncclFloat64 &&
              kBfloat16 == ncclBfloat16);
static_assert(kSum == ncclSum && kProd == ncclProd && kMax == ncclMax && kMin == ncclMin);
#endif

// The NCCL type of `t`; pred is a byte (0 or 1), so its and/or are min/max of uint8.
std::optional<int> NcclType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::PRED:
    case PrimitiveType::U8:
      return kUint8;
    case PrimitiveType::S8:
      return kInt8;
    case PrimitiveType::S32:
      return kInt32;
    case PrimitiveType::U32:
      return kUint32;
    case PrimitiveType::S64:
      return kInt64;
    case PrimitiveType::U64:
      return kUint64;
    case PrimitiveType::F16:
      return kFloat16;
    case PrimitiveType::BF16:
      return kBfloat16;
    case PrimitiveType::F32:
      return kFloat32;
    case PrimitiveType::F64:
      return kFloat64;
    default:
      return std::nullopt;
  }
}

std::optional<int> NcclOp(ReductionKind k, PrimitiveType t) {
  switch (k) {
    case ReductionKind::kSum:
      return kSum;
    case ReductionKind::kProduct:
      return kProd;
    case ReductionKind::kMin:
      return kMin;
    case ReductionKind::kMax:
      return kMax;
    case ReductionKind::kAnd:
      return t == PrimitiveType::PRED ? std::optional<int>(kMin) : std::nullopt;
    case ReductionKind::kOr:
      return t == PrimitiveType::PRED ? std::optional<int>(kMax) : std::nullopt;
  }
  return std::nullopt;
}

// What each member tells the others when its group's communicator is made.
struct MemberCard {
  UniqueId id;    // the first member's NCCL id (the others' are unused)
  char gpu[120];  // host name and PCI bus id of the member's GPU
};

}  // namespace

struct Nccl::Api {
  int (*get_version)(int*);
  int (*get_unique_id)(UniqueId*);
  int (*comm_init_rank)(void**, int, UniqueId, int);
  int (*comm_destroy)(void*);
  int (*comm_abort)(void*);
  int (*comm_get_async_error)(void*, int*);
  const char* (*get_error_string)(int);
  int (*group_start)();
  int (*group_end)();
  int (*all_reduce)(const void*, void*, size_t, int, int, void*, CUstream);
  int (*all_gather)(const void*, void*, size_t, int, void*, CUstream);
  int (*reduce_scatter)(const void*, void*, size_t, int, int, void*, CUstream);
};

absl::StatusOr<std::unique_ptr<Nccl>> Nccl::Load() {
  std::unique_ptr<Nccl> n(new Nccl());
  for (const char* name : {"libnccl.so.2", "libnccl.so"}) {
    n->handle_ = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (n->handle_ != nullptr) {
      n->library_ = name;
      break;
    }
  }
  if (n->handle_ == nullptr) return absl::UnavailableError("no NCCL: libnccl.so.2 not found");
  n->api_ = std::make_unique<Api>();
  Api& a = *n->api_;
  auto resolve = [&](const char* sym, auto& out) {
    out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(::dlsym(n->handle_, sym));
    return out != nullptr;
  };
  if (!resolve("ncclGetVersion", a.get_version) || !resolve("ncclGetUniqueId", a.get_unique_id) ||
      !resolve("ncclCommInitRank", a.comm_init_rank) ||
      !resolve("ncclCommDestroy", a.comm_destroy) || !resolve("ncclCommAbort", a.comm_abort) ||
      !resolve("ncclCommGetAsyncError", a.comm_get_async_error) ||
      !resolve("ncclGetErrorString", a.get_error_string) ||
      !resolve("ncclGroupStart", a.group_start) || !resolve("ncclGroupEnd", a.group_end) ||
      !resolve("ncclAllReduce", a.all_reduce) || !resolve("ncclAllGather", a.all_gather) ||
      !resolve("ncclReduceScatter", a.reduce_scatter))
    return absl::UnavailableError(absl::StrCat("no NCCL: ", n->library_, " lacks an entry point"));
  int v = 0;
  if (a.get_version(&v) != kSuccess)
    return absl::UnavailableError("no NCCL: ncclGetVersion failed");
  // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9 (X*1000 + Y*100 + Z before).
  n->version_ = v >= 10000 ? absl::StrCat(v / 10000, ".", v / 100 % 100, ".", v % 100)
                           : absl::StrCat(v / 1000, ".", v / 100 % 10, ".", v % 100);
  return n;
}

Nccl::~Nccl() {
  for (auto& [key, c] : comms_)
    if (c->comm != nullptr) api_->comm_destroy(c->comm);
}

absl::Status Nccl::Check(int result, const std::string& what) const {
  if (result == kSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, " failed: ", api_->get_error_string(result), " (NCCL ", result, ")"));
}

absl::StatusOr<Nccl::Comm*> Nccl::CommFor(const std::vector<int>& group, Communicator& transport,
                                          CudaDriver& driver) {
  const std::pair<int, std::vector<int>> key(transport.device_id(), group);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = comms_.find(key); it != comms_.end()) return it->second.get();
  }
  // Not under the lock: in-process replicas make their communicators at the same time.
  // Every member reaches here on its first collective over `group` (the same op of the same
  // module), so the exchange below is itself collective over the group.
  MemberCard mine = {};
  const int rank = static_cast<int>(std::find(group.begin(), group.end(), transport.device_id()) -
                                    group.begin());
  if (rank == 0)
    if (absl::Status s = Check(api_->get_unique_id(&mine.id), "ncclGetUniqueId"); !s.ok()) return s;
  char host[64] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::snprintf(mine.gpu, sizeof(mine.gpu), "%s/%s", host, driver.bus_id().c_str());
  std::vector<MemberCard> cards(group.size());
  if (absl::Status s = transport.AllGather(group, &mine, cards.data(), sizeof(MemberCard)); !s.ok())
    return s;
  bool shared_gpu = false;
  for (size_t i = 0; i < cards.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      shared_gpu |= std::strncmp(cards[i].gpu, cards[j].gpu, sizeof(cards[i].gpu)) == 0;
  // Every member saw the same cards, so all skip NCCL together or none does.
  auto comm = std::make_unique<Comm>();
  if (!shared_gpu) {
    if (absl::Status s = driver.MakeCurrent(); !s.ok()) return s;
    if (absl::Status s = Check(
            api_->comm_init_rank(&comm->comm, static_cast<int>(group.size()), cards[0].id, rank),
            absl::StrCat("ncclCommInitRank (rank ", rank, " of ", group.size(), ")"));
        !s.ok())
      return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<Comm>& slot = comms_[key];
  slot = std::move(comm);
  return slot.get();
}

void Nccl::Abort(Comm& comm) {
  api_->comm_abort(comm.comm);
  comm.comm = nullptr;
  comm.aborted = true;
}

absl::Status Nccl::Wait(Comm& comm, CUstream stream, CudaDriver& driver, const std::string& what) {
  // Polled rather than synchronized: a peer that died would leave the stream waiting forever.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(CollectiveTimeoutSeconds());
  for (int spins = 0;; ++spins) {
    absl::StatusOr<bool> done = driver.StreamDone(stream);
    if (!done.ok()) return done.status();
    if (*done) return absl::OkStatus();
    int async = kSuccess;
    api_->comm_get_async_error(comm.comm, &async);
    if (async != kSuccess && async != kInProgress) {
      Abort(comm);
      return Check(async, what);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      Abort(comm);
      return absl::DeadlineExceededError(
          absl::StrCat(what, " did not finish within ", CollectiveTimeoutSeconds(),
                       " s (KILN_COLLECTIVE_TIMEOUT_S): a peer may have died; the NCCL "
                       "communicator is aborted"));
    }
    if (spins > 100) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

absl::StatusOr<bool> Nccl::Run(const DeviceCollective& op, std::span<const DevicePtr> ins,
                               std::span<const DevicePtr> outs, CUstream stream,
                               Communicator& transport, CudaDriver& driver) {
  std::optional<int> type = NcclType(op.type);
  std::optional<int> red = NcclOp(op.reduction, op.type);
  if (!type || (op.op != DeviceCollective::Op::kAllGather && !red)) return false;
  absl::StatusOr<Comm*> comm = CommFor(op.group, transport, driver);
  if (!comm.ok()) return comm.status();
  if ((*comm)->comm == nullptr) {
    if ((*comm)->aborted)
      return absl::FailedPreconditionError(
          "the NCCL communicator of this group was aborted by an earlier failed collective");
    return false;  // members share a GPU: the host transport runs it
  }
  const char* name = op.op == DeviceCollective::Op::kAllReduce   ? "ncclAllReduce"
                     : op.op == DeviceCollective::Op::kAllGather ? "ncclAllGather"
                                                                 : "ncclReduceScatter";
  const std::string what = absl::StrCat(name, " over ", op.group.size(), " GPUs");
  if (absl::Status s = Check(api_->group_start(), "ncclGroupStart"); !s.ok()) return s;
  absl::Status queued = absl::OkStatus();
  for (size_t i = 0; i < ins.size() && queued.ok(); ++i) {
    const void* in = reinterpret_cast<const void*>(ins[i]);
    void* out = reinterpret_cast<void*>(outs[i]);
    void* c = (*comm)->comm;
    switch (op.op) {
      case DeviceCollective::Op::kAllReduce:
        queued = Check(api_->all_reduce(in, out, op.in_counts[i], *type, *red, c, stream), what);
        break;
      case DeviceCollective::Op::kAllGather:
        queued = Check(api_->all_gather(in, out, op.in_counts[i], *type, c, stream), what);
        break;
      case DeviceCollective::Op::kReduceScatter:
        queued =
            Check(api_->reduce_scatter(in, out, op.out_counts[i], *type, *red, c, stream), what);
        break;
    }
  }
  absl::Status ended = Check(api_->group_end(), "ncclGroupEnd");
  if (!queued.ok()) return queued;
  if (!ended.ok()) return ended;
  if (absl::Status s = Wait(**comm, stream, driver, what); !s.ok()) return s;
  ++calls_;
  return true;
}

}  // namespace kiln::gpu
