/* FROZEN: the ABI 1.0 header as it was released (before minor 1; reformatted only), for the
 * compatibility tests in tests/abi: a plugin built from it must keep loading in every 1.x
 * core, and a core built from it (core_1_0.c) must drive every newer plugin. Never edit.
 */
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
 * returns (calls are synchronous).
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
#define KILN_API_MINOR 0

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
  KILN_DTYPE_C64 = 13, /* two f32: real, imaginary */
  KILN_DTYPE_C128 = 14 /* two f64 */
} KILN_DType;

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
  /* out: plugin-owned array. Conventional names: "version", "platform". */
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
} KILN_Capability_Args;
/* Which entry instructions of a module the plugin can run: the basis for partitioning. */
typedef KILN_Error* KILN_Client_Capability(KILN_Capability_Args* args);

/* ---- Compilation and executables ------------------------------------------------- */
typedef struct {
  size_t struct_size;
  int32_t optimization_level; /* 0 = none .. 3 = most; plugins may ignore */
  int32_t num_threads;        /* 0 = plugin's choice */
} KILN_CompileOptions;

typedef struct {
  size_t struct_size;
  KILN_Client* client;
  const char* hlo_text;
  size_t hlo_text_size;
  const KILN_CompileOptions* options; /* may be NULL: defaults */
  KILN_Executable* executable;        /* out */
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
} KILN_Buffer_Info_Args;
typedef KILN_Error* KILN_Buffer_Info(KILN_Buffer_Info_Args* args);

typedef struct {
  size_t struct_size;
  KILN_Buffer* buffer;
} KILN_Buffer_Destroy_Args;
typedef KILN_Error* KILN_Buffer_Destroy(KILN_Buffer_Destroy_Args* args);

/* ---- Execution ------------------------------------------------------------------- */
typedef struct {
  size_t struct_size;
  KILN_Executable* executable;
  KILN_Device* device;           /* NULL: the client's first device */
  KILN_Buffer* const* arguments; /* one per entry parameter, in order */
  size_t num_arguments;
  /* Caller-allocated array of `num_outputs` slots (see KILN_Executable_Info); the plugin
   * fills each with a new buffer the caller destroys. On error no buffer is returned. */
  KILN_Buffer** outputs;
  size_t num_outputs;
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
