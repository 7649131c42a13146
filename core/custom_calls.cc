// The process-wide custom-call registry (see custom_calls.h).
#include "core/custom_calls.h"

#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace kiln {
namespace {

struct Entry {
  KILN_CustomCallHandler* handler = nullptr;
  void* user_data = nullptr;
};

std::mutex& Mu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}

absl::flat_hash_map<std::string, Entry>& Handlers() {
  static auto* handlers = new absl::flat_hash_map<std::string, Entry>;
  return *handlers;
}

KILN_CustomCallHandler* Find(void* context, const char* target, void** user_data) {
  (void)context;
  if (target == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(Mu());
  auto it = Handlers().find(target);
  if (it == Handlers().end()) return nullptr;
  if (user_data != nullptr) *user_data = it->second.user_data;
  return it->second.handler;
}

}  // namespace

void RegisterCustomCall(const std::string& target, KILN_CustomCallHandler* handler,
                        void* user_data) {
  std::lock_guard<std::mutex> lock(Mu());
  if (handler == nullptr) {
    Handlers().erase(target);
    return;
  }
  Handlers()[target] = Entry{handler, user_data};
}

const KILN_CustomCallRegistry* CustomCallRegistry() {
  static const KILN_CustomCallRegistry registry = {sizeof(KILN_CustomCallRegistry), nullptr, Find};
  return &registry;
}

}  // namespace kiln

extern "C" void KILN_RegisterCustomCall(const char* target, KILN_CustomCallHandler* handler,
                                        void* user_data) {
  if (target != nullptr) kiln::RegisterCustomCall(target, handler, user_data);
}
