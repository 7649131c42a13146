// A small helper for tests and benchmarks that build HLO in C++ (names assigned in order).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hlo/module.h"

namespace kiln::cpu::testing {

class Builder {
 public:
  explicit Builder(HloComputation* comp) : comp_(comp) {}

  HloInstruction* Add(std::unique_ptr<HloInstruction> instr) {
    if (instr->name().empty())
      instr->set_name(absl::StrCat(std::string(HloOpcodeString(instr->opcode())), ".", next_++));
    return comp_->AddInstruction(std::move(instr));
  }
  HloInstruction* Param(int n, Shape s) {
    return Add(HloInstruction::CreateParameter(n, std::move(s), absl::StrCat("p", n)));
  }
  HloInstruction* Const(PrimitiveType t, double v) {
    return Add(HloInstruction::CreateConstant(Literal::Scalar(t, v)));
  }
  HloInstruction* ConstArray(Shape s, const std::vector<double>& v) {
    return Add(HloInstruction::CreateConstant(Literal::FromDoubles(s, v)));
  }
  HloInstruction* Unary(HloOpcode op, HloInstruction* x) {
    return Add(HloInstruction::CreateUnary(op, x->shape(), x));
  }
  HloInstruction* Binary(HloOpcode op, HloInstruction* a, HloInstruction* b) {
    return Add(HloInstruction::CreateBinary(op, a->shape().rank() ? a->shape() : b->shape(), a, b));
  }
  HloInstruction* Op(HloOpcode op, Shape s, std::vector<HloInstruction*> operands) {
    return Add(std::make_unique<HloInstruction>(op, std::move(s), std::move(operands)));
  }
  HloInstruction* Compare(ComparisonDirection d, HloInstruction* a, HloInstruction* b) {
    Shape s = a->shape();
    s.set_element_type(PrimitiveType::PRED);
    HloInstruction* c = Op(HloOpcode::kCompare, s, {a, b});
    c->mutable_attrs().comparison_direction = d;
    return c;
  }
  HloInstruction* Convert(HloInstruction* x, PrimitiveType t) {
    Shape s = x->shape();
    s.set_element_type(t);
    return Op(HloOpcode::kConvert, s, {x});
  }
  HloInstruction* WithDims(HloOpcode op, HloInstruction* x, Shape s, std::vector<int64_t> dims) {
    HloInstruction* h = Op(op, std::move(s), {x});
    h->mutable_attrs().dimensions = std::move(dims);
    h->mutable_attrs().has_dimensions = true;
    return h;
  }
  HloInstruction* Broadcast(HloInstruction* x, std::vector<int64_t> out_dims,
                            std::vector<int64_t> dims) {
    return WithDims(HloOpcode::kBroadcast, x, Shape(x->shape().element_type(), out_dims), dims);
  }
  HloInstruction* Transpose(HloInstruction* x, std::vector<int64_t> perm) {
    std::vector<int64_t> d;
    for (int64_t p : perm) d.push_back(x->shape().dimensions(p));
    return WithDims(HloOpcode::kTranspose, x, Shape(x->shape().element_type(), d), perm);
  }
  HloInstruction* Reshape(HloInstruction* x, std::vector<int64_t> dims) {
    return Op(HloOpcode::kReshape, Shape(x->shape().element_type(), dims), {x});
  }
  HloInstruction* Reduce(HloInstruction* x, HloInstruction* init, std::vector<int64_t> dims,
                         HloComputation* reducer) {
    std::vector<int64_t> kept;
    for (int i = 0; i < x->shape().rank(); ++i) {
      bool r = false;
      for (int64_t d : dims) r |= d == i;
      if (!r) kept.push_back(x->shape().dimensions(i));
    }
    HloInstruction* h = Op(HloOpcode::kReduce, Shape(x->shape().element_type(), kept), {x, init});
    h->mutable_attrs().dimensions = std::move(dims);
    h->mutable_attrs().has_dimensions = true;
    h->AppendCalledComputation(reducer);
    return h;
  }

 private:
  HloComputation* comp_;
  int next_ = 0;
};

// Adds `name (a, b) -> op(a, b)` on scalars of type t.
inline HloComputation* AddReducer(HloModule& m, HloOpcode op, PrimitiveType t,
                                  const std::string& name) {
  auto c = std::make_unique<HloComputation>(name);
  Builder b(c.get());
  HloInstruction* a = b.Param(0, Shape::Scalar(t));
  HloInstruction* x = b.Param(1, Shape::Scalar(t));
  c->set_root(b.Binary(op, a, x));
  return m.AddComputation(std::move(c));
}

}  // namespace kiln::cpu::testing
