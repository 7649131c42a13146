// The pass interface: a named transformation of a module that says whether it changed it.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "hlo/module.h"

namespace kiln {

class HloPass {
 public:
  virtual ~HloPass() = default;
  // Short, stable, kebab-case name (`dce`, `cse`, `algsimp`, `fusion`): used by
  // `kiln opt --passes=` and in dump file names.
  virtual std::string_view name() const = 0;
  // Returns true when the module changed.
  virtual absl::StatusOr<bool> Run(HloModule& module) = 0;
};

}  // namespace kiln
