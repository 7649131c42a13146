// The C++ face of one loaded plugin: hides the C ABI (structs, error objects, handles)
// from the rest of the core. Plugin -> Executable -> DeviceBuffer, all absl::Status based.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "hlo/module.h"

struct KILN_Api;
struct KILN_Buffer;
struct KILN_Event;
struct KILN_Executable;

namespace kiln {

namespace internal {
struct PluginLibrary;  // the loaded .so, its table and client; shared by every handle
}

// The entries every plugin table must set (those of ABI 1.0 not marked optional) that `api`
// leaves null, in table order: the loader rejects such a plugin; `kiln plugin-test` reports it.
std::vector<const char*> MissingRequiredEntries(const KILN_Api& api);

struct DeviceDescription {
  int id = 0;
  std::string kind;
};

// What the core can ask of a plugin run in a helper process (isolated_plugin.h); in-process
// plugins have none of it.
struct PluginHealth {
  // False once the helper died or was killed and may not be started again.
  std::function<bool()> alive;
  // How many times the helper was lost: handles made before the last loss are gone.
  std::function<uint64_t()> generation;
};

struct CapabilityReport {
  std::vector<std::string> supported;  // entry instruction names, in the plugin's order
  std::vector<std::pair<std::string, std::string>> unsupported;  // name, reason
};

struct CompileOptions {
  int optimization_level = 2;
  int num_threads = 0;
  std::string core_passes;  // what the core ran on the module (core_passes.h); "" = none
  std::string dump_dir;     // where the plugin may dump its own passes; "" = no dumps
  int dump_sequence = 0;    // the number of its first dump (after the core's)
  // ABI 1.8: the devices (indices into Devices()) the executable will run on, one per device
  // of the run; empty: any.
  std::vector<int> device_assignment;
};

// Work a plugin finishes later (ABI 1.7): an asynchronous execute, or a buffer's contents.
// Destroying it does not stop the work.
class Event {
 public:
  Event(std::shared_ptr<internal::PluginLibrary> lib, KILN_Event* event);
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  absl::StatusOr<bool> IsReady() const;
  // Blocks until the work ends; its error when it failed.
  absl::Status Await() const;
  // Calls `callback` once with the work's status when it ends, maybe right away, maybe on
  // another thread. It must not block on the plugin's other work.
  absl::Status OnReady(std::function<void(absl::Status)> callback) const;
  // How many times, in this process, a plugin called an OnReady callback it had already
  // called (or had refused): ignored, and counted here (kiln plugin-test checks it).
  static uint64_t UnexpectedCallbacks();

 private:
  std::shared_ptr<internal::PluginLibrary> lib_;
  KILN_Event* event_;
};

// An array on a plugin's device. Move-only; destroys the plugin buffer when it dies.
class DeviceBuffer {
 public:
  DeviceBuffer(std::shared_ptr<internal::PluginLibrary> lib, KILN_Buffer* buffer);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  absl::StatusOr<Shape> shape() const;
  absl::StatusOr<Literal> ToLiteral() const;
  // Copies the bytes (dense, row-major) into `dst`, which holds exactly `size` bytes.
  absl::Status CopyToHost(void* dst, int64_t size) const;
  // Where the buffer's bytes are when they live in host memory (valid while it lives, not
  // to be written); null when they do not, or the plugin cannot say (ABI < 1.2).
  const void* HostData() const;
  // Which of its plugin's devices it lives on (ABI 1.8; 0 before).
  absl::StatusOr<int> device_index() const;
  // A copy on device `device` of the same plugin (ABI 1.8's buffer_copy_to_device).
  absl::StatusOr<DeviceBuffer> CopyToDevice(int device) const;
  // When its contents are ready (an output of an asynchronous execute, ABI 1.7); null when
  // they are now (a plugin without events is always ready).
  absl::StatusOr<std::unique_ptr<Event>> ReadyEvent() const;
  KILN_Buffer* handle() const { return buffer_; }
  // True once given up to an execute (Executable::ExecuteBuffers with `donate`): only its
  // destruction is left; any other use is FAILED_PRECONDITION.
  bool donated() const { return donated_; }

 private:
  friend class Executable;
  void Release();
  absl::Status CheckNotDonated(std::string_view what) const;
  std::shared_ptr<internal::PluginLibrary> lib_;
  KILN_Buffer* buffer_ = nullptr;
  mutable bool donated_ = false;  // set by the execute that consumed it
};

class Executable {
 public:
  Executable(std::shared_ptr<internal::PluginLibrary> lib, KILN_Executable* exe,
             size_t num_parameters, size_t num_outputs);
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;
  ~Executable();

  size_t num_parameters() const { return num_parameters_; }
  // Array leaves of the result, tuples flattened depth-first.
  size_t num_outputs() const { return num_outputs_; }

  // Runs on buffers already on the device (what benchmarks time). `donate` (empty, or a flag
  // per argument) gives arguments up to the plugin, which may reuse their memory for the
  // outputs (ABI 1.3; an older plugin copies as before). A donated buffer is consumed by
  // the call, whether it succeeds or not, and may be passed only once.
  absl::StatusOr<std::vector<DeviceBuffer>> ExecuteBuffers(
      std::span<const DeviceBuffer* const> args, std::span<const bool> donate = {}) const;
  // The same, returning as soon as the plugin has queued the run (ABI 1.7): the outputs'
  // contents come later (reading them waits), and `done` ends with the run; it is null when
  // the plugin ran the call to its end (no events, or it chose to). Outputs may be passed to
  // the next execute at once: the plugin orders the runs, with no wait on the host.
  struct AsyncRun {
    std::vector<DeviceBuffer> outputs;
    std::unique_ptr<Event> done;
  };
  absl::StatusOr<AsyncRun> ExecuteBuffersAsync(std::span<const DeviceBuffer* const> args,
                                               std::span<const bool> donate = {}) const;
  // Copies host arrays in, runs (donating the copies), copies the result leaves out.
  absl::StatusOr<std::vector<Literal>> Execute(std::span<const Literal> args) const;
  // Unimplemented when the plugin does not offer serialization.
  absl::StatusOr<std::string> Serialize() const;

 private:
  absl::StatusOr<AsyncRun> Run(std::span<const DeviceBuffer* const> args,
                               std::span<const bool> donate, bool asynchronous) const;

  std::shared_ptr<internal::PluginLibrary> lib_;
  KILN_Executable* exe_;
  size_t num_parameters_, num_outputs_;
};

// A device's memory as its plugin counts it (KILN_Device_MemoryStats_Args).
struct DeviceMemoryStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t num_buffers = 0;
  int64_t bytes_limit = -1;  // -1: unknown
};

class Plugin {
 public:
  // Loads `path`, checks the table, initializes the plugin and creates a client. The error
  // message is the rejection reason (shown by `kiln devices`). A plugin that initializes
  // but reports itself unavailable loads fine with available() == false.
  static absl::StatusOr<std::unique_ptr<Plugin>> Load(const std::filesystem::path& path);
  // Wraps a table the caller already has (plugins linked in statically, tests, the proxy of
  // an isolated plugin, which passes its `health`).
  static absl::StatusOr<std::unique_ptr<Plugin>> FromApi(const KILN_Api* api, std::string origin,
                                                         PluginHealth health = {});
  ~Plugin();

  const std::string& name() const;
  const std::string& path() const;
  int default_priority() const;
  int api_major() const;
  int api_minor() const;
  bool available() const;
  // False once an isolated plugin's helper process died or was killed and is not started
  // again (the restart policy, device_config.h): placement skips it.
  bool alive() const;
  // Whether it runs in a helper process (isolated_plugin.h).
  bool isolated() const;
  // 0 in process; for an isolated plugin, how many times its helper was lost. Executables
  // and buffers made in an earlier generation fail with UNAVAILABLE: compile again.
  uint64_t generation() const;
  const std::string& unavailable_reason() const;
  const std::vector<std::pair<std::string, std::string>>& attributes() const;
  // The plugin's attribute "core_passes" is "none": it compiles modules as the user wrote
  // them, so the core runs none of its passes for it.
  bool wants_module_as_written() const;

  // Whether it runs executes asynchronously when asked: ABI 1.7 with the event entries.
  bool has_events() const;
  absl::StatusOr<std::vector<DeviceDescription>> Devices() const;
  // How much memory the plugin's buffers hold on its first device (device_memory_stats,
  // ABI 1.5); UNIMPLEMENTED for a plugin without that entry.
  absl::StatusOr<DeviceMemoryStats> MemoryStats() const;
  // Which entry instructions the plugin can run. Unimplemented when it has no capability
  // entry (callers treat that as "everything").
  absl::StatusOr<CapabilityReport> Capability(std::string_view hlo_text) const;
  absl::StatusOr<std::unique_ptr<Executable>> Compile(const HloModule& module,
                                                      const CompileOptions& options = {}) const;
  absl::StatusOr<std::unique_ptr<Executable>> CompileText(std::string_view hlo_text,
                                                          const CompileOptions& options = {}) const;
  absl::StatusOr<std::unique_ptr<Executable>> Deserialize(std::string_view bytes) const;
  // On the default device: the first, or in a run on several devices in this process the
  // device this thread runs (ABI 1.8, when the plugin has that many).
  absl::StatusOr<DeviceBuffer> ToDevice(const Literal& literal) const;
  // On device `device` (an index into Devices()).
  absl::StatusOr<DeviceBuffer> ToDeviceAt(const Literal& literal, int device) const;
  absl::StatusOr<DeviceBuffer> ToDeviceAt(const Shape& shape, const void* data, int device) const;
  // How many devices its client has (ABI 1.8: a host plugin has KILN_HOST_DEVICE_COUNT).
  size_t device_count() const;
  // The same from `shape.byte_size()` dense row-major bytes at `data`, copied before return.
  absl::StatusOr<DeviceBuffer> ToDevice(const Shape& shape, const void* data) const;
  // Like ToDevice, but a plugin with host-memory buffers may keep reading `data` instead of
  // copying it (a zero-copy import). On success `on_done(arg)` is called exactly once when
  // `data` is no longer read (right away when it was copied); on error it is not called.
  absl::StatusOr<DeviceBuffer> ToDeviceShared(const Shape& shape, const void* data,
                                              void (*on_done)(void*), void* arg) const;

 private:
  explicit Plugin(std::shared_ptr<internal::PluginLibrary> lib);
  std::shared_ptr<internal::PluginLibrary> lib_;
};

}  // namespace kiln
