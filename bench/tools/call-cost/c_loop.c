/* The cost of one small call through relay's C ABI, the loop relay.torch's is compared with
 * (call_cost.py): `calls` allreduces of one buffer among ranks {0, 1} (the others help), back to
 * back, after `warmup` of them, timed on the host clock (and, built with -DCALL_COST_CUDA, between
 * two CUDA events on this rank's stream: one pair around the whole loop). One process per rank
 * under relay-run:
 *
 *   cc -O2 -std=c99 -Iinclude bench/tools/call-cost/c_loop.c -Lbuild/capi -lrelay_c \
 *      -Wl,-rpath,$PWD/build/capi -o c_loop
 *   relay-run -n 2 -- ./c_loop [bytes=4096] [calls=20000] [warmup=200]
 *                             [entry=call|prepared|async]
 *
 * entry "call": relay_allreduce with its 13 arguments, as a C caller makes it; "prepared":
 * relay_run_call with a relay_call filled once (what relay.torch's repeated call makes);
 * "async": relay_run_call_async on an operation stream of its own, then relay_comm_join_call
 * ordering the loop's stream after it (what relay.torch's async_op=True and wait() make, so
 * that the Python form's cost above the C ABI compares the same library work). Rank 0 prints
 * "c_loop <entry> <bytes> B: <us> us a call (host), <us> us (device)". */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "relay/c/relay.h"

#ifdef CALL_COST_CUDA
#include <cuda_runtime.h>
#endif

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

#ifdef CALL_COST_CUDA
/* Every CUDA call's status checked: a bench whose device work failed prints no number. */
#define CUDA_OK(call)                                                     \
  do {                                                                    \
    cudaError_t e_ = (call);                                              \
    if (e_ != cudaSuccess) {                                              \
      fprintf(stderr, "c_loop: %s: %s\n", #call, cudaGetErrorString(e_)); \
      return 1;                                                           \
    }                                                                     \
  } while (0)
#endif

static int fail(const char* what, int status) {
  fprintf(stderr, "c_loop: %s: %s: %s\n", what, relay_status_name(status), relay_last_error());
  return 1;
}

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 4096;
  const long calls = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
  const long warmup = argc > 3 ? strtol(argv[3], NULL, 10) : 200;
  const char* entry = argc > 4 ? argv[4] : "call";
  const int prepared = strcmp(entry, "prepared") == 0;
  const int async = strcmp(entry, "async") == 0;
  if (!prepared && !async && strcmp(entry, "call") != 0) {
    fprintf(stderr, "c_loop: entry is call, prepared or async, not %s\n", entry);
    return 2;
  }
  relay_comm* comm = NULL;
  void* stream = NULL;
  void* op_stream = NULL;
  void* send = NULL;
  void* recv = NULL;
#ifdef CALL_COST_CUDA
  const int memory = RELAY_MEMORY_DEVICE;
  const char* local = getenv("LOCAL_RANK");
  int devices = 1;
  CUDA_OK(cudaGetDeviceCount(&devices));
  CUDA_OK(cudaSetDevice((local != NULL ? atoi(local) : 0) % (devices > 0 ? devices : 1)));
  cudaStream_t s, op;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&op, cudaStreamNonBlocking));
  stream = s;
  op_stream = op;
  CUDA_OK(cudaMalloc(&send, bytes));
  CUDA_OK(cudaMalloc(&recv, bytes));
  CUDA_OK(cudaMemset(send, 0, bytes));
#else
  const int memory = RELAY_MEMORY_HOST;
  send = calloc(1, bytes);
  recv = calloc(1, bytes);
#endif
  int st = relay_comm_create_from_environment("auto", memory, &comm);
  if (st != RELAY_OK) return fail("relay_comm_create_from_environment", st);
  int32_t rank = 0;
  relay_comm_rank(comm, &rank);
  const int active = rank < 2;
  int32_t ranks[] = {0, 1}, sizes[] = {2};
  int64_t counts[] = {(int64_t)(bytes / 2)};
  relay_call call;
  relay_call_init(&call);
  call.collective = RELAY_ALLREDUCE;
  call.send = active ? send : NULL;
  call.send_bytes = active ? bytes : 0;
  call.recv = active ? recv : NULL;
  call.recv_bytes = active ? bytes : 0;
  call.group_ranks = ranks;
  call.group_sizes = sizes;
  call.num_groups = 1;
  call.counts = counts;
  call.dtype = RELAY_BFLOAT16;
  call.op = RELAY_SUM;
  double host_us = 0, device_us = -1;
  for (int timed = 0; timed < 2; ++timed) {
    const long n = timed ? calls : warmup;
#ifdef CALL_COST_CUDA
    cudaEvent_t begin, end;
    CUDA_OK(cudaEventCreate(&begin));
    CUDA_OK(cudaEventCreate(&end));
    CUDA_OK(cudaEventRecord(begin, s));
#endif
    const double t0 = now_us();
    for (long i = 0; i < n; ++i) {
      if (async) {
        relay_async_call made;
        st = relay_run_call_async(comm, &call, stream, op_stream, &made);
        if (st != RELAY_OK) return fail("relay_run_call_async", st);
        st = relay_comm_join_call(comm, made.call, stream);
        if (st != RELAY_OK) return fail("relay_comm_join_call", st);
        continue;
      }
      st = prepared
               ? relay_run_call(comm, &call, stream)
               : relay_allreduce(comm, call.send, call.send_bytes, call.recv, call.recv_bytes,
                                 ranks, sizes, 1, counts, RELAY_BFLOAT16, RELAY_SUM, NULL, stream);
      if (st != RELAY_OK) return fail(prepared ? "relay_run_call" : "relay_allreduce", st);
    }
    host_us = (now_us() - t0) / (double)(n > 0 ? n : 1);
#ifdef CALL_COST_CUDA
    CUDA_OK(cudaEventRecord(end, s));
    CUDA_OK(cudaEventSynchronize(end));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, begin, end));
    device_us = (double)ms * 1e3 / (double)(n > 0 ? n : 1);
    CUDA_OK(cudaEventDestroy(begin));
    CUDA_OK(cudaEventDestroy(end));
#endif
  }
  st = relay_comm_async_status(comm);
  if (st != RELAY_OK) return fail("relay_comm_async_status", st);
  if (rank == 0)
    printf("c_loop %s %zu B: %.2f us a call (host), %.2f us (device)\n", entry, bytes, host_us,
           device_us);
  relay_comm_destroy(comm);
  return 0;
}
