// Host handlers for custom-call targets the evaluator does not implement: a plugin installs
// the handlers its caller registered (ABI 1.5's KILN_CustomCallRegistry), and the evaluator,
// its support check and so every plugin's evaluator steps then run those custom-calls. One
// table per process (per plugin library: each links the evaluator of its own).
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "hlo/instruction.h"
#include "hlo/literal.h"

namespace kiln {

class CustomCallHandlers {
 public:
  virtual ~CustomCallHandlers() = default;
  // True when a handler for `target` is registered.
  virtual bool Has(std::string_view target) const = 0;
  // The call's value from its operands' values (Has(target) was true).
  virtual absl::StatusOr<Literal> Call(const HloInstruction& call,
                                       std::span<const Literal* const> operands) const = 0;
};

// Installs the table (null: none). Safe to call while evaluators run on other threads.
void SetCustomCallHandlers(std::shared_ptr<const CustomCallHandlers> handlers);
// The table installed, or null.
std::shared_ptr<const CustomCallHandlers> InstalledCustomCallHandlers();
// True when the installed table has a handler for `target`.
bool HasCustomCallHandler(std::string_view target);

}  // namespace kiln
