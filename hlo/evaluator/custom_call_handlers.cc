// The installed custom-call handler table (see custom_call_handlers.h).
#include "hlo/evaluator/custom_call_handlers.h"

#include <mutex>
#include <utility>

namespace kiln {
namespace {

std::mutex& Mu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}

std::shared_ptr<const CustomCallHandlers>& Installed() {
  static auto* table = new std::shared_ptr<const CustomCallHandlers>;
  return *table;
}

}  // namespace

void SetCustomCallHandlers(std::shared_ptr<const CustomCallHandlers> handlers) {
  std::lock_guard<std::mutex> lock(Mu());
  Installed() = std::move(handlers);
}

std::shared_ptr<const CustomCallHandlers> InstalledCustomCallHandlers() {
  std::lock_guard<std::mutex> lock(Mu());
  return Installed();
}

bool HasCustomCallHandler(std::string_view target) {
  std::shared_ptr<const CustomCallHandlers> table = InstalledCustomCallHandlers();
  return table != nullptr && table->Has(target);
}

}  // namespace kiln
