// The IEEE total order of floats (XLA's TOTALORDER comparison) as a signed integer order:
// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
#pragma once

#include <limits>
#include <type_traits>

namespace kiln {

// A float's bits as the signed integer of its width (S) mapped to a key whose signed order is
// the total order: negative floats' magnitude bits are flipped.
template <typename S>
S TotalOrderKeyOfBits(S bits) {
  using U = std::make_unsigned_t<S>;
  const U magnitude_mask = static_cast<U>(std::numeric_limits<S>::max());
  return bits < 0 ? static_cast<S>(static_cast<U>(bits) ^ magnitude_mask) : bits;
}

}  // namespace kiln
