// Evaluator driver: walks computations in post-order, keeps only live values, handles
// control flow and tuples itself and dispatches everything else to the opcode families.
#include "hlo/evaluator/evaluator.h"

#include <new>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "hlo/evaluator/custom_call_handlers.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/evaluator_util.h"
#include "hlo/evaluator/fft.h"
#include "hlo/evaluator/lapack_custom_calls.h"
#include "hlo/evaluator/support.h"

namespace kiln {

namespace {

// What it takes to run one computation: the instructions reachable from the root in
// post-order, where each operand lives, and how many users each value has.
struct Plan {
  std::vector<const HloInstruction*> order;
  std::vector<std::vector<int>> operand_pos;  // per instruction, position of each operand
  std::vector<int> use_count;                 // distinct users of each value
  int root_pos = -1;
};

absl::StatusOr<Plan> MakePlan(const HloComputation& computation) {
  const HloInstruction* root = computation.root();
  if (root == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("computation %", computation.name(), " has no root instruction"));
  }
  Plan plan;
  absl::flat_hash_map<const HloInstruction*, int> pos;
  // Iterative DFS over operands only: dead instructions are never evaluated, and deep
  // chains do not use the native stack.
  std::vector<std::pair<const HloInstruction*, int>> stack{{root, 0}};
  absl::flat_hash_map<const HloInstruction*, bool> on_stack{{root, true}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->operand_count()) {
      const HloInstruction* op = node->operand(next++);
      if (op->parent() != nullptr && op->parent() != &computation) {
        return absl::InvalidArgumentError(absl::StrCat(
            "operand %", op->name(), " of %", node->name(), " belongs to another computation"));
      }
      if (pos.contains(op)) continue;
      if (on_stack.contains(op)) {
        return absl::InvalidArgumentError(absl::StrCat("cycle through instruction %", op->name()));
      }
      on_stack[op] = true;
      stack.push_back({op, 0});
    } else {
      pos[node] = static_cast<int>(plan.order.size());
      plan.order.push_back(node);
      on_stack.erase(node);
      stack.pop_back();
    }
  }
  const int n = static_cast<int>(plan.order.size());
  plan.operand_pos.resize(n);
  plan.use_count.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    const HloInstruction* instr = plan.order[i];
    std::vector<int>& ops = plan.operand_pos[i];
    for (const HloInstruction* op : instr->operands()) ops.push_back(pos.at(op));
    for (size_t k = 0; k < ops.size(); ++k) {
      bool first = true;
      for (size_t j = 0; j < k; ++j) first = first && ops[j] != ops[k];
      if (first) ++plan.use_count[ops[k]];
    }
  }
  plan.root_pos = pos.at(root);
  return plan;
}

bool IsUnsupportedOpcode(HloOpcode op) {
  switch (op) {
    case HloOpcode::kRngGetAndUpdateState:
    case HloOpcode::kDynamicReshape:
      return true;
    default:
      return IsCollectiveOpcode(op) && !eval::IsEvaluatorCollective(op);
  }
}

// Every evaluator error names an instruction; families normally do it themselves.
absl::Status Annotate(absl::Status s, const HloInstruction& instr) {
  if (s.ok() || absl::StrContains(s.message(), "(instruction %")) return s;
  return absl::Status(s.code(), absl::StrCat(std::string(s.message()), eval::InstrSuffix(instr)));
}

}  // namespace

struct HloEvaluator::State {
  int depth = 0;   // nested EvaluateComputation calls
  int active = 0;  // public calls in progress; the plan cache lives while this is nonzero
  // Plans are cached only for the duration of one top-level evaluation, so that a
  // computation freed later cannot be confused with a new one at the same address.
  absl::flat_hash_map<const HloComputation*, std::unique_ptr<Plan>> plans;
};

namespace {

// RAII counter for nesting; when `plans` is given it is cleared as the count returns to 0.
class DepthGuard {
 public:
  explicit DepthGuard(int& depth,
                      absl::flat_hash_map<const HloComputation*, std::unique_ptr<Plan>>* plans)
      : depth_(depth), plans_(plans) {
    ++depth_;
  }
  ~DepthGuard() {
    if (--depth_ == 0 && plans_ != nullptr) plans_->clear();
  }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  int& depth_;
  absl::flat_hash_map<const HloComputation*, std::unique_ptr<Plan>>* plans_;
};

absl::StatusOr<Literal> RunWhile(HloEvaluator& evaluator, const HloInstruction& instr,
                                 Literal state) {
  const auto& called = instr.called_computations();
  if (called.size() != 2 || called[0] == nullptr || called[1] == nullptr) {
    return eval::InvalidArgument(instr, "while needs a condition and a body");
  }
  const HloComputation& cond = *called[0];
  const HloComputation& body = *called[1];
  // No iteration limit: a loop that never ends is the program's meaning, as in XLA.
  for (;;) {
    const Literal* arg = &state;
    absl::StatusOr<Literal> keep_going =
        evaluator.EvaluateComputation(cond, std::span<const Literal* const>(&arg, 1));
    if (!keep_going.ok()) return Annotate(keep_going.status(), instr);
    if (keep_going->IsTuple() || keep_going->shape().element_type() != PrimitiveType::PRED ||
        keep_going->element_count() != 1) {
      return eval::InvalidArgument(instr, "while condition must return a pred scalar, got " +
                                              keep_going->shape().ToString(false));
    }
    if (!keep_going->data<bool>()[0]) break;
    absl::StatusOr<Literal> next =
        evaluator.EvaluateComputation(body, std::span<const Literal* const>(&arg, 1));
    if (!next.ok()) return Annotate(next.status(), instr);
    state = *std::move(next);
  }
  return state;
}

}  // namespace

absl::StatusOr<Literal> HloEvaluator::Evaluate(const HloModule& module,
                                               std::span<const Literal> args) {
  const HloComputation* entry = module.entry();
  if (entry == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("module ", module.name(), " has no entry computation"));
  }
  if (static_cast<int>(args.size()) != entry->num_parameters()) {
    return absl::InvalidArgumentError(absl::StrCat("entry computation %", entry->name(), " takes ",
                                                   entry->num_parameters(), " arguments, got ",
                                                   args.size()));
  }
  std::vector<const Literal*> ptrs;
  for (int i = 0; i < entry->num_parameters(); ++i) {
    const HloInstruction* p = entry->parameter(i);
    if (p == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("entry computation %", entry->name(), " has no parameter ", i));
    }
    if (!args[i].shape().Compatible(p->shape())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "argument ", i, " has shape ", args[i].shape().ToString(false), " but parameter ", i,
          " (%", p->name(), ") of the entry computation expects ", p->shape().ToString(false)));
    }
    ptrs.push_back(&args[i]);
  }
  return EvaluateComputation(*entry, ptrs);
}

absl::StatusOr<Literal> HloEvaluator::EvaluateComputation(const HloComputation& computation,
                                                          std::span<const Literal* const> args) {
  try {
    return [&]() -> absl::StatusOr<Literal> {
      if (!state_) state_ = std::make_shared<State>();
      if (state_->depth >= kMaxCallDepth) {
        return absl::ResourceExhaustedError(
            absl::StrCat("computations nested deeper than ", kMaxCallDepth, " levels (entering %",
                         computation.name(), "); is a computation calling itself?"));
      }
      DepthGuard depth_guard(state_->depth, nullptr);
      DepthGuard active_guard(state_->active, &state_->plans);

      if (static_cast<int>(args.size()) != computation.num_parameters()) {
        return absl::InvalidArgumentError(absl::StrCat("computation %", computation.name(),
                                                       " takes ", computation.num_parameters(),
                                                       " arguments, got ", args.size()));
      }
      auto& cached = state_->plans[&computation];
      if (!cached) {
        absl::StatusOr<Plan> plan = MakePlan(computation);
        if (!plan.ok()) return plan.status();
        cached = std::make_unique<Plan>(*std::move(plan));
      }
      const Plan& plan = *cached;
      const int n = static_cast<int>(plan.order.size());

      // A value is either borrowed (arguments, constants) or owned in `owned`.
      std::vector<const Literal*> value(n, nullptr);
      std::vector<Literal> owned(n);
      std::vector<bool> is_owned(n, false);
      std::vector<int> remaining = plan.use_count;

      for (int i = 0; i < n; ++i) {
        const HloInstruction& instr = *plan.order[i];
        const std::vector<int>& ops = plan.operand_pos[i];
        // Takes operand k's value, moving it when this is its only remaining use.
        auto take = [&](int k) -> Literal {
          int p = ops[k];
          int uses_here = 0;
          for (int q : ops) uses_here += q == p;
          if (is_owned[p] && remaining[p] == 1 && uses_here == 1 && p != plan.root_pos) {
            is_owned[p] = false;
            value[p] = nullptr;
            return std::move(owned[p]);
          }
          return *value[p];
        };

        absl::StatusOr<Literal> result;
        switch (instr.opcode()) {
          case HloOpcode::kParameter: {
            int64_t num = instr.parameter_number();
            if (num < 0 || num >= static_cast<int64_t>(args.size()) || args[num] == nullptr) {
              return eval::InvalidArgument(
                  instr, absl::StrCat("parameter number ", num, " has no argument"));
            }
            if (!args[num]->shape().Compatible(instr.shape())) {
              return eval::InvalidArgument(
                  instr,
                  absl::StrCat("argument ", num, " has shape ", args[num]->shape().ToString(false),
                               ", parameter expects ", instr.shape().ToString(false)));
            }
            value[i] = args[num];
            break;
          }
          case HloOpcode::kConstant:
            if (!instr.attrs().literal)
              return eval::InvalidArgument(instr,
                                           "constant has no value (the dump elided it as {...})");
            value[i] = &*instr.attrs().literal;
            break;
          case HloOpcode::kTuple: {
            std::vector<Literal> elems;
            elems.reserve(ops.size());
            for (size_t k = 0; k < ops.size(); ++k) elems.push_back(take(static_cast<int>(k)));
            result = Literal::MakeTuple(std::move(elems));
            break;
          }
          case HloOpcode::kGetTupleElement: {
            const int p = ops[0];
            const Literal& t = *value[p];
            int64_t idx = instr.tuple_index();
            if (!t.IsTuple() || idx < 0 || idx >= static_cast<int64_t>(t.elements().size())) {
              return eval::InvalidArgument(instr,
                                           absl::StrCat("tuple index ", idx, " out of range for ",
                                                        t.shape().ToString(false)));
            }
            // The last reader of an owned tuple takes the element apart instead of copying it.
            if (is_owned[p] && remaining[p] == 1 && p != plan.root_pos) {
              result = std::move(owned[p].elements()[idx]);
            } else {
              result = t.elements()[idx];
            }
            break;
          }
          default: {
            std::vector<const Literal*> operand_values;
            operand_values.reserve(ops.size());
            for (int p : ops) operand_values.push_back(value[p]);
            if (instr.opcode() == HloOpcode::kWhile && ops.size() == 1) {
              // The loop state is replaced every iteration; start from the operand itself when
              // nothing else reads it.
              result = RunWhile(*this, instr, take(0));
            } else {
              result = EvaluateInstruction(instr, operand_values);
            }
            break;
          }
        }
        if (instr.opcode() != HloOpcode::kParameter && instr.opcode() != HloOpcode::kConstant) {
          if (!result.ok()) return Annotate(result.status(), instr);
          owned[i] = *std::move(result);
          is_owned[i] = true;
          value[i] = &owned[i];
        }
        // Free operands whose users have all run.
        for (size_t k = 0; k < ops.size(); ++k) {
          int p = ops[k];
          bool first = true;
          for (size_t j = 0; j < k; ++j) first = first && ops[j] != p;
          if (!first) continue;
          if (--remaining[p] == 0 && p != plan.root_pos && is_owned[p]) {
            owned[p] = Literal();
            is_owned[p] = false;
            value[p] = nullptr;
          }
        }
      }
      const int r = plan.root_pos;
      if (is_owned[r]) return std::move(owned[r]);
      return *value[r];
    }();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory in computation %", computation.name()));
  }
}

namespace {
bool HasSubByteInts(const Shape& s, bool signed_only) {
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes())
      if (HasSubByteInts(e, signed_only)) return true;
    return false;
  }
  return IsSubByteInt(s.element_type()) && (!signed_only || IsSignedInt(s.element_type()));
}
// Opcodes that only route values (their called computations widen for themselves).
bool RoutesValues(HloOpcode op) {
  return op == HloOpcode::kCall || op == HloOpcode::kFusion || op == HloOpcode::kWhile ||
         op == HloOpcode::kConditional || op == HloOpcode::kTuple ||
         op == HloOpcode::kGetTupleElement || op == HloOpcode::kParameter ||
         op == HloOpcode::kConstant;
}
}  // namespace

// Sub-byte integers are computed as int8/uint8: operands are widened (sign-extended) and the
// result is truncated back to its low bits, which gives two's-complement wrapping in the
// narrow type.
absl::StatusOr<Literal> HloEvaluator::EvaluateInstruction(
    const HloInstruction& instr, std::span<const Literal* const> operands) {
  if (RoutesValues(instr.opcode())) return EvaluateInstructionWidened(instr, operands);
  bool widen = false;
  for (const Literal* o : operands) widen = widen || (o && HasSubByteInts(o->shape(), true));
  absl::StatusOr<Literal> result;
  if (widen) {
    std::vector<Literal> wide;
    wide.reserve(operands.size());
    std::vector<const Literal*> ptrs;
    for (const Literal* o : operands) {
      if (o && HasSubByteInts(o->shape(), true)) {
        wide.push_back(o->WithSubByteIntsWidened());
        ptrs.push_back(&wide.back());
      } else {
        ptrs.push_back(o);
      }
    }
    result = EvaluateInstructionWidened(instr, ptrs);
  } else {
    result = EvaluateInstructionWidened(instr, operands);
  }
  if (result.ok() && HasSubByteInts(result->shape(), false)) result->TruncateSubByteInts();
  return result;
}

absl::Status HloEvaluator::ScatterInPlace(const HloInstruction& scatter, Literal& operand,
                                          const Literal& indices, const Literal& updates) {
  try {
    if (!state_) state_ = std::make_shared<State>();
    DepthGuard active_guard(state_->active, &state_->plans);
    eval::CallFn call = [this](const HloComputation& c, eval::Operands args) {
      return EvaluateComputation(c, args);
    };
    absl::Status s = eval::EvalScatterInto(scatter, operand, indices, updates, call);
    return s.ok() ? s : Annotate(s, scatter);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory in scatter %" + scatter.name());
  }
}

absl::StatusOr<Literal> HloEvaluator::EvaluateInstructionWidened(
    const HloInstruction& instr, std::span<const Literal* const> operands) {
  // Allocation failures (a huge broadcast, say) become errors, never exceptions.
  try {
    return [&]() -> absl::StatusOr<Literal> {
      if (!state_) state_ = std::make_shared<State>();
      // Keeps plans cached across the iterations of a while folded on its own.
      DepthGuard active_guard(state_->active, &state_->plans);
      const HloOpcode op = instr.opcode();
      const std::string opname(HloOpcodeString(op));
      for (size_t i = 0; i < operands.size(); ++i) {
        if (operands[i] == nullptr) {
          return eval::InvalidArgument(instr, absl::StrCat("operand ", i, " has no value"));
        }
      }
      const int arity = HloOpcodeArity(op);
      if (arity != kVariadic && static_cast<int>(operands.size()) != arity) {
        return eval::InvalidArgument(
            instr, absl::StrCat(opname, " takes ", arity, " operands, got ", operands.size()));
      }
      eval::CallFn call = [this](const HloComputation& c, eval::Operands args) {
        return EvaluateComputation(c, args);
      };
      auto called = [&](size_t i) -> const HloComputation* {
        return i < instr.called_computations().size() ? instr.called_computations()[i] : nullptr;
      };
      absl::StatusOr<Literal> result;

      if (op == HloOpcode::kCopy && !operands.empty() && !operands[0]->shape().IsArray()) {
        return *operands[0];  // copy of a tuple (or token): a deep copy of the value
      }
      if (IsElementwiseOpcode(op)) {
        result = eval::EvalElementwise(instr, operands);
        if (!result.ok()) return Annotate(result.status(), instr);
        return result;
      }
      if (eval::IsEvaluatorCollective(op)) {
        result = eval::EvalCollective(instr, operands, call);
        if (!result.ok()) return Annotate(result.status(), instr);
        return result;
      }
      if (IsUnsupportedOpcode(op)) {
        return eval::Unimplemented(
            instr, absl::StrCat("'", opname, "' is not supported by the evaluator"));
      }

      switch (op) {
        case HloOpcode::kParameter:
          return eval::InvalidArgument(instr, "a parameter has no value outside a computation");
        case HloOpcode::kConstant:
          if (!instr.attrs().literal)
            return eval::InvalidArgument(instr,
                                         "constant has no value (the dump elided it as {...})");
          return *instr.attrs().literal;

        case HloOpcode::kTuple: {
          std::vector<Literal> elems;
          for (const Literal* o : operands) elems.push_back(*o);
          return Literal::MakeTuple(std::move(elems));
        }
        case HloOpcode::kGetTupleElement: {
          int64_t idx = instr.tuple_index();
          if (!operands[0]->IsTuple() || idx < 0 ||
              idx >= static_cast<int64_t>(operands[0]->elements().size())) {
            return eval::InvalidArgument(instr,
                                         absl::StrCat("tuple index ", idx, " out of range for ",
                                                      operands[0]->shape().ToString(false)));
          }
          return operands[0]->elements()[idx];
        }

        case HloOpcode::kCall:
        case HloOpcode::kFusion: {
          const HloComputation* c = called(0);
          if (c == nullptr)
            return eval::InvalidArgument(instr, opname + " has no called computation");
          result = EvaluateComputation(*c, operands);
          break;
        }

        // Async wrappers of a computation run it at the start (one thing at a time here):
        // the start's value is ((operands), result, context...), the context zeros.
        case HloOpcode::kAsyncStart: {
          const HloComputation* c = called(0);
          const Shape& s = instr.shape();
          // Only the shorthand test: the called computation reports its own unsupported ops
          // when it runs, so its instructions are not walked on every evaluation.
          if (IsAsyncShorthand(instr))
            return eval::Unimplemented(instr,
                                       "'" + opname + "' " + *EvaluatorUnsupportedReason(instr));
          if (c == nullptr || !s.IsTuple() || s.tuple_size() < 2)
            return eval::InvalidArgument(instr,
                                         "async-start needs a called computation and a "
                                         "((operands), result, context) shape");
          absl::StatusOr<Literal> value = EvaluateComputation(*c, operands);
          if (!value.ok()) return value.status();
          std::vector<Literal> args;
          for (const Literal* o : operands) args.push_back(*o);
          std::vector<Literal> elems;
          elems.push_back(Literal::MakeTuple(std::move(args)));
          elems.push_back(*std::move(value));
          for (int i = 2; i < s.tuple_size(); ++i) elems.emplace_back(s.tuple_shapes(i));
          return Literal::MakeTuple(std::move(elems));
        }
        case HloOpcode::kAsyncUpdate:
          return *operands[0];
        case HloOpcode::kAsyncDone:
          if (!operands[0]->IsTuple() || operands[0]->elements().size() < 2)
            return eval::InvalidArgument(instr, "async-done needs an async-start's value");
          return operands[0]->elements()[1];

        case HloOpcode::kWhile:
          return RunWhile(*this, instr, *operands[0]);

        case HloOpcode::kConditional: {
          const int64_t num_branches = static_cast<int64_t>(instr.called_computations().size());
          if (num_branches == 0 || static_cast<int64_t>(operands.size()) != num_branches + 1) {
            return eval::InvalidArgument(
                instr, absl::StrCat("conditional with ", num_branches, " branches needs ",
                                    num_branches + 1, " operands, got ", operands.size()));
          }
          const Literal& selector = *operands[0];
          if (selector.IsTuple() || selector.element_count() != 1) {
            return eval::InvalidArgument(instr, "conditional selector must be a scalar");
          }
          int64_t branch;
          if (selector.shape().element_type() == PrimitiveType::PRED) {
            if (num_branches != 2) {
              return eval::InvalidArgument(
                  instr, "a pred-selected conditional needs exactly two branches");
            }
            branch = selector.data<bool>()[0] ? 0 : 1;
          } else if (selector.shape().element_type() == PrimitiveType::S32) {
            branch = selector.data<int32_t>()[0];
            // Out-of-range indices run the last branch, as XLA defines it.
            if (branch < 0 || branch >= num_branches) branch = num_branches - 1;
          } else {
            return eval::InvalidArgument(instr, "conditional selector must be pred or s32, got " +
                                                    selector.shape().ToString(false));
          }
          const Literal* arg = operands[branch + 1];
          result = EvaluateComputation(*called(branch), std::span<const Literal* const>(&arg, 1));
          break;
        }

        case HloOpcode::kAfterAll:
          return Literal(Shape::Token());
        case HloOpcode::kAddDependency:
        case HloOpcode::kOptimizationBarrier:
        case HloOpcode::kDomain:
          if (operands.empty()) return eval::InvalidArgument(instr, opname + " needs an operand");
          return *operands[0];
        case HloOpcode::kCopyStart: {
          // (destination, source, context); copy-done returns the destination.
          std::vector<Literal> elems;
          elems.push_back(*operands[0]);
          elems.push_back(*operands[0]);
          elems.push_back(Literal(Shape::Scalar(PrimitiveType::U32)));
          return Literal::MakeTuple(std::move(elems));
        }
        case HloOpcode::kCopyDone:
          if (!operands[0]->IsTuple() || operands[0]->elements().empty()) {
            return eval::InvalidArgument(instr, "copy-done needs the tuple of a copy-start");
          }
          return operands[0]->elements()[0];
        case HloOpcode::kSetDimensionSize:
          // Kiln evaluates dynamic dimensions at their bound, so the size is not tracked.
          return *operands[0];
        case HloOpcode::kCustomCall:
          if (eval::IsLapackCustomCall(instr.attrs().custom_call_target))
            return eval::EvalLapackCustomCall(instr, operands);
          if (IsAnnotationCustomCall(instr.attrs().custom_call_target)) {
            if (operands.size() != 1 || !operands[0]->shape().Compatible(instr.shape()))
              return eval::InvalidArgument(instr,
                                           "an annotation custom-call takes one operand "
                                           "of its own shape");
            return *operands[0];
          }
          if (std::shared_ptr<const CustomCallHandlers> handlers = InstalledCustomCallHandlers();
              handlers != nullptr && handlers->Has(instr.attrs().custom_call_target))
            return handlers->Call(instr, operands);
          return eval::Unimplemented(
              instr, absl::StrCat("custom-call target '", instr.attrs().custom_call_target,
                                  "' is not supported by the evaluator"));

        case HloOpcode::kBroadcast:
        case HloOpcode::kReshape:
        case HloOpcode::kBitcast:
        case HloOpcode::kTranspose:
        case HloOpcode::kSlice:
        case HloOpcode::kDynamicSlice:
        case HloOpcode::kDynamicUpdateSlice:
        case HloOpcode::kConcatenate:
        case HloOpcode::kPad:
        case HloOpcode::kReverse:
        case HloOpcode::kIota:
        case HloOpcode::kGetDimensionSize:
          result = eval::EvalDataMovement(instr, operands);
          break;
        case HloOpcode::kDot:
        case HloOpcode::kScaledDot:
        case HloOpcode::kConvolution:
        case HloOpcode::kCholesky:
        case HloOpcode::kTriangularSolve:
          result = eval::EvalLinalg(instr, operands);
          break;
        case HloOpcode::kScan:
          result = eval::EvalScan(instr, operands, call);
          break;
        case HloOpcode::kRaggedDot:
          result = eval::EvalRaggedDot(instr, operands);
          break;
        case HloOpcode::kReduce:
        case HloOpcode::kReduceWindow:
        case HloOpcode::kSelectAndScatter:
        case HloOpcode::kMap:
        case HloOpcode::kSort:
        case HloOpcode::kTopK:
          result = eval::EvalReduction(instr, operands, call);
          break;
        case HloOpcode::kGather:
        case HloOpcode::kScatter:
          result = eval::EvalIndexing(instr, operands, call);
          break;
        case HloOpcode::kBatchNormTraining:
        case HloOpcode::kBatchNormInference:
        case HloOpcode::kBatchNormGrad:
          result = eval::EvalBatchNorm(instr, operands);
          break;
        case HloOpcode::kRng:
        case HloOpcode::kRngBitGenerator:
          result = eval::EvalRandom(instr, operands);
          break;
        case HloOpcode::kFft:
          result = eval::EvalFft(instr, operands);
          break;
        default:
          return eval::Unimplemented(
              instr, absl::StrCat("'", opname, "' is not supported by the evaluator"));
      }
      if (!result.ok()) return Annotate(result.status(), instr);
      return result;
    }();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory producing ", instr.shape().ToString(false), eval::InstrSuffix(instr)));
  }
}

}  // namespace kiln
