#include "tools/sharded_io.h"

namespace kiln {
namespace {

std::optional<Tiling> ArrayTiling(const HloSharding& s, const Shape& shape, int devices) {
  if (!shape.IsArray()) return std::nullopt;
  absl::StatusOr<Tiling> t = TilingOf(s, shape.rank(), devices);
  if (!t.ok()) return std::nullopt;
  return *t;
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

}  // namespace kiln
