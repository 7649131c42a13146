// kiln.register_custom_call: a Python function as the host handler of a custom-call target
// (ABI 1.5). The C trampoline takes the GIL, hands the function NumPy copies of the operands
// and the backend_config, and copies what it returns (one array, or a sequence of the result
// leaves) into the results after the same checks as an argument; an exception becomes the
// handler's error, which fails the run with the Python message.
#include "core/custom_calls.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "python/src/arrays.h"
#include "python/src/bindings.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {

struct PyHandler {
  nb::object fn;
};

Shape ShapeOf(const KILN_HostArray& a) {
  return Shape(static_cast<PrimitiveType>(a.dtype),
               std::vector<int64_t>(a.dims, a.dims + a.num_dims));
}

int32_t Refuse(char* error, size_t error_size, const std::string& why) {
  std::snprintf(error, error_size, "%s", why.c_str());
  return 1;
}

int32_t Trampoline(void* user_data, const KILN_HostArray* in, size_t num_in, KILN_HostArray* out,
                   size_t num_out, const char* backend_config, char* error, size_t error_size) {
  nb::gil_scoped_acquire gil;
  try {
    nb::list args;
    for (size_t i = 0; i < num_in; ++i) {
      auto [array, data] = NewArray(ShapeOf(in[i]));
      if (data == nullptr) return Refuse(error, error_size, "an operand type NumPy lacks here");
      std::memcpy(data, in[i].data, in[i].byte_size);
      args.append(array);
    }
    nb::object got = static_cast<PyHandler*>(user_data)->fn(
        *args, nb::arg("backend_config") = std::string(backend_config));
    std::vector<nb::object> leaves;
    if (num_out == 1 && !nb::isinstance<nb::tuple>(got) && !nb::isinstance<nb::list>(got)) {
      leaves.push_back(got);
    } else {
      for (nb::handle h : got) leaves.push_back(nb::borrow(h));
    }
    if (leaves.size() != num_out)
      return Refuse(error, error_size,
                    "the function returned " + std::to_string(leaves.size()) +
                        " arrays; the custom-call has " + std::to_string(num_out) + " results");
    for (size_t j = 0; j < num_out; ++j) {
      absl::StatusOr<Literal> value = LiteralFromPython(leaves[j], ShapeOf(out[j]), [j] {
        return "result " + std::to_string(j) + " of the custom-call";
      });
      if (!value.ok()) return Refuse(error, error_size, std::string(value.status().message()));
      std::memcpy(out[j].data, value->untyped_data(), out[j].byte_size);
    }
    return 0;
  } catch (nb::python_error& e) {
    // "ValueError: message": the traceback would not fit, and points into Kiln anyway.
    std::string what = nb::cast<std::string>(nb::str(e.value()));
    nb::object type = nb::getattr(e.type(), "__name__", nb::str("exception"));
    return Refuse(error, error_size, nb::cast<std::string>(nb::str(type)) + ": " + what);
  } catch (const std::exception& e) {
    return Refuse(error, error_size, e.what());
  }
}

void Register(const std::string& target, nb::object fn) {
  if (!nb::hasattr(fn, "__call__")) throw nb::type_error("the handler must be callable");
  // Never freed: a plugin may call a handler until the process ends, and Python objects must
  // not be released after the interpreter has finalized.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto* handler = new PyHandler{std::move(fn)};
  RegisterCustomCall(target, Trampoline, handler);
}

}  // namespace

void BindCustomCalls(nb::module_& m) {
  m.def("register_custom_call", &Register, nb::arg("target"), nb::arg("fn"),
        "Registers fn as the host handler of custom-call `target` for every plugin that can "
        "call back into the host.");
}

}  // namespace kiln::python
