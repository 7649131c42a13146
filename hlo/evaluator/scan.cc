// scan: runs to_apply once per position along the scan dimension (from the end when
// is_reverse), handing it one element of each input and the carries; the outputs it returns
// are stacked at that position and the carries go to the next step.
#include "absl/strings/str_cat.h"
#include "hlo/evaluator/evaluator_internal.h"
#include "hlo/evaluator/evaluator_util.h"

namespace kiln::eval {
namespace {

// Copies between a stacked array and one element of it (the array at `pos` along `dim`):
// rows of `inner` bytes, `outer` of them, `length` positions apart.
struct Stacking {
  int64_t outer = 1, inner = 1, length = 1;
  Stacking(const Shape& stacked, int64_t dim) {
    const auto& d = stacked.dimensions();
    for (int64_t i = 0; i < dim; ++i) outer *= d[i];
    inner = ByteSizeOf(stacked.element_type());
    for (size_t i = dim + 1; i < d.size(); ++i) inner *= d[i];
    length = d[dim];
  }
  void Take(const Literal& stacked, int64_t pos, Literal& element) const {
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(element.untyped_data() + o * inner,
                  stacked.untyped_data() + (o * length + pos) * inner, inner);
  }
  void Put(const Literal& element, int64_t pos, Literal& stacked) const {
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(stacked.untyped_data() + (o * length + pos) * inner,
                  element.untyped_data() + o * inner, inner);
  }
};

Shape WithoutDim(const Shape& s, int64_t dim) {
  std::vector<int64_t> d = s.dimensions();
  d.erase(d.begin() + dim);
  return Shape(s.element_type(), d);
}

}  // namespace

absl::StatusOr<Literal> EvalScan(const HloInstruction& instr, Operands ops, const CallFn& call) {
  const auto& attrs = instr.attrs();
  const int64_t carries = attrs.num_carries;
  const int64_t inputs = static_cast<int64_t>(ops.size()) - carries;
  if (instr.called_computations().empty() || attrs.dimensions.size() != 1 || inputs < 1 ||
      !instr.shape().IsTuple())
    return InvalidArgument(instr, "malformed scan");
  const HloComputation& body = *instr.called_computations()[0];
  const int64_t dim = attrs.dimensions[0];
  const int outputs = instr.shape().tuple_size() - static_cast<int>(carries);
  const int64_t length = ops[0]->shape().dimensions(static_cast<int>(dim));

  std::vector<Literal> stacked;
  for (int i = 0; i < outputs; ++i) stacked.emplace_back(instr.shape().tuple_shapes(i));
  std::vector<Literal> carry;
  for (int64_t i = 0; i < carries; ++i) carry.push_back(*ops[inputs + i]);
  std::vector<Literal> element;
  for (int64_t i = 0; i < inputs; ++i) element.emplace_back(WithoutDim(ops[i]->shape(), dim));

  for (int64_t step = 0; step < length; ++step) {
    const int64_t pos = attrs.is_reverse ? length - 1 - step : step;
    std::vector<const Literal*> args;
    for (int64_t i = 0; i < inputs; ++i) {
      Stacking(ops[i]->shape(), dim).Take(*ops[i], pos, element[i]);
      args.push_back(&element[i]);
    }
    for (Literal& c : carry) args.push_back(&c);
    absl::StatusOr<Literal> r = call(body, args);
    if (!r.ok()) return r.status();
    std::vector<Literal> parts = std::move(r->elements());
    if (static_cast<int64_t>(parts.size()) != outputs + carries)
      return InvalidArgument(instr, absl::StrCat("to_apply returned ", parts.size(),
                                                 " values, expected ", outputs + carries));
    for (int i = 0; i < outputs; ++i)
      Stacking(stacked[i].shape(), dim).Put(parts[i], pos, stacked[i]);
    for (int64_t i = 0; i < carries; ++i) carry[i] = std::move(parts[outputs + i]);
  }
  for (Literal& c : carry) stacked.push_back(std::move(c));
  return Literal::MakeTuple(std::move(stacked));
}

}  // namespace kiln::eval
