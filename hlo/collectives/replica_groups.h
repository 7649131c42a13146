// Who takes part in a collective op, as XLA defines it: the op's replica_groups (listed, or
// in the iota form `[2,4]<=[4,2]T(1,0)`), read as replica ids, partition ids or flattened
// device ids depending on channel_id and use_global_device_ids, resolved on a DeviceGrid to
// the global device ids of the caller's group.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/collectives/communicator.h"
#include "hlo/instruction.h"

namespace kiln {

enum class CollectiveMode {
  kCrossReplica,              // groups of replica ids, within the caller's partition
  kCrossPartition,            // groups of partition ids, within the caller's replica
  kCrossReplicaAndPartition,  // groups of replica ids, each with all its partitions
  kFlattenedId,               // groups of global device ids
};

// Parses the text after `replica_groups=`: `{}`, `{{0,1},{2,3}}` or `[G,S]<=[dims]T(perm)`.
absl::StatusOr<std::vector<std::vector<int64_t>>> ParseReplicaGroups(std::string_view text);

// The mode of a collective instruction, from its opcode, channel_id and use_global_device_ids.
CollectiveMode CollectiveModeOf(const HloInstruction& instr);

// The global device ids of the group `device` belongs to for `instr`, in the group's order.
// An error names the instruction when the groups do not cover `device` or name devices the
// grid does not have.
absl::StatusOr<std::vector<int>> CollectiveGroup(const HloInstruction& instr, DeviceGrid grid,
                                                 int device);

// collective-permute: every device that runs the op with `device` (its replica's partitions,
// or its partition's replicas), and the source_target_pairs mapped to global device ids.
struct PermutePlan {
  std::vector<int> participants;
  std::vector<std::pair<int, int>> pairs;
};
absl::StatusOr<PermutePlan> CollectivePermutePlan(const HloInstruction& instr, DeviceGrid grid,
                                                  int device);

}  // namespace kiln
