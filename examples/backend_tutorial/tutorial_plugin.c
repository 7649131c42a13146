/* The plugin of docs/writing-a-backend.md: a small Kiln backend in C99 that includes only
 * <kiln/kiln_plugin_api.h> from the installed SDK (pkg-config kiln-plugin-api).
 *
 * It runs f32 add, subtract, multiply, divide, maximum, negate and tanh on arrays of one
 * shape, and says so through the capability query: for any other instruction it declines,
 * so the core hands that part of a module to another plugin. Buffers live in host memory.
 *
 * Build:  cc -std=c99 -O2 -shared -fPIC -fvisibility=hidden \
 *           $(pkg-config --cflags kiln-plugin-api) tutorial_plugin.c \
 *           -o libkiln_plugin_tutorial.so -lm
 */
#include <kiln/kiln_plugin_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- 1. Errors: the plugin's own object, destroyed by the core ------------------------ */
struct KILN_Error {
  KILN_ErrorCode code;
  char message[256];
};

static KILN_Error* Err(KILN_ErrorCode code, const char* message, const char* detail) {
  KILN_Error* e = (KILN_Error*)malloc(sizeof(KILN_Error));
  if (e == NULL) return NULL; /* out of memory: nothing better to return */
  e->code = code;
  snprintf(e->message, sizeof(e->message), "%s%s%s", message, detail ? ": " : "",
           detail ? detail : "");
  return e;
}
static void ErrorDestroy(KILN_Error* e) { free(e); }
static const char* ErrorMessage(const KILN_Error* e) { return e->message; }
static KILN_ErrorCode ErrorCode(const KILN_Error* e) { return e->code; }

/* Every entry first checks that the caller's struct reaches the last field it reads. */
#define REQUIRE_ARGS(args, type, last_field)                                        \
  do {                                                                              \
    if ((args) == NULL || (args)->struct_size < KILN_STRUCT_SIZE(type, last_field)) \
      return Err(KILN_ERROR_INVALID_ARGUMENT, #type " is too small", NULL);         \
  } while (0)

/* ---- 2. Reading the module: ABI 1.6's walkable module, no parser needed ------------- */
enum Op {
  OP_PARAMETER,
  OP_ADD,
  OP_SUBTRACT,
  OP_MULTIPLY,
  OP_DIVIDE,
  OP_MAXIMUM,
  OP_NEGATE,
  OP_TANH,
  OP_OTHER
};
static const char* const kOpNames[] = {"parameter", "add",     "subtract", "multiply",
                                       "divide",    "maximum", "negate",   "tanh"};

#define MAX_RANK 8
typedef struct {
  const char* name; /* the view's: valid only during the capability or compile call */
  enum Op op;
  int64_t dims[MAX_RANK];
  int rank;
  int is_f32;
  int operands[2]; /* indices of earlier instructions */
  int num_operands;
  int parameter;       /* parameter(N) */
  const char* why_not; /* NULL when this plugin can run the instruction */
} Instr;

typedef struct {
  Instr* instrs;
  int count, root, num_parameters;
} Program;

/* What this plugin makes of one instruction of the entry computation. */
static void ReadInstr(const Program* p, const KILN_InstructionView* v, Instr* in) {
  const KILN_ShapeView* shape = v->shape;
  in->name = v->name;
  in->op = OP_OTHER;
  for (int k = 0; k < OP_OTHER; ++k)
    if (strcmp(v->opcode, kOpNames[k]) == 0) in->op = (enum Op)k;
  in->is_f32 = shape->element_type == KILN_DTYPE_F32 && shape->num_dims <= MAX_RANK;
  in->rank = in->is_f32 ? (int)shape->num_dims : 0;
  for (int d = 0; d < in->rank; ++d) in->dims[d] = shape->dims[d];
  in->parameter = (int)v->parameter_number;
  in->num_operands = v->num_operands > 2 ? 3 : (int)v->num_operands; /* 3: too many */
  for (int k = 0; k < in->num_operands && k < 2; ++k) in->operands[k] = (int)v->operands[k];
  int arity = in->op == OP_NEGATE || in->op == OP_TANH ? 1 : 2;
  if (in->op == OP_OTHER) {
    in->why_not = "not an op of the tutorial backend";
  } else if (!in->is_f32) {
    in->why_not = "the tutorial backend runs only f32 arrays";
  } else if (in->op != OP_PARAMETER && in->num_operands != arity) {
    in->why_not = "unexpected operand count";
  }
  for (int k = 0; in->why_not == NULL && in->op != OP_PARAMETER && k < in->num_operands; ++k) {
    const Instr* o = &p->instrs[in->operands[k]];
    if (o->rank != in->rank || memcmp(o->dims, in->dims, sizeof(int64_t) * in->rank) != 0)
      in->why_not = "operand shapes differ (broadcasting is not supported)";
  }
}

static void FreeProgram(Program* p) {
  free(p->instrs);
  p->instrs = NULL;
  p->count = 0;
}

/* The entry computation of the module the core passed, instructions in the view's order:
 * each comes after its operands, so one pass in order computes them all. */
static KILN_Error* ReadProgram(const KILN_ModuleView* module, Program* p) {
  memset(p, 0, sizeof(*p));
  if (module == NULL) /* a core older than ABI 1.6 */
    return Err(KILN_ERROR_FAILED_PRECONDITION, "the core passed no walkable module", NULL);
  const KILN_ComputationView* entry = module->computations[module->entry];
  p->instrs = (Instr*)calloc(entry->num_instructions + 1, sizeof(Instr));
  if (p->instrs == NULL) return Err(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory", NULL);
  p->count = (int)entry->num_instructions;
  p->root = (int)entry->root;
  p->num_parameters = (int)entry->num_parameters;
  for (int i = 0; i < p->count; ++i) ReadInstr(p, entry->instructions[i], &p->instrs[i]);
  return NULL;
}

/* ---- 3. Handles: one client with one device; buffers in host memory ------------------ */
struct KILN_Device {
  int32_t id;
};
struct KILN_Client {
  KILN_Device device;
  KILN_Device* devices[1];
};
struct KILN_Buffer {
  KILN_DType dtype;
  int64_t dims[MAX_RANK];
  size_t rank, byte_size;
  unsigned char* data;
};
struct KILN_Executable {
  Program program;
};

static size_t DTypeSize(KILN_DType t) {
  switch (t) {
    case KILN_DTYPE_PRED:
    case KILN_DTYPE_S8:
    case KILN_DTYPE_U8:
      return 1;
    case KILN_DTYPE_S16:
    case KILN_DTYPE_U16:
    case KILN_DTYPE_F16:
    case KILN_DTYPE_BF16:
      return 2;
    case KILN_DTYPE_S32:
    case KILN_DTYPE_U32:
    case KILN_DTYPE_F32:
      return 4;
    case KILN_DTYPE_S64:
    case KILN_DTYPE_U64:
    case KILN_DTYPE_F64:
    case KILN_DTYPE_C64:
      return 8;
    case KILN_DTYPE_C128:
      return 16;
    default: /* dtypes this plugin does not know (ABI minors append more) */
      return 0;
  }
}

static KILN_Error* Initialize(KILN_Initialize_Args* args) {
  REQUIRE_ARGS(args, KILN_Initialize_Args, unavailable_reason);
  args->available = 1; /* a GPU plugin would look for its device here */
  args->unavailable_reason = NULL;
  return NULL;
}

static KILN_Error* ClientCreate(KILN_Client_Create_Args* args) {
  REQUIRE_ARGS(args, KILN_Client_Create_Args, client);
  KILN_Client* c = (KILN_Client*)calloc(1, sizeof(KILN_Client));
  if (c == NULL) return Err(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory", NULL);
  c->devices[0] = &c->device;
  args->client = c;
  return NULL;
}

static KILN_Error* ClientDestroy(KILN_Client_Destroy_Args* args) {
  REQUIRE_ARGS(args, KILN_Client_Destroy_Args, client);
  free(args->client);
  return NULL;
}

static KILN_Error* ClientDevices(KILN_Client_Devices_Args* args) {
  REQUIRE_ARGS(args, KILN_Client_Devices_Args, num_devices);
  args->devices = args->client->devices;
  args->num_devices = 1;
  return NULL;
}

static KILN_Error* DeviceDescription(KILN_Device_Description_Args* args) {
  REQUIRE_ARGS(args, KILN_Device_Description_Args, kind);
  args->id = args->device->id;
  args->kind = "tutorial-host";
  return NULL;
}

/* ---- 4. Capability: which entry instructions this plugin runs ------------------------ */
static KILN_Error* Capability(KILN_Capability_Args* args) {
  REQUIRE_ARGS(args, KILN_Capability_Args, user_data);
  Program p;
  const int has_module = KILN_ARGS_HAS(args, KILN_Capability_Args, module);
  KILN_Error* e = ReadProgram(has_module ? args->module : NULL, &p);
  if (e != NULL) return e;
  for (int i = 0; i < p.count; ++i) {
    if (p.instrs[i].why_not == NULL) {
      args->report_supported(args->user_data, p.instrs[i].name);
    } else if (args->report_unsupported != NULL) {
      args->report_unsupported(args->user_data, p.instrs[i].name, p.instrs[i].why_not);
    }
  }
  FreeProgram(&p);
  return NULL;
}

/* ---- 5. Compile and execute ---------------------------------------------------------- */
static KILN_Error* Compile(KILN_Compile_Args* args) {
  REQUIRE_ARGS(args, KILN_Compile_Args, executable);
  KILN_Executable* exe = (KILN_Executable*)calloc(1, sizeof(KILN_Executable));
  if (exe == NULL) return Err(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory", NULL);
  const int has_module = KILN_ARGS_HAS(args, KILN_Compile_Args, module);
  KILN_Error* e = ReadProgram(has_module ? args->module : NULL, &exe->program);
  for (int i = 0; e == NULL && i < exe->program.count; ++i) {
    if (exe->program.instrs[i].why_not != NULL)
      e = Err(KILN_ERROR_UNIMPLEMENTED, exe->program.instrs[i].why_not,
              exe->program.instrs[i].name);
  }
  if (e != NULL) {
    FreeProgram(&exe->program);
    free(exe);
    return e;
  }
  args->executable = exe;
  return NULL;
}

static KILN_Error* ExecutableInfo(KILN_Executable_Info_Args* args) {
  REQUIRE_ARGS(args, KILN_Executable_Info_Args, num_outputs);
  args->num_parameters = (size_t)args->executable->program.num_parameters;
  args->num_outputs = 1; /* the root is one array */
  return NULL;
}

static KILN_Error* ExecutableDestroy(KILN_Executable_Destroy_Args* args) {
  REQUIRE_ARGS(args, KILN_Executable_Destroy_Args, executable);
  if (args->executable != NULL) FreeProgram(&args->executable->program);
  free(args->executable);
  return NULL;
}

static size_t Elements(const int64_t* dims, size_t rank) {
  size_t n = 1;
  for (size_t d = 0; d < rank; ++d) n *= (size_t)dims[d];
  return n;
}

static KILN_Error* Execute(KILN_Execute_Args* args) {
  REQUIRE_ARGS(args, KILN_Execute_Args, num_outputs);
  const Program* p = &args->executable->program;
  if (args->num_arguments != (size_t)p->num_parameters || args->num_outputs != 1)
    return Err(KILN_ERROR_INVALID_ARGUMENT, "wrong number of arguments or outputs", NULL);
  /* One array per instruction; the root's becomes the output buffer. */
  float** values = (float**)calloc((size_t)p->count, sizeof(float*));
  KILN_Buffer* out = (KILN_Buffer*)calloc(1, sizeof(KILN_Buffer));
  KILN_Error* e = values == NULL || out == NULL
                      ? Err(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory", NULL)
                      : NULL;
  for (int i = 0; e == NULL && i < p->count; ++i) {
    const Instr* in = &p->instrs[i];
    size_t n = Elements(in->dims, (size_t)in->rank);
    values[i] = (float*)malloc(n * sizeof(float) + 1);
    if (values[i] == NULL) {
      e = Err(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory", NULL);
      break;
    }
    const float* a = in->num_operands > 0 ? values[in->operands[0]] : NULL;
    const float* b = in->num_operands > 1 ? values[in->operands[1]] : NULL;
    if (in->op == OP_PARAMETER) {
      const KILN_Buffer* arg = args->arguments[in->parameter];
      if (arg == NULL || arg->dtype != KILN_DTYPE_F32 || arg->byte_size != n * sizeof(float)) {
        e = Err(KILN_ERROR_INVALID_ARGUMENT, "an argument is not the f32 array expected", NULL);
        break;
      }
      memcpy(values[i], arg->data, n * sizeof(float));
    }
    for (size_t k = 0; k < n && in->op != OP_PARAMETER; ++k) {
      switch (in->op) {
        case OP_ADD:
          values[i][k] = a[k] + b[k];
          break;
        case OP_SUBTRACT:
          values[i][k] = a[k] - b[k];
          break;
        case OP_MULTIPLY:
          values[i][k] = a[k] * b[k];
          break;
        case OP_DIVIDE:
          values[i][k] = a[k] / b[k];
          break;
        case OP_MAXIMUM: /* HLO's maximum propagates NaN */
          values[i][k] = isnan(a[k]) || isnan(b[k]) ? NAN : a[k] > b[k] ? a[k] : b[k];
          break;
        case OP_NEGATE:
          values[i][k] = -a[k];
          break;
        default: /* OP_TANH; the capability let nothing else through */
          values[i][k] = tanhf(a[k]);
          break;
      }
    }
  }
  if (e == NULL) {
    const Instr* root = &p->instrs[p->root];
    out->dtype = KILN_DTYPE_F32;
    out->rank = (size_t)root->rank;
    memcpy(out->dims, root->dims, sizeof(int64_t) * (size_t)root->rank);
    out->byte_size = Elements(root->dims, out->rank) * sizeof(float);
    out->data = (unsigned char*)values[p->root];
    values[p->root] = NULL; /* now the buffer's */
    args->outputs[0] = out;
    out = NULL;
  }
  for (int i = 0; values != NULL && i < p->count; ++i) free(values[i]);
  free(values);
  free(out);
  return e;
}

/* ---- 6. Buffers ---------------------------------------------------------------------- */
static KILN_Error* BufferFromHost(KILN_Buffer_FromHost_Args* args) {
  REQUIRE_ARGS(args, KILN_Buffer_FromHost_Args, buffer);
  size_t item = DTypeSize(args->dtype), n = 1;
  if (item == 0) return Err(KILN_ERROR_UNIMPLEMENTED, "unknown dtype", NULL);
  if (args->num_dims > MAX_RANK) return Err(KILN_ERROR_UNIMPLEMENTED, "rank too high", NULL);
  for (size_t d = 0; d < args->num_dims; ++d) {
    if (args->dims[d] < 0) return Err(KILN_ERROR_INVALID_ARGUMENT, "negative dimension", NULL);
    n *= (size_t)args->dims[d];
  }
  if (n * item != args->data_size)
    return Err(KILN_ERROR_INVALID_ARGUMENT, "data_size does not match dtype and dims", NULL);
  KILN_Buffer* b = (KILN_Buffer*)calloc(1, sizeof(KILN_Buffer));
  unsigned char* data = (unsigned char*)malloc(args->data_size + 1); /* +1: never malloc(0) */
  if (b == NULL || data == NULL) {
    free(b);
    free(data);
    return Err(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory", NULL);
  }
  if (args->data_size > 0) memcpy(data, args->data, args->data_size);
  b->dtype = args->dtype;
  b->rank = args->num_dims;
  if (args->num_dims > 0) memcpy(b->dims, args->dims, sizeof(int64_t) * args->num_dims);
  b->byte_size = args->data_size;
  b->data = data;
  args->buffer = b;
  /* ABI 1.2: a caller that set on_done learns here that `data` is no longer read (copied). */
  if (KILN_ARGS_HAS(args, KILN_Buffer_FromHost_Args, on_done_arg) && args->on_done != NULL)
    args->on_done(args->on_done_arg);
  return NULL;
}

static KILN_Error* BufferToHost(KILN_Buffer_ToHost_Args* args) {
  REQUIRE_ARGS(args, KILN_Buffer_ToHost_Args, dst_size);
  if (args->dst_size != args->buffer->byte_size)
    return Err(KILN_ERROR_INVALID_ARGUMENT, "dst_size is not the buffer's size", NULL);
  if (args->dst_size > 0) memcpy(args->dst, args->buffer->data, args->dst_size);
  return NULL;
}

static KILN_Error* BufferInfo(KILN_Buffer_Info_Args* args) {
  REQUIRE_ARGS(args, KILN_Buffer_Info_Args, byte_size);
  args->dtype = args->buffer->dtype;
  args->dims = args->buffer->dims;
  args->num_dims = args->buffer->rank;
  args->byte_size = args->buffer->byte_size;
  return NULL;
}

static KILN_Error* BufferDestroy(KILN_Buffer_Destroy_Args* args) {
  REQUIRE_ARGS(args, KILN_Buffer_Destroy_Args, buffer);
  if (args->buffer != NULL) free(args->buffer->data);
  free(args->buffer);
  return NULL;
}

/* ---- 7. The table: designated initializers, so entries added by later minors are NULL --- */
static const KILN_Api kApi = {
    .struct_size = sizeof(KILN_Api),
    .api_major = KILN_API_MAJOR,
    .api_minor = 6, /* the minor whose rules it follows (1.6: the view), not KILN_API_MINOR */
    .plugin_name = "tutorial",
    .default_priority = KILN_PRIORITY_CPU + 50,
    .error_destroy = ErrorDestroy,
    .error_message = ErrorMessage,
    .error_code = ErrorCode,
    .initialize = Initialize,
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

KILN_PLUGIN_EXPORT const KILN_Api* KILN_GetApi(void) { return &kApi; }
