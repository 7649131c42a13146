// Values of a run: tuples refer to their elements (no copies), results move out when only
// one value refers to them, borrowed literals are copied, never taken.
#include "plugins/kernel_plan/step_values.h"

#include "gtest/gtest.h"

namespace kiln::kernel_plan {
namespace {

Literal Iota(int n) {
  Literal l(Shape(PrimitiveType::F32, {n}));
  for (int i = 0; i < n; ++i) l.data<float>()[i] = static_cast<float>(i);
  return l;
}

TEST(StepValues, TupleElementsAreSharedNotCopied) {
  Value a = Value::Owned(Iota(4));
  Value b = Value::Owned(Iota(3));
  Value t;
  t.elements = {a, b};
  ASSERT_TRUE(t.IsTuple());
  EXPECT_EQ(t.TupleSize(), 2);
  // The element is the same literal object, not a copy of it.
  EXPECT_EQ(t.Element(0).literal.get(), a.literal.get());
  EXPECT_EQ(t.Element(1).literal.get(), b.literal.get());
}

TEST(StepValues, MaterializeMovesSoleOwnerAndCopiesShared) {
  Value a = Value::Owned(Iota(1000));
  const uint8_t* bytes = a.literal->untyped_data();
  Value shared = a;
  Literal copied = Materialize(shared);  // `a` still refers to it: copied
  EXPECT_NE(copied.untyped_data(), bytes);
  EXPECT_EQ(copied, *a.literal);
  shared = Value();
  Literal moved = Materialize(std::move(a));  // the only reference left: moved
  EXPECT_EQ(moved.untyped_data(), bytes);
}

TEST(StepValues, BorrowedLiteralsAreCopiedAndElementsOfTupleLiterals) {
  Literal arg = Literal::MakeTuple({Iota(2), Iota(5)});
  Value v = Value::Borrowed(&arg);
  EXPECT_TRUE(v.IsTuple());
  EXPECT_EQ(v.TupleSize(), 2);
  Value e = v.Element(1);
  EXPECT_EQ(e.literal.get(), &arg.element(1));  // refers into the argument
  Literal out = Materialize(e);
  EXPECT_NE(out.untyped_data(), arg.element(1).untyped_data());  // the argument is untouched
  EXPECT_EQ(out, arg.element(1));
  // A tuple made of parts becomes one tuple literal.
  Value t;
  t.elements = {Value::Owned(Iota(3)), e};
  Literal whole = Materialize(std::move(t));
  ASSERT_TRUE(whole.IsTuple());
  EXPECT_EQ(whole.element(0), Iota(3));
  EXPECT_EQ(whole.element(1), arg.element(1));
}

}  // namespace
}  // namespace kiln::kernel_plan
