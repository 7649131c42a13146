// Test helpers for the fusion passes: a tiny FileCheck-like matcher over printed text, a
// builder for HLO in C++, and counts of fusions by kind.
#pragma once

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "hlo/module.h"

namespace kiln::testing {

// Checks `text` against lines of `checks`:
//   CHECK: s        the next line (at or after the cursor) containing s
//   CHECK-NEXT: s   the line right after the previous match contains s
//   CHECK-NOT: s    no line between the previous match and the next match contains s
//   CHECK-COUNT-N: s  exactly N lines of the whole text contain s
// Returns "" on success, else what failed.
inline std::string MatchChecks(std::string_view text, std::string_view checks) {
  std::vector<std::string> lines;
  {
    std::istringstream in{std::string(text)};
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  std::vector<std::string> pending_not;
  size_t cursor = 0;  // first line not yet consumed
  std::istringstream cin{std::string(checks)};
  auto trim = [](std::string s) {
    size_t a = s.find_first_not_of(" \t");
    size_t b = s.find_last_not_of(" \t");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
  };
  auto flush_not = [&](size_t from, size_t to) -> std::string {
    for (const std::string& n : pending_not)
      for (size_t i = from; i < to && i < lines.size(); ++i)
        if (lines[i].find(n) != std::string::npos)
          return "CHECK-NOT: '" + n + "' found on line " + std::to_string(i + 1) + ": " + lines[i];
    pending_not.clear();
    return "";
  };
  for (std::string c; std::getline(cin, c);) {
    c = trim(c);
    if (c.empty()) continue;
    size_t colon = c.find(':');
    if (colon == std::string::npos) return "bad check line: " + c;
    std::string kind = c.substr(0, colon);
    std::string pat = trim(c.substr(colon + 1));
    if (kind == "CHECK-NOT") {
      pending_not.push_back(pat);
    } else if (kind == "CHECK") {
      size_t i = cursor;
      while (i < lines.size() && lines[i].find(pat) == std::string::npos) ++i;
      if (i == lines.size()) return "CHECK: '" + pat + "' not found";
      if (std::string e = flush_not(cursor, i); !e.empty()) return e;
      cursor = i + 1;
    } else if (kind == "CHECK-NEXT") {
      if (cursor >= lines.size() || lines[cursor].find(pat) == std::string::npos)
        return "CHECK-NEXT: '" + pat + "' not on line " + std::to_string(cursor + 1);
      ++cursor;
    } else if (kind.rfind("CHECK-COUNT-", 0) == 0) {
      int want = std::stoi(kind.substr(12));
      int got = 0;
      for (const std::string& l : lines)
        if (l.find(pat) != std::string::npos) ++got;
      if (got != want) return kind + ": '" + pat + "' found " + std::to_string(got) + " times";
    } else {
      return "unknown check kind: " + kind;
    }
  }
  return flush_not(cursor, lines.size());
}

// Fusions of a computation by kind, and the kernels it launches: every instruction that
// does work (not parameters, constants, tuples, get-tuple-element, bitcasts).
struct FusionCounts {
  int fusions = 0;
  int loop = 0, input = 0, output = 0;
  int kernels = 0;
  int multi_output = 0;
};

inline FusionCounts CountFusions(const HloComputation& comp) {
  FusionCounts c;
  for (const HloInstruction* i : comp.instructions()) {
    switch (i->opcode()) {
      case HloOpcode::kParameter:
      case HloOpcode::kConstant:
      case HloOpcode::kTuple:
      case HloOpcode::kGetTupleElement:
      case HloOpcode::kBitcast:
        continue;
      default:
        break;
    }
    ++c.kernels;
    if (i->opcode() != HloOpcode::kFusion) continue;
    ++c.fusions;
    if (i->shape().IsTuple()) ++c.multi_output;
    switch (i->attrs().fusion_kind) {
      case FusionKind::kLoop:
        ++c.loop;
        break;
      case FusionKind::kInput:
        ++c.input;
        break;
      case FusionKind::kOutput:
        ++c.output;
        break;
      default:
        break;
    }
  }
  return c;
}

// Builds HLO in C++ for tests that do not go through the text parser.
class Builder {
 public:
  explicit Builder(std::string name = "m") : module_(std::make_unique<HloModule>(name)) {
    entry_ = module_->AddComputation(std::make_unique<HloComputation>("main"), true);
  }

  HloComputation* entry() const { return entry_; }
  std::unique_ptr<HloModule> Finish(HloInstruction* root) {
    entry_->set_root(root);
    return std::move(module_);
  }

  HloInstruction* Param(Shape shape, std::string name) {
    return entry_->AddInstruction(
        HloInstruction::CreateParameter(next_param_++, std::move(shape), std::move(name)));
  }
  HloInstruction* Scalar(double v, PrimitiveType t = PrimitiveType::F32) {
    return Named(HloInstruction::CreateConstant(Literal::Scalar(t, v)), "constant");
  }
  HloInstruction* Unary(HloOpcode op, HloInstruction* x) {
    return Named(HloInstruction::CreateUnary(op, x->shape(), x), HloOpcodeString(op));
  }
  HloInstruction* Binary(HloOpcode op, HloInstruction* a, HloInstruction* b) {
    return Named(HloInstruction::CreateBinary(op, a->shape(), a, b), HloOpcodeString(op));
  }
  HloInstruction* Broadcast(HloInstruction* x, std::vector<int64_t> dims,
                            std::vector<int64_t> mapping) {
    auto i = std::make_unique<HloInstruction>(HloOpcode::kBroadcast,
                                              Shape(x->shape().element_type(), std::move(dims)),
                                              std::vector<HloInstruction*>{x});
    i->mutable_attrs().dimensions = std::move(mapping);
    i->mutable_attrs().has_dimensions = true;
    return Named(std::move(i), "broadcast");
  }
  // A reduction with a scalar computation `add` or `max` built on demand.
  HloInstruction* Reduce(HloInstruction* x, HloInstruction* init, std::vector<int64_t> dims,
                         HloOpcode combiner = HloOpcode::kAdd) {
    std::vector<int64_t> out;
    for (int64_t d = 0; d < x->shape().rank(); ++d)
      if (std::find(dims.begin(), dims.end(), d) == dims.end())
        out.push_back(x->shape().dimensions(static_cast<int>(d)));
    auto i =
        std::make_unique<HloInstruction>(HloOpcode::kReduce, Shape(x->shape().element_type(), out),
                                         std::vector<HloInstruction*>{x, init});
    i->mutable_attrs().dimensions = std::move(dims);
    i->mutable_attrs().has_dimensions = true;
    i->AppendCalledComputation(Combiner(combiner, x->shape().element_type()));
    return Named(std::move(i), "reduce");
  }
  // a[m,k] x b[k,n].
  HloInstruction* Dot(HloInstruction* a, HloInstruction* b) {
    auto i = std::make_unique<HloInstruction>(
        HloOpcode::kDot,
        Shape(a->shape().element_type(), {a->shape().dimensions(0), b->shape().dimensions(1)}),
        std::vector<HloInstruction*>{a, b});
    DotDimensionNumbers dn;
    dn.lhs_contracting_dimensions = {1};
    dn.rhs_contracting_dimensions = {0};
    i->mutable_attrs().dot_dimension_numbers = dn;
    return Named(std::move(i), "dot");
  }

 private:
  HloInstruction* Named(std::unique_ptr<HloInstruction> i, std::string_view base) {
    i->set_name(std::string(base) + "." + std::to_string(++counter_));
    return entry_->AddInstruction(std::move(i));
  }
  HloComputation* Combiner(HloOpcode op, PrimitiveType t) {
    std::string name = std::string(HloOpcodeString(op)) + "_computation";
    if (HloComputation* c = module_->FindComputation(name)) return c;
    auto c = std::make_unique<HloComputation>(name);
    HloInstruction* a = c->AddInstruction(
        HloInstruction::CreateParameter(0, Shape::Scalar(t), "lhs." + std::to_string(++counter_)));
    HloInstruction* b = c->AddInstruction(
        HloInstruction::CreateParameter(1, Shape::Scalar(t), "rhs." + std::to_string(++counter_)));
    auto r = HloInstruction::CreateBinary(op, Shape::Scalar(t), a, b);
    r->set_name("combine." + std::to_string(++counter_));
    c->set_root(c->AddInstruction(std::move(r)));
    // Callees go first so that the module's order is callees before callers.
    return module_->AddComputation(std::move(c));
  }

  std::unique_ptr<HloModule> module_;
  HloComputation* entry_;
  int64_t next_param_ = 0;
  int counter_ = 0;
};

}  // namespace kiln::testing
