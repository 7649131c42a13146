// The verifier: structure (roots, parameters, operands, use-def, cycles, names), then each
// instruction's declared shape against InferShape and called computations' signatures.
#include "hlo/verifier.h"

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hlo/shape_inference.h"
#include "hlo/text/parser.h"

namespace kiln {
namespace {

std::string Str(const Shape& s) { return s.ToString(/*print_layout=*/false); }

// Element types, tuple structure and dims, ignoring layouts. A dimension that is dynamic on
// either side may differ: its bound is not the runtime size.
// With `ignore_fp_precision`, floating-point element types may differ (XLA's mixed precision).
bool SameElementType(PrimitiveType a, PrimitiveType b, bool ignore_fp_precision) {
  return a == b || (ignore_fp_precision && IsFloating(a) && IsFloating(b));
}

bool ShapesMatch(const Shape& a, const Shape& b, bool ignore_fp_precision = false) {
  if (!SameElementType(a.element_type(), b.element_type(), ignore_fp_precision)) return false;
  if (a.IsTuple()) {
    if (a.tuple_size() != b.tuple_size()) return false;
    for (int i = 0; i < a.tuple_size(); ++i)
      if (!ShapesMatch(a.tuple_shapes(i), b.tuple_shapes(i), ignore_fp_precision)) return false;
    return true;
  }
  if (!a.IsArray()) return true;
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (a.dimensions(i) != b.dimensions(i) && !a.is_dynamic_dimension(i) &&
        !b.is_dynamic_dimension(i))
      return false;
  return true;
}

bool IsScalarOf(const Shape& s, PrimitiveType t, bool ignore_fp_precision = false) {
  return s.IsArray() && s.rank() == 0 && SameElementType(s.element_type(), t, ignore_fp_precision);
}

std::string ScalarStr(PrimitiveType t) { return fmt::format("{}[]", PrimitiveTypeName(t)); }

class Verifier {
 public:
  Verifier(const HloModule& module, ShapeRules rules) : module_(module), rules_(rules) {}

  absl::Status Run() {
    if (module_.entry() == nullptr)
      return absl::InvalidArgumentError(
          fmt::format("verifier: module {} has no entry computation", module_.name()));
    std::vector<HloComputation*> comps = module_.computations();
    for (HloComputation* c : comps) comps_.insert(c);
    if (!comps_.contains(module_.entry()))
      return absl::InvalidArgumentError(
          fmt::format("verifier: entry computation %{} is not part of module {}",
                      module_.entry()->name(), module_.name()));
    if (absl::Status s = CheckNames(comps); !s.ok()) return s;
    // Structure first: the shape and signature checks rely on it.
    for (HloComputation* c : comps)
      if (absl::Status s = CheckStructure(*c); !s.ok()) return s;
    for (HloComputation* c : comps)
      if (absl::Status s = CheckCycles(*c); !s.ok()) return s;
    for (HloComputation* c : comps) {
      for (HloInstruction* i : c->instructions()) {
        if (absl::Status s = CheckCalled(*c, *i); !s.ok()) return s;
        if (absl::Status s = CheckShape(*c, *i); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

 private:
  template <typename... Args>
  static absl::Status Fail(const HloComputation& c, const HloInstruction& i,
                           fmt::format_string<Args...> f, Args&&... args) {
    return absl::InvalidArgumentError(fmt::format("verifier: in %{}, %{}: {}: {}", c.name(),
                                                  i.name(), HloOpcodeString(i.opcode()),
                                                  fmt::format(f, std::forward<Args>(args)...)));
  }
  template <typename... Args>
  static absl::Status FailComp(const HloComputation& c, fmt::format_string<Args...> f,
                               Args&&... args) {
    return absl::InvalidArgumentError(
        fmt::format("verifier: in %{}: {}", c.name(), fmt::format(f, std::forward<Args>(args)...)));
  }
  // Wraps a message that already names the instruction (from InferShape and friends).
  static absl::Status Wrap(const HloComputation& c, const absl::Status& s) {
    return absl::InvalidArgumentError(
        fmt::format("verifier: in %{}, {}", c.name(), std::string(s.message())));
  }

  absl::Status CheckNames(const std::vector<HloComputation*>& comps) {
    absl::flat_hash_map<std::string, const HloComputation*> comp_names;
    for (HloComputation* c : comps) {
      if (!comp_names.emplace(c->name(), c).second)
        return FailComp(*c, "computation name is used by more than one computation");
      // Names are scoped per computation, as XLA's parser scopes them: hand-written and
      // JAX-dumped modules reuse `a`, `p0`, `param_0` in every reducer.
      absl::flat_hash_map<std::string, const HloComputation*> instr_names;
      for (HloInstruction* i : c->instructions()) {
        // Unnamed instructions (fresh from a builder) get names when printed.
        if (i->name().empty()) continue;
        auto [it, inserted] = instr_names.emplace(i->name(), c);
        if (!inserted)
          return Fail(*c, *i, "instruction name is already used in %{}", it->second->name());
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckStructure(const HloComputation& c) {
    if (c.root() == nullptr) return FailComp(c, "computation has no root instruction");
    if (c.root()->parent() != &c)
      return FailComp(c, "root %{} belongs to another computation", c.root()->name());
    if (c.parent() != &module_)
      return FailComp(c, "computation's parent is not module {}", module_.name());

    // Parameter numbers: 0..n-1, each exactly once.
    std::vector<const HloInstruction*> params;
    for (HloInstruction* i : c.instructions()) {
      if (i->opcode() != HloOpcode::kParameter) continue;
      int64_t num = i->parameter_number();
      if (num < 0) return Fail(c, *i, "parameter number {} is negative", num);
      if (static_cast<size_t>(num) >= params.size()) params.resize(num + 1, nullptr);
      if (params[num] != nullptr)
        return Fail(c, *i, "parameter number {} is also used by %{}", num, params[num]->name());
      params[num] = i;
    }
    for (size_t k = 0; k < params.size(); ++k)
      if (params[k] == nullptr)
        return FailComp(c, "parameter numbers are not contiguous: {} is missing (highest is {})", k,
                        params.size() - 1);
    if (static_cast<size_t>(c.num_parameters()) != params.size())
      return FailComp(c, "computation records {} parameters but has {} parameter instructions",
                      c.num_parameters(), params.size());

    absl::flat_hash_set<const HloInstruction*> members;
    for (HloInstruction* i : c.instructions()) members.insert(i);
    for (HloInstruction* i : c.instructions()) {
      if (i->parent() != &c) return Fail(c, *i, "instruction's parent is another computation");
      // Before any shape check reads sizes: shape inference multiplies operand dimensions.
      if (!i->shape().SizeFits())
        return Fail(c, *i, "shape {} is too large (its byte size overflows 64 bits)",
                    Str(i->shape()));
      for (int k = 0; k < i->operand_count(); ++k) {
        const HloInstruction* o = i->operand(k);
        if (o == nullptr) return Fail(c, *i, "operand {} is null", k);
        if (!members.contains(o))
          return Fail(c, *i, "operand {} %{} belongs to computation %{}", k, o->name(),
                      o->parent() ? o->parent()->name() : std::string("<none>"));
        const auto& users = o->users();
        if (std::find(users.begin(), users.end(), i) == users.end())
          return Fail(c, *i, "uses %{} but is missing from its user list", o->name());
      }
      for (const HloInstruction* u : i->users()) {
        if (!members.contains(u))
          return Fail(c, *i, "user %{} belongs to another computation", u->name());
        const auto& ops = u->operands();
        if (std::find(ops.begin(), ops.end(), i) == ops.end())
          return Fail(c, *i, "lists %{} as a user but %{} does not use it", u->name(), u->name());
      }
      for (const HloInstruction* p : i->control_predecessors())
        if (p == nullptr || !members.contains(p))
          return Fail(c, *i, "control predecessor is not in the computation");
      for (const HloComputation* callee : i->called_computations()) {
        if (callee == nullptr) return Fail(c, *i, "called computation is null");
        if (!comps_.contains(callee))
          return Fail(c, *i, "calls %{} which is not part of the module", callee->name());
      }
      if (absl::Status s = CheckOperandCount(*i); !s.ok()) return Wrap(c, s);
    }
    return absl::OkStatus();
  }

  // Iterative three-colour DFS over operand and control edges.
  absl::Status CheckCycles(const HloComputation& c) {
    enum Color : uint8_t { kWhite, kGrey, kBlack };
    absl::flat_hash_map<const HloInstruction*, Color> color;
    for (HloInstruction* start : c.instructions()) {
      if (color[start] != kWhite) continue;
      std::vector<std::pair<const HloInstruction*, size_t>> stack{{start, 0}};
      color[start] = kGrey;
      while (!stack.empty()) {
        auto& [node, next] = stack.back();
        size_t n_ops = node->operands().size();
        size_t n_all = n_ops + node->control_predecessors().size();
        if (next == n_all) {
          color[node] = kBlack;
          stack.pop_back();
          continue;
        }
        const HloInstruction* dep = next < n_ops ? node->operand(static_cast<int>(next))
                                                 : node->control_predecessors()[next - n_ops];
        ++next;
        Color& dc = color[dep];
        if (dc == kGrey)
          return Fail(c, *dep, "is part of a cycle (reached again through %{})", node->name());
        if (dc == kWhite) {
          dc = kGrey;
          stack.push_back({dep, 0});
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckShape(const HloComputation& c, const HloInstruction& i) {
    absl::StatusOr<Shape> inferred = InferShape(i, rules_);
    if (absl::IsUnimplemented(inferred.status())) return absl::OkStatus();
    if (!inferred.ok()) return Wrap(c, inferred.status());
    if (!ShapesMatch(i.shape(), *inferred, MayChangePrecision(i.opcode())))
      return Fail(c, i, "declared shape {} does not match inferred shape {}", Str(i.shape()),
                  Str(*inferred));
    return absl::OkStatus();
  }

  // In XLA's text form an instruction that computes its values may also change their
  // floating-point precision; the ones that only pass values on may not (XLA's verifier).
  bool MayChangePrecision(HloOpcode op) const {
    if (rules_ != ShapeRules::kXlaText) return false;
    switch (op) {
      case HloOpcode::kBitcast:
      case HloOpcode::kCall:
      case HloOpcode::kConditional:
      case HloOpcode::kConstant:
      case HloOpcode::kCopyDone:
      case HloOpcode::kCopyStart:
      case HloOpcode::kCustomCall:
      case HloOpcode::kGetTupleElement:
      case HloOpcode::kInfeed:
      case HloOpcode::kOutfeed:
      case HloOpcode::kOptimizationBarrier:
      case HloOpcode::kParameter:
      case HloOpcode::kRecv:
      case HloOpcode::kRecvDone:
      case HloOpcode::kSend:
      case HloOpcode::kSendDone:
      case HloOpcode::kWhile:
        return false;
      default:
        return true;
    }
  }

  // Number of computations each calling opcode takes; -1 when any number is allowed.
  static int CalledCount(HloOpcode op) {
    switch (op) {
      case HloOpcode::kWhile:
      case HloOpcode::kSelectAndScatter:
        return 2;
      case HloOpcode::kReduce:
      case HloOpcode::kReduceWindow:
      case HloOpcode::kScatter:
      case HloOpcode::kSort:
      case HloOpcode::kMap:
      case HloOpcode::kScan:
      case HloOpcode::kCall:
      case HloOpcode::kFusion:
      case HloOpcode::kAllReduce:
      case HloOpcode::kAllReduceStart:
      case HloOpcode::kReduceScatter:
        return 1;
      case HloOpcode::kConditional:
      case HloOpcode::kCustomCall:
      case HloOpcode::kAsyncStart:
      case HloOpcode::kAsyncUpdate:
      case HloOpcode::kAsyncDone:
        return -1;
      default:
        return 0;
    }
  }

  // A reducer over N values: (acc_0..acc_{N-1}, x_0..x_{N-1}) -> acc, all scalars.
  absl::Status CheckReducer(const HloComputation& c, const HloInstruction& i,
                            const HloComputation& r, const std::vector<PrimitiveType>& acc,
                            const std::vector<PrimitiveType>& in) {
    size_t n = acc.size();
    if (static_cast<size_t>(r.num_parameters()) != 2 * n)
      return Fail(c, i, "reducer %{} must take {} scalar parameters but takes {}", r.name(), 2 * n,
                  r.num_parameters());
    const bool mixed = MayChangePrecision(i.opcode());
    for (size_t k = 0; k < 2 * n; ++k) {
      PrimitiveType want = k < n ? acc[k] : in[k - n];
      const Shape& got = r.parameter(static_cast<int>(k))->shape();
      if (!IsScalarOf(got, want, mixed))
        return Fail(c, i, "reducer %{} parameter {} must be {} but is {}", r.name(), k,
                    ScalarStr(want), Str(got));
    }
    const Shape& root = r.root()->shape();
    bool ok = n == 1 ? IsScalarOf(root, acc[0], mixed)
                     : root.IsTuple() && static_cast<size_t>(root.tuple_size()) == n;
    for (size_t k = 0; ok && n > 1 && k < n; ++k)
      ok = IsScalarOf(root.tuple_shapes(static_cast<int>(k)), acc[k], mixed);
    if (!ok) {
      std::vector<Shape> want;
      for (PrimitiveType t : acc) want.push_back(Shape::Scalar(t));
      return Fail(c, i, "reducer %{} must return {} but returns {}", r.name(),
                  Str(n == 1 ? want[0] : Shape::Tuple(want)), Str(root));
    }
    return absl::OkStatus();
  }

  // Callee parameters must match `shapes` one for one.
  absl::Status CheckParams(const HloComputation& c, const HloInstruction& i,
                           const HloComputation& callee, std::string_view role,
                           const std::vector<Shape>& shapes) {
    if (static_cast<size_t>(callee.num_parameters()) != shapes.size())
      return Fail(c, i, "{} %{} takes {} parameters but is given {} operands", role, callee.name(),
                  callee.num_parameters(), shapes.size());
    for (size_t k = 0; k < shapes.size(); ++k) {
      const Shape& p = callee.parameter(static_cast<int>(k))->shape();
      if (!ShapesMatch(p, shapes[k]))
        return Fail(c, i, "{} %{} parameter {} is {} but operand {} is {}", role, callee.name(), k,
                    Str(p), k, Str(shapes[k]));
    }
    return absl::OkStatus();
  }

  absl::Status CheckCalled(const HloComputation& c, const HloInstruction& i) {
    const auto& called = i.called_computations();
    int want = CalledCount(i.opcode());
    if (want >= 0 && static_cast<int>(called.size()) != want)
      return Fail(c, i, "expects {} called computation{} but has {}", want, want == 1 ? "" : "s",
                  called.size());
    std::vector<Shape> operand_shapes;
    for (const HloInstruction* o : i.operands()) operand_shapes.push_back(o->shape());
    auto element_types = [&](int from, int count) {
      std::vector<PrimitiveType> t;
      for (int k = from; k < from + count; ++k) t.push_back(operand_shapes[k].element_type());
      return t;
    };
    int n = i.operand_count();
    // Signatures below are stated in terms of operand element types; a non-array operand is
    // reported by shape inference instead, with a clearer message.
    bool arrays = true;
    for (const Shape& s : operand_shapes) arrays = arrays && s.IsArray();
    switch (i.opcode()) {
      case HloOpcode::kReduce:
      case HloOpcode::kReduceWindow:
      case HloOpcode::kScatter:
      case HloOpcode::kAllReduce:
      case HloOpcode::kAllReduceStart:
      case HloOpcode::kReduceScatter:
      case HloOpcode::kSelectAndScatter:
      case HloOpcode::kSort:
      case HloOpcode::kMap:
        if (!arrays) return absl::OkStatus();
        break;
      default:
        break;
    }
    switch (i.opcode()) {
      case HloOpcode::kReduce:
      case HloOpcode::kReduceWindow:
        return CheckReducer(c, i, *called[0], element_types(n / 2, n / 2), element_types(0, n / 2));
      case HloOpcode::kScatter:
        return CheckReducer(c, i, *called[0], element_types(0, n / 2),
                            element_types(n / 2 + 1, n / 2));
      case HloOpcode::kAllReduce:
      case HloOpcode::kAllReduceStart:
      case HloOpcode::kReduceScatter: {
        // One scalar reducer of one type applied to every operand. Like XLA's verifier it
        // may be of another type than the data (XLA's collective quantizer writes an f32 max
        // for bf16 scales): values are converted to it and back.
        if (n == 0) return absl::OkStatus();
        const HloComputation& r = *called[0];
        PrimitiveType reducer_type = operand_shapes[0].element_type();
        if (r.num_parameters() > 0 && r.parameter(0)->shape().IsArray() &&
            r.parameter(0)->shape().rank() == 0)
          reducer_type = r.parameter(0)->shape().element_type();
        std::vector<PrimitiveType> t{reducer_type};
        return CheckReducer(c, i, r, t, t);
      }
      case HloOpcode::kSelectAndScatter: {
        PrimitiveType ot = operand_shapes[0].element_type(), st = operand_shapes[1].element_type();
        const HloComputation& sel = *called[0];
        const HloComputation& sc = *called[1];
        if (sel.num_parameters() != 2 || !IsScalarOf(sel.parameter(0)->shape(), ot) ||
            !IsScalarOf(sel.parameter(1)->shape(), ot))
          return Fail(c, i, "select %{} must take ({}, {}) but is {}", sel.name(), ScalarStr(ot),
                      ScalarStr(ot), sel.SignatureString());
        if (!IsScalarOf(sel.root()->shape(), PrimitiveType::PRED))
          return Fail(c, i, "select %{} must return pred[] but returns {}", sel.name(),
                      Str(sel.root()->shape()));
        return CheckReducer(c, i, sc, {st}, {st});
      }
      case HloOpcode::kSort: {
        const HloComputation& cmp = *called[0];
        if (cmp.num_parameters() != 2 * n)
          return Fail(c, i, "comparator %{} must take {} scalar parameters but takes {}",
                      cmp.name(), 2 * n, cmp.num_parameters());
        for (int k = 0; k < 2 * n; ++k) {
          PrimitiveType t = operand_shapes[k / 2].element_type();
          if (!IsScalarOf(cmp.parameter(k)->shape(), t))
            return Fail(c, i, "comparator %{} parameter {} must be {} but is {}", cmp.name(), k,
                        ScalarStr(t), Str(cmp.parameter(k)->shape()));
        }
        if (!IsScalarOf(cmp.root()->shape(), PrimitiveType::PRED))
          return Fail(c, i, "comparator %{} must return pred[] but returns {}", cmp.name(),
                      Str(cmp.root()->shape()));
        return absl::OkStatus();
      }
      case HloOpcode::kMap: {
        std::vector<Shape> scalars;
        for (const Shape& s : operand_shapes) scalars.push_back(Shape::Scalar(s.element_type()));
        return CheckParams(c, i, *called[0], "to_apply", scalars);
      }
      case HloOpcode::kScan: {
        // One element of each input (the scan dimension removed), then the carries.
        const int64_t inputs = n - i.attrs().num_carries;
        if (i.attrs().dimensions.size() != 1 || inputs < 1 || inputs > n) return absl::OkStatus();
        const int64_t d = i.attrs().dimensions[0];
        std::vector<Shape> params;
        for (int k = 0; k < n; ++k) {
          const Shape& s = operand_shapes[k];
          if (k < inputs && s.IsArray() && d >= 0 && d < s.rank()) {
            std::vector<int64_t> dims = s.dimensions();
            dims.erase(dims.begin() + d);
            params.push_back(Shape(s.element_type(), dims));
          } else {
            params.push_back(s);
          }
        }
        return CheckParams(c, i, *called[0], "to_apply", params);
      }
      case HloOpcode::kCall:
        return CheckParams(c, i, *called[0], "to_apply", operand_shapes);
      case HloOpcode::kFusion:
        return CheckParams(c, i, *called[0], "fused computation", operand_shapes);
      case HloOpcode::kAsyncStart:
        // The wrapper of a computation passes its operands to it (shorthands have no callee).
        if (i.attrs().async_wrapped_opcode || called.size() != 1) return absl::OkStatus();
        return CheckParams(c, i, *called[0], "async computation", operand_shapes);
      case HloOpcode::kWhile: {
        const Shape& init = operand_shapes[0];
        const HloComputation& cond = *called[0];
        const HloComputation& body = *called[1];
        if (absl::Status s = CheckParams(c, i, cond, "condition", {init}); !s.ok()) return s;
        if (!IsScalarOf(cond.root()->shape(), PrimitiveType::PRED))
          return Fail(c, i, "condition %{} must return pred[] but returns {}", cond.name(),
                      Str(cond.root()->shape()));
        if (absl::Status s = CheckParams(c, i, body, "body", {init}); !s.ok()) return s;
        if (!ShapesMatch(body.root()->shape(), init))
          return Fail(c, i, "body %{} returns {} but the loop state is {}", body.name(),
                      Str(body.root()->shape()), Str(init));
        return absl::OkStatus();
      }
      case HloOpcode::kConditional: {
        if (called.empty() || static_cast<size_t>(n) != called.size() + 1)
          return absl::OkStatus();  // InferShape reports the count mismatch
        for (size_t b = 0; b < called.size(); ++b) {
          const HloComputation& br = *called[b];
          std::string role = fmt::format("branch {}", b);
          if (absl::Status s = CheckParams(c, i, br, role, {operand_shapes[b + 1]}); !s.ok())
            return s;
          if (!ShapesMatch(br.root()->shape(), called[0]->root()->shape()))
            return Fail(c, i, "branch {} %{} returns {} but branch 0 %{} returns {}", b, br.name(),
                        Str(br.root()->shape()), called[0]->name(),
                        Str(called[0]->root()->shape()));
        }
        return absl::OkStatus();
      }
      default:
        return absl::OkStatus();
    }
  }

  const HloModule& module_;
  ShapeRules rules_;
  absl::flat_hash_set<const HloComputation*> comps_;
};

}  // namespace

absl::Status VerifyModule(const HloModule& module, ShapeRules rules) {
  return Verifier(module, rules).Run();
}

absl::StatusOr<std::unique_ptr<HloModule>> ParseRunnableModule(std::string_view text,
                                                               std::string_view filename,
                                                               bool verify, ShapeRules rules) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text, filename);
  if (!module.ok()) return module.status();
  if (absl::Status s = verify ? VerifyModule(**module, rules) : absl::OkStatus(); !s.ok()) {
    // Say so when only Kiln's execution rules refuse what XLA's text form allows.
    std::string_view why =
        rules == ShapeRules::kExecutable && VerifyModule(**module, ShapeRules::kXlaText).ok()
            ? " (XLA's layout-free HLO allows this form, but Kiln's devices "
              "do not run it)"
            : "";
    return absl::InvalidArgumentError(
        fmt::format("{}: {}{}", filename, std::string(s.message()), why));
  }
  if ((*module)->entry() == nullptr) {
    return absl::InvalidArgumentError(fmt::format("{}: module has no entry computation", filename));
  }
  return module;
}

}  // namespace kiln
