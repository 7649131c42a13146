// The table of passes `kiln opt --passes=` can name: one factory per pass, names taken
// from each pass's own name(), so adding a pass is one line in pass_registry.cc.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/passes/pass.h"

namespace kiln {

// The names of all registered passes (and the two standard pipelines, `simplification`
// and `fusion-pipeline`), in registration order.
const std::vector<std::string>& RegisteredPassNames();

// A fresh instance of the pass called `name`. An unknown name is an InvalidArgument error
// that lists the known names on one line.
absl::StatusOr<std::unique_ptr<HloPass>> MakePassByName(std::string_view name);

}  // namespace kiln
