/* A third-party Kiln plugin in plain C against kiln_plugin_api.h ONLY (no Kiln headers or
 * libraries): it runs entry computations of f32 elementwise ops and constants on arrays of
 * one shape, reading them through ABI 1.6's walkable module (KILN_ModuleView), so it has
 * no HLO parser. It is the minimum a vendor writes: a table, an error object, handles, a
 * capability query and an executor; the optional serialize entries stay NULL.
 *
 * Name "elementwise-example", priority 300 (above the GPU plugin): `--device auto` picks it
 * for modules it fully supports; for others its capability says no and the core falls back.
 *
 * Build out of tree:  cc -shared -fPIC $(pkg-config --cflags kiln-plugin-api) \
 *                       elementwise_plugin.c -o libkiln_plugin_elementwise_example.so -lm
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_plugin_api.h"

/* ---- errors --------------------------------------------------------------------- */
struct KILN_Error {
  KILN_ErrorCode code;
  char message[512];
};

static KILN_Error* Fail(KILN_ErrorCode code, const char* fmt, ...) {
  KILN_Error* e = (KILN_Error*)malloc(sizeof(KILN_Error));
  if (e == NULL) return NULL; /* nothing better to do without memory */
  e->code = code;
  va_list args;
  va_start(args, fmt);
  vsnprintf(e->message, sizeof(e->message), fmt, args);
  va_end(args);
  return e;
}
static void ErrorDestroy(KILN_Error* e) { free(e); }
static const char* ErrorMessage(const KILN_Error* e) { return e->message; }
static KILN_ErrorCode ErrorCode(const KILN_Error* e) { return e->code; }

#define CHECK_ARGS(args, type, last)                                        \
  if ((args) == NULL || (args)->struct_size < KILN_STRUCT_SIZE(type, last)) \
  return Fail(KILN_ERROR_INVALID_ARGUMENT, "%s: args struct too small", #type)

static KILN_Error* OutOfMemory(void) {
  return Fail(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory");
}

/* ---- what this backend runs: parameters, constants and these f32 elementwise ops ---- */
static float Add(float a, float b) { return a + b; }
static float Subtract(float a, float b) { return a - b; }
static float Multiply(float a, float b) { return a * b; }
static float Divide(float a, float b) { return a / b; }
static float Maximum(float a, float b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static float Minimum(float a, float b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }
static float Negate(float a, float b) { return (void)b, -a; }
static float Abs(float a, float b) { return (void)b, fabsf(a); }
static float Exp(float a, float b) { return (void)b, expf(a); }
static float Tanh(float a, float b) { return (void)b, tanhf(a); }
static float Sqrt(float a, float b) { return (void)b, sqrtf(a); }

typedef struct {
  const char* opcode;
  size_t arity;
  float (*apply)(float a, float b); /* unary ops ignore b; NULL for parameter and constant */
} Op;
static const Op kOps[] = {
    {"parameter", 0, NULL},    {"constant", 0, NULL},     {"add", 2, Add},
    {"subtract", 2, Subtract}, {"multiply", 2, Multiply}, {"divide", 2, Divide},
    {"maximum", 2, Maximum},   {"minimum", 2, Minimum},   {"negate", 1, Negate},
    {"abs", 1, Abs},           {"exponential", 1, Exp},   {"tanh", 1, Tanh},
    {"sqrt", 1, Sqrt}};
#define NUM_OPS (sizeof(kOps) / sizeof(kOps[0]))

static const Op* OpOf(const char* opcode) {
  for (size_t k = 0; k < NUM_OPS; ++k) {
    if (strcmp(opcode, kOps[k].opcode) == 0) return &kOps[k];
  }
  return NULL;
}

static int SameArray(const KILN_ShapeView* a, const KILN_ShapeView* b) {
  return a->num_dims == b->num_dims &&
         (a->num_dims == 0 || memcmp(a->dims, b->dims, sizeof(int64_t) * a->num_dims) == 0);
}

/* Why instruction `i` of `comp` cannot run here, or NULL when it can. */
static const char* Unsupported(const KILN_ComputationView* comp, size_t i) {
  const KILN_InstructionView* in = comp->instructions[i];
  const Op* op = OpOf(in->opcode);
  if (op == NULL) return "is not an f32 elementwise op this example supports";
  if (in->shape->element_type != KILN_DTYPE_F32) return "does not have an f32 array shape";
  if (op->arity == 0 && in->parameter_number < 0 && in->literal == NULL)
    return "is a constant without a value";
  if (in->num_operands != op->arity) return "has an unexpected operand count";
  for (size_t k = 0; k < in->num_operands; ++k) {
    if (!SameArray(comp->instructions[in->operands[k]]->shape, in->shape))
      return "broadcasts (operand shapes differ)";
  }
  return NULL;
}

/* The module, as the core gave it: refused when the core is older than ABI 1.6. */
static KILN_Error* EntryOf(const KILN_ModuleView* module, int has_field,
                           const KILN_ComputationView** entry) {
  if (!has_field || module == NULL)
    return Fail(KILN_ERROR_FAILED_PRECONDITION, "the core gave no walkable module (ABI 1.6)");
  *entry = module->computations[module->entry];
  return NULL;
}

/* ---- handles -------------------------------------------------------------------- */
struct KILN_Device {
  int32_t id;
};
struct KILN_Client {
  struct KILN_Device device;
  KILN_Device* devices[1];
};
#define MAX_DIMS 8
struct KILN_Buffer {
  KILN_DType dtype;
  int64_t dims[MAX_DIMS];
  size_t ndims;
  size_t byte_size;
  unsigned char* data;
};
typedef struct {
  const Op* op;
  size_t operands[2];
  int64_t parameter_number; /* parameters: which; otherwise -1 */
  float* constant;          /* constants: the elements; otherwise NULL */
} Step;
struct KILN_Executable {
  Step* steps; /* the entry's instructions, in the view's order (operands first) */
  size_t num_steps;
  size_t root;
  size_t num_parameters;
  size_t elements; /* of the one shape every instruction has */
  int64_t dims[MAX_DIMS];
  size_t ndims;
};

/* A buffer of `data` (which it frees when destroyed); NULL when `data` is or memory runs out. */
static KILN_Buffer* MakeBuffer(KILN_DType dtype, const int64_t* dims, size_t ndims, void* data,
                               size_t byte_size) {
  KILN_Buffer* b = data != NULL ? (KILN_Buffer*)calloc(1, sizeof(KILN_Buffer)) : NULL;
  if (b == NULL) return NULL;
  b->dtype = dtype;
  b->ndims = ndims;
  memcpy(b->dims, dims, sizeof(int64_t) * ndims);
  b->byte_size = byte_size;
  b->data = (unsigned char*)data;
  return b;
}

static void FreeExecutable(KILN_Executable* exe) {
  for (size_t i = 0; exe != NULL && i < exe->num_steps; ++i) free(exe->steps[i].constant);
  if (exe != NULL) free(exe->steps);
  free(exe);
}

static KILN_Error* Initialize(KILN_Initialize_Args* args) {
  CHECK_ARGS(args, KILN_Initialize_Args, unavailable_reason);
  args->available = 1;
  args->unavailable_reason = NULL;
  return NULL;
}

static KILN_Error* Attributes(KILN_Attributes_Args* args) {
  static const KILN_Attribute kAttrs[] = {{"version", "1.0"}, {"platform", "host"}};
  CHECK_ARGS(args, KILN_Attributes_Args, num_attributes);
  args->attributes = kAttrs;
  args->num_attributes = 2;
  return NULL;
}

static KILN_Error* ClientCreate(KILN_Client_Create_Args* args) {
  CHECK_ARGS(args, KILN_Client_Create_Args, client);
  KILN_Client* c = (KILN_Client*)calloc(1, sizeof(KILN_Client));
  if (c == NULL) return OutOfMemory();
  c->devices[0] = &c->device;
  args->client = c;
  return NULL;
}

static KILN_Error* ClientDestroy(KILN_Client_Destroy_Args* args) {
  CHECK_ARGS(args, KILN_Client_Destroy_Args, client);
  free(args->client);
  return NULL;
}

static KILN_Error* ClientDevices(KILN_Client_Devices_Args* args) {
  CHECK_ARGS(args, KILN_Client_Devices_Args, num_devices);
  args->devices = args->client->devices;
  args->num_devices = 1;
  return NULL;
}

static KILN_Error* DeviceDescription(KILN_Device_Description_Args* args) {
  CHECK_ARGS(args, KILN_Device_Description_Args, kind);
  args->id = args->device->id;
  args->kind = "example-host";
  return NULL;
}

static KILN_Error* Capability(KILN_Capability_Args* args) {
  CHECK_ARGS(args, KILN_Capability_Args, user_data);
  const KILN_ComputationView* entry = NULL;
  KILN_Error* e = EntryOf(args->module, KILN_ARGS_HAS(args, KILN_Capability_Args, module), &entry);
  if (e != NULL) return e;
  for (size_t i = 0; i < entry->num_instructions; ++i) {
    const char* why = Unsupported(entry, i);
    if (why == NULL) {
      args->report_supported(args->user_data, entry->instructions[i]->name);
    } else if (args->report_unsupported != NULL) {
      args->report_unsupported(args->user_data, entry->instructions[i]->name, why);
    }
  }
  return NULL;
}

static KILN_Error* Compile(KILN_Compile_Args* args) {
  CHECK_ARGS(args, KILN_Compile_Args, executable);
  const KILN_ComputationView* entry = NULL;
  KILN_Error* e = EntryOf(args->module, KILN_ARGS_HAS(args, KILN_Compile_Args, module), &entry);
  if (e != NULL) return e;
  const KILN_ShapeView* shape = entry->instructions[entry->root]->shape;
  for (size_t i = 0; i < entry->num_instructions; ++i) {
    const char* why = Unsupported(entry, i);
    if (why == NULL && !SameArray(entry->instructions[i]->shape, shape))
      why = "has another shape than the root";
    if (why == NULL && shape->num_dims > MAX_DIMS) why = "has too many dimensions";
    if (why != NULL)
      return Fail(KILN_ERROR_UNIMPLEMENTED, "'%s' %s", entry->instructions[i]->name, why);
  }
  KILN_Executable* exe = (KILN_Executable*)calloc(1, sizeof(KILN_Executable));
  Step* steps = (Step*)calloc(entry->num_instructions, sizeof(Step));
  if (exe == NULL || steps == NULL) {
    free(exe);
    free(steps);
    return OutOfMemory();
  }
  exe->steps = steps;
  exe->num_steps = entry->num_instructions;
  exe->root = entry->root;
  exe->num_parameters = entry->num_parameters;
  exe->ndims = shape->num_dims;
  exe->elements = 1;
  for (size_t d = 0; d < shape->num_dims; ++d) {
    exe->dims[d] = shape->dims[d];
    exe->elements *= (size_t)shape->dims[d];
  }
  for (size_t i = 0; i < entry->num_instructions; ++i) {
    const KILN_InstructionView* in = entry->instructions[i];
    Step* s = &exe->steps[i];
    s->op = OpOf(in->opcode);
    s->parameter_number = in->parameter_number;
    for (size_t k = 0; k < in->num_operands; ++k) s->operands[k] = in->operands[k];
    if (in->literal != NULL) { /* the view lives only during this call: copy the value */
      s->constant = (float*)malloc(in->literal_size + 1);
      if (s->constant == NULL) {
        FreeExecutable(exe);
        return OutOfMemory();
      }
      memcpy(s->constant, in->literal, in->literal_size);
    }
  }
  args->executable = exe;
  return NULL;
}

static KILN_Error* ExecutableInfo(KILN_Executable_Info_Args* args) {
  CHECK_ARGS(args, KILN_Executable_Info_Args, num_outputs);
  args->num_parameters = args->executable->num_parameters;
  args->num_outputs = 1;
  return NULL;
}

static KILN_Error* ExecutableDestroy(KILN_Executable_Destroy_Args* args) {
  CHECK_ARGS(args, KILN_Executable_Destroy_Args, executable);
  FreeExecutable(args->executable);
  return NULL;
}

static KILN_Error* Execute(KILN_Execute_Args* args) {
  CHECK_ARGS(args, KILN_Execute_Args, num_outputs);
  const KILN_Executable* p = args->executable;
  if (args->num_arguments != p->num_parameters || args->num_outputs != 1)
    return Fail(KILN_ERROR_INVALID_ARGUMENT, "wrong argument or output count");
  const size_t n = p->elements, bytes = n * sizeof(float);
  for (size_t i = 0; i < args->num_arguments; ++i) { /* checked first: nothing to undo */
    const KILN_Buffer* b = args->arguments[i];
    if (b == NULL || b->dtype != KILN_DTYPE_F32 || b->byte_size != bytes)
      return Fail(KILN_ERROR_INVALID_ARGUMENT, "argument %zu is not the expected f32 array", i);
  }
  float** values = (float**)calloc(p->num_steps, sizeof(float*));
  int ok = values != NULL;
  for (size_t i = 0; ok && i < p->num_steps; ++i) {
    const Step* s = &p->steps[i];
    values[i] = (float*)malloc(bytes + 1);
    if (values[i] == NULL) {
      ok = 0;
    } else if (s->parameter_number >= 0) {
      memcpy(values[i], args->arguments[s->parameter_number]->data, bytes);
    } else if (s->constant != NULL) {
      memcpy(values[i], s->constant, bytes);
    } else {
      const float* a = values[s->operands[0]];
      const float* b = s->op->arity == 2 ? values[s->operands[1]] : a;
      for (size_t k = 0; k < n; ++k) values[i][k] = s->op->apply(a[k], b[k]);
    }
  }
  KILN_Buffer* out =
      ok ? MakeBuffer(KILN_DTYPE_F32, p->dims, p->ndims, values[p->root], bytes) : NULL;
  if (out != NULL) values[p->root] = NULL; /* ownership moved to the buffer */
  args->outputs[0] = out;
  for (size_t i = 0; values != NULL && i < p->num_steps; ++i) free(values[i]);
  free(values);
  return out != NULL ? NULL : OutOfMemory();
}

static KILN_Error* BufferFromHost(KILN_Buffer_FromHost_Args* args) {
  CHECK_ARGS(args, KILN_Buffer_FromHost_Args, buffer);
  static const size_t kSizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};
  size_t item = args->dtype >= 0 && args->dtype <= KILN_DTYPE_C128 ? kSizes[args->dtype] : 0;
  if (item == 0 || args->num_dims > MAX_DIMS) /* later dtypes (f8, int4, ...) are refused */
    return Fail(KILN_ERROR_UNIMPLEMENTED, "unsupported dtype or rank");
  size_t n = 1;
  for (size_t d = 0; d < args->num_dims; ++d) n *= (size_t)args->dims[d];
  if (n * item != args->data_size)
    return Fail(KILN_ERROR_INVALID_ARGUMENT, "data_size does not match dims");
  void* data = malloc(args->data_size + 1);
  KILN_Buffer* b = MakeBuffer(args->dtype, args->dims, args->num_dims, data, args->data_size);
  if (b == NULL) {
    free(data);
    return OutOfMemory();
  }
  memcpy(data, args->data, args->data_size);
  args->buffer = b;
  /* ABI 1.2: the bytes were copied, so a caller that asked is told at once. */
  if (KILN_ARGS_HAS(args, KILN_Buffer_FromHost_Args, on_done_arg) && args->on_done != NULL)
    args->on_done(args->on_done_arg);
  return NULL;
}

static KILN_Error* BufferToHost(KILN_Buffer_ToHost_Args* args) {
  CHECK_ARGS(args, KILN_Buffer_ToHost_Args, dst_size);
  if (args->dst_size != args->buffer->byte_size)
    return Fail(KILN_ERROR_INVALID_ARGUMENT, "dst_size does not match the buffer");
  memcpy(args->dst, args->buffer->data, args->dst_size);
  return NULL;
}

static KILN_Error* BufferInfo(KILN_Buffer_Info_Args* args) {
  CHECK_ARGS(args, KILN_Buffer_Info_Args, byte_size);
  args->dtype = args->buffer->dtype;
  args->dims = args->buffer->dims;
  args->num_dims = args->buffer->ndims;
  args->byte_size = args->buffer->byte_size;
  return NULL;
}

static KILN_Error* BufferDestroy(KILN_Buffer_Destroy_Args* args) {
  CHECK_ARGS(args, KILN_Buffer_Destroy_Args, buffer);
  if (args->buffer != NULL) free(args->buffer->data);
  free(args->buffer);
  return NULL;
}

/* Designated initializers: entries left out (serialize, deserialize, 1.2's buffer_host_data)
 * are NULL, and entries a later ABI minor appends need no change here. */
static const KILN_Api kApi = {
    .struct_size = sizeof(KILN_Api),
    .api_major = KILN_API_MAJOR,
    .api_minor = 6, /* the rules it follows: it calls on_done (1.2), it reads the view (1.6) */
    .plugin_name = "elementwise-example",
    .default_priority = 300,
    .error_destroy = ErrorDestroy,
    .error_message = ErrorMessage,
    .error_code = ErrorCode,
    .initialize = Initialize,
    .attributes = Attributes,
    .client_create = ClientCreate,
    .client_destroy = ClientDestroy,
    .client_devices = ClientDevices,
    .device_description = DeviceDescription,
    .capability = Capability,
    .compile = Compile,
    .executable_info = ExecutableInfo,
    .executable_destroy = ExecutableDestroy,
    .execute = Execute,
    .buffer_from_host = BufferFromHost,
    .buffer_to_host = BufferToHost,
    .buffer_info = BufferInfo,
    .buffer_destroy = BufferDestroy,
};

const KILN_Api* KILN_GetApi(void) { return &kApi; }
