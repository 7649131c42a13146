#include "tools/run_arguments.h"

#include <algorithm>
#include <optional>

#include "fmt/format.h"
#include "tools/commands.h"
#include "tools/npy.h"
#include "tools/random_inputs.h"

namespace kiln {

std::string ParamLabel(const HloInstruction& p) {
  return fmt::format("parameter {} '{}'", p.parameter_number(), p.name());
}

absl::StatusOr<std::vector<Literal>> MakeArguments(
    const HloComputation& entry, const std::vector<std::string>& inputs,
    const std::function<absl::StatusOr<Literal>(int, Literal)>& adapt) {
  const int n = entry.num_parameters();
  for (int i = 0; i < n; ++i) {
    if (entry.parameter(i) == nullptr) {
      return absl::InvalidArgumentError(fmt::format("entry has no parameter number {}", i));
    }
    if (!entry.parameter(i)->shape().IsArray()) {
      return absl::InvalidArgumentError(fmt::format(
          "{} has shape {}; kiln run feeds array parameters only", ParamLabel(*entry.parameter(i)),
          entry.parameter(i)->shape().ToString(false)));
    }
  }
  // Inputs and results live on the host and again in the device's buffers, and the device
  // needs room for its temporaries (a transposed operand is as large as the operand): a run
  // that needs more than a third of the available memory for them is refused here, before
  // the kernel's out-of-memory killer would end it.
  uint64_t need = static_cast<uint64_t>(entry.root()->shape().total_byte_size());
  std::string largest = fmt::format("the result of instruction %{}, {}", entry.root()->name(),
                                    entry.root()->shape().ToString(false));
  uint64_t largest_bytes = need;
  for (int i = 0; i < n; ++i) {
    const uint64_t bytes = static_cast<uint64_t>(entry.parameter(i)->shape().byte_size());
    need += bytes;
    if (bytes >= largest_bytes) {  // on a tie, the input the user gives
      largest_bytes = bytes;
      largest = fmt::format("{}, {}", ParamLabel(*entry.parameter(i)),
                            entry.parameter(i)->shape().ToString(false));
    }
  }
  std::optional<uint64_t> available = AvailableMemoryBytes();
  if (available && need > *available / 3) {
    auto gib = [](uint64_t b) { return static_cast<double>(b) / (uint64_t{1} << 30); };
    return absl::ResourceExhaustedError(fmt::format(
        "out of memory: the inputs and results of this module take {:.1f} GiB (the largest is "
        "{}, {:.1f} GiB), about three times that with the device's copies and temporaries, "
        "and {:.1f} GiB of memory is available",
        gib(need), largest, gib(largest_bytes), gib(*available)));
  }
  std::vector<Literal> args;
  if (inputs.empty()) {
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<Literal> a =
          GeneratedInput(entry.parameter(i)->shape(), i, ParamLabel(*entry.parameter(i)));
      if (!a.ok()) return a.status();
      args.push_back(std::move(*a));
    }
    return args;
  }
  if (static_cast<int>(inputs.size()) != n) {
    std::string sig;
    for (int i = 0; i < n; ++i) {
      sig += fmt::format("{}{}: {}", i ? ", " : "", entry.parameter(i)->name(),
                         entry.parameter(i)->shape().ToString(false));
    }
    return absl::InvalidArgumentError(
        fmt::format("the entry computation takes {} parameter{} ({}), got {} --input", n,
                    n == 1 ? "" : "s", sig, inputs.size()));
  }
  for (int i = 0; i < n; ++i) {
    const HloInstruction& p = *entry.parameter(i);
    absl::StatusOr<Literal> lit = ReadNpyFile(inputs[i]);
    if (!lit.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: {}", ParamLabel(p), std::string(lit.status().message())));
    }
    PrimitiveType want = p.shape().element_type();
    PrimitiveType got = lit->shape().element_type();
    if (absl::Status s = AdoptWidenedInput(want, *lit); !s.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: {}: {}", inputs[i], ParamLabel(p), std::string(s.message())));
    }
    if (adapt) {
      lit = adapt(i, *std::move(lit));
      if (!lit.ok())
        return absl::InvalidArgumentError(fmt::format("{}: {}: {}", inputs[i], ParamLabel(p),
                                                      std::string(lit.status().message())));
    }
    got = lit->shape().element_type();
    if (got != want || lit->shape().dimensions() != p.shape().dimensions()) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: {} expects {}{}, got {}", inputs[i], ParamLabel(p), p.shape().ToString(false),
          WidenedInputNote(want), lit->shape().ToString(false)));
    }
    args.push_back(std::move(*lit));
  }
  return args;
}

std::string Summarize(const Literal& l) {
  std::string s = l.shape().ToString(false) + " [";
  const int64_t n = l.element_count();
  for (int64_t i = 0; i < std::min<int64_t>(n, 16); ++i) {
    if (i) s += ", ";
    if (l.shape().element_type() == PrimitiveType::PRED) {
      s += l.GetAsInt64(i) ? "true" : "false";
    } else if (IsInteger(l.shape().element_type())) {
      s += IsUnsignedInt(l.shape().element_type()) ? fmt::format("{}", l.GetAsUint64(i))
                                                   : fmt::format("{}", l.GetAsInt64(i));
    } else {
      s += fmt::format("{:.6g}", l.GetAsDouble(i));
    }
  }
  if (n > 16) s += fmt::format(", ... ({} elements)", n);
  return s + "]";
}

}  // namespace kiln
