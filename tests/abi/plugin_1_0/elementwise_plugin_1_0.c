/* FROZEN: the third-party sample plugin as it was before it read the walkable module (ABI
 * 1.6), kept unchanged to be built from the frozen 1.0 header (tests/abi/api_1_0): a plugin
 * binary of an old minor that the current core must keep loading and driving. It parses the
 * HLO text itself, as plugins of ABI 1.0-1.5 had to. Do not modernize it.
 *
 * It is plain C against kiln_plugin_api.h ONLY: it runs modules whose entry computation is
 * made of f32 elementwise ops on arrays of one shape.
 *
 * Name "elementwise-example", default priority 300 (above the GPU plugin), so for modules
 * it fully supports `--device auto` picks it; for anything else the capability query
 * says no and the core falls back to the next plugin. It deliberately leaves the
 * optional serialize/deserialize entries NULL.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_plugin_api.h"

/* ---- errors --------------------------------------------------------------------- */
struct KILN_Error {
  KILN_ErrorCode code;
  char message[512];
};

static KILN_Error* Fail(KILN_ErrorCode code, const char* fmt, const char* a, const char* b) {
  KILN_Error* e = (KILN_Error*)malloc(sizeof(KILN_Error));
  if (e == NULL) return NULL; /* nothing better to do without memory */
  e->code = code;
  snprintf(e->message, sizeof(e->message), fmt, a ? a : "", b ? b : "");
  return e;
}
static void ErrorDestroy(KILN_Error* e) { free(e); }
static const char* ErrorMessage(const KILN_Error* e) { return e->message; }
static KILN_ErrorCode ErrorCode(const KILN_Error* e) { return e->code; }

#define CHECK_ARGS(args, type, last)                                        \
  if ((args) == NULL || (args)->struct_size < KILN_STRUCT_SIZE(type, last)) \
  return Fail(KILN_ERROR_INVALID_ARGUMENT, "%s%s: args struct too small", #type, "")

/* ---- a tiny reader for the entry computation of HLO text ------------------------ */
enum Op {
  OP_PARAMETER,
  OP_ADD,
  OP_SUBTRACT,
  OP_MULTIPLY,
  OP_DIVIDE,
  OP_MAXIMUM,
  OP_MINIMUM,
  OP_NEGATE,
  OP_ABS,
  OP_EXP,
  OP_TANH,
  OP_SQRT,
  OP_UNSUPPORTED
};
static const char* const kOpNames[] = {"parameter", "add",         "subtract", "multiply",
                                       "divide",    "maximum",     "minimum",  "negate",
                                       "abs",       "exponential", "tanh",     "sqrt"};

#define MAX_NAME 128
#define MAX_DIMS 8
#define MAX_OPERANDS 2

typedef struct {
  char name[MAX_NAME];
  char opcode[MAX_NAME];
  enum Op op;
  int is_f32_array; /* shape is f32[...] (not a tuple, not another type) */
  int64_t dims[MAX_DIMS];
  int ndims;
  int num_operands;
  int operands[MAX_OPERANDS]; /* indices of earlier instructions */
  int param_number;
  int is_root;
  const char* unsupported; /* why this instruction cannot run here; NULL if it can */
} Instr;

typedef struct {
  Instr* instrs;
  int count;
  int root;
  int num_params;
} Program;

static void FreeProgram(Program* p) {
  free(p->instrs);
  p->instrs = NULL;
  p->count = 0;
}

static const char* SkipSpace(const char* s, const char* end) {
  while (s < end && (*s == ' ' || *s == '\t' || *s == '\r')) ++s;
  return s;
}

/* Parses `f32[2,3]{1,0}` at *s; sets is_f32_array and dims. Returns the position after. */
static const char* ParseShape(const char* s, const char* end, Instr* in) {
  in->is_f32_array = 0;
  in->ndims = 0;
  if (s < end && *s == '(') { /* tuple: skip to the matching ')' */
    int depth = 0;
    for (; s < end; ++s) {
      if (*s == '(') ++depth;
      if (*s == ')' && --depth == 0) return s + 1;
    }
    return s;
  }
  const char* type = s;
  while (s < end && isalnum((unsigned char)*s)) ++s;
  int is_f32 = (s - type == 3 && strncmp(type, "f32", 3) == 0);
  if (s >= end || *s != '[') return s;
  ++s;
  int ok = 1;
  while (s < end && *s != ']') {
    if (isdigit((unsigned char)*s)) {
      if (in->ndims == MAX_DIMS) ok = 0;
      int64_t v = 0;
      while (s < end && isdigit((unsigned char)*s)) v = v * 10 + (*s++ - '0');
      if (in->ndims < MAX_DIMS) in->dims[in->ndims++] = v;
    } else if (*s == ',') {
      ++s;
    } else {
      ok = 0; /* dynamic dimensions `<=` etc.: not ours */
      ++s;
    }
  }
  if (s < end) ++s; /* ']' */
  if (s < end && *s == '{') {
    while (s < end && *s != '}') ++s;
    if (s < end) ++s;
  }
  in->is_f32_array = is_f32 && ok;
  return s;
}

static int FindInstr(const Program* p, const char* name, size_t len) {
  for (int i = 0; i < p->count; ++i) {
    if (strlen(p->instrs[i].name) == len && strncmp(p->instrs[i].name, name, len) == 0) return i;
  }
  return -1;
}

/* One instruction line: `[ROOT] [%]name = shape opcode(operands), attrs...`. */
static int ParseLine(Program* p, const char* s, const char* end) {
  Instr in;
  memset(&in, 0, sizeof(in));
  in.param_number = -1;
  s = SkipSpace(s, end);
  if (end - s > 5 && strncmp(s, "ROOT ", 5) == 0) {
    in.is_root = 1;
    s = SkipSpace(s + 5, end);
  }
  if (s < end && *s == '%') ++s;
  const char* name = s;
  while (s < end && *s != ' ' && *s != '=') ++s;
  size_t name_len = (size_t)(s - name);
  if (name_len == 0 || name_len >= MAX_NAME) return 0;
  memcpy(in.name, name, name_len);
  s = SkipSpace(s, end);
  if (s >= end || *s != '=') return 0;
  s = SkipSpace(s + 1, end);
  s = ParseShape(s, end, &in);
  s = SkipSpace(s, end);
  const char* opcode = s;
  while (s < end && *s != '(' && *s != ' ') ++s;
  size_t op_len = (size_t)(s - opcode);
  if (op_len == 0 || op_len >= MAX_NAME || s >= end || *s != '(') return 0;
  memcpy(in.opcode, opcode, op_len);
  in.op = OP_UNSUPPORTED;
  for (int k = 0; k < OP_UNSUPPORTED; ++k) {
    if (strcmp(in.opcode, kOpNames[k]) == 0) in.op = (enum Op)k;
  }
  /* Operands: split the (...) on top-level commas; each is `[shape] %name` or a number. */
  ++s;
  int depth = 0;
  const char* item = s;
  for (; s < end; ++s) {
    char c = *s;
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
      continue;
    }
    if ((c == ',' && depth == 0) || (c == ')' && depth == 0)) {
      const char* a = item;
      const char* b = s;
      while (b > a && isspace((unsigned char)b[-1])) --b;
      const char* t = b;
      while (t > a && !isspace((unsigned char)t[-1])) --t;
      if (t < b) {
        if (*t == '%') ++t;
        if (in.op == OP_PARAMETER) {
          in.param_number = atoi(t);
        } else if (in.num_operands < MAX_OPERANDS) {
          int idx = FindInstr(p, t, (size_t)(b - t));
          if (idx < 0) in.unsupported = "uses an operand defined later or elsewhere";
          in.operands[in.num_operands] = idx;
        }
        if (in.op != OP_PARAMETER) ++in.num_operands;
      }
      item = s + 1;
      if (c == ')') break;
    }
  }
  if (in.op == OP_PARAMETER && in.param_number < 0) {
    in.unsupported = "has no valid parameter number";
  } else if (in.op == OP_UNSUPPORTED) {
    in.unsupported = "is not an f32 elementwise op this example supports";
  } else if (!in.is_f32_array) {
    in.unsupported = "does not have an f32 array shape";
  } else if (in.op != OP_PARAMETER) {
    int arity = in.op <= OP_MINIMUM ? 2 : 1;
    if (in.num_operands != arity) in.unsupported = "has an unexpected operand count";
  }
  for (int k = 0; !in.unsupported && in.op != OP_PARAMETER && k < in.num_operands; ++k) {
    const Instr* o = &p->instrs[in.operands[k]];
    if (o->ndims != in.ndims || memcmp(o->dims, in.dims, sizeof(int64_t) * in.ndims) != 0) {
      in.unsupported = "broadcasts (operand shapes differ)";
    }
  }
  Instr* grown = (Instr*)realloc(p->instrs, sizeof(Instr) * (size_t)(p->count + 1));
  if (grown == NULL) return -1;
  p->instrs = grown;
  p->instrs[p->count] = in;
  if (in.is_root) p->root = p->count;
  if (in.op == OP_PARAMETER && in.param_number + 1 > p->num_params)
    p->num_params = in.param_number + 1;
  p->count++;
  return 1;
}

/* Reads the ENTRY computation. Returns NULL or an error. */
static KILN_Error* ParseProgram(const char* text, size_t size, Program* p) {
  memset(p, 0, sizeof(*p));
  p->root = -1;
  if (text == NULL) return Fail(KILN_ERROR_INVALID_ARGUMENT, "hlo_text is null%s%s", NULL, NULL);
  const char* end = text + size;
  const char* line = text;
  int in_entry = 0, closed = 0;
  while (line < end) {
    const char* eol = memchr(line, '\n', (size_t)(end - line));
    if (eol == NULL) eol = end;
    const char* s = SkipSpace(line, eol);
    if (!in_entry) {
      if (eol - s >= 6 && strncmp(s, "ENTRY ", 6) == 0) in_entry = 1;
    } else if (s < eol && *s == '}') {
      closed = 1;
      break;
    } else if (s < eol) {
      if (ParseLine(p, s, eol) < 0) {
        FreeProgram(p);
        return Fail(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory%s%s", NULL, NULL);
      }
    }
    line = eol + 1;
  }
  if (!in_entry || p->count == 0) {
    FreeProgram(p);
    return Fail(KILN_ERROR_INVALID_ARGUMENT, "no ENTRY computation found%s%s", NULL, NULL);
  }
  if (!closed) { /* cut short: what was read may look like a whole program */
    FreeProgram(p);
    return Fail(KILN_ERROR_INVALID_ARGUMENT, "ENTRY computation has no closing '}'%s%s", NULL,
                NULL);
  }
  if (p->root < 0) p->root = p->count - 1;
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
struct KILN_Buffer {
  KILN_DType dtype;
  int64_t dims[MAX_DIMS];
  size_t ndims;
  size_t byte_size;
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
    default: /* dtypes added after this plugin was written (f8, int4, ...): refused */
      return 0;
  }
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
  if (c == NULL) return Fail(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory%s%s", NULL, NULL);
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
  Program p;
  KILN_Error* e = ParseProgram(args->hlo_text, args->hlo_text_size, &p);
  if (e != NULL) return e;
  for (int i = 0; i < p.count; ++i) {
    const Instr* in = &p.instrs[i];
    const char* why = in->unsupported;
    if (why == NULL) {
      args->report_supported(args->user_data, in->name);
    } else if (args->report_unsupported != NULL) {
      args->report_unsupported(args->user_data, in->name, why);
    }
  }
  FreeProgram(&p);
  return NULL;
}

static KILN_Error* Compile(KILN_Compile_Args* args) {
  CHECK_ARGS(args, KILN_Compile_Args, executable);
  KILN_Executable* exe = (KILN_Executable*)calloc(1, sizeof(KILN_Executable));
  if (exe == NULL) return Fail(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory%s%s", NULL, NULL);
  KILN_Error* e = ParseProgram(args->hlo_text, args->hlo_text_size, &exe->program);
  if (e != NULL) {
    free(exe);
    return e;
  }
  for (int i = 0; i < exe->program.count; ++i) {
    const Instr* in = &exe->program.instrs[i];
    if (in->unsupported != NULL) {
      KILN_Error* err =
          Fail(KILN_ERROR_UNIMPLEMENTED, "instruction '%s' %s", in->name, in->unsupported);
      FreeProgram(&exe->program);
      free(exe);
      return err;
    }
  }
  args->executable = exe;
  return NULL;
}

static KILN_Error* ExecutableInfo(KILN_Executable_Info_Args* args) {
  CHECK_ARGS(args, KILN_Executable_Info_Args, num_outputs);
  args->num_parameters = (size_t)args->executable->program.num_params;
  args->num_outputs = 1;
  return NULL;
}

static KILN_Error* ExecutableDestroy(KILN_Executable_Destroy_Args* args) {
  CHECK_ARGS(args, KILN_Executable_Destroy_Args, executable);
  if (args->executable != NULL) FreeProgram(&args->executable->program);
  free(args->executable);
  return NULL;
}

static float Apply(enum Op op, float a, float b) {
  switch (op) {
    case OP_ADD:
      return a + b;
    case OP_SUBTRACT:
      return a - b;
    case OP_MULTIPLY:
      return a * b;
    case OP_DIVIDE:
      return a / b;
    case OP_MAXIMUM:
      return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b);
    case OP_MINIMUM:
      return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b);
    case OP_NEGATE:
      return -a;
    case OP_ABS:
      return fabsf(a);
    case OP_EXP:
      return expf(a);
    case OP_TANH:
      return tanhf(a);
    case OP_SQRT:
      return sqrtf(a);
    default:
      return 0;
  }
}

static size_t Elements(const Instr* in) {
  size_t n = 1;
  for (int d = 0; d < in->ndims; ++d) n *= (size_t)in->dims[d];
  return n;
}

static KILN_Error* Execute(KILN_Execute_Args* args) {
  CHECK_ARGS(args, KILN_Execute_Args, num_outputs);
  const Program* p = &args->executable->program;
  if (args->num_arguments != (size_t)p->num_params || args->num_outputs != 1) {
    return Fail(KILN_ERROR_INVALID_ARGUMENT, "wrong argument or output count%s%s", NULL, NULL);
  }
  float** values = (float**)calloc((size_t)p->count, sizeof(float*));
  if (values == NULL) return Fail(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory%s%s", NULL, NULL);
  KILN_Error* err = NULL;
  for (int i = 0; i < p->count && err == NULL; ++i) {
    const Instr* in = &p->instrs[i];
    size_t n = Elements(in);
    values[i] = (float*)malloc(n * sizeof(float) + 1);
    if (values[i] == NULL) {
      err = Fail(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory%s%s", NULL, NULL);
      break;
    }
    if (in->op == OP_PARAMETER) {
      const KILN_Buffer* b = args->arguments[in->param_number];
      if (b == NULL || b->dtype != KILN_DTYPE_F32 || b->byte_size != n * sizeof(float)) {
        err = Fail(KILN_ERROR_INVALID_ARGUMENT,
                   "argument for '%s' is not the f32 array it expects%s", in->name, NULL);
        break;
      }
      memcpy(values[i], b->data, n * sizeof(float));
      continue;
    }
    const float* a = values[in->operands[0]];
    const float* b = in->num_operands > 1 ? values[in->operands[1]] : a;
    for (size_t k = 0; k < n; ++k) values[i][k] = Apply(in->op, a[k], b[k]);
  }
  if (err == NULL) {
    const Instr* root = &p->instrs[p->root];
    KILN_Buffer* out = (KILN_Buffer*)calloc(1, sizeof(KILN_Buffer));
    if (out == NULL) {
      err = Fail(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory%s%s", NULL, NULL);
    } else {
      out->dtype = KILN_DTYPE_F32;
      out->ndims = (size_t)root->ndims;
      memcpy(out->dims, root->dims, sizeof(int64_t) * (size_t)root->ndims);
      out->byte_size = Elements(root) * sizeof(float);
      out->data = (unsigned char*)values[p->root];
      values[p->root] = NULL; /* ownership moves to the buffer */
      args->outputs[0] = out;
    }
  }
  for (int i = 0; i < p->count; ++i) free(values[i]);
  free(values);
  return err;
}

static KILN_Error* BufferFromHost(KILN_Buffer_FromHost_Args* args) {
  CHECK_ARGS(args, KILN_Buffer_FromHost_Args, buffer);
  size_t item = DTypeSize(args->dtype);
  if (item == 0 || args->num_dims > MAX_DIMS) {
    return Fail(KILN_ERROR_UNIMPLEMENTED, "unsupported dtype or rank%s%s", NULL, NULL);
  }
  size_t n = 1;
  for (size_t d = 0; d < args->num_dims; ++d) n *= (size_t)args->dims[d];
  if (n * item != args->data_size) {
    return Fail(KILN_ERROR_INVALID_ARGUMENT, "data_size does not match dims%s%s", NULL, NULL);
  }
  KILN_Buffer* b = (KILN_Buffer*)calloc(1, sizeof(KILN_Buffer));
  unsigned char* data = (unsigned char*)malloc(args->data_size + 1);
  if (b == NULL || data == NULL) {
    free(b);
    free(data);
    return Fail(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory%s%s", NULL, NULL);
  }
  memcpy(data, args->data, args->data_size);
  b->dtype = args->dtype;
  b->ndims = args->num_dims;
  memcpy(b->dims, args->dims, sizeof(int64_t) * args->num_dims);
  b->byte_size = args->data_size;
  b->data = data;
  args->buffer = b;
#if KILN_API_MINOR >= 2 /* built from a header older than 1.2 (tests/abi): no on_done */
  /* ABI 1.2: the bytes were copied, so a caller that asked is told at once. */
  if (KILN_ARGS_HAS(args, KILN_Buffer_FromHost_Args, on_done_arg) && args->on_done != NULL)
    args->on_done(args->on_done_arg);
#endif
  return NULL;
}

static KILN_Error* BufferToHost(KILN_Buffer_ToHost_Args* args) {
  CHECK_ARGS(args, KILN_Buffer_ToHost_Args, dst_size);
  if (args->dst_size != args->buffer->byte_size) {
    return Fail(KILN_ERROR_INVALID_ARGUMENT, "dst_size does not match the buffer%s%s", NULL, NULL);
  }
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
    /* the rules it follows: 1.2 (it calls on_done); built from an older header, that one's */
    .api_minor = KILN_API_MINOR >= 2 ? 2 : KILN_API_MINOR,
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
