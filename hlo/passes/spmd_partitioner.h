// SPMD partitioning: a module whose instructions carry `sharding={...}` annotations (as JAX
// emits it before partitioning) becomes the one program every partition runs on its own
// shard, with the collectives that join the shards inserted, as XLA's SPMD partitioner does.
#pragma once

#include <cstdint>

#include "hlo/passes/pass.h"

namespace kiln {

// Rewrites the entry computation of a module with shardings:
//  - entry parameters and results get their per-partition (shard) shapes;
//  - instructions without a sharding take their operands' (elementwise, broadcast,
//    transpose, reduce, dot) or are replicated;
//  - elementwise ops, broadcast and transpose run on shards; a reduce over a tiled dimension
//    and a dot tiled along its contracting dimensions end in an all-reduce; other ops run
//    on replicated operands;
//  - a value is resharded by all-gather (to fewer tiles) and by a dynamic-slice at offsets
//    chosen by partition-id (to more tiles).
// Collectives are cross-partition: channel_id, use_global_device_ids=true, replica_groups of
// partition ids (one replica). Tiles must divide their dimensions. jax.shard_map (Shardy's
// GlobalToLocalShape .. LocalToGlobalShape, manual over every mesh axis) runs its body on the
// local shards with the collectives it has. Shardings inside called computations are ignored
// (those run whole). Maximal and manual shardings, shard_map over some mesh axes only, and
// ops with side effects on sharded values fail with UNIMPLEMENTED naming the instruction. A
// module without shardings is left unchanged.
class SpmdPartitioner : public HloPass {
 public:
  // num_partitions 0: the module's `num_partitions=` attribute, else the number of devices
  // its shardings name.
  explicit SpmdPartitioner(int64_t num_partitions = 0) : num_partitions_(num_partitions) {}
  std::string_view name() const override { return "spmd-partitioner"; }
  absl::StatusOr<bool> Run(HloModule& module) override;

 private:
  int64_t num_partitions_;
};

}  // namespace kiln
