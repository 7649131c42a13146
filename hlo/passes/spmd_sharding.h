// Shardings as XLA writes them (`sharding={devices=[2,1]0,1}`), and the per-device view of a
// tiled array the SPMD partitioner computes with: which tile of the array each device holds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/literal.h"

namespace kiln {

// The `sharding={...}` attribute, parsed.
struct HloSharding {
  enum class Kind { kReplicated, kTiled, kMaximal, kManual, kTuple };
  Kind kind = Kind::kReplicated;
  // kTiled: tiles per dimension and the devices of the tile array in row-major order. With
  // last_tile_dim_replicate the last entry of tile_dims counts the copies of each tile.
  std::vector<int64_t> tile_dims;
  std::vector<int64_t> devices;
  bool last_tile_dim_replicate = false;
  std::vector<HloSharding> elements;  // kTuple
};

// Parses `{replicated}`, `{maximal device=0}`, `{manual}`, `{devices=[2,1]0,1}`,
// `{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}` and tuples of those.
absl::StatusOr<HloSharding> ParseSharding(std::string_view text);

// How an array of some rank lies on N devices: the number of tiles along each dimension, and
// for each device the index of the tile it holds. Devices holding the same tile are copies.
struct Tiling {
  std::vector<int64_t> tiles;               // per dimension
  std::vector<std::vector<int64_t>> index;  // per device, per dimension

  static Tiling Replicated(int rank, int64_t num_devices);
  int rank() const { return static_cast<int>(tiles.size()); }
  bool IsReplicated() const;
  // Every tile is held by the same number of devices (and so by at least one).
  bool Valid() const;
  // The shape of one tile (tiles must divide `dims`).
  std::vector<int64_t> ShardDims(const std::vector<int64_t>& dims) const;
  // Keeps dimensions `dims` in that order (the others' tiles become copies).
  Tiling Project(const std::vector<int64_t>& dims) const;
  bool operator==(const Tiling&) const = default;
  std::string ToString() const;  // `[2,1] 0:(0,0) 1:(1,0)` for messages
};

// The tiling of an array sharding on `num_devices` devices; an error for shardings that do not
// tile an array (maximal, manual, tuple) or do not name every device exactly once.
absl::StatusOr<Tiling> TilingOf(const HloSharding& sharding, int rank, int64_t num_devices);

// The devices that hold the same tile except along `dims`, one device for each combination of
// tile indices along `dims` (ordered row-major by them): the replica groups of a collective
// that combines the tiles along `dims`. `tiling` must be Valid().
std::vector<std::vector<int64_t>> GroupsAlong(const Tiling& tiling,
                                              const std::vector<int64_t>& dims);

// Device `device`'s tile of `whole` under `tiling` (a copy).
Literal TileOf(const Literal& whole, const Tiling& tiling, int64_t device);

// The whole array of shape `whole` from every device's tile (tiles[d] is device d's; copies
// of a tile must be equal).
Literal Assemble(const std::vector<const Literal*>& tiles, const Tiling& tiling,
                 const Shape& whole);

// `{{0,1},{2,3}}`
std::string ReplicaGroupsString(const std::vector<std::vector<int64_t>>& groups);

}  // namespace kiln
