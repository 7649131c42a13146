// Custom-calls run through the caller's host handlers (see host_custom_calls.h).
#include "plugins/common/host_custom_calls.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hlo/backend_config.h"
#include "hlo/evaluator/custom_call_handlers.h"

namespace kiln::plugin_support {
namespace {

// The array leaves of `l`, depth-first.
void Leaves(const Literal& l, std::vector<const Literal*>& out) {
  if (!l.IsTuple()) {
    out.push_back(&l);
    return;
  }
  for (const Literal& e : l.elements()) Leaves(e, out);
}

KILN_HostArray View(const Literal& l) {
  KILN_HostArray a{};
  a.dtype = static_cast<KILN_DType>(l.shape().element_type());
  a.dims = l.shape().dimensions().data();
  a.num_dims = l.shape().dimensions().size();
  a.data = const_cast<uint8_t*>(l.untyped_data());
  a.byte_size = static_cast<size_t>(l.size_bytes());
  return a;
}

class RegistryHandlers : public CustomCallHandlers {
 public:
  explicit RegistryHandlers(const KILN_CustomCallRegistry* registry) : registry_(registry) {}
  const KILN_CustomCallRegistry* registry() const { return registry_; }

  bool Has(std::string_view target) const override {
    void* user_data = nullptr;
    return registry_->find(registry_->context, std::string(target).c_str(), &user_data) != nullptr;
  }

  absl::StatusOr<Literal> Call(const HloInstruction& call,
                               std::span<const Literal* const> operands) const override {
    const std::string& target = call.attrs().custom_call_target;
    void* user_data = nullptr;
    KILN_CustomCallHandler* handler =
        registry_->find(registry_->context, target.c_str(), &user_data);
    if (handler == nullptr)
      return absl::NotFoundError(absl::StrCat("custom-call '", target, "' (instruction %",
                                              call.name(), "): no handler is registered"));
    std::vector<const Literal*> in;
    for (const Literal* o : operands) Leaves(*o, in);
    std::vector<KILN_HostArray> in_views;
    for (const Literal* l : in) in_views.push_back(View(*l));
    Literal result = Literal::Uninitialized(call.shape());
    std::vector<const Literal*> out;
    Leaves(result, out);
    std::vector<KILN_HostArray> out_views;
    for (const Literal* l : out) out_views.push_back(View(*l));
    const std::string config = BackendConfigText(call);
    char error[512] = {0};
    const int32_t rc = handler(user_data, in_views.data(), in_views.size(), out_views.data(),
                               out_views.size(), config.c_str(), error, sizeof(error) - 1);
    if (rc != 0)
      return absl::AbortedError(absl::StrCat("custom-call '", target, "' (instruction %",
                                             call.name(), "): the handler failed (", rc,
                                             "): ", error[0] != '\0' ? error : "no reason given"));
    return result;
  }

 private:
  const KILN_CustomCallRegistry* registry_;
};

}  // namespace

void InstallCustomCallRegistry(const KILN_CustomCallRegistry* registry) {
  if (registry == nullptr ||
      registry->struct_size < KILN_STRUCT_SIZE(KILN_CustomCallRegistry, find) ||
      registry->find == nullptr)
    return;
  auto installed = std::dynamic_pointer_cast<const RegistryHandlers>(InstalledCustomCallHandlers());
  if (installed != nullptr && installed->registry() == registry) return;
  SetCustomCallHandlers(std::make_shared<RegistryHandlers>(registry));
}

}  // namespace kiln::plugin_support
