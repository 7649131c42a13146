// Test helpers shared by the codegen plugins' tests (cpu-llvm, gpu-nvptx): random inputs and
// comparison of generated code's results with the reference evaluator's, per element type.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/literal.h"
#include "hlo/module.h"

namespace kiln::codegen_testing {

// Floats uniform in [-1, 1), small integers, random pred; tuples element by element.
inline Literal RandomLiteral(const Shape& s, std::mt19937& rng) {
  if (s.IsTuple()) {
    std::vector<Literal> elems;
    for (const Shape& e : s.tuple_shapes()) elems.push_back(RandomLiteral(e, rng));
    return Literal::MakeTuple(std::move(elems));
  }
  Literal l(s);
  PrimitiveType t = s.element_type();
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(-20, 20), bit(0, 1), usmall(0, 40);
  for (int64_t i = 0; i < l.element_count(); ++i) {
    if (IsFloating(t))
      l.SetFromDouble(i, real(rng));
    else if (t == PrimitiveType::PRED)
      l.SetFromDouble(i, bit(rng));
    else if (IsUnsignedInt(t))
      l.SetFromDouble(i, usmall(rng));
    else
      l.SetFromDouble(i, small(rng));
  }
  return l;
}

// One random literal per entry parameter of `module` (RandomLiteral, seeded with `seed`),
// and pointers to them in the form the runners take. Move-only: `ptrs` points into `values`.
struct RandomArgs {
  std::vector<Literal> values;
  std::vector<const Literal*> ptrs;
  RandomArgs() = default;
  RandomArgs(RandomArgs&&) = default;
  RandomArgs(const RandomArgs&) = delete;
};
inline RandomArgs RandomArguments(const HloModule& module, uint32_t seed) {
  std::mt19937 rng(seed);
  RandomArgs a;
  for (const HloInstruction* p : module.entry()->parameters())
    a.values.push_back(RandomLiteral(p->shape(), rng));
  for (const Literal& v : a.values) a.ptrs.push_back(&v);
  return a;
}

// Relative tolerance per element type; integers and pred must match exactly.
inline double Tolerance(PrimitiveType t, double f32_tolerance) {
  switch (t) {
    case PrimitiveType::F16:
      return 1e-2;
    case PrimitiveType::BF16:
      return 2e-2;
    case PrimitiveType::F32:
      return f32_tolerance;
    case PrimitiveType::F64:
      return 1e-9;
    default:
      return 0;
  }
}

// |got - want| <= tol * (1 + |want|) per element (NaN matches NaN); reports at most five
// mismatches per leaf, labelled with `got_label` (e.g. "jit", "gpu").
inline void ExpectClose(const Literal& got, const Literal& want, const std::string& where,
                        const char* got_label, double f32_tolerance = 2e-4) {
  ASSERT_EQ(got.shape().IsTuple(), want.shape().IsTuple()) << where;
  if (want.IsTuple()) {
    ASSERT_EQ(got.elements().size(), want.elements().size()) << where;
    for (size_t i = 0; i < want.elements().size(); ++i)
      ExpectClose(got.element(i), want.element(i), where + "{" + std::to_string(i) + "}", got_label,
                  f32_tolerance);
    return;
  }
  ASSERT_TRUE(got.shape().Compatible(want.shape()))
      << where << ": " << got.shape().ToString() << " vs " << want.shape().ToString();
  double tol = Tolerance(want.shape().element_type(), f32_tolerance);
  int bad = 0;
  for (int64_t i = 0; i < want.element_count() && bad < 5; ++i) {
    double g = got.GetAsDouble(i), w = want.GetAsDouble(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    // A NaN on one side only fails too (the distance to a NaN compares false).
    if (std::isnan(w) || std::isnan(g) || std::fabs(g - w) > tol * (1 + std::fabs(w))) {
      ADD_FAILURE() << where << " element " << i << ": " << got_label << " " << g << " evaluator "
                    << w;
      ++bad;
    }
  }
}

}  // namespace kiln::codegen_testing
