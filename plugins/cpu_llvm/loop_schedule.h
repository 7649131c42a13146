// A flat loop's run as a fixed program over one run's buffers (FlatLoop, when no iteration
// moves a buffer and every kernel runs whole on the calling thread): the kernel calls, copies
// and loop and branch decisions, each buffer named by its slot. FlatLoop interprets it, and the
// JIT compiles it into one function with the kernels inlined (a loop driver), so a loop of a
// few scalar kernels runs as native code, as XLA's loops do, instead of one indirect call per
// kernel. No LLVM types here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cpu {

struct LoopSchedule {
  // Where a value lies in a run: the slot's buffer (`data[slot]`), else `constants[constant]`.
  struct Place {
    int slot = -1;
    int constant = -1;
  };
  struct Copy {
    int to = 0;  // a slot
    Place from;
    int64_t bytes = 0;
  };
  // A kernel called on its table (`tables + table`) over [0, extent), a nested loop or a
  // conditional.
  struct Call {
    int kernel = -1;  // index in the executable's kernels
    int table = 0;
    int64_t extent = 0;
    int nested = -1;       // index in `loops`
    int conditional = -1;  // index in `conditionals`
    // A kernel updating an operand it may not take: the operand copied into its output
    // first (bytes 0: none).
    Copy operand;
  };
  struct Loop {
    std::vector<Call> cond, body;
    std::vector<Copy> entry;   // a nested loop's state from its operand
    std::vector<Copy> copies;  // next state elements copied after the body
    Place go;                  // the condition's pred
    // A counted loop `for (i = counter; i < limit; ++i)`: the condition is not called; when
    // `store_counter` the run stores i + 1 into the counter after each body (its kernel is
    // left out of `body`).
    int counter = -1;  // a slot, or -1
    Place limit;
    bool s32 = false;  // the counter's and limit's type: s32, else s64
    bool store_counter = false;
  };
  struct Branch {
    std::vector<Call> calls;
    std::vector<Copy> results;
  };
  // Branch 0 when a pred selector is true, else 1; an s32 selector out of range takes the
  // last branch (XLA's rule).
  struct Conditional {
    Place selector;
    bool pred = false;
    std::vector<Branch> branches;
  };
  std::vector<Loop> loops;  // loops[0] is the loop itself
  std::vector<Conditional> conditionals;
  // What each entry of the kernels' tables holds (`tables` in a run holds these pointers), and
  // how many slots and constants a run has. Distinct slots are distinct buffers wherever a
  // run writes (a buffer two slots share, an argument passed twice, is only read).
  std::vector<Place> table;
  int slots = 0;
  int constants = 0;

  // Every kernel it calls (indices in the executable's kernels, repeats included).
  std::vector<int> Kernels() const {
    std::vector<int> out;
    auto add = [&out](const std::vector<Call>& calls) {
      for (const Call& c : calls)
        if (c.kernel >= 0) out.push_back(c.kernel);
    };
    for (const Loop& l : loops) {
      add(l.cond);
      add(l.body);
    }
    for (const Conditional& c : conditionals)
      for (const Branch& b : c.branches) add(b.calls);
    return out;
  }
};

// A compiled schedule: `tables` holds every kernel's buffer table back to back, `data` every
// slot's buffer, `constants` the constants Places name.
using LoopDriverFn = void (*)(void** tables, void* const* data, const void* const* constants);

struct LoopDriverSpec {
  std::string name;  // the function's symbol, unique in one compile
  const LoopSchedule* schedule = nullptr;
};

}  // namespace kiln::cpu
