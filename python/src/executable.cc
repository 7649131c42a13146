// kiln.Executable: calling a compiled module with host arrays or device buffers.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "core/run_deadline.h"
#include "fmt/format.h"
#include "python/src/arrays.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {

void Flatten(const Shape& s, std::vector<Shape>& out) {
  if (!s.IsTuple()) {
    out.push_back(s);
    return;
  }
  for (const Shape& e : s.tuple_shapes()) Flatten(e, out);
}

nb::tuple TupleOf(std::vector<nb::object> items) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(items.size()));
  if (tuple == nullptr) throw nb::python_error();
  for (size_t i = 0; i < items.size(); ++i) PyTuple_SET_ITEM(tuple, i, items[i].release().ptr());
  return nb::steal<nb::tuple>(tuple);
}

std::string ArgumentName(size_t i) { return fmt::format("argument {}", i); }

// The on_done of a lent NumPy array: drops the reference the plugin held.
void ReleaseArray(void* array) {
  nb::gil_scoped_acquire gil;
  Py_DECREF(static_cast<PyObject*>(array));
}

}  // namespace

PyExecutable::PyExecutable(std::unique_ptr<ModuleExecutable> exe) : exe_(std::move(exe)) {
  const HloComputation& entry = *exe_->module().entry();
  for (int i = 0; i < entry.num_parameters(); ++i) params_.push_back(entry.parameter(i)->shape());
  tuple_result_ = entry.root()->shape().IsTuple();
  Flatten(entry.root()->shape(), outputs_);
}

void PyExecutable::CheckArgumentCount(size_t n) const {
  if (n != params_.size()) {
    throw StatusError(absl::InvalidArgumentError(fmt::format(
        "module {} takes {} argument(s), got {}", exe_->module().name(), params_.size(), n)));
  }
}

nb::object PyExecutable::Wrap(std::vector<nb::object> leaves) const {
  if (!tuple_result_ && leaves.size() == 1) return leaves[0];
  return TupleOf(std::move(leaves));
}

const ModuleExecutable& PyExecutable::Live() const {
  absl::StatusOr<const ModuleExecutable*> live;
  {
    nb::gil_scoped_release release;
    live = exe_->Live();
  }
  return *ValueOrThrow(std::move(live));
}

nb::object PyExecutable::Call(nb::args args) const {
  CheckArgumentCount(args.size());
  const ScopedRunDeadline deadline(exe_->timeout_s());  // uploads, run and downloads
  const ModuleExecutable& live = Live();
  if (live.executable() == nullptr) return CallPartitioned(args);
  std::vector<DeviceBuffer> outs = RunOnDevice(live, args, /*lend=*/true);  // copied out below
  if (outs.size() != outputs_.size()) {
    throw StatusError(
        absl::InternalError(fmt::format("{} returned {} outputs, the module has {}",
                                        exe_->device_names(), outs.size(), outputs_.size())));
  }
  std::vector<nb::object> leaves;
  leaves.reserve(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) leaves.push_back(CopyToNumpy(outs[i], outputs_[i]));
  return Wrap(std::move(leaves));
}

nb::object PyExecutable::CallPartitioned(nb::args args) const {
  std::vector<Literal> literals;
  literals.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    nb::handle a = args[i];
    if (nb::isinstance<PyBuffer>(a)) {
      WaitUntilReady(*nb::cast<const PyBuffer&>(a).buffer);
      literals.push_back(ValueOrThrow(nb::cast<const PyBuffer&>(a).buffer->ToLiteral()));
    } else {
      literals.push_back(
          ValueOrThrow(LiteralFromPython(a, params_[i], [i] { return ArgumentName(i); })));
    }
  }
  absl::StatusOr<std::vector<Literal>> outs;
  {
    nb::gil_scoped_release release;
    outs = exe_->Execute(literals);
  }
  std::vector<nb::object> leaves;
  for (Literal& l : ValueOrThrow(std::move(outs))) leaves.push_back(ArrayFromLiteral(std::move(l)));
  return Wrap(std::move(leaves));
}

namespace {

// Runs queued by Executable.execute that have not ended. At exit, the interpreter must not
// finalize under one: a queued run may call a Python custom-call handler, which would then
// find no interpreter (Python ends such a thread, and the process aborts).
struct QueuedRuns {
  std::mutex mu;
  std::condition_variable ended;
  int64_t count = 0;
};
QueuedRuns& Queued() {
  static auto* queued = new QueuedRuns;  // never destroyed: runs may end during exit
  return *queued;
}

}  // namespace

void CountQueuedRun(const Event& done) {
  QueuedRuns& q = Queued();
  {
    std::lock_guard<std::mutex> lock(q.mu);
    ++q.count;
  }
  absl::Status s = done.OnReady([](absl::Status) {
    QueuedRuns& q = Queued();
    {
      std::lock_guard<std::mutex> lock(q.mu);
      --q.count;
    }
    q.ended.notify_all();
  });
  if (!s.ok()) {  // not registered: not counted either
    std::lock_guard<std::mutex> lock(q.mu);
    --q.count;
  }
}

bool WaitForQueuedRuns(double timeout_s) {
  QueuedRuns& q = Queued();
  nb::gil_scoped_release release;  // the runs' Python handlers need it
  std::unique_lock<std::mutex> lock(q.mu);
  return q.ended.wait_for(lock, std::chrono::duration<double>(timeout_s),
                          [&] { return q.count == 0; });
}

std::vector<DeviceBuffer> PyExecutable::RunOnDevice(const ModuleExecutable& live, nb::args args,
                                                    bool lend, const std::vector<bool>& donate,
                                                    bool asynchronous) const {
  const Plugin* plugin = live.plugin();
  if (plugin == nullptr || live.executable() == nullptr) {
    throw StatusError(absl::FailedPreconditionError(
        fmt::format("module {} is partitioned across {}: device buffers need a module that runs "
                    "on one plugin; call it with host arrays",
                    exe_->module().name(), exe_->device_names())));
  }
  std::vector<DeviceBuffer> uploaded;  // arguments given as host values
  uploaded.reserve(args.size());
  std::vector<const DeviceBuffer*> ptrs;
  ptrs.reserve(args.size());
  std::unique_ptr<bool[]> donated(
      new bool[args.size() + 1]());  // this call's uploads, and `donate`
  for (size_t i = 0; i < args.size(); ++i) {
    nb::handle a = args[i];
    if (nb::isinstance<PyBuffer>(a) && nb::cast<const PyBuffer&>(a).plugin != plugin &&
        nb::cast<const PyBuffer&>(a).plugin->name() == plugin->name()) {
      // The same plugin in another process (the executable's timeout isolates it): through
      // host memory.
      const PyBuffer& b = nb::cast<const PyBuffer&>(a);
      absl::StatusOr<DeviceBuffer> moved;
      {
        nb::gil_scoped_release release;
        absl::StatusOr<Literal> l = b.buffer->ToLiteral();
        moved = l.ok() ? plugin->ToDevice(*l) : absl::StatusOr<DeviceBuffer>(l.status());
      }
      uploaded.push_back(ValueOrThrow(std::move(moved)));
      ptrs.push_back(&uploaded.back());
      donated[i] = true;
      continue;
    }
    if (nb::isinstance<PyBuffer>(a)) {
      const PyBuffer& b = nb::cast<const PyBuffer&>(a);
      if (b.plugin != plugin) {
        throw StatusError(absl::InvalidArgumentError(
            fmt::format("{} is a buffer on {}, but the executable runs on {}", ArgumentName(i),
                        b.plugin->name(), plugin->name())));
      }
      if (b.shape.element_type() != params_[i].element_type() ||
          b.shape.dimensions() != params_[i].dimensions()) {
        throw StatusError(absl::InvalidArgumentError(
            fmt::format("{}: expected {}, got a buffer of {}", ArgumentName(i),
                        params_[i].ToString(false), b.shape.ToString(false))));
      }
      ptrs.push_back(b.buffer.get());
      donated[i] = i < donate.size() && donate[i];
      continue;
    }
    absl::StatusOr<DeviceBuffer> b;
    if (const void* data = lend ? ExactArrayData(a, params_[i]) : nullptr) {
      // Lent, not copied, where the plugin keeps host memory; it holds a reference until done.
      Py_INCREF(a.ptr());
      b = plugin->ToDeviceShared(params_[i], data, &ReleaseArray, a.ptr());
      if (!b.ok()) Py_DECREF(a.ptr());
    } else {
      nb::object array =
          ValueOrThrow(ContiguousArray(a, params_[i], [i] { return ArgumentName(i); }));
      nb::gil_scoped_release release;
      b = plugin->ToDevice(params_[i], ArrayData(array));
    }
    uploaded.push_back(ValueOrThrow(std::move(b)));
    ptrs.push_back(&uploaded.back());
    donated[i] = true;
  }
  const std::span<const bool> flags(donated.get(), ptrs.size());
  absl::StatusOr<std::vector<DeviceBuffer>> outs;
  {
    nb::gil_scoped_release release;
    if (asynchronous) {
      // Its error comes with its outputs' ready events; its own event counts it as queued
      // until it ends (WaitForQueuedRuns, before the interpreter finalizes).
      absl::StatusOr<Executable::AsyncRun> run =
          live.executable()->ExecuteBuffersAsync(ptrs, flags);
      if (run.ok() && run->done != nullptr) CountQueuedRun(*run->done);
      outs = run.ok() ? std::move(run->outputs)
                      : absl::StatusOr<std::vector<DeviceBuffer>>(run.status());
    } else {
      outs = live.executable()->ExecuteBuffers(ptrs, flags);
    }
  }
  return ValueOrThrow(std::move(outs));
}

nb::tuple PyExecutable::Execute(nb::args args, nb::kwargs kwargs) const {
  CheckArgumentCount(args.size());
  std::vector<bool> donate(args.size(), false);
  for (auto [key, value] : kwargs) {
    if (nb::cast<std::string>(key) != "donate") {
      throw StatusError(absl::InvalidArgumentError(fmt::format(
          "execute: unknown keyword '{}' (known: donate)", nb::cast<std::string>(key))));
    }
    for (nb::handle item : nb::iter(value)) {
      long i = -1;
      if (!nb::try_cast<long>(item, i) || i < 0 || i >= static_cast<long>(args.size())) {
        throw StatusError(absl::InvalidArgumentError(
            fmt::format("execute: donate holds {}, not an argument position below {}",
                        nb::cast<std::string>(nb::str(item)), args.size())));
      }
      if (!nb::isinstance<PyBuffer>(args[i])) {
        throw StatusError(absl::InvalidArgumentError(fmt::format(
            "execute: donate names argument {}, which is not a kiln.Buffer (host arrays are "
            "copied in, and the copies are always given up)",
            i)));
      }
      donate[i] = true;
    }
  }
  const ScopedRunDeadline deadline(exe_->timeout_s());
  const ModuleExecutable& live = Live();
  std::vector<DeviceBuffer> outs =
      RunOnDevice(live, args, /*lend=*/false, donate, /*asynchronous=*/true);
  std::vector<nb::object> leaves;
  leaves.reserve(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    PyBuffer pb;
    pb.plugin = live.plugin();
    pb.shape = i < outputs_.size() ? outputs_[i] : ValueOrThrow(outs[i].shape());
    pb.buffer = std::make_shared<DeviceBuffer>(std::move(outs[i]));
    leaves.push_back(nb::cast(std::move(pb)));
  }
  return TupleOf(std::move(leaves));
}

void BindExecutable(nb::module_& m) {
  nb::class_<PyExecutable>(m, "Executable", "A compiled HLO module. Call it with arrays to run it.")
      .def("__call__", &PyExecutable::Call,
           "Runs the module on host arrays (or buffers); returns NumPy arrays: one array, or "
           "a tuple of the result's leaves when the module returns a tuple.")
      .def("execute", &PyExecutable::Execute,
           "Runs the module; returns a tuple of kiln.Buffer that stay on the device, as "
           "soon as the plugin has queued the run (ABI 1.7; as JAX dispatches): the buffers "
           "can be passed on at once, reading one waits, and b.block_until_ready() waits and "
           "raises the run's error. donate=(i, ...) gives up the kiln.Buffer arguments at those "
           "positions, as "
           "jax.jit's donate_argnums: the plugin may reuse their memory for the outputs (a "
           "loop state updated in place), and any later use of them raises KilnError "
           "FAILED_PRECONDITION.")
      .def_prop_ro(
          "device", [](const PyExecutable& e) { return e.exe().device_names(); },
          "The plugin that runs it, or the partition's plugins joined by '+'.")
      .def_prop_ro("returns_tuple", &PyExecutable::tuple_result,
                   "True when the module's result is a tuple (a call returns a tuple of arrays).")
      .def_prop_ro("num_parameters",
                   [](const PyExecutable& e) { return e.parameter_shapes().size(); })
      .def_prop_ro(
          "parameter_shapes",
          [](const PyExecutable& e) {
            std::vector<std::string> out;
            for (const Shape& s : e.parameter_shapes()) out.push_back(s.ToString(false));
            return out;
          },
          "Entry parameter shapes as HLO text (\"f32[2,3]\").")
      .def_prop_ro(
          "compile_ms", [](const PyExecutable& e) { return e.exe().compile_ms(); },
          "Milliseconds the plugins spent compiling.")
      .def_prop_ro(
          "core_passes",
          [](const PyExecutable& e) { return e.exe().core_pass_report().pass_names; },
          "The core passes that ran on the module, comma-separated.")
      .def_prop_ro(
          "hlo_text", [](const PyExecutable& e) { return e.exe().module().ToString(); },
          "The module the devices compiled (after the core passes).")
      .def_prop_ro(
          "partition",
          [](const PyExecutable& e) -> std::string {
            if (e.exe().plugin() != nullptr) {
              return fmt::format("cluster 0: {} (whole module)\n", e.exe().device_names());
            }
            return DescribePartition(e.exe().clusters());
          },
          "Which plugin runs which part, as `kiln run --log-partition` prints it.")
      .def("__repr__", [](const PyExecutable& e) {
        return fmt::format("<kiln.Executable {} on {}>", e.exe().module().name(),
                           e.exe().device_names());
      });
}

}  // namespace kiln::python
