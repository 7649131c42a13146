#include "python/src/errors.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {
PyObject* kiln_error = nullptr;  // kiln.KilnError, alive as long as the module
}

void RegisterKilnError(nb::module_& m) {
  kiln_error = PyErr_NewExceptionWithDoc(
      "kiln.KilnError",
      "An error from Kiln: `code` is the status code name (INVALID_ARGUMENT, NOT_FOUND, ...), "
      "the message says where and why.",
      PyExc_RuntimeError, nullptr);
  m.attr("KilnError") = nb::handle(kiln_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      std::string code = absl::StatusCodeToString(e.status().code());
      PyObject* exc = PyObject_CallFunction(kiln_error, "s", e.what());
      if (exc == nullptr) return;  // the call's own error is set
      PyObject* code_obj = PyUnicode_FromString(code.c_str());
      PyObject_SetAttrString(exc, "code", code_obj);
      Py_XDECREF(code_obj);
      PyErr_SetObject(kiln_error, exc);
      Py_DECREF(exc);
    }
  });
}

}  // namespace kiln::python
