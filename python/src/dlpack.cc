// DLPack both ways without copies for host-memory devices: kiln.Buffer.__dlpack__ lends the
// plugin's bytes (while the buffer lives), kiln.from_dlpack lends an array's bytes to a
// plugin (ABI 1.2's shared buffer_from_host). nanobind's ndarray speaks the protocol.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include "fmt/format.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {

using HostArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

nb::dlpack::dtype DlpackType(PrimitiveType t) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code code, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (t) {
    case PrimitiveType::PRED:
      return make(dtype_code::Bool, 8);
    case PrimitiveType::BF16:
      return make(dtype_code::Bfloat, 16);
    case PrimitiveType::C64:
      return make(dtype_code::Complex, 64);
    case PrimitiveType::C128:
      return make(dtype_code::Complex, 128);
    default:
      break;
  }
  int bits = BitWidth(t);
  if (IsFloating(t)) return make(dtype_code::Float, bits);
  if (IsSignedInt(t)) return make(dtype_code::Int, bits);
  return make(dtype_code::UInt, bits);
}

std::optional<PrimitiveType> FromDlpackType(nb::dlpack::dtype d) {
  for (int i = 0; i < static_cast<int>(PrimitiveType::TUPLE); ++i) {
    auto t = static_cast<PrimitiveType>(i);
    if (DlpackType(t) == d) return t;
  }
  return std::nullopt;
}

// The on_done of a shared upload: drops the reference to the lent array (with the GIL: its
// owner is a Python object), from whichever thread the plugin releases it on.
void ReleaseLentArray(void* arg) {
  nb::gil_scoped_acquire gil;
  delete static_cast<HostArray*>(arg);
}

}  // namespace

nb::object BufferDlpack(nb::handle self, nb::kwargs kwargs) {
  const PyBuffer& b = nb::cast<const PyBuffer&>(self);
  WaitUntilReady(*b.buffer);
  const void* data = b.buffer->HostData();
  if (data == nullptr) {
    throw StatusError(absl::UnimplementedError(
        fmt::format("a buffer on {} does not live in host memory: copy it with numpy.asarray",
                    b.plugin->name())));
  }
  std::vector<size_t> dims(b.shape.dimensions().begin(), b.shape.dimensions().end());
  const PrimitiveType element_type = b.shape.element_type();
  if (IsMiniFloat(element_type) || IsSubByteInt(element_type)) {
    // DLPack's codes for these (and its packed sub-byte layout) are not what NumPy reads.
    throw StatusError(absl::UnimplementedError(
        fmt::format("{} buffers are not exported through DLPack: copy them with numpy.asarray",
                    PrimitiveTypeName(element_type))));
  }
  nb::dlpack::dtype type = DlpackType(element_type);
  // A NumPy view keeping `self` (and so the plugin buffer) alive; NumPy's own __dlpack__
  // then answers the protocol's versions and flags. Read-only for consumers of DLPack 1.x
  // (max_version given), which can say so; older consumers (JAX asks without max_version)
  // get a view marked writable, which they must not write: Kiln buffers are immutable.
  nb::object view;
  if (kwargs.contains("max_version") && !kwargs["max_version"].is_none()) {
    view = nb::cast(nb::ndarray<nb::ro, nb::numpy>(data, dims.size(), dims.data(), self, nullptr,
                                                   type, nb::device::cpu::value));
  } else {
    view = nb::cast(nb::ndarray<nb::numpy>(const_cast<void*>(data), dims.size(), dims.data(), self,
                                           nullptr, type, nb::device::cpu::value));
  }
  return view.attr("__dlpack__")(**kwargs);
}

PyBuffer FromDlpack(nb::handle obj, const Plugin& plugin) {
  HostArray array;
  if (!nb::try_cast(obj, array, /*convert=*/false)) {
    throw StatusError(absl::InvalidArgumentError(fmt::format(
        "from_dlpack: expected a C-contiguous array in host memory with __dlpack__ or the "
        "buffer protocol, got {}",
        nb::cast<std::string>(nb::str(obj.type().attr("__name__"))))));
  }
  std::optional<PrimitiveType> type = FromDlpackType(array.dtype());
  if (!type) {
    throw StatusError(absl::InvalidArgumentError(
        fmt::format("from_dlpack: DLPack dtype code {} bits {} has no Kiln element type",
                    array.dtype().code, array.dtype().bits)));
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < array.ndim(); ++i) dims.push_back(static_cast<int64_t>(array.shape(i)));
  Shape shape(*type, dims);
  auto* lent = new HostArray(array);
  absl::StatusOr<DeviceBuffer> buffer;
  {
    nb::gil_scoped_release release;
    buffer = plugin.ToDeviceShared(shape, array.data(), &ReleaseLentArray, lent);
  }
  if (!buffer.ok()) delete lent;  // on error the plugin did not take it
  PyBuffer out;
  out.buffer = std::make_shared<DeviceBuffer>(ValueOrThrow(std::move(buffer)));
  out.plugin = &plugin;
  out.shape = std::move(shape);
  return out;
}

}  // namespace kiln::python
