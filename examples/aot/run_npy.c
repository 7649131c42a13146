/* Runs any `kiln aot` artifact on .npy inputs and writes its results as .npy files:
 *   kiln aot model.hlo --name model --out-dir out
 *   cc -O2 -Iout -Iexamples/aot -DKILN_AOT_NAME=model -DKILN_AOT_HEADER='"model.h"' \
 *      examples/aot/run_npy.c out/model.o -lm -o run_model
 *   ./run_model in0.npy in1.npy ... OUT_DIR      (writes OUT_DIR/output_0.npy, ...)
 * The output names are those of `kiln run --output-dir`. `./run_model --repeat N ...` runs once,
 * then N times more, and prints the microseconds per run of those N. An artifact built with
 * --parallel (link DIR/libkiln_aot_runtime.a -lpthread) takes `--threads N`. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npy_io.h"
#include KILN_AOT_HEADER

#define KILN_CAT2(a, b) a##b
#define KILN_CAT(a, b) KILN_CAT2(a, b)
#define AOT(x) KILN_CAT(KILN_AOT_NAME, x)

int main(int argc, char** argv) {
  const int num_args = AOT(_num_args), num_results = AOT(_num_results);
  const void* args[64];
  void* results[64];
  long repeat = 1;
  int first = 1, i, rc;
  char path[4096];
  while (argc > first + 1 && strncmp(argv[first], "--", 2) == 0) {
    if (strcmp(argv[first], "--repeat") == 0) {
      repeat = atol(argv[first + 1]);
#ifdef KILN_AOT_HAS_THREADS
    } else if (strcmp(argv[first], "--threads") == 0) {
      kiln_aot_set_threads(atoi(argv[first + 1]));
#endif
    } else {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[first]);
      return 2;
    }
    first += 2;
  }
  if (argc - first != num_args + 1 || num_args > 64 || num_results > 64 || repeat < 1) {
    fprintf(stderr, "usage: %s [--repeat N] [--threads N] %d input .npy file(s) OUT_DIR\n", argv[0],
            num_args);
    return 2;
  }
  for (i = 0; i < num_args; ++i) {
    args[i] = npy_read(argv[first + i], AOT(_arg_types)[i], AOT(_arg_ranks)[i], AOT(_arg_dims)[i],
                       AOT(_arg_bytes)[i]);
    if (args[i] == NULL) return 1;
  }
  for (i = 0; i < num_results; ++i) {
    results[i] = malloc(AOT(_result_bytes)[i] ? AOT(_result_bytes)[i] : 1);
    if (results[i] == NULL) return 1;
  }
  {
    struct timespec t0, t1;
    long r;
    /* Timed runs follow one untimed run (a GEMM library sets itself up on its first call). */
    if (repeat > 1 && AOT(_run_simple)(args, results) != 0) {
      fprintf(stderr, "%s: run failed\n", argv[0]);
      return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (r = 0; r < repeat; ++r) {
      rc = AOT(_run_simple)(args, results);
      if (rc != 0) {
        fprintf(stderr, "%s: run failed (%d)\n", argv[0], rc);
        return 1;
      }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (repeat > 1)
      printf("%.3f us per run\n",
             ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / repeat);
  }
  for (i = 0; i < num_results; ++i) {
    snprintf(path, sizeof path, "%s/output_%d.npy", argv[argc - 1], i);
    if (npy_write(path, AOT(_result_types)[i], AOT(_result_ranks)[i], AOT(_result_dims)[i],
                  results[i], AOT(_result_bytes)[i]) != 0)
      return 1;
  }
  return 0;
}
