/* The runtime of `kiln aot --parallel` artifacts: a pool of worker threads that runs the
 * partitioned loops of large kernels. Plain C11 and POSIX threads; nothing else.
 *
 *   kiln_aot_set_threads(4);   before NAME_run: up to 4 threads (the caller's included)
 *
 * Without a call, or with 0 or 1, everything runs on the calling thread. One loop runs at a
 * time; NAME_run calls from several threads at once share the pool, one after another. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef void (*kiln_aot_kernel)(void** buffers, int64_t begin, int64_t end);

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;  /* one loop at a time */
static pthread_mutex_t state_mu = PTHREAD_MUTEX_INITIALIZER; /* guards what follows */
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static int workers = 0;         /* threads started, besides the caller */
static uint64_t generation = 0; /* bumped for each loop */
static kiln_aot_kernel job_fn;
static void** job_table;
static int64_t job_extent, job_parts, job_next, job_pending;

/* Part p of [0, extent) split into `parts` nearly equal ranges. */
static void run_part(int64_t p) {
  const int64_t begin = job_extent * p / job_parts, end = job_extent * (p + 1) / job_parts;
  if (begin < end) job_fn(job_table, begin, end);
}

/* Takes and runs parts until none is left; called with state_mu held, returns with it held. */
static void drain(void) {
  while (job_next < job_parts) {
    const int64_t p = job_next++;
    pthread_mutex_unlock(&state_mu);
    run_part(p);
    pthread_mutex_lock(&state_mu);
    if (--job_pending == 0) pthread_cond_broadcast(&done_cv);
  }
}

static void* worker(void* arg) {
  uint64_t seen = 0;
  (void)arg;
  pthread_mutex_lock(&state_mu);
  for (;;) {
    while (generation == seen) pthread_cond_wait(&work_cv, &state_mu);
    seen = generation;
    drain();
  }
  return NULL;
}

void kiln_aot_set_threads(int threads) {
  pthread_mutex_lock(&pool_mu);
  pthread_mutex_lock(&state_mu);
  /* Threads only ever grow; asking for fewer uses fewer parts. */
  while (workers < threads - 1) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) break;
    pthread_detach(t);
    ++workers;
  }
  job_parts = threads > 1 ? threads : 1;
  pthread_mutex_unlock(&state_mu);
  pthread_mutex_unlock(&pool_mu);
}

/* Runs fn(table, begin, end) over [0, extent) split across the pool; returns when all is done. */
void kiln_aot_parallel_for(kiln_aot_kernel fn, void** table, int64_t extent) {
  pthread_mutex_lock(&pool_mu);
  pthread_mutex_lock(&state_mu);
  const int64_t parts = job_parts < 1 ? 1 : (job_parts > extent ? extent : job_parts);
  if (workers == 0 || parts <= 1) {
    pthread_mutex_unlock(&state_mu);
    fn(table, 0, extent);
    pthread_mutex_unlock(&pool_mu);
    return;
  }
  const int64_t saved_parts = job_parts;
  job_fn = fn;
  job_table = table;
  job_extent = extent;
  job_parts = parts;
  job_next = 0;
  job_pending = parts;
  ++generation;
  pthread_cond_broadcast(&work_cv);
  drain();
  while (job_pending > 0) pthread_cond_wait(&done_cv, &state_mu);
  job_parts = saved_parts;
  pthread_mutex_unlock(&state_mu);
  pthread_mutex_unlock(&pool_mu);
}
