// Graph ops that make or rearrange arrays: Placeholder, Const, Identity, Reshape, Transpose,
// Fill (`dims` attribute, scalar value input), ZerosLike/OnesLike, ExpandDims (`axis`
// attribute), Squeeze (`squeeze_dims`, default: every size-1 dimension).
// Slicing/joining ops: slice_ops.cc; gathers and one-hot: index_ops.cc.
#include <algorithm>

#include "absl/status/status.h"
#include "core/graph/ops/ops.h"
#include "fmt/format.h"
#include "hlo/instruction.h"

namespace kiln::graph {
namespace {

using Infos = std::vector<ValueInfo>;

absl::StatusOr<Infos> PlaceholderShape(const Node& n, const Infos&) {
  return Infos{{n.FindAttr("dtype")->type(), n.FindAttr("shape")->shape()}};
}

absl::StatusOr<Infos> ConstShape(const Node& n, const Infos&) {
  const AttrValue& value = *n.FindAttr("value");
  const size_t count = value.AsNumbers().size();
  const bool is_list = value.kind() == AttrKind::kInts || value.kind() == AttrKind::kFloats;
  TensorShape shape;
  if (const AttrValue* s = n.FindAttr("shape")) {
    shape = s->shape();
    if (!shape.IsFullyDefined()) return absl::InvalidArgumentError("Const shape must be known");
    if (is_list && static_cast<int64_t>(count) != shape.num_elements()) {
      return absl::InvalidArgumentError(
          fmt::format("Const value has {} elements but shape {} needs {}", count, shape.ToString(),
                      shape.num_elements()));
    }
  } else if (is_list) {
    shape.dims = {static_cast<int64_t>(count)};
  }
  return Infos{{n.FindAttr("dtype")->type(), shape}};
}

absl::StatusOr<std::vector<HloInstruction*>> LowerConst(LowerContext& ctx) {
  const ValueInfo& out = ctx.output(0);
  std::vector<double> vals = ctx.node().FindAttr("value")->AsNumbers();
  if (vals.size() == 1 && out.shape.num_elements() != 1) {
    vals.assign(out.shape.num_elements(), vals[0]);  // a scalar value fills the shape
  }
  Literal l = Literal::FromDoubles(LowerContext::HloShape(out.dtype, out.shape.dims), vals);
  return std::vector<HloInstruction*>{ctx.Add(HloInstruction::CreateConstant(std::move(l)))};
}

absl::StatusOr<Infos> ReshapeShape(const Node& n, const Infos& in) {
  TensorShape want = n.FindAttr("shape")->shape();
  int unknown = -1;
  int64_t known = 1;
  for (int i = 0; i < want.rank(); ++i) {
    if (want.dims[i] == -1 && unknown < 0) {
      unknown = i;
    } else if (want.dims[i] < 0) {
      return absl::InvalidArgumentError("Reshape shape may have at most one -1");
    } else {
      known *= want.dims[i];
    }
  }
  const int64_t have = in[0].shape.num_elements();
  if (have >= 0) {
    if (unknown >= 0) {
      if (known == 0 || have % known != 0) {
        return absl::InvalidArgumentError(
            fmt::format("cannot reshape {} elements into {}", have, want.ToString()));
      }
      want.dims[unknown] = have / known;
    } else if (known != have) {
      return absl::InvalidArgumentError(
          fmt::format("cannot reshape {} ({} elements) into {} ({} elements)",
                      in[0].shape.ToString(), have, want.ToString(), known));
    }
  }
  return Infos{{in[0].dtype, want}};
}

absl::StatusOr<Infos> TransposeShape(const Node& n, const Infos& in) {
  const std::vector<int64_t>& perm = n.FindAttr("perm")->ints();
  const TensorShape& s = in[0].shape;
  std::vector<bool> seen(s.rank(), false);
  if (static_cast<int>(perm.size()) != s.rank()) {
    return absl::InvalidArgumentError(
        fmt::format("perm has {} entries for an operand of rank {}", perm.size(), s.rank()));
  }
  TensorShape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= s.rank() || seen[p]) {
      return absl::InvalidArgumentError(
          fmt::format("perm [{}] is not a permutation", fmt::join(perm, ",")));
    }
    seen[p] = true;
    out.dims.push_back(s.dims[p]);
  }
  return Infos{{in[0].dtype, out}};
}

absl::StatusOr<Infos> FillShape(const Node& n, const Infos& in) {
  const TensorShape& dims = n.FindAttr("dims")->shape();
  if (!dims.IsFullyDefined()) {
    return absl::InvalidArgumentError(fmt::format("Fill dims {} must be known", dims.ToString()));
  }
  if (in[0].shape.rank() != 0) {
    return absl::InvalidArgumentError(
        fmt::format("Fill value must be a scalar, got {}", in[0].ToString()));
  }
  return Infos{{in[0].dtype, dims}};
}

absl::StatusOr<Infos> ExpandDimsShape(const Node& n, const Infos& in) {
  const int rank = in[0].shape.rank();
  int64_t axis = n.FindAttr("axis")->i();
  if (axis < -rank - 1 || axis > rank) {
    return absl::InvalidArgumentError(
        fmt::format("axis {} is out of range for inserting into rank {}", axis, rank));
  }
  if (axis < 0) axis += rank + 1;
  TensorShape out = in[0].shape;
  out.dims.insert(out.dims.begin() + axis, 1);
  return Infos{{in[0].dtype, out}};
}

absl::StatusOr<Infos> SqueezeShape(const Node& n, const Infos& in) {
  const TensorShape& s = in[0].shape;
  std::vector<int64_t> axes;
  if (const AttrValue* a = n.FindAttr("squeeze_dims")) {
    absl::StatusOr<std::vector<int64_t>> norm = NormalizeAxes(a->ints(), s.rank());
    if (!norm.ok()) return norm.status();
    axes = *norm;
    for (int64_t ax : axes) {
      if (s.dims[ax] != 1 && s.dims[ax] >= 0) {
        return absl::InvalidArgumentError(
            fmt::format("cannot squeeze dimension {} of {}: its size is not 1", ax, s.ToString()));
      }
    }
  } else {
    for (int i = 0; i < s.rank(); ++i) {
      if (s.dims[i] < 0) {
        return absl::InvalidArgumentError(fmt::format(
            "Squeeze of {} needs squeeze_dims (dimension {} is unknown)", s.ToString(), i));
      }
      if (s.dims[i] == 1) axes.push_back(i);
    }
  }
  TensorShape out;
  for (int i = 0; i < s.rank(); ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.dims.push_back(s.dims[i]);
  }
  return Infos{{in[0].dtype, out}};
}

// A lowering that only reshapes its input to the inferred output shape.
absl::StatusOr<std::vector<HloInstruction*>> LowerAsReshape(LowerContext& ctx) {
  return std::vector<HloInstruction*>{ctx.Reshape(ctx.input(0), ctx.output(0).shape.dims)};
}

LowerFn LowerFilledLike(double value) {
  return [value](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
    const ValueInfo& out = ctx.output(0);
    return std::vector<HloInstruction*>{
        ctx.BroadcastTo(ctx.ScalarConstant(out.dtype, value), out.shape.dims)};
  };
}

}  // namespace

void RegisterArrayOps(OpRegistry& r) {
  r.Register({.name = "Placeholder",
              .attrs = {{"dtype", AttrKind::kType, true}, {"shape", AttrKind::kShape, true}},
              .shape_fn = PlaceholderShape,
              // Lowered as an entry parameter by the lowering driver itself.
              .lower = [](LowerContext&) -> absl::StatusOr<std::vector<HloInstruction*>> {
                return absl::InternalError("Placeholder is lowered as a parameter");
              }});
  r.Register({.name = "Const",
              .attrs = {{"dtype", AttrKind::kType, true},
                        {"shape", AttrKind::kShape, false},
                        {"value", AttrKind::kFloats, true, true}},
              .shape_fn = ConstShape,
              .lower = LowerConst});
  r.Register({.name = "Identity",
              .min_inputs = 1,
              .max_inputs = 1,
              .shape_fn = [](const Node&, const Infos& in) -> absl::StatusOr<Infos> { return in; },
              .lower = [](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
                return std::vector<HloInstruction*>{ctx.input(0)};
              }});
  r.Register({.name = "Reshape",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"shape", AttrKind::kShape, true}},
              .shape_fn = ReshapeShape,
              .lower = LowerAsReshape});
  r.Register({.name = "ExpandDims",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"axis", AttrKind::kInt, true}},
              .shape_fn = ExpandDimsShape,
              .lower = LowerAsReshape});
  r.Register({.name = "Squeeze",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"squeeze_dims", AttrKind::kInts}},
              .shape_fn = SqueezeShape,
              .lower = LowerAsReshape});
  r.Register({.name = "Fill",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"dims", AttrKind::kShape, true}},
              .shape_fn = FillShape,
              .lower = [](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
                return std::vector<HloInstruction*>{
                    ctx.BroadcastTo(ctx.input(0), ctx.output(0).shape.dims)};
              }});
  r.Register({.name = "ZerosLike",
              .min_inputs = 1,
              .max_inputs = 1,
              .shape_fn = [](const Node&, const Infos& in) -> absl::StatusOr<Infos> { return in; },
              .lower = LowerFilledLike(0)});
  r.Register({.name = "OnesLike",
              .min_inputs = 1,
              .max_inputs = 1,
              .shape_fn = [](const Node&, const Infos& in) -> absl::StatusOr<Infos> { return in; },
              .lower = LowerFilledLike(1)});
  r.Register({.name = "Transpose",
              .min_inputs = 1,
              .max_inputs = 1,
              .attrs = {{"perm", AttrKind::kInts, true}},
              .shape_fn = TransposeShape,
              .lower = [](LowerContext& ctx) -> absl::StatusOr<std::vector<HloInstruction*>> {
                auto t = std::make_unique<HloInstruction>(
                    HloOpcode::kTranspose,
                    LowerContext::HloShape(ctx.output(0).dtype, ctx.output(0).shape.dims),
                    std::vector<HloInstruction*>{ctx.input(0)});
                t->mutable_attrs().dimensions = ctx.node().FindAttr("perm")->ints();
                t->mutable_attrs().has_dimensions = true;
                return std::vector<HloInstruction*>{ctx.Add(std::move(t))};
              }});
}

}  // namespace kiln::graph
