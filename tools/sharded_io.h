// The whole arrays of an SPMD-partitioned run: a module JAX wrote before partitioning names,
// in its shardings, which tile of each parameter and result each device holds. `kiln run`
// uses that (with TileOf and Assemble, hlo/passes/spmd_sharding.h) to cut a whole input into
// each device's tile and to put the devices' result tiles back together, so a user gives and
// gets the arrays of the unpartitioned program.
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/module.h"
#include "hlo/passes/spmd_sharding.h"

namespace kiln {

struct WholeArrays {
  std::vector<Shape> params;  // the entry parameters, whole
  std::vector<std::optional<Tiling>> param_tiling;
  std::vector<Shape> results;                        // the result leaves, whole
  std::vector<std::optional<Tiling>> result_tiling;  // nullopt: not annotated
};

// Read from `module` before it is partitioned for `devices` devices.
absl::StatusOr<WholeArrays> WholeArraysOf(const HloModule& module, int devices);

}  // namespace kiln
