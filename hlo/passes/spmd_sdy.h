// Shardy's own sharding text, which JAX's default export keeps in frontend attributes where HLO
// has no `sharding=` of its own: the meshes of a module (`#sdy.mesh<["x"=2, "y"=2]>`) and the
// shardings of shard_map's operands and results (`#sdy.sharding_per_value<[<@mesh, [{"x"},
// {}]>]>`), turned into HloSharding for the partitioner.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/passes/spmd_sharding.h"

namespace kiln {

struct SdyMesh {
  std::vector<std::string> axes;  // major to minor
  std::vector<int64_t> sizes;
  std::vector<int64_t> device_ids;  // by position in the mesh, row-major
};

// The meshes named in a module's frontend_attributes text (`{xla.sdy.meshes={mesh = ...}}`).
absl::StatusOr<std::map<std::string, SdyMesh>> ParseSdyMeshes(std::string_view attributes);

// The value of `key="..."` in an instruction's frontend_attributes text, unescaped ("" if
// absent).
std::string SdyAttribute(std::string_view attributes, std::string_view key);

// `#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>, ...]>`: one tiled (or replicated) sharding
// per value, its devices as the mesh orders them.
absl::StatusOr<std::vector<HloSharding>> ParseSdyShardings(
    std::string_view text, const std::map<std::string, SdyMesh>& meshes);

// `#sdy<manual_axes{"x", "y"}>`: the axes named.
std::vector<std::string> ParseSdyManualAxes(std::string_view text);

}  // namespace kiln
