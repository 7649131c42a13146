// Ops on variable state, TensorFlow 1 style: VariableV2 (a variable, initialized from its
// `init` attributes on first use) and the updates whose first input is a reference to one:
// Assign, AssignAdd, AssignSub, ApplyGradientDescent. Variables live on the host (see
// core/graph/variable_store.h), so these run as stateful host kernels; the placer
// colocates each update with its variable (core/graph/colocation.h).
#include "core/graph/initializers.h"
#include "core/graph/ops/ops.h"
#include "core/graph/variable_store.h"
#include "fmt/format.h"

namespace kiln::graph {
namespace {

using Infos = std::vector<ValueInfo>;
using Literals = std::vector<Literal>;

constexpr const char* kHostState = "variable state lives on the host";

absl::StatusOr<Infos> VariableShape(const Node& n, const Infos&) {
  if (absl::Status s = CheckInitializer(n); !s.ok()) return s;
  return Infos{{n.FindAttr("dtype")->type(), n.FindAttr("shape")->shape()}};
}

absl::Status MatchesVariable(const ValueInfo& var, const ValueInfo& v, const char* what) {
  bool ok = var.dtype == v.dtype && var.shape.rank() == v.shape.rank();
  for (int i = 0; ok && i < v.shape.rank(); ++i) {
    ok = v.shape.dims[i] < 0 || v.shape.dims[i] == var.shape.dims[i];
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        fmt::format("{} {} does not match the variable's {}", what, v.ToString(), var.ToString()));
  }
  return absl::OkStatus();
}

// Assign / AssignAdd / AssignSub (ref, value): the value has the variable's type and shape.
absl::StatusOr<Infos> AssignShape(const Node& n, const Infos& in) {
  if (n.op != "Assign" && !IsFloating(in[0].dtype) && !IsInteger(in[0].dtype)) {
    return absl::InvalidArgumentError(
        fmt::format("{} needs a numeric variable, got {}", n.op, in[0].ToString()));
  }
  if (absl::Status s = MatchesVariable(in[0], in[1], "value"); !s.ok()) return s;
  return Infos{in[0]};
}

// ApplyGradientDescent(var, alpha, delta): var -= alpha * delta, alpha a scalar.
absl::StatusOr<Infos> ApplyGradientDescentShape(const Node&, const Infos& in) {
  if (!IsFloating(in[0].dtype)) {
    return absl::InvalidArgumentError(
        fmt::format("ApplyGradientDescent needs a float variable, got {}", in[0].ToString()));
  }
  if (in[1].dtype != in[0].dtype || in[1].shape.rank() != 0) {
    return absl::InvalidArgumentError(fmt::format(
        "alpha must be a scalar {}, got {}", PrimitiveTypeName(in[0].dtype), in[1].ToString()));
  }
  if (absl::Status s = MatchesVariable(in[0], in[2], "delta"); !s.ok()) return s;
  return Infos{in[0]};
}

// out[i] = f(var[i], x[i]), in float for f32 variables (the precision of a NumPy float32
// reference), in double otherwise.
template <typename F>
absl::StatusOr<Literal> Elementwise(const Literal& var, const Literal& x, F f) {
  // Shapes were inferred before the run; a host op's data-dependent shape is checked here.
  if (x.shape().element_type() != var.shape().element_type() ||
      x.shape().dimensions() != var.shape().dimensions()) {
    return absl::InvalidArgumentError(fmt::format("value {} does not match the variable's {}",
                                                  x.shape().ToString(false),
                                                  var.shape().ToString(false)));
  }
  Literal out = var;
  const int64_t n = var.element_count();
  if (var.shape().element_type() == PrimitiveType::F32) {
    std::span<float> o = out.data<float>();
    std::span<const float> b = x.data<float>();
    for (int64_t i = 0; i < n; ++i) o[i] = f(o[i], b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      out.SetFromDouble(i, f(var.GetAsDouble(i), x.GetAsDouble(i)));
    }
  }
  return out;
}

// Updates `node`'s variable (its input 0) to f(current value, x) and stages it.
template <typename F>
absl::StatusOr<Literals> Update(const Node& node, const Literal& x, VariableStore& vars, F f) {
  const std::string& var = node.inputs[0].node;
  absl::StatusOr<Literal> cur = vars.Current(var);
  if (!cur.ok()) return cur.status();
  absl::StatusOr<Literal> next = Elementwise(*cur, x, f);
  if (!next.ok()) return next.status();
  Literals out;
  out.push_back(*next);
  if (absl::Status s = vars.Stage(var, std::move(*next)); !s.ok()) return s;
  return out;
}

OpDef StateOp(const char* name, int inputs, ShapeFn shape_fn, StatefulKernel kernel) {
  return {.name = name,
          .min_inputs = inputs,
          .max_inputs = inputs,
          .shape_fn = shape_fn,
          .host_only_reason = kHostState,
          .stateful_kernel = std::move(kernel),
          .num_ref_inputs = inputs > 0 ? 1 : 0};
}

}  // namespace

void RegisterStateOps(OpRegistry& r) {
  OpDef var =
      StateOp("VariableV2", 0, VariableShape,
              [](const Node& n, const Literals&, VariableStore& vars) -> absl::StatusOr<Literals> {
                absl::StatusOr<Literal> v = vars.Read(n);
                if (!v.ok()) return v.status();
                Literals out;
                out.push_back(std::move(*v));
                return out;
              });
  var.attrs = {{"dtype", AttrKind::kType, true}, {"shape", AttrKind::kShape, true},
               {"init", AttrKind::kString},      {"value", AttrKind::kFloats, false, true},
               {"stddev", AttrKind::kFloat},     {"scale", AttrKind::kFloat},
               {"seed", AttrKind::kInt}};
  var.is_variable = true;
  r.Register(std::move(var));
  r.Register(
      StateOp("Assign", 2, AssignShape, [](const Node& n, const Literals& in, VariableStore& vars) {
        return Update(n, in[1], vars, [](auto, auto x) { return x; });
      }));
  r.Register(StateOp("AssignAdd", 2, AssignShape,
                     [](const Node& n, const Literals& in, VariableStore& vars) {
                       return Update(n, in[1], vars, [](auto v, auto x) { return v + x; });
                     }));
  r.Register(StateOp("AssignSub", 2, AssignShape,
                     [](const Node& n, const Literals& in, VariableStore& vars) {
                       return Update(n, in[1], vars, [](auto v, auto x) { return v - x; });
                     }));
  r.Register(StateOp(
      "ApplyGradientDescent", 3, ApplyGradientDescentShape,
      [](const Node& n, const Literals& in, VariableStore& vars) -> absl::StatusOr<Literals> {
        const double alpha = in[1].GetAsDouble(0);
        const float alpha32 = static_cast<float>(alpha);
        const bool f32 = in[1].shape().element_type() == PrimitiveType::F32;
        return Update(n, in[2], vars, [=](auto v, auto d) {
          using T = decltype(v);
          return v - (f32 ? static_cast<T>(alpha32) : static_cast<T>(alpha)) * d;
        });
      }));
}

}  // namespace kiln::graph
