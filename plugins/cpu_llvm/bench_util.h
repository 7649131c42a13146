// Helpers shared by the cpu-llvm benchmark programs: median timing and random inputs.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <vector>

#include "hlo/literal.h"

namespace kiln::bench {

// Median wall time in ms of `runs` calls after one warm-up call.
inline double MedianMs(int runs, const std::function<void()>& fn) {
  using Clock = std::chrono::steady_clock;
  fn();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = Clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// f32 values uniform in [-1, 1), reproducible from `seed`.
inline Literal RandomF32(std::vector<int64_t> dims, uint32_t seed) {
  Literal l(Shape(PrimitiveType::F32, std::move(dims)));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (float& x : l.data<float>()) x = d(rng);
  return l;
}

}  // namespace kiln::bench
