// placeholder
#include <gtest/gtest.h>
TEST(VerifierPlaceholder, Empty) {}
