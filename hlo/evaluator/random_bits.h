// The counter-based bit generators XLA uses for RngBitGenerator (Salmon et al., SC'11):
// Threefry-2x32 with 20 rounds and Philox-4x32 with 10 rounds.
#pragma once

#include <array>
#include <cstdint>

namespace kiln::eval {

std::array<uint32_t, 2> Threefry2x32(std::array<uint32_t, 2> counter, std::array<uint32_t, 2> key);
std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

}  // namespace kiln::eval
