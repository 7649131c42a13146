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
#include <ctype.h>
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

/* ---- 2. A minimal reader for the ENTRY computation of HLO text ----------------------- */
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
  char name[64];
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

/* Reads `f32[2,3]{1,0}` (the layout is skipped); returns the position after it. */
static const char* ReadShape(const char* s, const char* end, Instr* in) {
  in->is_f32 = end - s >= 4 && strncmp(s, "f32[", 4) == 0;
  if (s < end && *s == '(') { /* a tuple: skip to its closing parenthesis */
    for (int depth = 0; s < end; ++s) {
      if (*s == '(') ++depth;
      if (*s == ')' && --depth == 0) return s + 1;
    }
    return s;
  }
  while (s < end && *s != '[' && *s != ' ' && *s != '(') ++s;
  if (s == end || *s != '[') {
    in->is_f32 = 0; /* a tuple or a token */
    return s;
  }
  for (++s; s < end && *s != ']'; ++s) {
    if (isdigit((unsigned char)*s) && in->rank < MAX_RANK) {
      in->dims[in->rank++] = strtoll(s, NULL, 10);
      while (s + 1 < end && isdigit((unsigned char)s[1])) ++s;
    } else if (*s != ',') {
      in->is_f32 = 0; /* a dynamic dimension, or too many */
    }
  }
  if (s < end) ++s;
  if (s < end && *s == '{')
    while (s < end && *s++ != '}') continue;
  return s;
}

static int Find(const Program* p, const char* name, size_t len) {
  for (int i = 0; i < p->count; ++i)
    if (strlen(p->instrs[i].name) == len && memcmp(p->instrs[i].name, name, len) == 0) return i;
  return -1;
}

/* One line: `[ROOT] [%]name = SHAPE opcode(OPERANDS)[, attributes]`. 0: not an instruction. */
static int ReadInstr(Program* p, const char* s, const char* end, Instr* in) {
  memset(in, 0, sizeof(*in));
  int is_root = end - s > 5 && strncmp(s, "ROOT ", 5) == 0;
  if (is_root) s += 5;
  if (s < end && *s == '%') ++s;
  const char* name = s;
  while (s < end && *s != ' ' && *s != '=') ++s;
  if (s == name || s - name >= (long)sizeof(in->name)) return 0;
  memcpy(in->name, name, (size_t)(s - name));
  while (s < end && (*s == ' ' || *s == '=')) ++s;
  s = ReadShape(s, end, in);
  while (s < end && *s == ' ') ++s;
  const char* opcode = s;
  while (s < end && *s != '(') ++s;
  if (s == end) return 0;
  in->op = OP_OTHER;
  for (int k = 0; k < OP_OTHER; ++k)
    if (strlen(kOpNames[k]) == (size_t)(s - opcode) && !strncmp(opcode, kOpNames[k], s - opcode))
      in->op = (enum Op)k;
  /* Operands: `f32[4] %x` or `x`, split at commas outside brackets; the last word is the name. */
  int depth = 0;
  const char* item = ++s;
  for (; s < end; ++s) {
    if (*s == '[' || *s == '{' || *s == '(') {
      ++depth;
    } else if ((*s == ']' || *s == '}' || *s == ')') && depth > 0) {
      --depth;
    } else if (depth == 0 && (*s == ',' || *s == ')')) {
      const char* last = s;
      while (last > item && last[-1] == ' ') --last;
      const char* word = last;
      while (word > item && word[-1] != ' ' && word[-1] != '%') --word;
      if (word < last && in->op == OP_PARAMETER) {
        in->parameter = atoi(word);
      } else if (word < last && in->num_operands < 2) {
        in->operands[in->num_operands] = Find(p, word, (size_t)(last - word));
        if (in->operands[in->num_operands] < 0) in->why_not = "an operand is not in the entry";
        in->num_operands++;
      } else if (word < last) {
        in->num_operands = 3; /* more than any op here takes */
      }
      item = s + 1;
      if (*s == ')') break;
    }
  }
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
  return is_root ? 2 : 1;
}

static void FreeProgram(Program* p) {
  free(p->instrs);
  p->instrs = NULL;
  p->count = 0;
}

static KILN_Error* ReadProgram(const char* text, size_t size, Program* p) {
  memset(p, 0, sizeof(*p));
  p->root = -1;
  const char* end = text == NULL ? NULL : text + size;
  int in_entry = 0, closed = 0;
  for (const char* line = text; line != NULL && line < end;) {
    const char* eol = memchr(line, '\n', (size_t)(end - line));
    if (eol == NULL) eol = end;
    while (line < eol && (*line == ' ' || *line == '\t')) ++line;
    if (!in_entry) {
      in_entry = eol - line >= 6 && strncmp(line, "ENTRY ", 6) == 0;
    } else if (line < eol && *line == '}') {
      closed = 1;
      break;
    } else if (line < eol) {
      Instr in;
      int kind = ReadInstr(p, line, eol, &in);
      if (kind > 0) {
        Instr* grown = (Instr*)realloc(p->instrs, sizeof(Instr) * (size_t)(p->count + 1));
        if (grown == NULL) {
          FreeProgram(p);
          return Err(KILN_ERROR_RESOURCE_EXHAUSTED, "out of memory", NULL);
        }
        p->instrs = grown;
        if (kind == 2) p->root = p->count;
        if (in.op == OP_PARAMETER && in.parameter >= p->num_parameters)
          p->num_parameters = in.parameter + 1;
        p->instrs[p->count++] = in;
      }
    }
    line = eol + 1;
  }
  if (!closed || p->count == 0) {
    FreeProgram(p);
    return Err(KILN_ERROR_INVALID_ARGUMENT, "not an HLO module with an ENTRY computation", NULL);
  }
  if (p->root < 0) p->root = p->count - 1;
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
  KILN_Error* e = ReadProgram(args->hlo_text, args->hlo_text_size, &p);
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
  KILN_Error* e = ReadProgram(args->hlo_text, args->hlo_text_size, &exe->program);
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
        e = Err(KILN_ERROR_INVALID_ARGUMENT, "argument is not the f32 array expected", in->name);
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
    .api_minor = 2, /* the minor whose rules it follows (1.2: on_done), not KILN_API_MINOR */
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
