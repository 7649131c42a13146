/* The whole contract between the Kiln core and a device plugin: a C ABI, versioned.
 *
 * A plugin is a shared library named `libkiln_plugin_<name>.so` that exports one symbol,
 *
 *     const KILN_Api* KILN_GetApi(void);
 *
 * returning a pointer to a constant table (valid while the library is loaded). The table
 * starts with its own size, the ABI major/minor the plugin was built against, the plugin's
 * name and default priority, then function pointers.
 *
 * Compatibility rules (the scheme of XLA's PJRT C API):
 *  - Major mismatch: the core refuses the plugin.
 *  - Minor versions only append: new function pointers go at the END of KILN_Api, new
 *    fields at the END of an args struct. Nothing is ever removed or reordered within a
 *    major version.
 *  - Every args struct starts with `struct_size`, set by the caller to sizeof() of the
 *    struct as the caller knows it. A plugin reads only the fields it knows and that lie
 *    inside `struct_size` (KILN_ARGS_HAS); a newer core simply passes bigger structs.
 *  - The core checks KILN_API_HAS(api, entry) before calling any entry: an entry beyond the
 *    plugin's table size, or a NULL optional entry, is reported as "unsupported by plugin
 *    X" and never called.
 *
 * Errors: every fallible entry returns KILN_Error* (NULL on success). The error is created
 * by the plugin and destroyed by the core through `error_destroy`. No C++ exception and no
 * errno ever crosses this boundary.
 *
 * Ownership: whoever creates a handle destroys it, through this API. Strings returned by the
 * plugin (names, reasons, attribute values, device kinds) stay valid while the plugin is
 * loaded unless a comment says otherwise. Buffers passed in are copied before the entry
 * returns. Calls are synchronous, except an execute the caller lets run asynchronously
 * (1.7), whose end and outputs are then told by events.
 *
 * This header is C only (C99) and includes nothing of Kiln.
 */
#ifndef KILN_PLUGIN_API_H_
#define KILN_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_API_MAJOR 1
#define KILN_API_MINOR 8

/* The symbol every plugin exports. */
#define KILN_GET_API_SYMBOL "KILN_GetApi"

/* Priority conventions for default_priority (higher wins when a device is auto-selected). */
#define KILN_PRIORITY_INTERPRETER 10
#define KILN_PRIORITY_CPU 100
#define KILN_PRIORITY_GPU 200

/* ---- Opaque handles ---------------------------------------------------------------- */
typedef struct KILN_Error KILN_Error;
typedef struct KILN_Client KILN_Client;
typedef struct KILN_Device KILN_Device;
typedef struct KILN_Buffer KILN_Buffer;
typedef struct KILN_Executable KILN_Executable;
typedef struct KILN_Event KILN_Event; /* 1.7: work that ends later (see Events) */

/* ---- Error codes: the same numbers as absl::StatusCode / gRPC codes ------------------ */
typedef enum {
  KILN_ERROR_OK = 0,
  KILN_ERROR_CANCELLED = 1,
  KILN_ERROR_UNKNOWN = 2,
  KILN_ERROR_INVALID_ARGUMENT = 3,
  KILN_ERROR_DEADLINE_EXCEEDED = 4,
  KILN_ERROR_NOT_FOUND = 5,
  KILN_ERROR_ALREADY_EXISTS = 6,
  KILN_ERROR_PERMISSION_DENIED = 7,
  KILN_ERROR_RESOURCE_EXHAUSTED = 8,
  KILN_ERROR_FAILED_PRECONDITION = 9,
  KILN_ERROR_ABORTED = 10,
  KILN_ERROR_OUT_OF_RANGE = 11,
  KILN_ERROR_UNIMPLEMENTED = 12,
  KILN_ERROR_INTERNAL = 13,
  KILN_ERROR_UNAVAILABLE = 14,
  KILN_ERROR_DATA_LOSS = 15,
  KILN_ERROR_UNAUTHENTICATED = 16
} KILN_ErrorCode;

/* ---- Element types: the numbering of Kiln's hlo PrimitiveType (hlo/primitive_type.h) --- */
typedef enum {
  KILN_DTYPE_PRED = 0, /* bool, one byte, 0 or 1 */
  KILN_DTYPE_S8 = 1,
  KILN_DTYPE_S16 = 2,
  KILN_DTYPE_S32 = 3,
  KILN_DTYPE_S64 = 4,
  KILN_DTYPE_U8 = 5,
  KILN_DTYPE_U16 = 6,
  KILN_DTYPE_U32 = 7,
  KILN_DTYPE_U64 = 8,
  KILN_DTYPE_F16 = 9,   /* IEEE half */
  KILN_DTYPE_BF16 = 10, /* bfloat16 (upper half of an f32) */
  KILN_DTYPE_F32 = 11,
  KILN_DTYPE_F64 = 12,
  KILN_DTYPE_C64 = 13,  /* two f32: real, imaginary */
  KILN_DTYPE_C128 = 14, /* two f64 */
  /* 15 and 16 are Kiln's tuple and token, never a buffer's dtype. The types below are one
   * byte per element, as ml_dtypes stores them; a plugin that does not know one rejects it
   * as an unknown dtype. Sub-byte values sit in the low bits of their byte, the rest zero.
   * Dtypes are only ever appended: give a switch over KILN_DType a default case. */
  KILN_DTYPE_F8E4M3FN = 17,      /* 4 exponent, 3 mantissa bits, no infinity */
  KILN_DTYPE_F8E5M2 = 18,        /* IEEE-style, with infinities */
  KILN_DTYPE_F8E4M3FNUZ = 19,    /* no infinity, no -0 (0x80 is NaN) */
  KILN_DTYPE_F8E5M2FNUZ = 20,    /* no infinity, no -0 (0x80 is NaN) */
  KILN_DTYPE_F8E4M3B11FNUZ = 21, /* exponent bias 11, no infinity, no -0 */
  KILN_DTYPE_F8E3M4 = 22,        /* IEEE-style */
  KILN_DTYPE_F8E4M3 = 23,        /* IEEE-style */
  KILN_DTYPE_F8E8M0FNU = 24,     /* powers of two 2^-127..2^127, no sign, 0xff is NaN */
  KILN_DTYPE_F4E2M1FN = 25,      /* 2 exponent, 1 mantissa bits, no infinity or NaN */
  KILN_DTYPE_S4 = 26,
  KILN_DTYPE_U4 = 27,
  KILN_DTYPE_S2 = 28,
  KILN_DTYPE_U2 = 29,
  KILN_DTYPE_S1 = 30, /* -1 or 0 */
  KILN_DTYPE_U1 = 31  /* 0 or 1 */
} KILN_DType;

/* True for the dtypes above (a buffer's dtype). */
#define KILN_DTYPE_IS_VALID(d)                           \
  (((d) >= KILN_DTYPE_PRED && (d) <= KILN_DTYPE_C128) || \
   ((d) >= KILN_DTYPE_F8E4M3FN && (d) <= KILN_DTYPE_U1))

/* True when `args` (a pointer to an args struct) was passed by a caller that knows `field`. */
#define KILN_ARGS_HAS(args, type, field) \
  ((args)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))
/* The size of `type` up to and including `field`: the minimum struct_size to accept. */
#define KILN_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/* ---- Errors ------------------------------------------------------------------------ */
/* These three take plain pointers rather than args structs: they are frozen forever. */
typedef void KILN_Error_Destroy(KILN_Error* error);
/* NUL-terminated; valid until error_destroy. */
typedef const char* KILN_Error_Message(const KILN_Error* error);
typedef KILN_ErrorCode KILN_Error_Code(const KILN_Error* error);

/* ---- Plugin-level ------------------------------------------------------------------ */
typedef struct {
  size_t struct_size;
  /* out: nonzero when the plugin can run on this machine. A plugin that loads fine but has
   * nothing to run on (no GPU, no driver) sets 0 and a reason; that is not an error. */
  int32_t available;
  /* out: why not available (plugin-owned, NUL-terminated); NULL when available. */
  const char* unavailable_reason;
} KILN_Initialize_Args;
/* Called once after loading, before anything else. Returning an error rejects the plugin. */
typedef KILN_Error* KILN_Initialize(KILN_Initialize_Args* args);

typedef struct {
  const char* name;
  const char* value;
} KILN_Attribute;

typedef struct {
  size_t struct_size;
  /* out: plugin-owned array. Conventional names: "version", "platform", "core_passes"
   * ("none": compile modules as the user wrote them, see KILN_CompileOptions), and
   * "module_view" ("none": the plugin parses hlo_text itself, so the core builds no
   * KILN_ModuleView for it and passes NULL). */
  const KILN_Attribute* attributes;
  size_t num_attributes;
} KILN_Attributes_Args;
typedef KILN_Error* KILN_Plugin_Attributes(KILN_Attributes_Args* args);

/* ---- Client and devices ------------------------------------------------------------- */
typedef struct {
  size_t struct_size;
  KILN_Client* client; /* out */
} KILN_Client_Create_Args;
typedef KILN_Error* KILN_Client_Create(KILN_Client_Create_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Client* client;
} KILN_Client_Destroy_Args;
typedef KILN_Error* KILN_Client_Destroy(KILN_Client_Destroy_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Client* client;
  KILN_Device* const* devices; /* out: client-owned array, valid while the client lives */
  size_t num_devices;          /* out */
} KILN_Client_Devices_Args;
typedef KILN_Error* KILN_Client_Devices(KILN_Client_Devices_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Device* device;
  int32_t id;       /* out */
  const char* kind; /* out: e.g. "cpu", "NVIDIA H100"; client-owned */
} KILN_Device_Description_Args;
typedef KILN_Error* KILN_Device_Description(KILN_Device_Description_Args* args);

/* ---- Host custom-call handlers (1.5) ------------------------------------------------ */
/* Users register host functions for custom-call targets with the core (the idea of XLA's
 * FFI); the core offers them to plugins through this table, and a plugin that runs a
 * custom-call with such a target calls the handler with the operands and result arrays in
 * host memory. A plugin that cannot call back into the host declines those instructions in
 * its capability, and the partitioner runs them on a plugin that can. */
typedef struct {
  KILN_DType dtype;
  const int64_t* dims;
  size_t num_dims;
  void* data;       /* dense, row-major, host byte order; operands are not to be written */
  size_t byte_size; /* product(dims) * size of dtype */
} KILN_HostArray;

/* Computes a custom-call's results (the array leaves of its shape, depth-first; every byte
 * written) from its operands (array leaves, in order). `backend_config` is the call's
 * backend_config text, "" when it has none. Returns 0 on success; otherwise nonzero with a
 * NUL-terminated reason written to `error` (at most error_size bytes). May be called from
 * several threads at once. */
typedef int32_t KILN_CustomCallHandler(void* user_data, const KILN_HostArray* operands,
                                       size_t num_operands, KILN_HostArray* results,
                                       size_t num_results, const char* backend_config, char* error,
                                       size_t error_size);

typedef struct KILN_CustomCallRegistry {
  size_t struct_size;
  void* context;
  /* The handler registered for `target` (setting *user_data to its argument), or NULL. */
  KILN_CustomCallHandler* (*find)(void* context, const char* target, void** user_data);
} KILN_CustomCallRegistry;

/* How handlers get registered from C: the core's registration function, which a library of
 * handlers loaded with `kiln run --custom-calls LIB.so` receives in its exported
 * `void KILN_RegisterCustomCalls(KILN_RegisterCustomCall_Fn* register_fn)`. */
typedef void KILN_RegisterCustomCall_Fn(const char* target, KILN_CustomCallHandler* handler,
                                        void* user_data);

/* ---- The walkable module (1.6) ------------------------------------------------------ */
/* A read-only view of the parsed and verified module, which capability and compile receive
 * beside its text (as ONNX Runtime hands its execution providers a graph): a backend written
 * in C walks it and needs no HLO parser of its own. The core owns it; it is valid during the
 * call only, so a plugin copies what it keeps. Each struct starts with struct_size and later
 * minors append fields: read a field only where KILN_ARGS_HAS says it is there. Names are
 * without their '%'; every string is NUL-terminated. */

/* KILN_ShapeView.element_type of a tuple and of a token (they are never a buffer's dtype). */
#define KILN_SHAPE_TUPLE 15
#define KILN_SHAPE_TOKEN 16

typedef struct KILN_ShapeView {
  size_t struct_size;
  int32_t element_type; /* a KILN_DType, or KILN_SHAPE_TUPLE, or KILN_SHAPE_TOKEN */
  const int64_t* dims;  /* arrays: the dimensions (a dynamic one: its upper bound) */
  size_t num_dims;
  /* arrays: the layout, num_dims entries, minor-most first ({1,0}: row-major); NULL when the
   * text gave none. Buffers crossing this ABI are always row-major whatever it says. */
  const int64_t* minor_to_major;
  const struct KILN_ShapeView* const* tuple_elements; /* tuples: the element shapes */
  size_t num_tuple_elements;
} KILN_ShapeView;

typedef struct KILN_InstructionView {
  size_t struct_size;
  const char* name;
  const char* opcode; /* as HLO text writes it: "add", "parameter", "custom-call", ... */
  const KILN_ShapeView* shape;
  const size_t* operands; /* indices into its computation's instructions, in order */
  size_t num_operands;
  /* indices into the module's computations, in XLA's order: while {condition, body},
   * conditional {branches...}, reduce, map, sort, call, ... {to_apply} */
  const size_t* called_computations;
  size_t num_called_computations;
  /* Every other attribute, name and value as the text writes them, in a fixed order:
   * {"dimensions", "{1}"}, {"direction", "GT"}, {"custom_call_target", "\"foo\""}, ... */
  const KILN_Attribute* attributes;
  size_t num_attributes;
  int64_t parameter_number; /* parameter: its number; otherwise -1 */
  int64_t tuple_index;      /* get-tuple-element: the index; otherwise -1 */
  /* the `dimensions={...}` attribute (broadcast, transpose, reduce, concatenate, ...) */
  const int64_t* dimensions;
  size_t num_dimensions;
  /* constant of an array shape: its value (dense, row-major, host byte order, one byte per
   * element for pred and sub-byte types, as buffers); otherwise NULL */
  const void* literal;
  size_t literal_size;
  /* instructions that must run before this one though it does not read them (the text's
   * control-predecessors), as indices into its computation's instructions */
  const size_t* control_predecessors;
  size_t num_control_predecessors;
} KILN_InstructionView;

typedef struct KILN_ComputationView {
  size_t struct_size;
  const char* name;
  /* every instruction, each after its operands (so one pass in order computes them all) */
  const KILN_InstructionView* const* instructions;
  size_t num_instructions;
  size_t root;           /* index of the root instruction */
  size_t num_parameters; /* parameter instructions (numbered 0 .. num_parameters-1) */
} KILN_ComputationView;

typedef struct KILN_ModuleView {
  size_t struct_size;
  const char* name;
  /* every computation, each after the computations it calls */
  const KILN_ComputationView* const* computations;
  size_t num_computations;
  size_t entry; /* index of the entry computation */
  /* the header's attributes as written: {"input_output_alias", "{ {0}: (1, {}) }"}, ... */
  const KILN_Attribute* attributes;
  size_t num_attributes;
} KILN_ModuleView;

/* The value of attribute `name` of `instruction`, or NULL when it has none. */
static inline const char* KILN_FindAttribute(const KILN_InstructionView* instruction,
                                             const char* name) {
  for (size_t i = 0; i < instruction->num_attributes; ++i) {
    const char* a = instruction->attributes[i].name;
    const char* b = name;
    while (*a != '\0' && *a == *b) ++a, ++b;
    if (*a == *b) return instruction->attributes[i].value;
  }
  return NULL;
}

/* ---- Capability query ------------------------------------------------------------- */
typedef struct {
  size_t struct_size;
  KILN_Client* client;
  const char* hlo_text; /* an HLO module in XLA text form; not NUL-terminated necessarily */
  size_t hlo_text_size;
  /* Called once per instruction of the ENTRY computation (by instruction name) that the
   * plugin can run. The name pointer is only valid during the call. */
  void (*report_supported)(void* user_data, const char* instruction_name);
  /* Optional (may be NULL): called for instructions the plugin cannot run, with a reason. */
  void (*report_unsupported)(void* user_data, const char* instruction_name, const char* reason);
  void* user_data;
  /* 1.5, optional (NULL: none): the host handlers the plugin may call for custom-calls; a
   * plugin that calls them reports such instructions as supported. A caller checks the
   * plugin's api_minor >= 5 before setting it. */
  const KILN_CustomCallRegistry* custom_calls;
  /* 1.6: the module of hlo_text, parsed and verified (see KILN_ModuleView). A 1.6 core
   * always sets it; a plugin that needs it refuses a caller whose struct_size ends above it
   * with FAILED_PRECONDITION. */
  const KILN_ModuleView* module;
} KILN_Capability_Args;
/* Which entry instructions of a module the plugin can run: the basis for partitioning. */
typedef KILN_Error* KILN_Client_Capability(KILN_Capability_Args* args);

/* ---- Compilation and executables ------------------------------------------------- */
typedef struct {
  size_t struct_size;
  int32_t optimization_level; /* 0 = none .. 3 = most; plugins may ignore */
  int32_t num_threads;        /* 0 = plugin's choice */
  /* 1.1: the passes the core already ran on the module, comma-separated in order (e.g.
   * "algsimp,constant-folding,...,dce"); NULL or "" when the module is as the user wrote it.
   * A plugin that wants modules as written declares the attribute "core_passes" = "none";
   * the core then runs none of its passes on modules for that plugin. */
  const char* core_passes;
  /* 1.1: when not NULL or "", the directory where the plugin may dump the module after each
   * of its own HLO passes, as `<module>.<NN>.<plugin>.<pass>.txt` with NN counting up from
   * dump_sequence (the core's dumps come before), ending with the program it runs. */
  const char* dump_dir;
  int32_t dump_sequence;
  /* 1.5, optional (NULL: none): the host custom-call handlers, as in KILN_Capability_Args;
   * valid while the plugin is loaded. A caller checks the plugin's api_minor >= 5. */
  const KILN_CustomCallRegistry* custom_calls;
  /* 1.8, optional (NULL: any device): the client's devices the executable will run on, one
   * per device of the run (replica r, partition p at r * num_partitions + p), as XLA's device
   * assignment: a plugin may prepare each of them, and refuses an execute on another. */
  KILN_Device* const* device_assignment;
  size_t num_assigned_devices;
} KILN_CompileOptions;

typedef struct {
  size_t struct_size;
  KILN_Client* client;
  const char* hlo_text;
  size_t hlo_text_size;
  const KILN_CompileOptions* options; /* may be NULL: defaults */
  KILN_Executable* executable;        /* out */
  /* 1.6: the module of hlo_text, parsed and verified, as in KILN_Capability_Args. */
  const KILN_ModuleView* module;
} KILN_Compile_Args;
typedef KILN_Error* KILN_Client_Compile(KILN_Compile_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Executable* executable;
  size_t num_parameters; /* out: entry parameters */
  size_t num_outputs;    /* out: array leaves of the result, tuples flattened depth-first */
} KILN_Executable_Info_Args;
typedef KILN_Error* KILN_Executable_Info(KILN_Executable_Info_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Executable* executable;
  /* Called one or more times with consecutive pieces of the serialized bytes. */
  void (*write)(void* user_data, const void* bytes, size_t size);
  void* user_data;
} KILN_Executable_Serialize_Args;
typedef KILN_Error* KILN_Executable_Serialize(KILN_Executable_Serialize_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Client* client;
  const void* bytes;
  size_t size;
  KILN_Executable* executable; /* out */
} KILN_Executable_Deserialize_Args;
typedef KILN_Error* KILN_Executable_Deserialize(KILN_Executable_Deserialize_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Executable* executable;
} KILN_Executable_Destroy_Args;
typedef KILN_Error* KILN_Executable_Destroy(KILN_Executable_Destroy_Args* args);

/* ---- Buffers --------------------------------------------------------------------- */
typedef struct {
  size_t struct_size;
  KILN_Client* client;
  KILN_Device* device; /* NULL: the client's first device */
  KILN_DType dtype;
  const int64_t* dims;
  size_t num_dims;
  const void* data;    /* dense, row-major, host byte order; copied before return */
  size_t data_size;    /* bytes; must equal product(dims) * size of dtype */
  KILN_Buffer* buffer; /* out */
  /* 1.2, optional (a caller whose struct_size ends above leaves them out): when `on_done` is
   * set, a plugin whose buffers live in host memory may keep reading `data` after returning
   * instead of copying it (a zero-copy import such as DLPack). Whatever it does, a 1.2 plugin
   * calls on_done(on_done_arg) exactly once when it no longer reads `data`: right away when
   * it copied, or when the buffer and every output sharing its memory are destroyed; on an
   * error return it does not call it. The caller keeps `data` valid and unchanged until
   * then. A caller checks the plugin's api_minor >= 2 before setting it. */
  void (*on_done)(void* on_done_arg);
  void* on_done_arg;
} KILN_Buffer_FromHost_Args;
typedef KILN_Error* KILN_Buffer_FromHost(KILN_Buffer_FromHost_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Buffer* buffer;
  void* dst;       /* dense, row-major, host byte order */
  size_t dst_size; /* bytes; must equal the buffer's byte size */
} KILN_Buffer_ToHost_Args;
typedef KILN_Error* KILN_Buffer_ToHost(KILN_Buffer_ToHost_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Buffer* buffer;
  KILN_DType dtype;    /* out */
  const int64_t* dims; /* out: buffer-owned, valid while the buffer lives */
  size_t num_dims;     /* out */
  size_t byte_size;    /* out */
  KILN_Device* device; /* out, 1.8: the device it lives on */
} KILN_Buffer_Info_Args;
typedef KILN_Error* KILN_Buffer_Info(KILN_Buffer_Info_Args* args);

/* 1.2, optional: where a buffer's bytes are when it lives in host memory (dense, row-major,
 * host byte order), valid while the buffer lives; `data` is NULL when it lives elsewhere (a
 * GPU). For zero-copy exports (DLPack). The caller does not write through it. */
typedef struct {
  size_t struct_size;
  KILN_Buffer* buffer;
  const void* data; /* out */
} KILN_Buffer_HostData_Args;
typedef KILN_Error* KILN_Buffer_HostData(KILN_Buffer_HostData_Args* args);

/* 1.5, optional: how much of a device's memory the plugin's buffers hold (what JAX's
 * Device.memory_stats() reports). Counts are of live buffers as the plugin sees them; a
 * plugin whose devices share memory (host plugins: the process's memory) may count all its
 * clients' buffers together. */
typedef struct {
  size_t struct_size;
  KILN_Client* client;
  KILN_Device* device;       /* NULL: the client's first device */
  int64_t bytes_in_use;      /* out: bytes of live buffers */
  int64_t peak_bytes_in_use; /* out: the most bytes_in_use has been */
  int64_t num_buffers;       /* out: live buffers */
  int64_t bytes_limit;       /* out: the device's memory in bytes; -1 when unknown */
} KILN_Device_MemoryStats_Args;
typedef KILN_Error* KILN_Device_MemoryStats(KILN_Device_MemoryStats_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Buffer* buffer;
} KILN_Buffer_Destroy_Args;
typedef KILN_Error* KILN_Buffer_Destroy(KILN_Buffer_Destroy_Args* args);

/* 1.8, optional: a copy of a buffer on another device of its client (for a plugin with
 * several devices; it may share memory with the original where the devices do). Waits for
 * a buffer an asynchronous run has not made yet. */
typedef struct {
  size_t struct_size;
  KILN_Buffer* buffer;
  KILN_Device* device; /* where the copy goes: a device of the buffer's client */
  KILN_Buffer* copy;   /* out: the caller destroys it */
} KILN_Buffer_CopyToDevice_Args;
typedef KILN_Error* KILN_Buffer_CopyToDevice(KILN_Buffer_CopyToDevice_Args* args);

/* ---- Events: asynchronous execution (1.7) ------------------------------------------- */
/* An event stands for work a plugin finishes later: an asynchronous execute, or the
 * contents of one of its output buffers. The plugin creates it; the caller destroys it
 * with event_destroy (the work goes on regardless). */
typedef struct {
  size_t struct_size;
  KILN_Event* event;
  int32_t ready; /* out: nonzero once the work has ended, well or not */
} KILN_Event_IsReady_Args;
typedef KILN_Error* KILN_Event_IsReady(KILN_Event_IsReady_Args* args);

/* Blocks until the work has ended. Returns the work's error (a new error object each call,
 * which the caller destroys), or NULL when it succeeded. */
typedef struct {
  size_t struct_size;
  KILN_Event* event;
} KILN_Event_Await_Args;
typedef KILN_Error* KILN_Event_Await(KILN_Event_Await_Args* args);

/* Calls callback(error, arg) exactly once when the work has ended: maybe before this entry
 * returns, maybe from another thread. `error` is NULL on success, otherwise an error object
 * the callback owns and destroys. The callback must not block on other work of the plugin. */
typedef struct {
  size_t struct_size;
  KILN_Event* event;
  void (*callback)(KILN_Error* error, void* arg);
  void* arg;
} KILN_Event_OnReady_Args;
typedef KILN_Error* KILN_Event_OnReady(KILN_Event_OnReady_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Event* event;
} KILN_Event_Destroy_Args;
typedef KILN_Error* KILN_Event_Destroy(KILN_Event_Destroy_Args* args);

/* An event for when a buffer's contents are ready (an output of an asynchronous execute),
 * failing with its run's error when the run failed; a buffer made any other way is ready. */
typedef struct {
  size_t struct_size;
  KILN_Buffer* buffer;
  KILN_Event* event; /* out: the caller destroys it */
} KILN_Buffer_ReadyEvent_Args;
typedef KILN_Error* KILN_Buffer_ReadyEvent(KILN_Buffer_ReadyEvent_Args* args);

/* ---- Execution ------------------------------------------------------------------- */
/* 1.4: the transport of a run on several devices, which the caller (the core: in one process,
 * or over Open MPI across processes) gives each execute. The plugin runs the module's
 * collective ops (all-reduce, all-gather, all-to-all, collective-permute, ...) by moving raw
 * bytes through it; what the ops mean (replica groups, dimensions, reducers) is the plugin's
 * to work out, as XLA defines it. A device id is replica * num_partitions + partition.
 * Every function is collective: each device of `group` (global device ids in the group's
 * order, the caller among them) makes the same call, in the same order on that group. Each
 * returns a KILN_ErrorCode (KILN_ERROR_OK, or DEADLINE_EXCEEDED when a peer never came, ...)
 * and last_error(context) then says why, valid until the next call. */
typedef struct KILN_Collectives {
  size_t struct_size;
  void* context;
  int32_t device_id;
  int32_t num_replicas;
  int32_t num_partitions;
  /* out gets group_size * bytes: member i's `bytes` of `in` at offset i * bytes. */
  int32_t (*all_gather)(void* context, const int32_t* group, size_t group_size, const void* in,
                        void* out, size_t bytes);
  /* out gets the elementwise reduction over the group of `count` elements of `dtype`;
   * `reduction` is 0 sum, 1 product, 2 min, 3 max, 4 and, 5 or. *done = 0 when the transport
   * cannot reduce that dtype (nothing was sent; the plugin gathers and reduces itself). */
  int32_t (*all_reduce)(void* context, const int32_t* group, size_t group_size, KILN_DType dtype,
                        int32_t reduction, const void* in, void* out, size_t count, uint8_t* done);
  /* in holds group_size chunks: chunk i goes to member i; out's chunk j came from member j. */
  int32_t (*all_to_all)(void* context, const int32_t* group, size_t group_size, const void* in,
                        void* out, size_t chunk_bytes);
  /* pairs: num_pairs (source, target) device ids, the same on every device of `group`. The
   * caller sends `in` where it is a source and receives into `out` from its source, if any:
   * *received says whether it had one. */
  int32_t (*permute)(void* context, const int32_t* group, size_t group_size, const int32_t* pairs,
                     size_t num_pairs, const void* in, void* out, size_t bytes, uint8_t* received);
  const char* (*last_error)(void* context);
} KILN_Collectives;

typedef struct {
  size_t struct_size;
  KILN_Executable* executable;
  /* NULL: the client's first device. The run's device: its arguments live there (a plugin
   * with several devices refuses others), and its outputs are made there. */
  KILN_Device* device;
  KILN_Buffer* const* arguments; /* one per entry parameter, in order */
  size_t num_arguments;
  /* Caller-allocated array of `num_outputs` slots (see KILN_Executable_Info); the plugin
   * fills each with a new buffer the caller destroys. On error no buffer is returned. */
  KILN_Buffer** outputs;
  size_t num_outputs;
  /* 1.3, optional (NULL: nothing donated): one flag per argument, nonzero when the caller
   * donates that argument, as XLA's buffer donation and a module's input_output_alias
   * intend: the plugin may reuse its memory for the outputs (update a loop state in place,
   * return it as an output without a copy), or ignore the flag. A donated buffer is
   * consumed by the call, whether it succeeds or not: the caller only destroys it
   * afterwards (a plugin may answer any other use with FAILED_PRECONDITION). A donated
   * buffer is not passed twice in one call (a plugin may refuse that with INVALID_ARGUMENT).
   * A caller checks the plugin's api_minor >= 3 before setting it. */
  const uint8_t* donated;
  /* 1.4, optional (NULL: the run is on one device): the transport for collective ops. A
   * caller checks the plugin's api_minor >= 4 before setting it. A plugin without a transport
   * of its own runs collectives through it, or fails the call naming the op it cannot run. */
  const KILN_Collectives* collectives;
  /* 1.7, optional: nonzero lets the plugin return once the run is queued (its arguments
   * checked), with output buffers whose contents come later (buffer_ready_event; reading
   * one waits for it). Arguments may be outputs of such runs that are not ready yet: the
   * plugin orders the runs itself, so a caller chains executions without waiting on the
   * host. Argument buffers may be destroyed once execute returns. A plugin may always run
   * to the end instead. A caller sets it only for a plugin with the event entries. */
  int32_t asynchronous;
  /* 1.7, out: with `asynchronous`, an event for the end of the run, which the caller
   * destroys; a run that fails fails it and every output's ready event with its error. NULL
   * when the plugin ran the call to its end before returning. */
  KILN_Event* done;
} KILN_Execute_Args;
typedef KILN_Error* KILN_Executable_Execute(KILN_Execute_Args* args);

/* ---- The table ------------------------------------------------------------------- */
typedef struct KILN_Api {
  size_t struct_size; /* sizeof(KILN_Api) as the plugin was compiled */
  int32_t api_major;  /* KILN_API_MAJOR the plugin was compiled against */
  int32_t api_minor;
  const char* plugin_name;  /* short, unique: "interpreter", "cpu-llvm", "gpu-nvptx" */
  int32_t default_priority; /* see KILN_PRIORITY_* */

  /* Version 1.0. Required unless marked optional. */
  KILN_Error_Destroy* error_destroy;
  KILN_Error_Message* error_message;
  KILN_Error_Code* error_code;

  KILN_Initialize* initialize;
  KILN_Plugin_Attributes* attributes; /* optional */

  KILN_Client_Create* client_create;
  KILN_Client_Destroy* client_destroy;
  KILN_Client_Devices* client_devices;
  KILN_Device_Description* device_description;
  KILN_Client_Capability* capability; /* optional: absent means "everything" */

  KILN_Client_Compile* compile;
  KILN_Executable_Info* executable_info;
  KILN_Executable_Serialize* executable_serialize;     /* optional */
  KILN_Executable_Deserialize* executable_deserialize; /* optional */
  KILN_Executable_Destroy* executable_destroy;
  KILN_Executable_Execute* execute;

  KILN_Buffer_FromHost* buffer_from_host;
  KILN_Buffer_ToHost* buffer_to_host;
  KILN_Buffer_Info* buffer_info;
  KILN_Buffer_Destroy* buffer_destroy;

  /* Version 1.2. */
  KILN_Buffer_HostData* buffer_host_data; /* optional */

  /* Version 1.5. */
  KILN_Device_MemoryStats* device_memory_stats; /* optional */

  /* Version 1.7: asynchronous execution; optional, all five or none. */
  KILN_Event_IsReady* event_is_ready;
  KILN_Event_Await* event_await;
  KILN_Event_OnReady* event_on_ready;
  KILN_Event_Destroy* event_destroy;
  KILN_Buffer_ReadyEvent* buffer_ready_event;

  /* Version 1.8: several devices per client. */
  KILN_Buffer_CopyToDevice* buffer_copy_to_device; /* optional */
  /* Later minors append here. */
} KILN_Api;

/* True when the plugin's table is large enough to hold `entry` and the entry is set. */
#define KILN_API_HAS(api, entry)                                                      \
  ((api)->struct_size >= offsetof(KILN_Api, entry) + sizeof(((KILN_Api*)0)->entry) && \
   (api)->entry != NULL)

/* The smallest table a 1.0 core accepts. */
#define KILN_API_STRUCT_SIZE_1_0 KILN_STRUCT_SIZE(KILN_Api, buffer_destroy)

typedef const KILN_Api* KILN_GetApi_Fn(void);

/* Exported by every plugin. */
#if defined(_WIN32)
#define KILN_PLUGIN_EXPORT __declspec(dllexport)
#else
#define KILN_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif
KILN_PLUGIN_EXPORT const KILN_Api* KILN_GetApi(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_PLUGIN_API_H_ */
