// The classes the extension module binds: a compiled module and an array on a device.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <string>
#include <vector>

#include "core/module_executable.h"
#include "core/plugin.h"

namespace kiln::python {

// An array on a plugin's device (kiln.Buffer): numpy.asarray(buffer) copies it back.
struct PyBuffer {
  std::shared_ptr<DeviceBuffer> buffer;
  const Plugin* plugin = nullptr;
  Shape shape;
};

// A NumPy copy of a buffer of `shape`, written straight into the new array (buffer.cc).
nanobind::object CopyToNumpy(const DeviceBuffer& b, const Shape& shape);
// Counts a run Executable.execute queued (ABI 1.7) until `done` ends (executable.cc).
void CountQueuedRun(const Event& done);
// Waits, without the GIL, until every counted run has ended, at most `timeout_s` seconds;
// false when some had not. `kiln` calls it at exit, before the interpreter finalizes.
bool WaitForQueuedRuns(double timeout_s);
// Waits, without the GIL, until an asynchronous run (ABI 1.7) has made `b`: what reads it
// must not wait holding the GIL, which that run may need (a Python custom-call handler).
// Raises the run's error.
void WaitUntilReady(const DeviceBuffer& b);

// Copies `array` (anything NumPy can convert) to `plugin`'s device; `dtype` None keeps the
// array's own.
// `index`: which of the plugin's devices (ABI 1.8), 0 the first.
PyBuffer DevicePut(nanobind::handle array, const Plugin& plugin, int index = 0);

// DLPack (dlpack.cc): Buffer.__dlpack__ shares a host-memory buffer's bytes; FromDlpack
// lends a host array's bytes to the plugin without a copy where the plugin can read them.
nanobind::object BufferDlpack(nanobind::handle self, nanobind::kwargs kwargs);
PyBuffer FromDlpack(nanobind::handle array, const Plugin& plugin);

// A compiled module (kiln.Executable). Calls release the GIL while Kiln runs, so one
// executable can be called from many Python threads at once.
class PyExecutable {
 public:
  explicit PyExecutable(std::unique_ptr<ModuleExecutable> exe);

  // Host arrays (or buffers) in; NumPy arrays out: one array when the module's result is
  // an array, else a tuple of the result's leaves (flattened depth-first).
  nanobind::object Call(nanobind::args args) const;
  // Arrays or buffers in; a tuple of buffers that stay on the device out.
  // `kwargs` may hold donate=(i, ...): argument positions whose kiln.Buffer is given up.
  nanobind::tuple Execute(nanobind::args args, nanobind::kwargs kwargs) const;

  const ModuleExecutable& exe() const { return *exe_; }
  const std::vector<Shape>& parameter_shapes() const { return params_; }
  bool tuple_result() const { return tuple_result_; }

 private:
  void CheckArgumentCount(size_t n) const;
  // Runs the whole-module executable on its plugin: buffers as they are, other values copied
  // or converted. `lend`: host arrays of the exact type are lent without a copy instead (only
  // when no output outlives the call: an output may share an argument's memory).
  // `live` is what runs the module now (ModuleExecutable::Live).
  // Host values are uploaded (lent where `lend` and the plugin reads host memory) and those
  // copies donated; kiln.Buffer arguments are donated where `donate` says so.
  // `asynchronous`: return once the plugin has queued the run (ABI 1.7), as JAX dispatches;
  // reading an output waits for it, and a failed run's error comes with the read.
  std::vector<DeviceBuffer> RunOnDevice(const ModuleExecutable& live, nanobind::args args,
                                        bool lend, const std::vector<bool>& donate = {},
                                        bool asynchronous = false) const;
  // ModuleExecutable::Live, without the GIL (it may compile again).
  const ModuleExecutable& Live() const;
  // Host arrays in and out through ModuleExecutable (a partitioned module).
  nanobind::object CallPartitioned(nanobind::args args) const;
  nanobind::object Wrap(std::vector<nanobind::object> leaves) const;

  std::unique_ptr<ModuleExecutable> exe_;
  std::vector<Shape> params_;
  std::vector<Shape> outputs_;  // the result's array leaves, depth-first
  bool tuple_result_ = false;
};

void BindExecutable(nanobind::module_& m);
void BindBuffer(nanobind::module_& m);
void BindGraph(nanobind::module_& m);        // graph.cc
void BindCustomCalls(nanobind::module_& m);  // custom_calls.cc

}  // namespace kiln::python
