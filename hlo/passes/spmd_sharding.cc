// Sharding text and tilings (see spmd_sharding.h).
#include "hlo/passes/spmd_sharding.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <numeric>

#include "absl/status/status.h"

namespace kiln {
namespace {

class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Eat(std::string_view token) {
    SkipSpace();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool Int(int64_t* v) {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (start == pos_) return false;
    *v = std::stoll(std::string(text_.substr(start, pos_ - start)));
    return true;
  }
  // `a,b,c` up to (not including) a character that is neither digit, comma nor space.
  std::vector<int64_t> IntList() {
    std::vector<int64_t> out;
    int64_t v;
    while (Int(&v)) {
      out.push_back(v);
      if (!Eat(",")) break;
    }
    return out;
  }
  // Skips a balanced `{...}` (metadata and the like).
  bool SkipBraces() {
    if (!Eat("{")) return false;
    for (int depth = 1; pos_ < text_.size(); ++pos_) {
      if (text_[pos_] == '{') ++depth;
      if (text_[pos_] == '}' && --depth == 0) {
        ++pos_;
        return true;
      }
    }
    return false;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ == text_.size();
  }
  std::string_view rest() const { return text_.substr(pos_); }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

absl::Status Bad(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError("cannot read sharding '" + std::string(text) +
                                    "': " + std::string(why));
}

// The devices of `<=[dims]T(perm)`: iota over dims, transposed by perm, flattened.
std::vector<int64_t> IotaDevices(const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& perm) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<int64_t> out_dims;
  for (int64_t p : perm) out_dims.push_back(dims[p]);
  std::vector<int64_t> in_strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    in_strides[i] = in_strides[i + 1] * dims[i + 1];
  std::vector<int64_t> out(n), idx(out_dims.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t v = 0;
    for (size_t i = 0; i < idx.size(); ++i) v += idx[i] * in_strides[perm[i]];
    out[k] = v;
    for (int i = static_cast<int>(idx.size()) - 1; i >= 0; --i) {
      if (++idx[i] < out_dims[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

absl::StatusOr<HloSharding> ParseOne(Scanner& s, std::string_view text) {
  HloSharding out;
  if (!s.Eat("{")) return Bad(text, "expected '{'");
  if (s.Peek('{') || s.Peek('}')) {  // a tuple
    out.kind = HloSharding::Kind::kTuple;
    while (!s.Eat("}")) {
      absl::StatusOr<HloSharding> e = ParseOne(s, text);
      if (!e.ok()) return e.status();
      out.elements.push_back(*std::move(e));
      s.Eat(",");
    }
    return out;
  }
  if (s.Eat("replicated")) {
    out.kind = HloSharding::Kind::kReplicated;
  } else if (s.Eat("manual")) {
    out.kind = HloSharding::Kind::kManual;
  } else if (s.Eat("maximal")) {
    out.kind = HloSharding::Kind::kMaximal;
    int64_t d;
    if (!s.Eat("device=") || !s.Int(&d)) return Bad(text, "expected device=N");
    out.devices = {d};
  } else if (s.Eat("devices=[")) {
    out.kind = HloSharding::Kind::kTiled;
    out.tile_dims = s.IntList();
    if (!s.Eat("]") || out.tile_dims.empty()) return Bad(text, "expected tile dimensions");
    if (s.Eat("<=[")) {
      std::vector<int64_t> dims = s.IntList();
      if (!s.Eat("]") || dims.empty()) return Bad(text, "expected iota dimensions");
      std::vector<int64_t> perm(dims.size());
      std::iota(perm.begin(), perm.end(), 0);
      if (s.Eat("T(")) {
        perm = s.IntList();
        std::vector<int64_t> sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        bool ok = s.Eat(")") && sorted.size() == dims.size();
        for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i);
        if (!ok) return Bad(text, "expected a permutation T(...)");
      }
      out.devices = IotaDevices(dims, perm);
    } else {
      out.devices = s.IntList();
    }
    int64_t n = 1;
    for (int64_t d : out.tile_dims) n *= d;
    if (static_cast<int64_t>(out.devices.size()) != n)
      return Bad(text, "the tile array does not list one device per tile");
    if (s.Eat("last_tile_dim_replicate")) out.last_tile_dim_replicate = true;
    if (s.Eat("last_tile_dims=")) out.kind = HloSharding::Kind::kManual;  // subgroups
    if (out.kind == HloSharding::Kind::kManual && !s.SkipBraces())
      return Bad(text, "expected last_tile_dims={...}");
  } else {
    return Bad(text, "unknown sharding kind");
  }
  if (s.Eat("metadata=") && !s.SkipBraces()) return Bad(text, "unclosed metadata");
  if (!s.Eat("}")) return Bad(text, "unexpected '" + std::string(s.rest()) + "'");
  return out;
}

}  // namespace

absl::StatusOr<HloSharding> ParseSharding(std::string_view text) {
  Scanner s(text);
  absl::StatusOr<HloSharding> out = ParseOne(s, text);
  if (out.ok() && !s.AtEnd()) return Bad(text, "trailing text");
  return out;
}

Tiling Tiling::Replicated(int rank, int64_t num_devices) {
  return Tiling{std::vector<int64_t>(rank, 1),
                std::vector<std::vector<int64_t>>(num_devices, std::vector<int64_t>(rank, 0))};
}

bool Tiling::IsReplicated() const {
  return std::all_of(tiles.begin(), tiles.end(), [](int64_t t) { return t == 1; });
}

bool Tiling::Valid() const {
  int64_t count = 1;
  for (int64_t t : tiles) count *= t;
  int64_t n = static_cast<int64_t>(index.size());
  if (count == 0 || n % count != 0) return false;
  std::map<std::vector<int64_t>, int64_t> holders;
  for (const std::vector<int64_t>& idx : index) {
    for (int d = 0; d < rank(); ++d)
      if (idx[d] < 0 || idx[d] >= tiles[d]) return false;
    ++holders[idx];
  }
  if (static_cast<int64_t>(holders.size()) != count) return false;
  for (const auto& [idx, h] : holders)
    if (h != n / count) return false;
  return true;
}

std::vector<int64_t> Tiling::ShardDims(const std::vector<int64_t>& dims) const {
  std::vector<int64_t> out(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) out[d] = dims[d] / tiles[d];
  return out;
}

Tiling Tiling::Project(const std::vector<int64_t>& dims) const {
  Tiling out;
  for (int64_t d : dims) out.tiles.push_back(tiles[d]);
  for (const std::vector<int64_t>& idx : index) {
    std::vector<int64_t> kept;
    for (int64_t d : dims) kept.push_back(idx[d]);
    out.index.push_back(std::move(kept));
  }
  return out;
}

std::string Tiling::ToString() const {
  auto list = [](const std::vector<int64_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s;
  };
  std::string out = "[" + list(tiles) + "]";
  for (size_t p = 0; p < index.size(); ++p)
    out += " " + std::to_string(p) + ":(" + list(index[p]) + ")";
  return out;
}

absl::StatusOr<Tiling> TilingOf(const HloSharding& sharding, int rank, int64_t num_devices) {
  switch (sharding.kind) {
    case HloSharding::Kind::kReplicated:
      return Tiling::Replicated(rank, num_devices);
    case HloSharding::Kind::kTiled:
      break;
    default:
      return absl::UnimplementedError(
          "only replicated and tiled shardings of arrays are supported");
  }
  int data_rank =
      static_cast<int>(sharding.tile_dims.size()) - (sharding.last_tile_dim_replicate ? 1 : 0);
  if (data_rank != rank)
    return absl::InvalidArgumentError("the sharding tiles " + std::to_string(data_rank) +
                                      " dimensions of a rank-" + std::to_string(rank) + " array");
  if (static_cast<int64_t>(sharding.devices.size()) != num_devices)
    return absl::UnimplementedError("the sharding uses " + std::to_string(sharding.devices.size()) +
                                    " devices of " + std::to_string(num_devices));
  Tiling out;
  out.tiles.assign(sharding.tile_dims.begin(), sharding.tile_dims.begin() + rank);
  out.index.assign(num_devices, {});
  std::vector<bool> seen(num_devices, false);
  std::vector<int64_t> idx(sharding.tile_dims.size(), 0);
  for (int64_t device : sharding.devices) {
    if (device < 0 || device >= num_devices || seen[device])
      return absl::InvalidArgumentError("device " + std::to_string(device) +
                                        " is out of range or listed twice");
    seen[device] = true;
    out.index[device].assign(idx.begin(), idx.begin() + rank);
    for (int i = static_cast<int>(idx.size()) - 1; i >= 0; --i) {
      if (++idx[i] < sharding.tile_dims[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> GroupsAlong(const Tiling& tiling,
                                              const std::vector<int64_t>& dims) {
  std::vector<bool> along(tiling.rank(), false);
  int64_t size = 1;
  for (int64_t d : dims) {
    along[d] = true;
    size *= tiling.tiles[d];
  }
  // Key: the index off `dims` and which copy of its tile a device is (its rank among the
  // devices holding the same tile), so that copies land in different groups.
  std::map<std::vector<int64_t>, int64_t> copies;
  std::map<std::vector<int64_t>, std::vector<int64_t>> groups;
  std::vector<std::vector<int64_t>> order;
  for (size_t p = 0; p < tiling.index.size(); ++p) {
    const std::vector<int64_t>& idx = tiling.index[p];
    std::vector<int64_t> key;
    int64_t position = 0;
    for (int d = 0; d < tiling.rank(); ++d) {
      if (along[d])
        position = position * tiling.tiles[d] + idx[d];
      else
        key.push_back(idx[d]);
    }
    key.push_back(copies[idx]++);
    std::vector<int64_t>& g = groups[key];
    if (g.empty()) {
      g.assign(size, -1);
      order.push_back(key);
    }
    g[position] = static_cast<int64_t>(p);
  }
  std::vector<std::vector<int64_t>> out;
  for (const std::vector<int64_t>& key : order) out.push_back(groups[key]);
  return out;
}

std::string ReplicaGroupsString(const std::vector<std::vector<int64_t>>& groups) {
  std::string out = "{";
  for (size_t g = 0; g < groups.size(); ++g) {
    out += g ? ",{" : "{";
    for (size_t i = 0; i < groups[g].size(); ++i)
      out += (i ? "," : "") + std::to_string(groups[g][i]);
    out += "}";
  }
  return out + "}";
}

namespace {

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

}  // namespace

Literal TileOf(const Literal& whole, const Tiling& tiling, int64_t device) {
  const std::vector<int64_t>& dims = whole.shape().dimensions();
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
  const std::vector<int64_t>& dims = whole.dimensions();
  const std::vector<int64_t> tile_dims = tiling.ShardDims(dims);
  for (size_t d = 0; d < tiles.size(); ++d)  // copies of a tile write the same bytes
    ForEachRow(dims, tile_dims, tiling.index[d], ByteSizeOf(whole.element_type()),
               [&](int64_t to, int64_t from, int64_t bytes) {
                 std::memcpy(out.untyped_data() + to, tiles[d]->untyped_data() + from, bytes);
               });
  return out;
}

}  // namespace kiln
