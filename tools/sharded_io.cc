#include "tools/sharded_io.h"

#include <cstring>

namespace kiln {
namespace {

std::optional<Tiling> ArrayTiling(const HloSharding& s, const Shape& shape, int devices) {
  if (!shape.IsArray()) return std::nullopt;
  absl::StatusOr<Tiling> t = TilingOf(s, shape.rank(), devices);
  if (!t.ok()) return std::nullopt;
  return *t;
}

// Calls `copy(whole_offset, tile_offset, bytes)` for each row of the tile's innermost
// dimension: the tile at `index` (per dimension) of `whole_dims` cut into `tile_dims`.
template <typename F>
void ForEachRow(const std::vector<int64_t>& whole_dims, const std::vector<int64_t>& tile_dims,
                const std::vector<int64_t>& index, int64_t element_bytes, F copy) {
  const int rank = static_cast<int>(whole_dims.size());
  if (rank == 0) return copy(0, 0, element_bytes);
  int64_t tile_count = 1;
  for (int64_t d : tile_dims) tile_count *= d;
  if (tile_count == 0) return;
  const int64_t row = tile_dims[rank - 1];
  std::vector<int64_t> at(rank, 0);  // position inside the tile, innermost left at 0
  for (int64_t done = 0; done < tile_count; done += row) {
    int64_t whole_linear = 0, tile_linear = 0;
    for (int k = 0; k < rank; ++k) {
      whole_linear = whole_linear * whole_dims[k] + index[k] * tile_dims[k] + at[k];
      tile_linear = tile_linear * tile_dims[k] + at[k];
    }
    copy(whole_linear * element_bytes, tile_linear * element_bytes, row * element_bytes);
    for (int k = rank - 2; k >= 0; --k) {
      if (++at[k] < tile_dims[k]) break;
      at[k] = 0;
    }
  }
}

std::vector<int64_t> DimsOf(const Shape& s) {
  return std::vector<int64_t>(s.dimensions().begin(), s.dimensions().end());
}

}  // namespace

absl::StatusOr<WholeArrays> WholeArraysOf(const HloModule& module, int devices) {
  WholeArrays w;
  const HloComputation& entry = *module.entry();
  for (int i = 0; i < entry.num_parameters(); ++i) {
    const HloInstruction& p = *entry.parameter(i);
    w.params.push_back(p.shape());
    std::optional<Tiling> t;
    if (const std::string* text = p.attrs().FindExtra("sharding")) {
      absl::StatusOr<HloSharding> s = ParseSharding(*text);
      if (s.ok()) t = ArrayTiling(*s, p.shape(), devices);
    }
    w.param_tiling.push_back(t);
  }
  const HloInstruction& root = *entry.root();
  const std::string* text = root.attrs().FindExtra("sharding");
  absl::StatusOr<HloSharding> s =
      text ? ParseSharding(*text) : absl::StatusOr<HloSharding>(absl::NotFoundError(""));
  if (root.shape().IsTuple()) {
    for (size_t i = 0; i < root.shape().tuple_shapes().size(); ++i) {
      const Shape& leaf = root.shape().tuple_shapes()[i];
      w.results.push_back(leaf);
      const bool known = s.ok() && s->kind == HloSharding::Kind::kTuple &&
                         s->elements.size() == root.shape().tuple_shapes().size();
      w.result_tiling.push_back(known ? ArrayTiling(s->elements[i], leaf, devices) : std::nullopt);
    }
  } else {
    w.results.push_back(root.shape());
    w.result_tiling.push_back(s.ok() ? ArrayTiling(*s, root.shape(), devices) : std::nullopt);
  }
  return w;
}

Literal TileOf(const Literal& whole, const Tiling& tiling, int device) {
  const std::vector<int64_t> dims = DimsOf(whole.shape());
  const std::vector<int64_t> tile_dims = tiling.ShardDims(dims);
  Literal tile = Literal::Uninitialized(Shape(whole.shape().element_type(), tile_dims));
  ForEachRow(dims, tile_dims, tiling.index[device], ByteSizeOf(whole.shape().element_type()),
             [&](int64_t from, int64_t to, int64_t bytes) {
               std::memcpy(tile.untyped_data() + to, whole.untyped_data() + from, bytes);
             });
  return tile;
}

Literal Assemble(const std::vector<const Literal*>& tiles, const Tiling& tiling,
                 const Shape& whole) {
  Literal out = Literal::Uninitialized(whole);
  const std::vector<int64_t> dims = DimsOf(whole);
  const std::vector<int64_t> tile_dims = tiling.ShardDims(dims);
  for (size_t d = 0; d < tiles.size(); ++d)  // copies of a tile write the same bytes
    ForEachRow(dims, tile_dims, tiling.index[d], ByteSizeOf(whole.element_type()),
               [&](int64_t to, int64_t from, int64_t bytes) {
                 std::memcpy(out.untyped_data() + to, tiles[d]->untyped_data() + from, bytes);
               });
  return out;
}

}  // namespace kiln
