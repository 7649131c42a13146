#include "hlo/evaluator/multi_device.h"

#include "absl/strings/str_cat.h"
#include "hlo/collectives/local_communicator.h"
#include "hlo/evaluator/evaluator.h"

namespace kiln {

absl::StatusOr<std::vector<Literal>> EvaluateOnDevices(
    const HloModule& module, DeviceGrid grid, std::vector<std::vector<Literal>> args_per_device) {
  const int n = grid.num_devices();
  if (n < 1 || static_cast<int>(args_per_device.size()) != n)
    return absl::InvalidArgumentError(absl::StrCat(
        "a run on ", n, " devices needs ", n, " argument lists, got ", args_per_device.size()));
  std::vector<Literal> results(n);
  absl::Status st = RunOnLocalDevices(grid, [&](int d) -> absl::Status {
    HloEvaluator evaluator;
    absl::StatusOr<Literal> r = evaluator.Evaluate(module, args_per_device[d]);
    if (!r.ok()) return r.status();
    results[d] = *std::move(r);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return results;
}

}  // namespace kiln
