// The op registry and the HLO-building helpers lowerings share.
#include "core/graph/op_registry.h"

#include <algorithm>

#include "core/graph/ops/ops.h"
#include "fmt/format.h"
#include "hlo/computation.h"

namespace kiln::graph {

std::string ValueInfo::ToString() const {
  return std::string(PrimitiveTypeName(dtype)) + shape.ToString();
}

const AttrSpec* OpDef::FindAttr(const std::string& n) const {
  for (const AttrSpec& a : attrs) {
    if (a.name == n) return &a;
  }
  return nullptr;
}

const OpRegistry& OpRegistry::Global() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry;
    RegisterArrayOps(*r);
    RegisterElementwiseOps(*r);
    RegisterNnOps(*r);
    RegisterReductionOps(*r);
    RegisterHostOps(*r);
    RegisterStateOps(*r);
    RegisterTrainingOps(*r);
    return r;
  }();
  return *registry;
}

void OpRegistry::Register(OpDef def) {
  std::string name = def.name;
  ops_[name] = std::move(def);
}

const OpDef* OpRegistry::Find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : ops_) out.push_back(k);
  return out;
}

absl::StatusOr<int64_t> AttrInt(const Node& n, const std::string& name, int64_t fallback) {
  const AttrValue* v = n.FindAttr(name);
  if (v == nullptr) return fallback;
  if (v->kind() != AttrKind::kInt) {
    return absl::InvalidArgumentError(fmt::format("attribute '{}' must be an int", name));
  }
  return v->i();
}

bool AttrBool(const Node& n, const std::string& name, bool fallback) {
  const AttrValue* v = n.FindAttr(name);
  return v != nullptr && v->kind() == AttrKind::kBool ? v->b() : fallback;
}

absl::StatusOr<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b) {
  if (a.rank() == 0) return b;
  if (b.rank() == 0) return a;
  if (a.rank() != b.rank()) {
    return absl::InvalidArgumentError(fmt::format(
        "shapes {} and {} do not broadcast (ranks differ; only equal ranks or scalars)",
        a.ToString(), b.ToString()));
  }
  TensorShape out;
  for (int i = 0; i < a.rank(); ++i) {
    int64_t x = a.dims[i], y = b.dims[i];
    if (x == y || y == 1) {
      out.dims.push_back(x);
    } else if (x == 1) {
      out.dims.push_back(y);
    } else if (x < 0 || y < 0) {
      out.dims.push_back(x < 0 ? y : x);
    } else {
      return absl::InvalidArgumentError(fmt::format(
          "shapes {} and {} do not broadcast (dimension {}: {} vs {})", a.ToString(),
          b.ToString(), i, x, y));
    }
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> NormalizeAxes(std::vector<int64_t> axes, int rank) {
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) {
      return absl::InvalidArgumentError(
          fmt::format("axis {} is out of range for rank {}", a, rank));
    }
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    return absl::InvalidArgumentError("repeated axis");
  }
  return axes;
}

Shape LowerContext::HloShape(PrimitiveType t, const std::vector<int64_t>& dims) {
  Shape s(t, dims);
  s.SetDefaultLayout();
  return s;
}

HloInstruction* LowerContext::Add(std::unique_ptr<HloInstruction> instr) {
  if (instr->name().empty()) {
    instr->set_name(fmt::format("{}.{}", HloOpcodeString(instr->opcode()),
                                comp_->instruction_count() + 1));
  }
  if (!instr->shape().has_layout() && instr->shape().IsArray()) {
    instr->mutable_shape()->SetDefaultLayout();
  }
  return comp_->AddInstruction(std::move(instr));
}

HloInstruction* LowerContext::Unary(HloOpcode op, HloInstruction* x) {
  return Add(HloInstruction::CreateUnary(op, x->shape(), x));
}

HloInstruction* LowerContext::Binary(HloOpcode op, HloInstruction* a, HloInstruction* b) {
  return Add(HloInstruction::CreateBinary(op, a->shape(), a, b));
}

HloInstruction* LowerContext::ScalarConstant(PrimitiveType t, double v) {
  Literal l(Shape::Scalar(t));
  l.SetFromDouble(0, v);
  return Add(HloInstruction::CreateConstant(std::move(l)));
}

HloInstruction* LowerContext::Broadcast(HloInstruction* x, const std::vector<int64_t>& dims,
                                        const std::vector<int64_t>& mapping) {
  auto b = std::make_unique<HloInstruction>(
      HloOpcode::kBroadcast, HloShape(x->shape().element_type(), dims),
      std::vector<HloInstruction*>{x});
  b->mutable_attrs().dimensions = mapping;
  b->mutable_attrs().has_dimensions = true;
  return Add(std::move(b));
}

HloInstruction* LowerContext::Reshape(HloInstruction* x, const std::vector<int64_t>& dims) {
  if (x->shape().dimensions() == dims) return x;
  return Add(std::make_unique<HloInstruction>(
      HloOpcode::kReshape, HloShape(x->shape().element_type(), dims),
      std::vector<HloInstruction*>{x}));
}

HloInstruction* LowerContext::BroadcastTo(HloInstruction* x, const std::vector<int64_t>& dims) {
  const std::vector<int64_t>& have = x->shape().dimensions();
  if (have == dims) return x;
  if (have.empty()) return Broadcast(x, dims, {});
  // Equal rank: drop the size-1 dimensions that stretch, broadcast the rest in place.
  std::vector<int64_t> kept_dims, mapping;
  for (size_t i = 0; i < have.size(); ++i) {
    if (have[i] == dims[i]) {
      kept_dims.push_back(have[i]);
      mapping.push_back(static_cast<int64_t>(i));
    }
  }
  return Broadcast(Reshape(x, kept_dims), dims, mapping);
}

HloInstruction* LowerContext::Reduce(HloInstruction* x, const std::vector<int64_t>& axes,
                                     HloOpcode op, double init) {
  const PrimitiveType t = x->shape().element_type();
  const std::string name = fmt::format("reducer_{}_{}", HloOpcodeString(op), PrimitiveTypeName(t));
  HloComputation* reducer = module_->FindComputation(name);
  if (reducer == nullptr) {
    auto c = std::make_unique<HloComputation>(name);
    HloInstruction* a = c->AddInstruction(
        HloInstruction::CreateParameter(0, Shape::Scalar(t), name + ".a"));
    HloInstruction* b = c->AddInstruction(
        HloInstruction::CreateParameter(1, Shape::Scalar(t), name + ".b"));
    HloInstruction* r =
        c->AddInstruction(HloInstruction::CreateBinary(op, Shape::Scalar(t), a, b));
    r->set_name(name + ".r");
    c->set_root(r);
    reducer = module_->AddComputation(std::move(c));
  }
  std::vector<int64_t> out_dims;
  for (int64_t i = 0; i < x->shape().rank(); ++i) {
    if (!std::binary_search(axes.begin(), axes.end(), i)) {
      out_dims.push_back(x->shape().dimensions(static_cast<int>(i)));
    }
  }
  auto r = std::make_unique<HloInstruction>(HloOpcode::kReduce, HloShape(t, out_dims),
                                            std::vector<HloInstruction*>{x, ScalarConstant(t, init)});
  r->mutable_attrs().dimensions = axes;
  r->mutable_attrs().has_dimensions = true;
  r->AppendCalledComputation(reducer);
  return Add(std::move(r));
}

}  // namespace kiln::graph
