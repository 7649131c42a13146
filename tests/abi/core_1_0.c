/* A core that knows only ABI 1.0 (built from the frozen header in api_1_0/), driving a plugin
 * built against any later 1.x: the other direction of the minor-version negotiation.
 *
 * usage: core_1_0 PLUGIN.so [--expect-unavailable | --expect-refused]
 *
 * It loads the plugin, checks the table against what 1.0 requires, then compiles and runs
 * a small elementwise module through the 1.0 entries only, with every args struct exactly
 * as large as 1.0 knows it. Each struct sits at the start of a larger block filled with a
 * poison byte, so a plugin that reads a field a 1.0 caller did not pass (on_done, donated,
 * collectives, dump_dir, ...) reads garbage pointers and fails or crashes here. The result
 * is checked against values computed by hand. Exit 0 on success, 1 on any failure; with
 * --expect-unavailable, a plugin that declares itself unavailable (no GPU) is a success once
 * its table has been checked; with --expect-refused, a plugin that needs what a 1.0 core
 * does not give (the walkable module of 1.6) must refuse capability or compile cleanly, with
 * FAILED_PRECONDITION, and then still destroy its client.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_plugin_api.h"

#if KILN_API_MINOR != 0
#error "core_1_0.c must be built from the frozen 1.0 header (tests/abi/api_1_0)"
#endif

static const KILN_Api* api;

static int Fail(const char* what, KILN_Error* e) {
  fprintf(stderr, "core_1_0: FAIL: %s", what);
  if (e != NULL) {
    fprintf(stderr, ": %s (code %d)", api->error_message(e), (int)api->error_code(e));
    api->error_destroy(e);
  }
  fprintf(stderr, "\n");
  return 1;
}

/* A zeroed args struct of `size` bytes at the start of a block poisoned beyond it. */
static void* Args(size_t size) {
  enum { kPoisoned = 512 };
  unsigned char* block = (unsigned char*)malloc(size + kPoisoned);
  if (block == NULL) abort();
  memset(block, 0, size);
  memset(block + size, 0xA5, kPoisoned);
  *(size_t*)block = size; /* struct_size: what this 1.0 caller knows */
  return block;
}

static const char kModule[] =
    "HloModule abi_1_0\n"
    "ENTRY %main (a: f32[6], b: f32[6]) -> f32[6] {\n"
    "  %a = f32[6] parameter(0)\n"
    "  %b = f32[6] parameter(1)\n"
    "  %m = f32[6] multiply(%a, %b)\n"
    "  ROOT %s = f32[6] add(%m, %a)\n"
    "}\n";

static void CountSupported(void* user_data, const char* name) {
  (void)name;
  ++*(int*)user_data;
}

/* --expect-refused: `entry` refused with FAILED_PRECONDITION and a message; the client must
 * still go away cleanly. */
static int Refused(const char* entry, KILN_Error* e, KILN_Client* client) {
  const char* message = api->error_message(e);
  if (api->error_code(e) != KILN_ERROR_FAILED_PRECONDITION || message == NULL || !*message)
    return Fail("the refusal is not FAILED_PRECONDITION with a message", e);
  printf("%s refused, as expected: %s\n", entry, message);
  api->error_destroy(e);
  KILN_Client_Destroy_Args* destroy = Args(sizeof(KILN_Client_Destroy_Args));
  destroy->client = client;
  if ((e = api->client_destroy(destroy)) != NULL) return Fail("client_destroy", e);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: core_1_0 PLUGIN.so [--expect-unavailable | --expect-refused]\n");
    return 2;
  }
  const int expect_unavailable = argc > 2 && strcmp(argv[2], "--expect-unavailable") == 0;
  const int expect_refused = argc > 2 && strcmp(argv[2], "--expect-refused") == 0;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "core_1_0: FAIL: dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  KILN_GetApi_Fn* get_api = (KILN_GetApi_Fn*)dlsym(lib, KILN_GET_API_SYMBOL);
  if (get_api == NULL || (api = get_api()) == NULL) {
    fprintf(stderr, "core_1_0: FAIL: %s exports no table\n", argv[1]);
    return 1;
  }
  /* The negotiation as a 1.0 core does it: same major, a table at least 1.0's size with
   * every required 1.0 entry; a newer minor is fine, its appended entries are ignored. */
  if (api->api_major != KILN_API_MAJOR) {
    fprintf(stderr, "core_1_0: FAIL: major %d\n", (int)api->api_major);
    return 1;
  }
  if (api->struct_size < KILN_API_STRUCT_SIZE_1_0) return Fail("table smaller than 1.0's", NULL);
  if (!api->error_destroy || !api->error_message || !api->error_code || !api->initialize ||
      !api->client_create || !api->client_destroy || !api->client_devices ||
      !api->device_description || !api->compile || !api->executable_info ||
      !api->executable_destroy || !api->execute || !api->buffer_from_host || !api->buffer_to_host ||
      !api->buffer_info || !api->buffer_destroy)
    return Fail("a required 1.0 entry is NULL", NULL);
  printf("plugin %s: abi %d.%d, table %zu bytes (1.0 knows %zu)\n", api->plugin_name,
         (int)api->api_major, (int)api->api_minor, api->struct_size,
         (size_t)KILN_API_STRUCT_SIZE_1_0);

  KILN_Initialize_Args* init = Args(sizeof(KILN_Initialize_Args));
  KILN_Error* e = api->initialize(init);
  if (e != NULL) return Fail("initialize", e);
  if (!init->available) {
    printf("unavailable: %s\n", init->unavailable_reason ? init->unavailable_reason : "?");
    return expect_unavailable ? 0 : Fail("the plugin is unavailable", NULL);
  }

  KILN_Client_Create_Args* create = Args(sizeof(KILN_Client_Create_Args));
  if ((e = api->client_create(create)) != NULL) return Fail("client_create", e);
  KILN_Client* client = create->client;

  KILN_Client_Devices_Args* devices = Args(sizeof(KILN_Client_Devices_Args));
  devices->client = client;
  if ((e = api->client_devices(devices)) != NULL) return Fail("client_devices", e);
  if (devices->num_devices < 1) return Fail("no device", NULL);
  KILN_Device_Description_Args* desc = Args(sizeof(KILN_Device_Description_Args));
  desc->device = devices->devices[0];
  if ((e = api->device_description(desc)) != NULL) return Fail("device_description", e);
  printf("device %d: %s\n", (int)desc->id, desc->kind ? desc->kind : "?");

  if (api->capability != NULL) {
    int supported = 0;
    KILN_Capability_Args* cap = Args(sizeof(KILN_Capability_Args));
    cap->client = client;
    cap->hlo_text = kModule;
    cap->hlo_text_size = sizeof(kModule) - 1;
    cap->report_supported = CountSupported;
    cap->user_data = &supported;
    if ((e = api->capability(cap)) != NULL) {
      return expect_refused ? Refused("capability", e, client) : Fail("capability", e);
    }
    if (expect_refused) return Fail("capability accepted what it was expected to refuse", NULL);
    if (supported < 2) return Fail("capability declines the elementwise module", NULL);
  }

  KILN_CompileOptions* options = Args(sizeof(KILN_CompileOptions));
  KILN_Compile_Args* compile = Args(sizeof(KILN_Compile_Args));
  compile->client = client;
  compile->hlo_text = kModule;
  compile->hlo_text_size = sizeof(kModule) - 1;
  compile->options = options;
  if ((e = api->compile(compile)) != NULL) {
    return expect_refused ? Refused("compile", e, client) : Fail("compile", e);
  }
  if (expect_refused) return Fail("compile accepted what it was expected to refuse", NULL);
  KILN_Executable_Info_Args* info = Args(sizeof(KILN_Executable_Info_Args));
  info->executable = compile->executable;
  if ((e = api->executable_info(info)) != NULL) return Fail("executable_info", e);
  if (info->num_parameters != 2 || info->num_outputs != 1)
    return Fail("executable_info: not 2 parameters and 1 output", NULL);

  const float a[6] = {1, -2, 0.5f, 3, -0.25f, 8};
  const float b[6] = {2, 3, -4, 0.5f, 8, -1};
  const int64_t dims[1] = {6};
  KILN_Buffer* in[2];
  for (int i = 0; i < 2; ++i) {
    KILN_Buffer_FromHost_Args* up = Args(sizeof(KILN_Buffer_FromHost_Args));
    up->client = client;
    up->dtype = KILN_DTYPE_F32;
    up->dims = dims;
    up->num_dims = 1;
    up->data = i == 0 ? a : b;
    up->data_size = sizeof(a);
    if ((e = api->buffer_from_host(up)) != NULL) return Fail("buffer_from_host", e);
    in[i] = up->buffer;
  }
  KILN_Buffer* out[1] = {NULL};
  for (int run = 0; run < 2; ++run) { /* the arguments stay usable: nothing was donated */
    KILN_Execute_Args* exec = Args(sizeof(KILN_Execute_Args));
    exec->executable = compile->executable;
    exec->arguments = in;
    exec->num_arguments = 2;
    exec->outputs = out;
    exec->num_outputs = 1;
    if ((e = api->execute(exec)) != NULL) return Fail("execute", e);
    KILN_Buffer_Info_Args* binfo = Args(sizeof(KILN_Buffer_Info_Args));
    binfo->buffer = out[0];
    if ((e = api->buffer_info(binfo)) != NULL) return Fail("buffer_info", e);
    if (binfo->dtype != KILN_DTYPE_F32 || binfo->num_dims != 1 || binfo->dims[0] != 6 ||
        binfo->byte_size != sizeof(a))
      return Fail("buffer_info: not f32[6]", NULL);
    float got[6];
    KILN_Buffer_ToHost_Args* down = Args(sizeof(KILN_Buffer_ToHost_Args));
    down->buffer = out[0];
    down->dst = got;
    down->dst_size = sizeof(got);
    if ((e = api->buffer_to_host(down)) != NULL) return Fail("buffer_to_host", e);
    for (int i = 0; i < 6; ++i) {
      const float want = a[i] * b[i] + a[i]; /* exact in f32 for these values */
      if (got[i] != want) {
        fprintf(stderr, "core_1_0: FAIL: run %d element %d: %g, want %g\n", run, i, got[i], want);
        return 1;
      }
    }
    KILN_Buffer_Destroy_Args* drop = Args(sizeof(KILN_Buffer_Destroy_Args));
    drop->buffer = out[0];
    if ((e = api->buffer_destroy(drop)) != NULL) return Fail("buffer_destroy (output)", e);
  }
  for (int i = 0; i < 2; ++i) {
    KILN_Buffer_Destroy_Args* drop = Args(sizeof(KILN_Buffer_Destroy_Args));
    drop->buffer = in[i];
    if ((e = api->buffer_destroy(drop)) != NULL) return Fail("buffer_destroy", e);
  }
  KILN_Executable_Destroy_Args* edrop = Args(sizeof(KILN_Executable_Destroy_Args));
  edrop->executable = compile->executable;
  if ((e = api->executable_destroy(edrop)) != NULL) return Fail("executable_destroy", e);
  KILN_Client_Destroy_Args* cdrop = Args(sizeof(KILN_Client_Destroy_Args));
  cdrop->client = client;
  if ((e = api->client_destroy(cdrop)) != NULL) return Fail("client_destroy", e);
  printf("ok: %s (abi %d.%d) driven by a 1.0 core: compile, two runs, a*b+a exact\n",
         api->plugin_name, (int)api->api_major, (int)api->api_minor);
  return 0;
}
