// Graph ops that index with integer tensors: Gather/GatherV2 (`axis` attribute, TF's axis
// input; batch_dims 0 only; out-of-range indices clamp like XLA's gather, where TF's CPU
// kernel reports an error) and OneHot (`depth`, `on_value`, `off_value`, `axis`, result
// type `T`, default f32).
#include "core/graph/ops/ops.h"
#include "fmt/format.h"
#include "hlo/instruction.h"

namespace kiln::graph {
namespace {

using Infos = std::vector<ValueInfo>;
using Result = absl::StatusOr<std::vector<HloInstruction*>>;

absl::Status CheckIndices(const ValueInfo& v) {
  if (!IsInteger(v.dtype)) {
    return absl::InvalidArgumentError(
        fmt::format("indices must be an integer type, got {}", v.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> GatherAxis(const Node& n, int rank) {
  if (absl::StatusOr<int64_t> b = AttrInt(n, "batch_dims", 0); !b.ok() || *b != 0) {
    return absl::InvalidArgumentError("batch_dims other than 0 is not supported");
  }
  absl::StatusOr<int64_t> axis = AttrInt(n, "axis", 0);
  if (!axis.ok()) return axis.status();
  absl::StatusOr<std::vector<int64_t>> a = NormalizeAxes({*axis}, rank);
  if (!a.ok()) return a.status();
  return (*a)[0];
}

// params[:axis] + indices.shape + params[axis+1:].
absl::StatusOr<Infos> GatherShape(const Node& n, const Infos& in) {
  if (absl::Status s = CheckIndices(in[1]); !s.ok()) return s;
  const TensorShape& p = in[0].shape;
  if (p.rank() < 1) return absl::InvalidArgumentError("params must have rank >= 1");
  absl::StatusOr<int64_t> axis = GatherAxis(n, p.rank());
  if (!axis.ok()) return axis.status();
  TensorShape out{{p.dims.begin(), p.dims.begin() + *axis}};
  out.dims.insert(out.dims.end(), in[1].shape.dims.begin(), in[1].shape.dims.end());
  out.dims.insert(out.dims.end(), p.dims.begin() + *axis + 1, p.dims.end());
  return Infos{{in[0].dtype, out}};
}

// One XLA gather: each index picks a size-1 slice along `axis`, which is collapsed; the
// params dimensions around it are the offset dimensions of the result.
Result LowerGather(LowerContext& ctx) {
  HloInstruction* params = ctx.input(0);
  HloInstruction* indices = ctx.input(1);
  const int64_t pr = params->shape().rank(), ir = indices->shape().rank();
  absl::StatusOr<int64_t> axis = GatherAxis(ctx.node(), static_cast<int>(pr));
  if (!axis.ok()) return axis.status();
  GatherDimensionNumbers dn;
  for (int64_t i = 0; i < pr - 1; ++i) dn.offset_dims.push_back(i < *axis ? i : i + ir);
  dn.collapsed_slice_dims = {*axis};
  dn.start_index_map = {*axis};
  dn.index_vector_dim = ir;
  std::vector<int64_t> sizes = params->shape().dimensions();
  sizes[*axis] = 1;
  const ValueInfo& out = ctx.output(0);
  auto g = std::make_unique<HloInstruction>(HloOpcode::kGather,
                                            LowerContext::HloShape(out.dtype, out.shape.dims),
                                            std::vector<HloInstruction*>{params, indices});
  g->mutable_attrs().gather_dimension_numbers = dn;
  g->mutable_attrs().gather_slice_sizes = sizes;
  return std::vector<HloInstruction*>{ctx.Add(std::move(g))};
}

absl::StatusOr<int64_t> OneHotAxis(const Node& n, int indices_rank) {
  absl::StatusOr<int64_t> axis = AttrInt(n, "axis", -1);
  if (!axis.ok()) return axis.status();
  if (*axis < -1 || *axis > indices_rank) {
    return absl::InvalidArgumentError(
        fmt::format("axis {} is out of range for indices of rank {} (-1..{})", *axis, indices_rank,
                    indices_rank));
  }
  return *axis == -1 ? indices_rank : *axis;
}

absl::StatusOr<Infos> OneHotShape(const Node& n, const Infos& in) {
  if (absl::Status s = CheckIndices(in[0]); !s.ok()) return s;
  const int64_t depth = n.FindAttr("depth")->i();
  if (depth < 0) return absl::InvalidArgumentError(fmt::format("depth {} is negative", depth));
  for (const char* v : {"on_value", "off_value"}) {
    const AttrValue* a = n.FindAttr(v);
    if (a != nullptr && a->AsNumbers().size() != 1) {
      return absl::InvalidArgumentError(fmt::format("{} must be one number", v));
    }
  }
  absl::StatusOr<int64_t> axis = OneHotAxis(n, in[0].shape.rank());
  if (!axis.ok()) return axis.status();
  TensorShape out = in[0].shape;
  out.dims.insert(out.dims.begin() + *axis, depth);
  const AttrValue* t = n.FindAttr("T");
  return Infos{{t == nullptr ? PrimitiveType::F32 : t->type(), out}};
}

// on where iota(axis) == indices (broadcast across axis), else off; negative or too large
// indices match nothing, so their row is all off_value, as in TF.
Result LowerOneHot(LowerContext& ctx) {
  const ValueInfo& out = ctx.output(0);
  HloInstruction* indices = ctx.input(0);
  absl::StatusOr<int64_t> axis = OneHotAxis(ctx.node(), indices->shape().rank());
  if (!axis.ok()) return axis.status();
  std::vector<int64_t> mapping;
  for (int64_t i = 0; i < static_cast<int64_t>(out.shape.dims.size()); ++i) {
    if (i != *axis) mapping.push_back(i);
  }
  HloInstruction* hit = ctx.Compare(
      ComparisonDirection::kEq, ctx.Iota(indices->shape().element_type(), out.shape.dims, *axis),
      ctx.Broadcast(indices, out.shape.dims, mapping));
  auto value = [&](const char* name, double fallback) {
    const AttrValue* a = ctx.node().FindAttr(name);
    return ctx.BroadcastTo(
        ctx.ScalarConstant(out.dtype, a == nullptr ? fallback : a->AsNumbers()[0]), out.shape.dims);
  };
  return std::vector<HloInstruction*>{ctx.Select(hit, value("on_value", 1), value("off_value", 0))};
}

}  // namespace

void RegisterIndexOps(OpRegistry& r) {
  for (const char* name : {"Gather", "GatherV2"}) {
    r.Register({.name = name,
                .min_inputs = 2,
                .max_inputs = 2,
                .attrs = {{"axis", AttrKind::kInt}, {"batch_dims", AttrKind::kInt}},
                .shape_fn = GatherShape,
                .lower = LowerGather});
  }
  r.Register({.name = "OneHot",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"depth", AttrKind::kInt, true},
                        {"on_value", AttrKind::kFloat, false, true},
                        {"off_value", AttrKind::kFloat, false, true},
                        {"axis", AttrKind::kInt}},
              .shape_fn = OneHotShape,
              .lower = LowerOneHot});
}

}  // namespace kiln::graph
