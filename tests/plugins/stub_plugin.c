/* Deliberately broken (or merely unavailable) plugins for the registry tests, written in C
 * against kiln_plugin_api.h only. One source, one variant per -DKILN_STUB_<VARIANT>:
 *   BAD_MAJOR      api_major 99                 -> rejected, ABI major mismatch
 *   INIT_FAILS     initialize returns an error  -> rejected, initialize failed
 *   NO_SYMBOL      exports KILN_GetAPI (typo)   -> rejected, missing entry symbol
 *   NULL_TABLE     KILN_GetApi returns NULL     -> rejected, null table
 *   SMALL_TABLE    struct_size 8                -> rejected, table too small
 *   MISSING_ENTRY  compile is NULL              -> rejected, required entry null
 *   UNAVAILABLE    available = 0 with a reason  -> loaded but unavailable
 *   DUP            name "dup-test" (built twice) -> the second is rejected as a duplicate
 * Hostile variants, built into tests/plugins/hostile (only probed out of process there):
 *   CRASH_GET_API  KILN_GetApi dereferences NULL -> crashes the process that loads it
 *   CRASH_INIT     initialize dereferences NULL
 *   HANG_INIT      initialize never returns
 *   EXIT_INIT      initialize calls exit(3)
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln_plugin_api.h"

struct KILN_Error {
  KILN_ErrorCode code;
  char message[256];
};

static KILN_Error* MakeError(KILN_ErrorCode code, const char* message) {
  KILN_Error* e = (KILN_Error*)malloc(sizeof(KILN_Error));
  if (e == NULL) return NULL;
  e->code = code;
  strncpy(e->message, message, sizeof(e->message) - 1);
  e->message[sizeof(e->message) - 1] = '\0';
  return e;
}
static void ErrorDestroy(KILN_Error* e) { free(e); }
static const char* ErrorMessage(const KILN_Error* e) { return e->message; }
static KILN_ErrorCode ErrorCode(const KILN_Error* e) { return e->code; }

/* Reads through a pointer the compiler cannot prove null: a real segfault. */
static volatile int* volatile nowhere = NULL;

static KILN_Error* Initialize(KILN_Initialize_Args* args) {
#if defined(KILN_STUB_CRASH_INIT)
  args->available = *nowhere;
  return NULL;
#elif defined(KILN_STUB_HANG_INIT)
  for (;;) pause();
  (void)args;
  return NULL;
#elif defined(KILN_STUB_EXIT_INIT)
  (void)args;
  exit(3);
#elif defined(KILN_STUB_INIT_FAILS)
  (void)args;
  return MakeError(KILN_ERROR_INTERNAL, "simulated failure: device firmware missing");
#elif defined(KILN_STUB_UNAVAILABLE)
  args->available = 0;
  args->unavailable_reason = "no accelerator found (test stub)";
  return NULL;
#else
  args->available = 1;
  args->unavailable_reason = NULL;
  return NULL;
#endif
}

struct KILN_Client {
  int unused;
};
static struct KILN_Client the_client;

static KILN_Error* ClientCreate(KILN_Client_Create_Args* args) {
  args->client = &the_client;
  return NULL;
}
static KILN_Error* ClientDestroy(KILN_Client_Destroy_Args* args) {
  (void)args;
  return NULL;
}
static KILN_Error* ClientDevices(KILN_Client_Devices_Args* args) {
  args->devices = NULL;
  args->num_devices = 0;
  return NULL;
}
/* Everything else is unimplemented: the registry tests never run code on these. */
#define KILN_STUB_UNIMPLEMENTED(fn, type)                                       \
  __attribute__((unused)) static KILN_Error* fn(type* args) {                   \
    (void)args;                                                                 \
    return MakeError(KILN_ERROR_UNIMPLEMENTED, #fn " not implemented in stub"); \
  }
KILN_STUB_UNIMPLEMENTED(DeviceDescription, KILN_Device_Description_Args)
KILN_STUB_UNIMPLEMENTED(Compile, KILN_Compile_Args)
KILN_STUB_UNIMPLEMENTED(ExecutableInfo, KILN_Executable_Info_Args)
KILN_STUB_UNIMPLEMENTED(ExecutableDestroy, KILN_Executable_Destroy_Args)
KILN_STUB_UNIMPLEMENTED(Execute, KILN_Execute_Args)
KILN_STUB_UNIMPLEMENTED(BufferFromHost, KILN_Buffer_FromHost_Args)
KILN_STUB_UNIMPLEMENTED(BufferToHost, KILN_Buffer_ToHost_Args)
KILN_STUB_UNIMPLEMENTED(BufferInfo, KILN_Buffer_Info_Args)
KILN_STUB_UNIMPLEMENTED(BufferDestroy, KILN_Buffer_Destroy_Args)

#ifndef KILN_STUB_NAME
#define KILN_STUB_NAME "stub"
#endif

/* Unused in the variants whose entry symbol is missing or returns NULL. Designated
 * initializers: entries a later ABI minor appends stay NULL without a change here. */
#if defined(KILN_STUB_SMALL_TABLE)
#define KILN_STUB_TABLE_SIZE 8
#else
#define KILN_STUB_TABLE_SIZE sizeof(KILN_Api)
#endif
#if defined(KILN_STUB_BAD_MAJOR)
#define KILN_STUB_MAJOR 99
#else
#define KILN_STUB_MAJOR KILN_API_MAJOR
#endif
#if defined(KILN_STUB_MISSING_ENTRY)
#define KILN_STUB_COMPILE NULL
#else
#define KILN_STUB_COMPILE Compile
#endif
__attribute__((unused)) static const KILN_Api kApi = {
    .struct_size = KILN_STUB_TABLE_SIZE,
    .api_major = KILN_STUB_MAJOR,
    .api_minor = 0, /* the rules it follows: nothing after 1.0 */
    .plugin_name = KILN_STUB_NAME,
    .default_priority = 50,
    .error_destroy = ErrorDestroy,
    .error_message = ErrorMessage,
    .error_code = ErrorCode,
    .initialize = Initialize,
    .client_create = ClientCreate,
    .client_destroy = ClientDestroy,
    .client_devices = ClientDevices,
    .device_description = DeviceDescription,
    .compile = KILN_STUB_COMPILE,
    .executable_info = ExecutableInfo,
    .executable_destroy = ExecutableDestroy,
    .execute = Execute,
    .buffer_from_host = BufferFromHost,
    .buffer_to_host = BufferToHost,
    .buffer_info = BufferInfo,
    .buffer_destroy = BufferDestroy,
};

#if defined(KILN_STUB_NO_SYMBOL)
KILN_PLUGIN_EXPORT const KILN_Api* KILN_GetAPI(void) { return &kApi; }
#elif defined(KILN_STUB_NULL_TABLE)
const KILN_Api* KILN_GetApi(void) { return NULL; }
#elif defined(KILN_STUB_CRASH_GET_API)
const KILN_Api* KILN_GetApi(void) { return *nowhere ? &kApi : NULL; }
#else
const KILN_Api* KILN_GetApi(void) { return &kApi; }
#endif
