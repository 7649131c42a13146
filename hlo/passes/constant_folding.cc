// Constant folding (see constant_folding.h).
#include "hlo/passes/constant_folding.h"

#include "hlo/evaluator/evaluator.h"
#include "hlo/passes/pass_util.h"

namespace kiln {
namespace {

// Operand sizes above these are not evaluated: folding would cost more than it saves.
// Ops whose work grows faster than their operands (dot, convolution, windows, sort) get
// the smaller limit.
constexpr int64_t kMaxOperandElements = int64_t{1} << 20;
constexpr int64_t kMaxHeavyOperandElements = int64_t{1} << 16;
// Results folded from broadcast operands stay at most this large.
constexpr int64_t kMaxFromBroadcastElements = 1024;

bool IsHeavy(HloOpcode op) {
  switch (op) {
    case HloOpcode::kDot:
    case HloOpcode::kConvolution:
    case HloOpcode::kReduceWindow:
    case HloOpcode::kSelectAndScatter:
    case HloOpcode::kSort:
    case HloOpcode::kCholesky:
    case HloOpcode::kTriangularSolve:
    case HloOpcode::kFft:
    case HloOpcode::kGather:
    case HloOpcode::kScatter:
    case HloOpcode::kMap:
    case HloOpcode::kTopK:
      return true;
    default:
      return false;
  }
}

// A constant, or a broadcast of one (folding broadcasts alone only makes constants larger,
// but their users fold from them: a 2x2 gate divided by a broadcast sqrt(2) was divided
// again for every element of the kernel that read it).
bool IsConstantValue(const HloInstruction& o) {
  if (o.opcode() == HloOpcode::kBroadcast)
    return o.operand_count() == 1 && o.operand(0)->opcode() == HloOpcode::kConstant &&
           o.operand(0)->attrs().literal;
  return o.opcode() == HloOpcode::kConstant && o.attrs().literal;
}

bool MayFold(const HloInstruction& instr, int64_t max_elements) {
  switch (instr.opcode()) {
    case HloOpcode::kConstant:
    case HloOpcode::kParameter:
    case HloOpcode::kBroadcast:
    case HloOpcode::kIota:
    // Tuples of constants are taken apart by the tuple simplifier instead.
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    // Control flow and calls: their bodies are folded where they are.
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kCall:
    case HloOpcode::kFusion:
    // Ordering and placement markers.
    case HloOpcode::kAfterAll:
    case HloOpcode::kAddDependency:
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kDomain:
    case HloOpcode::kGetDimensionSize:
    case HloOpcode::kSetDimensionSize:
    // A custom call's implementation lives with its device or host handler.
    case HloOpcode::kCustomCall:
      return false;
    default:
      break;
  }
  if (instr.operand_count() == 0) return false;  // nothing constant to fold from
  if (instr.user_count() == 0 && instr.parent()->root() != &instr) return false;  // dead
  if (IsRandomOpcode(instr.opcode()) || IsCollectiveOpcode(instr.opcode())) return false;
  const Shape& s = instr.shape();
  if (!s.IsArray() || s.is_dynamic() || s.num_elements() > max_elements) return false;
  for (const HloInstruction* o : instr.operands()) {
    if (!IsConstantValue(*o)) return false;
    // Where broadcasts are, a large result would be a large constant made of small ones.
    if (o->opcode() == HloOpcode::kBroadcast && s.num_elements() > kMaxFromBroadcastElements)
      return false;
    int64_t limit = IsHeavy(instr.opcode()) ? kMaxHeavyOperandElements : kMaxOperandElements;
    if (!o->shape().IsArray() || o->shape().num_elements() > limit) return false;
  }
  // Last: this one may walk called computations.
  return instr.control_predecessors().empty() && !HasSideEffect(instr);
}

// An elementwise op whose operands are all broadcasts of scalar constants: its value is the
// scalar op's, broadcast, whatever its size (jnp.remainder's divisor select(b == 0, 1, b) of
// broadcasts, hoisted out of a loop, had been a 4 MB array read every iteration).
bool FoldsToBroadcast(const HloInstruction& instr) {
  if (!IsElementwiseOpcode(instr.opcode()) || IsRandomOpcode(instr.opcode()) ||
      !instr.shape().IsArray() || instr.shape().rank() == 0 || instr.operand_count() == 0 ||
      !instr.control_predecessors().empty() || HasSideEffect(instr))
    return false;
  if (instr.user_count() == 0 && instr.parent()->root() != &instr) return false;  // dead
  for (const HloInstruction* o : instr.operands())
    if (o->opcode() != HloOpcode::kBroadcast || !IsConstantValue(*o) ||
        o->operand(0)->shape().rank() != 0)
      return false;
  return true;
}

// The scalar value of `instr` (FoldsToBroadcast) on its operands' scalars.
absl::StatusOr<Literal> EvaluateScalar(HloEvaluator& evaluator, const HloInstruction& instr) {
  std::vector<std::unique_ptr<HloInstruction>> params;
  std::vector<HloInstruction*> operands;
  std::vector<const Literal*> values;
  for (int i = 0; i < instr.operand_count(); ++i) {
    const HloInstruction* c = instr.operand(i)->operand(0);
    params.push_back(HloInstruction::CreateParameter(i, c->shape(), "scalar"));
    operands.push_back(params.back().get());
    values.push_back(&c->literal());
  }
  HloInstruction scalar(instr.opcode(), Shape(instr.shape().element_type(), {}), operands);
  scalar.mutable_attrs() = instr.attrs();
  absl::StatusOr<Literal> value = evaluator.EvaluateInstruction(scalar, values);
  scalar.DetachOperands();
  return value;
}

}  // namespace

absl::StatusOr<bool> HloConstantFolding::Run(HloModule& module) {
  bool changed = false;
  HloEvaluator evaluator;
  NameUniquer names(module);
  for (HloComputation* comp : NonFusionComputations(module)) {
    std::vector<HloInstruction*> folded;
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      if (FoldsToBroadcast(*instr)) {
        absl::StatusOr<Literal> value = EvaluateScalar(evaluator, *instr);
        if (!value.ok()) continue;
        HloInstruction* c = AddWithFreshName(
            comp, HloInstruction::CreateConstant(*std::move(value)), names, "constant");
        auto b = HloInstruction::CreateUnary(HloOpcode::kBroadcast, instr->shape(), c);
        b->mutable_attrs().has_dimensions = true;
        HloInstruction* broadcast = AddWithFreshName(comp, std::move(b), names, "broadcast");
        if (ReplaceUsesIfCompatible(instr, broadcast)) {
          folded.push_back(instr);
        } else {
          comp->RemoveInstruction(broadcast);
          comp->RemoveInstruction(c);
        }
        continue;
      }
      if (!MayFold(*instr, max_elements_)) continue;
      std::vector<Literal> broadcasts;  // the values of broadcast operands
      broadcasts.reserve(instr->operand_count());
      std::vector<const Literal*> operands;
      bool evaluated = true;
      for (const HloInstruction* o : instr->operands()) {
        if (o->opcode() != HloOpcode::kBroadcast) {
          operands.push_back(&o->literal());
          continue;
        }
        absl::StatusOr<Literal> b = evaluator.EvaluateInstruction(
            *o, std::vector<const Literal*>{&o->operand(0)->literal()});
        if (!b.ok()) {
          evaluated = false;
          break;
        }
        broadcasts.push_back(*std::move(b));
        operands.push_back(&broadcasts.back());
      }
      if (!evaluated) continue;
      absl::StatusOr<Literal> value = evaluator.EvaluateInstruction(*instr, operands);
      if (!value.ok() || !value->shape().Compatible(instr->shape())) continue;
      auto constant = HloInstruction::CreateConstant(*std::move(value));
      *constant->mutable_shape() = instr->shape();  // keep the layout the users expect
      HloInstruction* c = AddWithFreshName(comp, std::move(constant), names, "constant");
      if (ReplaceUsesIfCompatible(instr, c)) {
        folded.push_back(instr);
      } else {
        comp->RemoveInstruction(c);
      }
    }
    RemoveDeadFrom(comp, folded);
    changed |= !folded.empty();
  }
  return changed;
}

}  // namespace kiln
