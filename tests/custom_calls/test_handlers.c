/* Host custom-call handlers for the tests, in C against the public header only, loaded with
 * `kiln run --custom-calls`:
 *   test.scale_add       f32 a, b -> a * factor + b (factor from backend_config "factor=N",
 *                        else 2)
 *   test.sum_and_negate  f32 a -> (f32[] sum of a, -a): a tuple result
 *   test.fail            always fails with a reason
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_plugin_api.h"

#define EXPORT __attribute__((visibility("default")))

static int32_t Refuse(char* error, size_t error_size, const char* why) {
  snprintf(error, error_size, "%s", why);
  return 1;
}

static int32_t ScaleAdd(void* user_data, const KILN_HostArray* in, size_t num_in,
                        KILN_HostArray* out, size_t num_out, const char* config, char* error,
                        size_t error_size) {
  (void)user_data;
  if (num_in != 2 || num_out != 1) return Refuse(error, error_size, "wants 2 operands, 1 result");
  if (in[0].dtype != KILN_DTYPE_F32 || in[1].dtype != KILN_DTYPE_F32 ||
      out[0].dtype != KILN_DTYPE_F32 || in[0].byte_size != out[0].byte_size ||
      in[1].byte_size != out[0].byte_size)
    return Refuse(error, error_size, "wants f32 arrays of one shape");
  float factor = 2;
  const char* f = strstr(config, "factor=");
  if (f != NULL) factor = strtof(f + 7, NULL);
  const float* a = (const float*)in[0].data;
  const float* b = (const float*)in[1].data;
  float* r = (float*)out[0].data;
  for (size_t i = 0; i < out[0].byte_size / sizeof(float); ++i) r[i] = a[i] * factor + b[i];
  return 0;
}

static int32_t SumAndNegate(void* user_data, const KILN_HostArray* in, size_t num_in,
                            KILN_HostArray* out, size_t num_out, const char* config, char* error,
                            size_t error_size) {
  (void)user_data, (void)config;
  if (num_in != 1 || num_out != 2 || out[0].num_dims != 0 || out[1].byte_size != in[0].byte_size)
    return Refuse(error, error_size, "wants f32 a -> (f32[], f32 like a)");
  const float* a = (const float*)in[0].data;
  float sum = 0;
  for (size_t i = 0; i < in[0].byte_size / sizeof(float); ++i) {
    sum += a[i];
    ((float*)out[1].data)[i] = -a[i];
  }
  *(float*)out[0].data = sum;
  return 0;
}

static int32_t Fail(void* user_data, const KILN_HostArray* in, size_t num_in, KILN_HostArray* out,
                    size_t num_out, const char* config, char* error, size_t error_size) {
  (void)user_data, (void)in, (void)num_in, (void)out, (void)num_out, (void)config;
  snprintf(error, error_size, "deliberate failure for the test");
  return 7;
}

EXPORT void KILN_RegisterCustomCalls(KILN_RegisterCustomCall_Fn* register_fn) {
  register_fn("test.scale_add", ScaleAdd, NULL);
  register_fn("test.sum_and_negate", SumAndNegate, NULL);
  register_fn("test.fail", Fail, NULL);
}
