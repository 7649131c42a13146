// kiln.Buffer: an array kept on a plugin's device between calls.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "fmt/format.h"
#include "python/src/arrays.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {

// Below this size a copy out is not worth releasing the GIL for.
constexpr int64_t kReleaseGilBytes = 1 << 16;

nb::object ToNumpy(const PyBuffer& b) { return CopyToNumpy(*b.buffer, b.shape); }

// Waits for the run that makes the buffer (Executable.execute returns before it ends, on a
// plugin with ABI 1.7's events); raises that run's error.
nb::object BlockUntilReady(nb::handle self) {
  WaitUntilReady(*nb::cast<const PyBuffer&>(self).buffer);
  return nb::borrow(self);
}

bool IsReady(const PyBuffer& b) {
  std::unique_ptr<Event> ready = ValueOrThrow(b.buffer->ReadyEvent());
  return ready == nullptr || ValueOrThrow(ready->IsReady());
}

}  // namespace

void WaitUntilReady(const DeviceBuffer& b) {
  std::unique_ptr<Event> ready = ValueOrThrow(b.ReadyEvent());
  if (ready == nullptr) return;
  if (ValueOrThrow(ready->IsReady())) {  // no wait: the GIL can stay
    ThrowIfError(ready->Await());
    return;
  }
  absl::Status s;
  {
    nb::gil_scoped_release release;
    s = ready->Await();
  }
  ThrowIfError(s);
}

nb::object CopyToNumpy(const DeviceBuffer& b, const Shape& shape) {
  WaitUntilReady(b);
  auto [array, data] = NewArray(shape);
  if (data == nullptr) return ArrayFromLiteral(ValueOrThrow(b.ToLiteral()));
  absl::Status s;
  if (shape.byte_size() >= kReleaseGilBytes) {
    nb::gil_scoped_release release;
    s = b.CopyToHost(data, shape.byte_size());
  } else {
    s = b.CopyToHost(data, shape.byte_size());
  }
  ThrowIfError(s);
  return array;
}

PyBuffer DevicePut(nb::handle array, const Plugin& plugin, int index) {
  // The array's own element type and dims are the buffer's.
  nb::object numpy = nb::module_::import_("numpy");
  nb::object a = IsNdarray(array) ? nb::borrow(array) : numpy.attr("asarray")(array);
  PrimitiveType type = ValueOrThrow(ElementTypeOfDtype(a.attr("dtype")));
  std::vector<int64_t> dims;
  for (nb::handle d : a.attr("shape")) dims.push_back(nb::cast<int64_t>(d));
  Shape shape(type, dims);
  // The plugin copies straight from the array's bytes (no literal in between); `data`
  // keeps them alive while the GIL is released.
  nb::object data =
      ValueOrThrow(ContiguousArray(a, shape, [] { return std::string("device_put"); }));
  absl::StatusOr<DeviceBuffer> b;
  {
    nb::gil_scoped_release release;
    b = index == 0 ? plugin.ToDevice(shape, ArrayData(data))
                   : plugin.ToDeviceAt(shape, ArrayData(data), index);
  }
  PyBuffer out;
  out.buffer = std::make_shared<DeviceBuffer>(ValueOrThrow(std::move(b)));
  out.plugin = &plugin;
  out.shape = std::move(shape);
  return out;
}

void BindBuffer(nb::module_& m) {
  nb::class_<PyBuffer>(m, "Buffer", "An array on a Kiln device; numpy.asarray(b) copies it back.")
      .def_prop_ro("device", [](const PyBuffer& b) { return b.plugin->name(); })
      .def_prop_ro("shape",
                   [](const PyBuffer& b) {
                     nb::list dims;
                     for (int64_t d : b.shape.dimensions()) dims.append(d);
                     return nb::tuple(dims);
                   })
      .def_prop_ro("dtype",
                   [](const PyBuffer& b) {
                     // The dtype NumPy gives the copied-back array.
                     Literal empty(Shape(b.shape.element_type(), {0}));
                     return ArrayFromLiteral(std::move(empty)).attr("dtype");
                   })
      .def_prop_ro("hlo_shape", [](const PyBuffer& b) { return b.shape.ToString(false); })
      .def_prop_ro(
          "device_index", [](const PyBuffer& b) { return ValueOrThrow(b.buffer->device_index()); },
          "Which of its plugin's devices it lives on (ABI 1.8), 0 the first.")
      .def(
          "copy_to",
          [](const PyBuffer& b, int index) {
            PyBuffer out;
            {
              nb::gil_scoped_release release;  // waits for a queued run that makes `b`
              out.buffer =
                  std::make_shared<DeviceBuffer>(ValueOrThrow(b.buffer->CopyToDevice(index)));
            }
            out.plugin = b.plugin;
            out.shape = b.shape;
            return out;
          },
          nb::arg("device_index"),
          "A copy on another device of the same plugin (ABI 1.8). Runs go where their "
          "arguments are, so a copy moves work there.")
      .def("to_numpy", &ToNumpy, "A NumPy copy of the buffer.")
      .def("block_until_ready", &BlockUntilReady,
           "Waits until the run that makes the buffer has ended (Executable.execute returns "
           "before); raises its error. Returns the buffer.")
      .def("is_ready", &IsReady, "Whether the run that makes the buffer has ended.")
      .def("__dlpack__", &BufferDlpack,
           "A DLPack capsule sharing the buffer's bytes (devices with host memory).")
      .def("__dlpack_device__", [](const PyBuffer&) { return nb::make_tuple(1, 0); })  // CPU
      .def(
          "unsafe_host_pointer",
          [](const PyBuffer& b) -> nb::object {
            WaitUntilReady(*b.buffer);
            const void* p = b.buffer->HostData();
            if (p == nullptr) return nb::none();
            return nb::int_(reinterpret_cast<uintptr_t>(p));
          },
          "The address of the buffer's bytes when they live in host memory, else None.")
      .def(
          "__array__",
          [](const PyBuffer& b, nb::object dtype, nb::object copy) {
            nb::object a = ToNumpy(b);
            if (!dtype.is_none()) a = a.attr("astype")(dtype);
            return a;
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def("__repr__", [](const PyBuffer& b) {
        return fmt::format("<kiln.Buffer {} on {}>", b.shape.ToString(false), b.plugin->name());
      });
}

}  // namespace kiln::python
