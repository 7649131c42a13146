// Test helpers for the eval2 kernel tests: building literals and comparing them to
// expected values.
#pragma once

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "hlo/literal.h"

namespace kiln::eval::testing {

inline Literal Lit(PrimitiveType t, std::vector<int64_t> dims, const std::vector<double>& v) {
  Shape s(t, std::move(dims));
  EXPECT_EQ(static_cast<int64_t>(v.size()), s.num_elements()) << "test literal size";
  return Literal::FromDoubles(s, v);
}
inline Literal F32(std::vector<int64_t> dims, const std::vector<double>& v) {
  return Lit(PrimitiveType::F32, std::move(dims), v);
}

// Expects `l` to have dims `dims` and elements within `tol` (relative to max(1,|e|)) of `e`.
inline void ExpectValues(const Literal& l, std::vector<int64_t> dims, const std::vector<double>& e,
                         double tol = 0) {
  ASSERT_TRUE(l.shape().IsArray()) << l.shape().ToString();
  ASSERT_EQ(l.shape().dimensions(), dims) << l.shape().ToString();
  ASSERT_EQ(l.element_count(), static_cast<int64_t>(e.size()));
  for (size_t i = 0; i < e.size(); ++i) {
    double got = l.GetAsDouble(static_cast<int64_t>(i));
    if (std::isnan(e[i])) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i;
    } else if (std::isinf(e[i])) {
      EXPECT_EQ(got, e[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got, e[i], tol * std::max(1.0, std::fabs(e[i]))) << "element " << i;
    }
  }
}

}  // namespace kiln::eval::testing
