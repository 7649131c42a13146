// NCCL, loaded at run time with dlopen (libnccl.so.2, then libnccl.so), like the driver and
// cuBLAS: a run on several GPUs does its all-reduce, all-gather and reduce-scatter GPU to GPU
// on the run's stream instead of downloading values for the host transport. The entry points
// are declared here; where the toolkit's nccl.h is found at build time, nccl.cc checks them
// against it. A communicator per group is made on the group's first collective: the
// members exchange an NCCL id and their GPU's identity through the run's host transport (ABI
// 1.4), so no second rendezvous is needed; members sharing one GPU (in-process replicas on a
// one-GPU client) keep the host path, which NCCL does not allow. Missing NCCL is not fatal.
// LLVM-free.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/collectives/communicator.h"
#include "plugins/gpu_nvptx/cuda_driver.h"
#include "plugins/gpu_nvptx/device_collective.h"

namespace kiln::gpu {

class Nccl {
 public:
  // dlopen + the entry points. UNAVAILABLE with the reason when there is no usable NCCL.
  static absl::StatusOr<std::unique_ptr<Nccl>> Load();
  ~Nccl();
  Nccl(const Nccl&) = delete;
  Nccl& operator=(const Nccl&) = delete;

  const std::string& library() const { return library_; }
  const std::string& version() const { return version_; }  // "2.28.9"

  // Queues `op` on `stream` (ins and outs: one device array per operand) and waits for it,
  // at most KILN_COLLECTIVE_TIMEOUT_S (a peer that died: the communicator is aborted and the
  // run fails with DEADLINE_EXCEEDED). False: NCCL cannot take it (a type it has no
  // reduction for, members sharing a GPU) and nothing was done. `transport` is the run's
  // host communicator; `driver` the caller's GPU (its PCI bus id tells shared GPUs apart).
  absl::StatusOr<bool> Run(const DeviceCollective& op, std::span<const DevicePtr> ins,
                           std::span<const DevicePtr> outs, CUstream stream,
                           Communicator& transport, CudaDriver& driver);

  // Collectives run through NCCL in this process (for tests and the run's log).
  int64_t calls() const { return calls_; }

 private:
  struct Api;
  struct Comm {
    void* comm = nullptr;  // ncclComm_t; null: this group keeps the host path
    bool aborted = false;  // by a failed collective: the group's later ones fail
  };
  Nccl() = default;
  absl::StatusOr<Comm*> CommFor(const std::vector<int>& group, Communicator& transport,
                                CudaDriver& driver);
  absl::Status Check(int result, const std::string& what) const;
  absl::Status Wait(Comm& comm, CUstream stream, CudaDriver& driver, const std::string& what);
  void Abort(Comm& comm);

  void* handle_ = nullptr;  // dlopen handle (kept loaded, like libcuda)
  std::unique_ptr<Api> api_;
  std::string library_, version_;
  std::mutex mu_;
  // Keyed by the caller's device id and its group: in-process replicas are callers too.
  std::map<std::pair<int, std::vector<int>>, std::unique_ptr<Comm>> comms_;
  std::atomic<int64_t> calls_{0};
};

}  // namespace kiln::gpu
