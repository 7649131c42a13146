// The SPMD partitioner (see spmd_partitioner.h). Every instruction of the entry gets a target
// tiling (annotated or propagated); the new entry computes each instruction on shards in the
// tiling its operands allow (its natural tiling), then reshards to the target.
#include "hlo/passes/spmd_partitioner.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_replace.h"
#include "hlo/computation.h"
#include "hlo/evaluator/support.h"
#include "hlo/module.h"
#include "hlo/passes/pass_util.h"
#include "hlo/passes/spmd_sdy.h"
#include "hlo/passes/spmd_sharding.h"

namespace kiln {
namespace {

// A partitioned value: the instruction computing the local shard and the tiling of each
// array in it (one for an array, one per element for a tuple of arrays).
struct Value {
  HloInstruction* hlo = nullptr;
  std::vector<Tiling> tilings;
};

absl::Status Unimplemented(const HloInstruction& h, std::string_view why) {
  const std::string* s = h.attrs().FindExtra("sharding");
  return absl::UnimplementedError(
      "spmd-partitioner: %" + h.name() + " (" + std::string(HloOpcodeString(h.opcode())) + ")" +
      (s ? " with sharding=" + *s : std::string()) + ": " + std::string(why));
}

// Arrays and flat tuples of arrays: the values the partitioner handles.
bool Supported(const Shape& s) {
  if (s.IsArray()) return true;
  if (!s.IsTuple()) return false;
  for (const Shape& e : s.tuple_shapes())
    if (!e.IsArray()) return false;
  return true;
}

// The arrays of a Supported() value: itself, or the elements of the tuple.
std::vector<Shape> Leaves(const Shape& s) {
  return s.IsArray() ? std::vector<Shape>{s} : s.tuple_shapes();
}

// Every array of `shape` replicated (`shape` has Leaves()).
std::vector<Tiling> ReplicatedLike(const Shape& shape, int64_t n) {
  std::vector<Tiling> out;
  for (const Shape& s : Leaves(shape)) out.push_back(Tiling::Replicated(s.rank(), n));
  return out;
}

// Whether `to` can be cut from `from` locally along `d`: each device's tile of `to` lies in
// its tile of `from`.
bool RefinesAlong(const Tiling& to, const Tiling& from, int d) {
  if (to.tiles[d] % from.tiles[d] != 0) return false;
  int64_t ratio = to.tiles[d] / from.tiles[d];
  for (size_t p = 0; p < to.index.size(); ++p)
    if (to.index[p][d] / ratio != from.index[p][d]) return false;
  return true;
}

// A dot's partitioning: a tiling over its axes [batch..., lhs free..., rhs free...,
// contracting...], each device computing the product of its two operand tiles.
struct DotPlan {
  Tiling axes;
  std::vector<int64_t> lhs_axes, rhs_axes;  // the axis of each operand dimension
  int64_t out_rank = 0;                     // the result's axes come first
};

DotPlan PlanDot(const HloInstruction& dot, const Tiling& lhs, const Tiling& rhs) {
  const DotDimensionNumbers& dn = *dot.attrs().dot_dimension_numbers;
  auto free_dims = [](int rank, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> out;
    for (int64_t d = 0; d < rank; ++d)
      if (std::find(a.begin(), a.end(), d) == a.end() &&
          std::find(b.begin(), b.end(), d) == b.end())
        out.push_back(d);
    return out;
  };
  std::vector<int64_t> lf =
      free_dims(lhs.rank(), dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions);
  std::vector<int64_t> rf =
      free_dims(rhs.rank(), dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions);
  // Each axis: the lhs dimension and the rhs dimension it is (-1: none).
  std::vector<std::pair<int64_t, int64_t>> axes;
  for (size_t k = 0; k < dn.lhs_batch_dimensions.size(); ++k)
    axes.emplace_back(dn.lhs_batch_dimensions[k], dn.rhs_batch_dimensions[k]);
  for (int64_t d : lf) axes.emplace_back(d, -1);
  for (int64_t d : rf) axes.emplace_back(-1, d);
  DotPlan plan;
  plan.out_rank = static_cast<int64_t>(axes.size());
  for (size_t k = 0; k < dn.lhs_contracting_dimensions.size(); ++k)
    axes.emplace_back(dn.lhs_contracting_dimensions[k], dn.rhs_contracting_dimensions[k]);
  plan.lhs_axes.assign(lhs.rank(), 0);
  plan.rhs_axes.assign(rhs.rank(), 0);
  for (size_t a = 0; a < axes.size(); ++a) {
    if (axes[a].first >= 0) plan.lhs_axes[axes[a].first] = static_cast<int64_t>(a);
    if (axes[a].second >= 0) plan.rhs_axes[axes[a].second] = static_cast<int64_t>(a);
  }
  // use_lhs/use_rhs: which operands' tilings the plan may follow.
  auto build = [&](bool use_lhs, bool use_rhs) {
    Tiling t;
    t.index.assign(lhs.index.size(), {});
    for (const auto& [l, r] : axes) {
      const Tiling* from = nullptr;
      int64_t dim = -1;
      if (use_lhs && l >= 0 && (lhs.tiles[l] > 1 || !use_rhs || r < 0)) {
        from = &lhs;
        dim = l;
      } else if (use_rhs && r >= 0) {
        from = &rhs;
        dim = r;
      }
      t.tiles.push_back(from ? from->tiles[dim] : 1);
      for (size_t p = 0; p < t.index.size(); ++p)
        t.index[p].push_back(from ? from->index[p][dim] : 0);
    }
    return t;
  };
  // Follow both operands when the devices then hold every tile; else the operand with
  // tiles (the other is resharded to match).
  plan.axes = build(true, true);
  if (!plan.axes.Valid()) plan.axes = lhs.IsReplicated() ? build(false, true) : build(true, false);
  return plan;
}

std::vector<int64_t> Range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

// Whether the reduce's init value is its reducer's identity, so that shards can each start
// from it and be combined afterwards.
bool InitIsIdentity(const HloInstruction& reduce) {
  const HloComputation* r = reduce.to_apply();
  const HloInstruction* root = r ? r->root() : nullptr;
  if (!root || r->num_parameters() != 2 || root->operand_count() != 2) return false;
  bool params = (root->operand(0) == r->parameter(0) && root->operand(1) == r->parameter(1)) ||
                (root->operand(0) == r->parameter(1) && root->operand(1) == r->parameter(0));
  if (!params) return false;
  const HloInstruction* init = reduce.operand(1);
  switch (root->opcode()) {
    case HloOpcode::kAdd:
    case HloOpcode::kOr:
      return IsAllValue(init, 0);
    case HloOpcode::kMultiply:
    case HloOpcode::kAnd:
      return IsAllValue(init, 1);
    case HloOpcode::kMaximum:
      return IsAllLowest(init);
    case HloOpcode::kMinimum:
      return IsAllHighest(init);
    default:
      return false;
  }
}

bool IsCustomCall(const HloInstruction& h, std::string_view target) {
  return h.opcode() == HloOpcode::kCustomCall && h.attrs().custom_call_target == target;
}

// shard_map's ends as Shardy writes them: global operands to the local shards the body
// computes on (manually, its collectives written out), and local results back to global.
constexpr std::string_view kGlobalToLocal = "xla.sdy.GlobalToLocalShape";
constexpr std::string_view kLocalToGlobal = "xla.sdy.LocalToGlobalShape";

class Partitioner {
 public:
  Partitioner(HloModule& module, int64_t n) : module_(module), n_(n), names_(module) {}

  absl::Status Run();

 private:
  absl::Status Propagate();
  absl::StatusOr<std::vector<Tiling>> Annotated(const HloInstruction& h);
  std::vector<Tiling> Derived(const HloInstruction& h);
  absl::StatusOr<Value> Partition(const HloInstruction& h);
  absl::StatusOr<Value> Fallback(const HloInstruction& h);
  absl::StatusOr<std::vector<Tiling>> SdyTilings(const HloInstruction& h, std::string_view key,
                                                 const std::vector<Shape>& shapes);
  absl::StatusOr<Value> PartitionManual(const HloInstruction& h);

  // Emitting.
  HloInstruction* Add(std::unique_ptr<HloInstruction> instr, std::string_view base);
  HloInstruction* AddAs(std::unique_ptr<HloInstruction> instr, const HloInstruction& h);
  std::unique_ptr<HloInstruction> Clone(const HloInstruction& h, Shape shape,
                                        std::vector<HloInstruction*> operands);
  Shape ShardShape(const Shape& full, const Tiling& t) {
    return ShapeLike(full.element_type(), t.ShardDims(full.dimensions()), full);
  }
  HloInstruction* ScalarS32(int64_t v);
  HloInstruction* PerDevice(const std::vector<int64_t>& values);
  void SetCollectiveAttrs(HloInstruction* c, const std::vector<std::vector<int64_t>>& groups);
  HloInstruction* AllGather(HloInstruction* x, const Tiling& t, int d, const Shape& full);
  HloInstruction* AllReduce(HloInstruction* x, const std::vector<std::vector<int64_t>>& groups,
                            HloComputation* reducer);
  HloComputation* SumComputation(PrimitiveType type);
  HloInstruction* Reshard(HloInstruction* x, const Tiling& from, const Tiling& to,
                          const Shape& full);
  HloInstruction* ReshardValue(const Value& v, const std::vector<Tiling>& to, const Shape& full);
  // Operand `o` of the instruction being partitioned, as an array tiled `t`.
  HloInstruction* Get(const HloInstruction* o, const Tiling& t) {
    return Reshard(values_[o].hlo, values_[o].tilings[0], t, o->shape());
  }

  HloModule& module_;
  int64_t n_;
  NameUniquer names_;
  HloComputation* entry_ = nullptr;
  std::unique_ptr<HloComputation> out_;
  absl::flat_hash_map<const HloInstruction*, std::vector<Tiling>> target_;
  absl::flat_hash_map<const HloInstruction*, Value> values_;
  // Values inside shard_map bodies: already local (their shapes are the shards').
  absl::flat_hash_set<const HloInstruction*> manual_;
  std::map<std::string, SdyMesh> meshes_;
  HloInstruction* partition_id_ = nullptr;
  absl::flat_hash_map<PrimitiveType, HloComputation*> sums_;
  int64_t next_channel_ = 1;
};

absl::StatusOr<std::vector<Tiling>> Partitioner::Annotated(const HloInstruction& h) {
  const std::string* text = h.attrs().FindExtra("sharding");
  std::vector<Shape> leaves = Leaves(h.shape());
  absl::StatusOr<HloSharding> s = ParseSharding(*text);
  if (!s.ok()) return Unimplemented(h, std::string(s.status().message()));
  std::vector<HloSharding> per_leaf;
  if (s->kind == HloSharding::Kind::kTuple) {
    if (!h.shape().IsTuple() || s->elements.size() != leaves.size())
      return Unimplemented(h, "a tuple sharding must have one element per tuple element");
    per_leaf = s->elements;
  } else {
    per_leaf.assign(leaves.size(), *s);
  }
  std::vector<Tiling> out;
  for (size_t i = 0; i < leaves.size(); ++i) {
    absl::StatusOr<Tiling> t = TilingOf(per_leaf[i], leaves[i].rank(), n_);
    if (!t.ok()) return Unimplemented(h, std::string(t.status().message()));
    out.push_back(*std::move(t));
  }
  return out;
}

std::vector<Tiling> Partitioner::Derived(const HloInstruction& h) {
  const int rank = h.shape().IsArray() ? h.shape().rank() : 0;
  auto first = [&](int i) -> const Tiling& { return target_[h.operand(i)][0]; };
  switch (h.opcode()) {
    case HloOpcode::kBroadcast: {
      Tiling t = Tiling::Replicated(rank, n_);
      const Tiling& o = first(0);
      for (size_t i = 0; i < h.dimensions().size(); ++i) {
        int64_t d = h.dimensions()[i];
        t.tiles[d] = o.tiles[i];
        for (int64_t p = 0; p < n_; ++p) t.index[p][d] = o.index[p][i];
      }
      return {t};
    }
    case HloOpcode::kTranspose:
      return {first(0).Project(h.dimensions())};
    case HloOpcode::kReduce:
      if (h.operand_count() == 2) {
        std::vector<int64_t> kept;
        for (int64_t d = 0; d < h.operand(0)->shape().rank(); ++d)
          if (std::find(h.dimensions().begin(), h.dimensions().end(), d) == h.dimensions().end())
            kept.push_back(d);
        return {first(0).Project(kept)};
      }
      break;
    case HloOpcode::kDot:
      if (h.operand_count() == 2) {
        DotPlan plan = PlanDot(h, first(0), first(1));
        return {plan.axes.Project(Range(0, plan.out_rank))};
      }
      break;
    case HloOpcode::kTuple: {
      std::vector<Tiling> out;
      for (int i = 0; i < h.operand_count(); ++i) out.push_back(first(i));
      return out;
    }
    case HloOpcode::kGetTupleElement:
      return {target_[h.operand(0)][h.tuple_index()]};
    case HloOpcode::kCustomCall:
      if (IsAnnotationCustomCall(h.attrs().custom_call_target)) return {first(0)};
      break;
    default:
      if (IsElementwiseOpcode(h.opcode())) {
        for (int i = 0; i < h.operand_count(); ++i)
          if (h.operand(i)->shape().rank() == rank && !first(i).IsReplicated()) return {first(i)};
      }
      break;
  }
  return ReplicatedLike(h.shape(), n_);
}

absl::Status Partitioner::Propagate() {
  std::vector<HloInstruction*> order = entry_->MakeInstructionPostOrder();
  for (const HloInstruction* h : order) {
    if (!Supported(h->shape()))
      return Unimplemented(*h, "nested tuples and tokens are not supported");
    bool manual_operand = std::any_of(h->operands().begin(), h->operands().end(),
                                      [&](const HloInstruction* o) { return manual_.contains(o); });
    if (IsCustomCall(*h, kLocalToGlobal)) {
      absl::StatusOr<std::vector<Tiling>> t =
          SdyTilings(*h, "xla.sdy.out_shardings", Leaves(h->shape()));
      if (!t.ok()) return t.status();
      target_[h] = *std::move(t);
    } else if (IsCustomCall(*h, kGlobalToLocal) || manual_operand) {
      manual_.insert(h);
      target_[h] = ReplicatedLike(h->shape(), n_);  // not resharded: see PartitionManual
    } else if (h->attrs().FindExtra("sharding")) {
      absl::StatusOr<std::vector<Tiling>> t = Annotated(*h);
      if (!t.ok()) return t.status();
      target_[h] = *std::move(t);
    } else {
      target_[h] = Derived(*h);
    }
  }
  // A broadcast left replicated next to tiled users is made tiled instead: it is cheaper to
  // broadcast into shards than to slice a broadcast.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const HloInstruction* h = *it;
    if (h->opcode() != HloOpcode::kBroadcast || h->attrs().FindExtra("sharding") ||
        manual_.contains(h) || !target_[h][0].IsReplicated())
      continue;
    for (const HloInstruction* u : h->users()) {
      if (IsElementwiseOpcode(u->opcode()) && u->shape().rank() == h->shape().rank() &&
          !target_[u][0].IsReplicated()) {
        target_[h] = {target_[u][0]};
        break;
      }
    }
  }
  for (const HloInstruction* h : order) {
    std::vector<Shape> leaves = Leaves(h->shape());
    for (size_t i = 0; i < leaves.size(); ++i)
      for (int d = 0; d < leaves[i].rank(); ++d)
        if (leaves[i].dimensions(d) % target_[h][i].tiles[d] != 0)
          return Unimplemented(*h, "dimension " + std::to_string(d) + " of size " +
                                       std::to_string(leaves[i].dimensions(d)) +
                                       " does not split into " +
                                       std::to_string(target_[h][i].tiles[d]) + " equal tiles");
  }
  return absl::OkStatus();
}

HloInstruction* Partitioner::Add(std::unique_ptr<HloInstruction> instr, std::string_view base) {
  instr->set_name(names_.Get(base));
  return out_->AddInstruction(std::move(instr));
}

HloInstruction* Partitioner::AddAs(std::unique_ptr<HloInstruction> instr, const HloInstruction& h) {
  instr->set_name(h.name());  // the old entry, the only other holder of the name, goes away
  return out_->AddInstruction(std::move(instr));
}

std::unique_ptr<HloInstruction> Partitioner::Clone(const HloInstruction& h, Shape shape,
                                                   std::vector<HloInstruction*> operands) {
  auto c = std::make_unique<HloInstruction>(h.opcode(), std::move(shape), std::move(operands));
  c->mutable_attrs() = h.attrs();
  auto& extra = c->mutable_attrs().extra;
  extra.erase(std::remove_if(extra.begin(), extra.end(),
                             [](const auto& kv) { return kv.first == "sharding"; }),
              extra.end());
  for (HloComputation* k : h.called_computations()) c->AppendCalledComputation(k);
  return c;
}

HloInstruction* Partitioner::ScalarS32(int64_t v) {
  return Add(HloInstruction::CreateConstant(Literal::Scalar(PrimitiveType::S32, v)), "constant");
}

// values[p] on partition p: a table indexed by partition-id (a constant when all agree).
HloInstruction* Partitioner::PerDevice(const std::vector<int64_t>& values) {
  if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; }))
    return ScalarS32(values[0]);
  if (partition_id_ == nullptr) {
    HloInstruction* id = Add(std::make_unique<HloInstruction>(HloOpcode::kPartitionId,
                                                              Shape::Scalar(PrimitiveType::U32)),
                             "partition-id");
    partition_id_ =
        Add(std::make_unique<HloInstruction>(HloOpcode::kConvert, Shape::Scalar(PrimitiveType::S32),
                                             std::vector<HloInstruction*>{id}),
            "partition-id.s32");
  }
  std::vector<double> doubles(values.begin(), values.end());
  Shape table_shape(PrimitiveType::S32, {n_});
  HloInstruction* table =
      Add(HloInstruction::CreateConstant(Literal::FromDoubles(table_shape, doubles)), "offsets");
  auto slice =
      std::make_unique<HloInstruction>(HloOpcode::kDynamicSlice, Shape(PrimitiveType::S32, {1}),
                                       std::vector<HloInstruction*>{table, partition_id_});
  slice->mutable_attrs().dynamic_slice_sizes = {1};
  HloInstruction* one = Add(std::move(slice), "offset");
  return Add(
      std::make_unique<HloInstruction>(HloOpcode::kReshape, Shape::Scalar(PrimitiveType::S32),
                                       std::vector<HloInstruction*>{one}),
      "offset");
}

void Partitioner::SetCollectiveAttrs(HloInstruction* c,
                                     const std::vector<std::vector<int64_t>>& groups) {
  c->mutable_attrs().SetExtra("channel_id", std::to_string(next_channel_++));
  c->mutable_attrs().SetExtra("replica_groups", ReplicaGroupsString(groups));
  c->mutable_attrs().SetExtra("use_global_device_ids", "true");
}

HloInstruction* Partitioner::AllGather(HloInstruction* x, const Tiling& t, int d,
                                       const Shape& full) {
  Tiling gathered = t;
  gathered.tiles[d] = 1;
  for (std::vector<int64_t>& idx : gathered.index) idx[d] = 0;
  auto g = std::make_unique<HloInstruction>(HloOpcode::kAllGather, ShardShape(full, gathered),
                                            std::vector<HloInstruction*>{x});
  g->mutable_attrs().dimensions = {d};
  g->mutable_attrs().has_dimensions = true;
  SetCollectiveAttrs(g.get(), GroupsAlong(t, {d}));
  return Add(std::move(g), "all-gather");
}

HloInstruction* Partitioner::AllReduce(HloInstruction* x,
                                       const std::vector<std::vector<int64_t>>& groups,
                                       HloComputation* reducer) {
  auto r = std::make_unique<HloInstruction>(HloOpcode::kAllReduce, x->shape(),
                                            std::vector<HloInstruction*>{x});
  r->AppendCalledComputation(reducer);
  SetCollectiveAttrs(r.get(), groups);
  return Add(std::move(r), "all-reduce");
}

HloComputation* Partitioner::SumComputation(PrimitiveType type) {
  if (auto it = sums_.find(type); it != sums_.end()) return it->second;
  std::string base = "spmd_sum." + std::string(PrimitiveTypeName(type));
  std::string name = base;
  for (int k = 1; module_.FindComputation(name); ++k) name = base + "." + std::to_string(k);
  auto c = std::make_unique<HloComputation>(name);
  HloInstruction* a =
      c->AddInstruction(HloInstruction::CreateParameter(0, Shape::Scalar(type), "a"));
  HloInstruction* b =
      c->AddInstruction(HloInstruction::CreateParameter(1, Shape::Scalar(type), "b"));
  HloOpcode op = type == PrimitiveType::PRED ? HloOpcode::kOr : HloOpcode::kAdd;
  c->set_root(c->AddInstruction(HloInstruction::CreateBinary(op, Shape::Scalar(type), a, b)));
  return sums_[type] = module_.AddComputation(std::move(c));
}

// Gathers the dimensions along which `to` cannot be cut from the current tiles, then cuts
// each device's tile of `to` out of what it holds.
HloInstruction* Partitioner::Reshard(HloInstruction* x, const Tiling& from, const Tiling& to,
                                     const Shape& full) {
  if (from == to) return x;
  Tiling cur = from;
  for (int d = 0; d < cur.rank(); ++d) {
    if (RefinesAlong(to, cur, d)) continue;
    x = AllGather(x, cur, d, full);
    cur.tiles[d] = 1;
    for (std::vector<int64_t>& idx : cur.index) idx[d] = 0;
  }
  if (cur == to) return x;
  std::vector<int64_t> sizes = to.ShardDims(full.dimensions());
  std::vector<HloInstruction*> operands{x};
  for (int d = 0; d < cur.rank(); ++d) {
    int64_t ratio = to.tiles[d] / cur.tiles[d];
    std::vector<int64_t> offsets;
    for (const std::vector<int64_t>& idx : to.index) offsets.push_back(idx[d] % ratio * sizes[d]);
    operands.push_back(PerDevice(offsets));
  }
  auto slice = std::make_unique<HloInstruction>(HloOpcode::kDynamicSlice, ShardShape(full, to),
                                                std::move(operands));
  slice->mutable_attrs().dynamic_slice_sizes = sizes;
  return Add(std::move(slice), "dynamic-slice");
}

HloInstruction* Partitioner::ReshardValue(const Value& v, const std::vector<Tiling>& to,
                                          const Shape& full) {
  if (v.tilings == to) return v.hlo;
  if (full.IsArray()) return Reshard(v.hlo, v.tilings[0], to[0], full);
  std::vector<HloInstruction*> elements;
  std::vector<Shape> shapes;
  for (int i = 0; i < full.tuple_size(); ++i) {
    HloInstruction* e = v.hlo->opcode() == HloOpcode::kTuple ? v.hlo->operand(i) : nullptr;
    if (e == nullptr) {
      auto gte = std::make_unique<HloInstruction>(HloOpcode::kGetTupleElement,
                                                  v.hlo->shape().tuple_shapes(i),
                                                  std::vector<HloInstruction*>{v.hlo});
      gte->mutable_attrs().tuple_index = i;
      e = Add(std::move(gte), "get-tuple-element");
    }
    elements.push_back(Reshard(e, v.tilings[i], to[i], full.tuple_shapes(i)));
    shapes.push_back(elements.back()->shape());
  }
  return Add(std::make_unique<HloInstruction>(HloOpcode::kTuple, Shape::Tuple(shapes), elements),
             "tuple");
}

// Whether every device may run `c` (and what it calls) whole on the same replicated values and
// get the same result: no collectives, random numbers or other side effects inside.
bool RunsAlikeEverywhere(const HloComputation& c) {
  for (const HloInstruction* i : c.instructions()) {
    HloOpcode op = i->opcode();
    bool annotation =
        op == HloOpcode::kCustomCall && IsAnnotationCustomCall(i->attrs().custom_call_target);
    if (!annotation && (IsSideEffectingOpcode(op) || IsCollectiveOpcode(op) || IsRandomOpcode(op)))
      return false;
    for (const HloComputation* k : i->called_computations())
      if (k && !RunsAlikeEverywhere(*k)) return false;
  }
  return true;
}

// Ops without a rule of their own run whole: operands replicated, result replicated. A loop
// or call over sharded values runs whole too when its body computes alike on every device.
absl::StatusOr<Value> Partitioner::Fallback(const HloInstruction& h) {
  bool sharded = false;
  for (const Tiling& t : target_[&h]) sharded = sharded || !t.IsReplicated();
  for (const HloInstruction* o : h.operands())
    for (const Tiling& t : values_[o].tilings) sharded = sharded || !t.IsReplicated();
  HloOpcode op = h.opcode();
  bool pure_control_flow = IsControlFlowOpcode(op);
  for (const HloComputation* k : h.called_computations())
    pure_control_flow = pure_control_flow && k && RunsAlikeEverywhere(*k);
  if (sharded && !pure_control_flow &&
      (IsSideEffectingOpcode(op) || IsCollectiveOpcode(op) || IsControlFlowOpcode(op) ||
       IsRandomOpcode(op)))
    return Unimplemented(h, "only runs on replicated values here");
  std::vector<HloInstruction*> operands;
  for (const HloInstruction* o : h.operands()) {
    operands.push_back(ReshardValue(values_[o], ReplicatedLike(o->shape(), n_), o->shape()));
  }
  HloInstruction* out = AddAs(Clone(h, h.shape(), operands), h);
  return Value{out, ReplicatedLike(h.shape(), n_)};
}

// The tilings Shardy's attribute `key` (in_shardings, out_shardings) gives the arrays `shapes`
// of a shard_map end, which must be manual over every axis of its mesh.
absl::StatusOr<std::vector<Tiling>> Partitioner::SdyTilings(const HloInstruction& h,
                                                            std::string_view key,
                                                            const std::vector<Shape>& shapes) {
  const std::string* attrs = h.attrs().FindExtra("frontend_attributes");
  std::string text = attrs ? SdyAttribute(*attrs, key) : "";
  if (text.empty()) return Unimplemented(h, "shard_map without " + std::string(key));
  absl::StatusOr<std::vector<HloSharding>> s = ParseSdyShardings(text, meshes_);
  if (!s.ok()) return Unimplemented(h, std::string(s.status().message()));
  if (s->size() != shapes.size())
    return Unimplemented(h, "expected one sharding per value in " + std::string(key));
  std::vector<std::string> manual = ParseSdyManualAxes(SdyAttribute(*attrs, "xla.sdy.manual_axes"));
  for (const auto& [name, mesh] : meshes_)
    for (size_t a = 0; a < mesh.axes.size(); ++a)
      if (mesh.sizes[a] > 1 &&
          std::find(manual.begin(), manual.end(), mesh.axes[a]) == manual.end())
        return Unimplemented(h, "shard_map manual over some mesh axes only (not '" + mesh.axes[a] +
                                    "') is not supported");
  std::vector<Tiling> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    absl::StatusOr<Tiling> t = TilingOf((*s)[i], shapes[i].rank(), n_);
    if (!t.ok()) return Unimplemented(h, std::string(t.status().message()));
    out.push_back(*std::move(t));
  }
  return out;
}

// shard_map: its operands resharded to in_shardings are the body's local values; the body runs
// as written on them; its results are the shards of out_shardings.
absl::StatusOr<Value> Partitioner::PartitionManual(const HloInstruction& h) {
  if (IsCustomCall(h, kGlobalToLocal)) {
    std::vector<Shape> globals;
    for (const HloInstruction* o : h.operands()) globals.push_back(o->shape());
    absl::StatusOr<std::vector<Tiling>> in = SdyTilings(h, "xla.sdy.in_shardings", globals);
    if (!in.ok()) return in.status();
    std::vector<HloInstruction*> locals;
    std::vector<Shape> shapes;
    for (int i = 0; i < h.operand_count(); ++i) {
      const HloInstruction* o = h.operand(i);
      if (!o->shape().IsArray()) return Unimplemented(h, "shard_map of a tuple");
      locals.push_back(Reshard(values_[o].hlo, values_[o].tilings[0], (*in)[i], o->shape()));
      shapes.push_back(locals.back()->shape());
    }
    HloInstruction* out = h.shape().IsTuple()
                              ? AddAs(std::make_unique<HloInstruction>(
                                          HloOpcode::kTuple, Shape::Tuple(shapes), locals),
                                      h)
                              : locals[0];
    return Value{out, ReplicatedLike(h.shape(), n_)};
  }
  if (IsCustomCall(h, kLocalToGlobal)) {
    std::vector<HloInstruction*> locals;
    std::vector<Shape> shapes;
    for (const HloInstruction* o : h.operands()) {
      if (!manual_.contains(o)) return Unimplemented(h, "expected the results of a shard_map body");
      locals.push_back(values_[o].hlo);
      shapes.push_back(locals.back()->shape());
    }
    HloInstruction* out = h.shape().IsTuple()
                              ? AddAs(std::make_unique<HloInstruction>(
                                          HloOpcode::kTuple, Shape::Tuple(shapes), locals),
                                      h)
                              : locals[0];
    return Value{out, target_[&h]};
  }
  // Inside the body: the same instruction on local values (replicated ones from outside, such
  // as constants, are the same everywhere).
  std::vector<HloInstruction*> operands;
  for (const HloInstruction* o : h.operands())
    operands.push_back(manual_.contains(o)
                           ? values_[o].hlo
                           : ReshardValue(values_[o], ReplicatedLike(o->shape(), n_), o->shape()));
  return Value{AddAs(Clone(h, h.shape(), operands), h), ReplicatedLike(h.shape(), n_)};
}

absl::StatusOr<Value> Partitioner::Partition(const HloInstruction& h) {
  if (manual_.contains(&h) || IsCustomCall(h, kLocalToGlobal)) return PartitionManual(h);
  const std::vector<Tiling>& target = target_[&h];
  const Shape& shape = h.shape();
  switch (h.opcode()) {
    case HloOpcode::kParameter: {
      Shape s = shape;
      if (shape.IsArray()) {
        s = ShardShape(shape, target[0]);
      } else {
        for (int i = 0; i < shape.tuple_size(); ++i)
          s.mutable_tuple_shapes()[i] = ShardShape(shape.tuple_shapes(i), target[i]);
      }
      return Value{AddAs(Clone(h, s, {}), h), target};
    }
    case HloOpcode::kTuple: {
      std::vector<HloInstruction*> operands;
      std::vector<Shape> shapes;
      Value v;
      for (const HloInstruction* o : h.operands()) {
        operands.push_back(values_[o].hlo);
        shapes.push_back(values_[o].hlo->shape());
        v.tilings.push_back(values_[o].tilings[0]);
      }
      v.hlo = AddAs(Clone(h, Shape::Tuple(shapes), operands), h);
      return v;
    }
    case HloOpcode::kGetTupleElement: {
      const Value& t = values_[h.operand(0)];
      int64_t i = h.tuple_index();
      if (t.hlo->opcode() == HloOpcode::kTuple) return Value{t.hlo->operand(i), {t.tilings[i]}};
      return Value{AddAs(Clone(h, t.hlo->shape().tuple_shapes(i), {t.hlo}), h), {t.tilings[i]}};
    }
    case HloOpcode::kBroadcast: {
      HloInstruction* o = Get(h.operand(0), target[0].Project(h.dimensions()));
      return Value{AddAs(Clone(h, ShardShape(shape, target[0]), {o}), h), target};
    }
    case HloOpcode::kTranspose: {
      std::vector<int64_t> inverse(shape.rank());
      for (int i = 0; i < shape.rank(); ++i) inverse[h.dimensions()[i]] = i;
      HloInstruction* o = Get(h.operand(0), target[0].Project(inverse));
      return Value{AddAs(Clone(h, ShardShape(shape, target[0]), {o}), h), target};
    }
    case HloOpcode::kReduce: {
      if (h.operand_count() != 2) break;
      const Tiling& in = values_[h.operand(0)].tilings[0];
      std::vector<int64_t> kept, split;
      for (int64_t d = 0; d < in.rank(); ++d) {
        bool reduced =
            std::find(h.dimensions().begin(), h.dimensions().end(), d) != h.dimensions().end();
        if (!reduced) kept.push_back(d);
        if (reduced && in.tiles[d] > 1) split.push_back(d);
      }
      if (!split.empty() && !InitIsIdentity(h)) break;  // then reduced whole
      Tiling out = in.Project(kept);
      HloInstruction* init = Get(h.operand(1), Tiling::Replicated(0, n_));
      HloInstruction* local =
          AddAs(Clone(h, ShardShape(shape, out), {values_[h.operand(0)].hlo, init}), h);
      if (!split.empty()) local = AllReduce(local, GroupsAlong(in, split), h.to_apply());
      return Value{local, {out}};
    }
    case HloOpcode::kDot: {
      if (h.operand_count() != 2) break;
      DotPlan plan = PlanDot(h, values_[h.operand(0)].tilings[0], values_[h.operand(1)].tilings[0]);
      HloInstruction* lhs = Get(h.operand(0), plan.axes.Project(plan.lhs_axes));
      HloInstruction* rhs = Get(h.operand(1), plan.axes.Project(plan.rhs_axes));
      Tiling out = plan.axes.Project(Range(0, plan.out_rank));
      HloInstruction* local = AddAs(Clone(h, ShardShape(shape, out), {lhs, rhs}), h);
      std::vector<int64_t> split;
      for (int64_t a = plan.out_rank; a < plan.axes.rank(); ++a)
        if (plan.axes.tiles[a] > 1) split.push_back(a);
      if (!split.empty())
        local =
            AllReduce(local, GroupsAlong(plan.axes, split), SumComputation(shape.element_type()));
      return Value{local, {out}};
    }
    case HloOpcode::kCustomCall:
      if (IsAnnotationCustomCall(h.attrs().custom_call_target)) return values_[h.operand(0)];
      if (h.attrs().custom_call_target.rfind("SPMD", 0) == 0)
        return Unimplemented(h, "manual partitioning is not supported");
      break;
    default:
      if (IsElementwiseOpcode(h.opcode()) && shape.IsArray()) {
        std::vector<HloInstruction*> operands;
        for (const HloInstruction* o : h.operands())
          operands.push_back(o->shape().rank() == shape.rank()
                                 ? Get(o, target[0])
                                 : Get(o, Tiling::Replicated(o->shape().rank(), n_)));
        return Value{AddAs(Clone(h, ShardShape(shape, target[0]), operands), h), target};
      }
      break;
  }
  return Fallback(h);
}

absl::Status Partitioner::Run() {
  entry_ = module_.entry();
  // Shardings inside called computations (JAX's constraints in loop bodies and reducers) are
  // hints only here: those computations run whole, or on shard_map's local values.
  for (const HloComputation* c : module_.computations()) {
    if (c == entry_) continue;
    for (const HloInstruction* h : c->instructions())
      if (const std::string* ch = h->attrs().FindExtra("channel_id"))
        next_channel_ = std::max<int64_t>(next_channel_, std::stoll(*ch) + 1);
  }
  for (const HloInstruction* h : entry_->instructions())
    if (const std::string* ch = h->attrs().FindExtra("channel_id"))
      next_channel_ = std::max<int64_t>(next_channel_, std::stoll(*ch) + 1);
  for (const auto& [k, v] : module_.attributes()) {
    if (k != "frontend_attributes") continue;
    absl::StatusOr<std::map<std::string, SdyMesh>> meshes = ParseSdyMeshes(v);
    if (!meshes.ok()) return meshes.status();
    meshes_ = *std::move(meshes);
  }
  if (absl::Status s = Propagate(); !s.ok()) return s;

  // Dead instructions (JAX leaves annotated copies behind) are dropped rather than given
  // collectives of their own; parameters stay, they are the signature.
  absl::flat_hash_set<const HloInstruction*> live;
  std::vector<const HloInstruction*> stack{entry_->root()};
  while (!stack.empty()) {
    const HloInstruction* h = stack.back();
    stack.pop_back();
    if (!live.insert(h).second) continue;
    for (const HloInstruction* o : h->operands()) stack.push_back(o);
    for (const HloInstruction* o : h->control_predecessors()) stack.push_back(o);
  }
  out_ = std::make_unique<HloComputation>(entry_->name());
  for (const HloInstruction* h : entry_->MakeInstructionPostOrder()) {
    if (!live.contains(h) && h->opcode() != HloOpcode::kParameter) continue;
    absl::StatusOr<Value> v = Partition(*h);
    if (!v.ok()) return v.status();
    v->hlo = ReshardValue(*v, target_[h], h->shape());
    v->tilings = target_[h];
    values_[h] = *std::move(v);
  }
  for (const HloInstruction* h : entry_->instructions()) {
    if (!live.contains(h)) continue;
    for (const HloInstruction* p : h->control_predecessors())
      if (values_[h].hlo != values_[p].hlo) values_[h].hlo->AddControlPredecessor(values_[p].hlo);
  }
  out_->set_root(values_[entry_->root()].hlo);

  // The new entry replaces the old one, and the header describes it.
  HloComputation* entry = module_.AddComputation(std::move(out_), /*is_entry=*/true);
  RemoveDeadFrom(entry, entry->instructions());  // tuples a get-tuple-element looked through
  module_.RemoveUnusedComputations();
  // Scalars print without a layout there, as XLA writes them.
  auto text = [](const Shape& s) { return absl::StrReplaceAll(s.ToString(), {{"[]{}", "[]"}}); };
  std::string layout = "{(";
  for (int i = 0; i < entry->num_parameters(); ++i)
    layout += (i ? ", " : "") + text(entry->parameter(i)->shape());
  layout += ")->" + text(entry->root()->shape()) + "}";
  bool has_partitions = false;
  for (auto& [k, v] : module_.attributes()) {
    if (k == "entry_computation_layout") v = layout;
    if (k == "num_partitions") {
      v = std::to_string(n_);
      has_partitions = true;
    }
  }
  if (!has_partitions) module_.attributes().emplace_back("num_partitions", std::to_string(n_));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> SpmdPartitioner::Run(HloModule& module) {
  HloComputation* entry = module.entry();
  if (entry == nullptr) return false;
  int64_t n = num_partitions_;
  int64_t named = 0;  // devices the shardings name
  bool any = false;
  for (const HloInstruction* h : entry->instructions()) {
    const std::string* text = h->attrs().FindExtra("sharding");
    if (!text) continue;
    any = true;
    absl::StatusOr<HloSharding> s = ParseSharding(*text);
    if (!s.ok()) return Unimplemented(*h, std::string(s.status().message()));
    std::vector<HloSharding> all =
        s->kind == HloSharding::Kind::kTuple ? s->elements : std::vector{*s};
    for (const HloSharding& e : all)
      named = std::max(named, static_cast<int64_t>(e.devices.size()));
  }
  if (!any) return false;
  for (const auto& [k, v] : module.attributes())
    if (n == 0 && k == "num_partitions") n = std::stoll(v);
  if (n == 0) n = std::max<int64_t>(named, 1);
  Partitioner p(module, n);
  if (absl::Status s = p.Run(); !s.ok()) return s;
  return true;
}

}  // namespace kiln
