// The caller's transport (ABI 1.4 KILN_Collectives) seen as the Communicator the evaluator
// runs collective ops through: host plugins install it for the duration of an execute.
#pragma once

#include "hlo/collectives/communicator.h"
#include "kiln_plugin_api.h"

namespace kiln::plugin_support {

class AbiCommunicator : public Communicator {
 public:
  explicit AbiCommunicator(const KILN_Collectives& c) : c_(c) {}
  int device_id() const override { return c_.device_id; }
  DeviceGrid grid() const override { return {c_.num_replicas, c_.num_partitions}; }
  absl::Status AllGather(std::span<const int> group, const void* in, void* out,
                         size_t bytes) override;
  absl::StatusOr<bool> AllReduce(std::span<const int> group, PrimitiveType type, ReductionKind kind,
                                 const void* in, void* out, size_t count) override;
  absl::Status AllToAll(std::span<const int> group, const void* in, void* out,
                        size_t chunk_bytes) override;
  absl::StatusOr<bool> Permute(std::span<const int> group,
                               std::span<const std::pair<int, int>> pairs, const void* in,
                               void* out, size_t bytes) override;

 private:
  absl::Status Check(int32_t code, const char* what) const;
  const KILN_Collectives& c_;
};

}  // namespace kiln::plugin_support
