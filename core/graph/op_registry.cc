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
    RegisterSliceOps(*r);
    RegisterIndexOps(*r);
    RegisterElementwiseOps(*r);
    RegisterNnOps(*r);
    RegisterConvOps(*r);
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
  // Right-aligned: the shorter shape gets leading size-1 dimensions.
  const int rank = std::max(a.rank(), b.rank());
  TensorShape out;
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - a.rank()), ib = i - (rank - b.rank());
    const int64_t x = ia < 0 ? 1 : a.dims[ia], y = ib < 0 ? 1 : b.dims[ib];
    if (x == y || y == 1) {
      out.dims.push_back(x);
    } else if (x == 1) {
      out.dims.push_back(y);
    } else if (x < 0 || y < 0) {
      out.dims.push_back(x < 0 ? y : x);
    } else {
      return absl::InvalidArgumentError(
          fmt::format("shapes {} and {} do not broadcast (dimension {}: {} vs {})", a.ToString(),
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
    instr->set_name(
        fmt::format("{}.{}", HloOpcodeString(instr->opcode()), comp_->instruction_count() + 1));
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
  auto b = std::make_unique<HloInstruction>(HloOpcode::kBroadcast,
                                            HloShape(x->shape().element_type(), dims),
                                            std::vector<HloInstruction*>{x});
  b->mutable_attrs().dimensions = mapping;
  b->mutable_attrs().has_dimensions = true;
  return Add(std::move(b));
}

HloInstruction* LowerContext::Reshape(HloInstruction* x, const std::vector<int64_t>& dims) {
  if (x->shape().dimensions() == dims) return x;
  return Add(std::make_unique<HloInstruction>(HloOpcode::kReshape,
                                              HloShape(x->shape().element_type(), dims),
                                              std::vector<HloInstruction*>{x}));
}

HloInstruction* LowerContext::BroadcastTo(HloInstruction* x, const std::vector<int64_t>& dims) {
  const std::vector<int64_t>& have = x->shape().dimensions();
  if (have == dims) return x;
  // Right-aligned: x's dimension i is result dimension i + lead; the size-1 dimensions that
  // stretch are reshaped away, the rest broadcast in place.
  const size_t lead = dims.size() - have.size();
  std::vector<int64_t> kept_dims, mapping;
  for (size_t i = 0; i < have.size(); ++i) {
    if (have[i] == dims[lead + i]) {
      kept_dims.push_back(have[i]);
      mapping.push_back(static_cast<int64_t>(lead + i));
    }
  }
  return Broadcast(Reshape(x, kept_dims), dims, mapping);
}

HloInstruction* LowerContext::Compare(ComparisonDirection dir, HloInstruction* a,
                                      HloInstruction* b) {
  auto c = std::make_unique<HloInstruction>(HloOpcode::kCompare,
                                            HloShape(PrimitiveType::PRED, a->shape().dimensions()),
                                            std::vector<HloInstruction*>{a, b});
  c->mutable_attrs().comparison_direction = dir;
  return Add(std::move(c));
}

HloInstruction* LowerContext::Convert(HloInstruction* x, PrimitiveType t) {
  if (x->shape().element_type() == t) return x;
  return Add(
      HloInstruction::CreateUnary(HloOpcode::kConvert, HloShape(t, x->shape().dimensions()), x));
}

HloInstruction* LowerContext::Select(HloInstruction* pred, HloInstruction* a, HloInstruction* b) {
  return Add(std::make_unique<HloInstruction>(HloOpcode::kSelect, a->shape(),
                                              std::vector<HloInstruction*>{pred, a, b}));
}

HloInstruction* LowerContext::Iota(PrimitiveType t, const std::vector<int64_t>& dims, int64_t dim) {
  auto i = std::make_unique<HloInstruction>(HloOpcode::kIota, HloShape(t, dims));
  i->mutable_attrs().iota_dimension = dim;
  return Add(std::move(i));
}

HloInstruction* LowerContext::Slice(HloInstruction* x, const std::vector<int64_t>& starts,
                                    const std::vector<int64_t>& limits,
                                    const std::vector<int64_t>& strides) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < starts.size(); ++i) {
    dims.push_back(std::max<int64_t>(0, (limits[i] - starts[i] + strides[i] - 1) / strides[i]));
  }
  if (dims == x->shape().dimensions()) return x;
  auto s =
      std::make_unique<HloInstruction>(HloOpcode::kSlice, HloShape(x->shape().element_type(), dims),
                                       std::vector<HloInstruction*>{x});
  s->mutable_attrs().slice_starts = starts;
  s->mutable_attrs().slice_limits = limits;
  s->mutable_attrs().slice_strides = strides;
  return Add(std::move(s));
}

HloComputation* LowerContext::ScalarReducer(HloOpcode op, PrimitiveType t) {
  const std::string name = fmt::format("reducer_{}_{}", HloOpcodeString(op), PrimitiveTypeName(t));
  HloComputation* reducer = module_->FindComputation(name);
  if (reducer == nullptr) {
    auto c = std::make_unique<HloComputation>(name);
    HloInstruction* a =
        c->AddInstruction(HloInstruction::CreateParameter(0, Shape::Scalar(t), name + ".a"));
    HloInstruction* b =
        c->AddInstruction(HloInstruction::CreateParameter(1, Shape::Scalar(t), name + ".b"));
    HloInstruction* r = c->AddInstruction(HloInstruction::CreateBinary(op, Shape::Scalar(t), a, b));
    r->set_name(name + ".r");
    c->set_root(r);
    reducer = module_->AddComputation(std::move(c));
  }
  return reducer;
}

HloInstruction* LowerContext::ReduceWindow(HloInstruction* x, const Window& window, HloOpcode op,
                                           double init) {
  const PrimitiveType t = x->shape().element_type();
  std::vector<int64_t> out_dims;
  for (size_t i = 0; i < window.dimensions.size(); ++i) {
    const WindowDimension& w = window.dimensions[i];
    const int64_t padded =
        x->shape().dimensions(static_cast<int>(i)) + w.padding_low + w.padding_high;
    const int64_t span = (w.size - 1) * w.window_dilation + 1;
    out_dims.push_back(padded < span ? 0 : (padded - span) / w.stride + 1);
  }
  auto r =
      std::make_unique<HloInstruction>(HloOpcode::kReduceWindow, HloShape(t, out_dims),
                                       std::vector<HloInstruction*>{x, ScalarConstant(t, init)});
  r->mutable_attrs().window = window;
  r->AppendCalledComputation(ScalarReducer(op, t));
  return Add(std::move(r));
}

HloInstruction* LowerContext::Reduce(HloInstruction* x, const std::vector<int64_t>& axes,
                                     HloOpcode op, double init) {
  const PrimitiveType t = x->shape().element_type();
  HloComputation* reducer = ScalarReducer(op, t);
  std::vector<int64_t> out_dims;
  for (int64_t i = 0; i < x->shape().rank(); ++i) {
    if (!std::binary_search(axes.begin(), axes.end(), i)) {
      out_dims.push_back(x->shape().dimensions(static_cast<int>(i)));
    }
  }
  auto r =
      std::make_unique<HloInstruction>(HloOpcode::kReduce, HloShape(t, out_dims),
                                       std::vector<HloInstruction*>{x, ScalarConstant(t, init)});
  r->mutable_attrs().dimensions = axes;
  r->mutable_attrs().has_dimensions = true;
  r->AppendCalledComputation(reducer);
  return Add(std::move(r));
}

}  // namespace kiln::graph
