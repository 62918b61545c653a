/* The C ABI from C (compiled as C99): every function of include/relay/c/relay.h, with bad handles
 * and null pointers, then real collectives and splits across forked processes (a callback bootstrap
 * over shared memory, and the environment's TCP store), each output checked against values worked
 * out by hand, and a repeated call checked to allocate nothing.
 *
 *   test_relay_c            every part; exit status 0 when all checks hold
 *
 * Linked against librelay_c, librelay_c_cuda or librelay_c_hip (the same symbols); on the GPU
 * builds the device transports are only probed for their errors (no GPU is needed).
 * RELAY_C_TEST_TRANSPORTS, where defined, is the exact list the library must report. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "relay/c/relay.h"

/* ---- checks ------------------------------------------------------------------------------ */

static int failures = 0;
static const char* part = "";

static void fail_at(int line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[pid %d] %s: line %d: ", (int)getpid(), part, line);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  ++failures;
}
#define CHECK(cond, ...)                         \
  do {                                           \
    if (!(cond)) fail_at(__LINE__, __VA_ARGS__); \
  } while (0)
/* A call's status is `want`, and a failure leaves a message. */
#define EXPECT_STATUS(call, want)                                                      \
  do {                                                                                 \
    int got_ = (int)(call);                                                            \
    if (got_ != (int)(want))                                                           \
      fail_at(__LINE__, "%s returned %s (%s), not %s", #call, relay_status_name(got_), \
              relay_last_error(), relay_status_name(want));                            \
    else if (got_ != RELAY_OK && relay_last_error()[0] == '\0')                        \
      fail_at(__LINE__, "%s failed without a message", #call);                         \
  } while (0)
#define EXPECT_ERROR_TEXT(needle)                                                            \
  CHECK(strstr(relay_last_error(), needle) != NULL, "the last error '%s' does not say '%s'", \
        relay_last_error(), needle)

/* ---- counting allocations ------------------------------------------------------------------
 * The executable's malloc family stands in for glibc's in the whole process (the library's
 * operator new calls it), counting while `counting` is set. Not under a sanitizer, whose own
 * allocator must stay in place (RELAY_C_TEST_SANITIZED: the check is skipped). */
static volatile int counting = 0;
static volatile long allocations = 0;
#ifndef RELAY_C_TEST_SANITIZED
extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
extern void __libc_free(void*);
void* malloc(size_t n) {
  if (counting) ++allocations;
  return __libc_malloc(n);
}
void* calloc(size_t k, size_t n) {
  if (counting) ++allocations;
  return __libc_calloc(k, n);
}
void* realloc(void* p, size_t n) {
  if (counting) ++allocations;
  return __libc_realloc(p, n);
}
void* aligned_alloc(size_t a, size_t n) {
  if (counting) ++allocations;
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  if (counting) ++allocations;
  *out = __libc_memalign(a, n);
  return *out ? 0 : ENOMEM;
}
void free(void* p) {
  __libc_free(p);
}
#endif

/* ---- a bootstrap over shared memory for forked processes ------------------------------------ */

/* The timeout of the forked ranks' communicators, and how long past it a rank may return on a
 * busy machine (tests/support/busy_margin.hpp): every time bound below is their sum. A refusal,
 * an abort and a death are told apart from a timeout by their status, not by their time. */
#define RANK_TIMEOUT_MS 20000
#define BUSY_MARGIN_MS 2000

#define MAX_RANKS 8
#define SLOT 8192
struct board {
  uint64_t seq[MAX_RANKS];
  uint32_t len[2][MAX_RANKS];
  char data[2][MAX_RANKS][SLOT];
};
struct member {
  struct board* b;
  int rank, size;
  uint64_t calls;
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Writes this rank's bytes into the slot of the call's parity, publishes the call number, waits
 * for every rank's (two slots suffice: a rank reuses a parity only after every rank published
 * the call between, that is, finished reading this one). */
static int32_t shm_all_gather(void* user, const void* mine, size_t bytes, int64_t timeout_ms,
                              relay_bootstrap_result* result) {
  struct member* m = (struct member*)user;
  const uint64_t k = ++m->calls;
  const int parity = (int)(k % 2);
  if (bytes > SLOT) {
    relay_bootstrap_fail(result, RELAY_INVALID_ARGUMENT, "the test board's slot is too small");
    return RELAY_INVALID_ARGUMENT;
  }
  memcpy(m->b->data[parity][m->rank], mine, bytes);
  m->b->len[parity][m->rank] = (uint32_t)bytes;
  __atomic_store_n(&m->b->seq[m->rank], k, __ATOMIC_RELEASE);
  const double deadline = now_ms() + (double)timeout_ms;
  for (int r = 0; r < m->size; ++r)
    while (__atomic_load_n(&m->b->seq[r], __ATOMIC_ACQUIRE) < k) {
      if (now_ms() > deadline) {
        char text[128];
        snprintf(text, sizeof text, "rank %d did not join all-gather #%llu", r,
                 (unsigned long long)k);
        relay_bootstrap_fail(result, RELAY_TIMEOUT, text);
        return RELAY_TIMEOUT;
      }
      usleep(50);
    }
  for (int r = 0; r < m->size; ++r)
    if (relay_bootstrap_put(result, r, m->b->data[parity][r], m->b->len[parity][r]) != RELAY_OK)
      return RELAY_SYSTEM_ERROR;
  return RELAY_OK;
}

/* ---- part 1: one process ----------------------------------------------------------------------
 */

static void test_library(void) {
  part = "library";
  CHECK(strcmp(relay_version(), "0.1.0") == 0, "version %s", relay_version());
  CHECK(relay_abi_version() == RELAY_C_ABI_VERSION, "abi %d", relay_abi_version());
  CHECK(strncmp(relay_transports(), "shm", 3) == 0, "transports %s", relay_transports());
#ifdef RELAY_C_TEST_TRANSPORTS
  CHECK(strcmp(relay_transports(), RELAY_C_TEST_TRANSPORTS) == 0, "transports %s, not %s",
        relay_transports(), RELAY_C_TEST_TRANSPORTS);
#endif
  CHECK(strcmp(relay_status_name(RELAY_OK), "ok") == 0, "ok");
  CHECK(strcmp(relay_status_name(RELAY_TIMEOUT), "timeout") == 0, "timeout");
  CHECK(strcmp(relay_status_name(RELAY_PEER_ERROR), "peer error") == 0, "peer error");
  CHECK(strcmp(relay_status_name(RELAY_SYSTEM_ERROR), "system error") == 0, "system error");
  CHECK(strcmp(relay_status_name(RELAY_PEER_LOST), "peer lost") == 0, "peer lost");
  CHECK(strcmp(relay_status_name(14), "unknown") == 0, "14");
  CHECK(strcmp(relay_status_name(-1), "unknown") == 0, "-1");

  /* Names both ways; the header's values. */
  struct {
    int vocabulary;
    const char* name;
    int value;
  } names[] = {
      {RELAY_VOCAB_DTYPE, "bfloat16", RELAY_BFLOAT16},
      {RELAY_VOCAB_DTYPE, "bf16", RELAY_BFLOAT16},
      {RELAY_VOCAB_DTYPE, "float32", RELAY_FLOAT32},
      {RELAY_VOCAB_DTYPE, "half", RELAY_FLOAT16},
      {RELAY_VOCAB_DTYPE, "int64", RELAY_INT64},
      {RELAY_VOCAB_OP, "avg", RELAY_AVG},
      {RELAY_VOCAB_COLLECTIVE, "reduce-scatter", RELAY_REDUCE_SCATTER},
      {RELAY_VOCAB_COLLECTIVE, "all-to-all", RELAY_ALL_TO_ALL},
      {RELAY_VOCAB_MODE, "single", RELAY_MODE_SINGLE},
      {RELAY_VOCAB_MODE, "groups", RELAY_MODE_GROUPS},
      {RELAY_VOCAB_ROUTE, "direct", RELAY_ROUTE_DIRECT},
      {RELAY_VOCAB_ROUTE, "automatic", RELAY_ROUTE_AUTOMATIC},
      {RELAY_VOCAB_WIRE, "fp8_e4m3", RELAY_WIRE_FP8_E4M3},
      {RELAY_VOCAB_PRECISION, "native_partials", RELAY_NATIVE_PARTIALS},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    int32_t v = -7;
    EXPECT_STATUS(relay_parse(names[i].vocabulary, names[i].name, &v), RELAY_OK);
    CHECK(v == names[i].value, "%s parsed as %d, not %d", names[i].name, v, names[i].value);
  }
  CHECK(strcmp(relay_name(RELAY_VOCAB_DTYPE, RELAY_BFLOAT16), "bfloat16") == 0, "dtype name");
  CHECK(strcmp(relay_name(RELAY_VOCAB_COLLECTIVE, RELAY_ALL_GATHER), "all-gather") == 0, "coll");
  CHECK(strcmp(relay_name(RELAY_VOCAB_WIRE, RELAY_WIRE_FP8_E4M3_FNUZ), "fp8_e4m3_fnuz") == 0, "w");
  CHECK(relay_name(RELAY_VOCAB_DTYPE, 10) == NULL, "dtype 10 has a name");
  CHECK(relay_name(RELAY_VOCAB_OP, -1) == NULL, "op -1 has a name");
  CHECK(relay_name(99, 0) == NULL, "vocabulary 99 has names");
  int32_t v = -7;
  EXPECT_STATUS(relay_parse(RELAY_VOCAB_DTYPE, "complex64", &v), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("'complex64' is not one of int8, uint8");
  CHECK(v == -7, "a refused parse wrote %d", v);
  EXPECT_STATUS(relay_parse(99, "sum", &v), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_parse(RELAY_VOCAB_OP, NULL, &v), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_parse(RELAY_VOCAB_OP, "sum", NULL), RELAY_INVALID_ARGUMENT);
  CHECK(relay_dtype_size(RELAY_BFLOAT16) == 2 && relay_dtype_size(RELAY_FLOAT64) == 8 &&
            relay_dtype_size(RELAY_INT8) == 1 && relay_dtype_size(10) == 0 &&
            relay_dtype_size(-1) == 0,
        "dtype sizes");

  /* Layouts, worked out by hand: N=8, fused A=2 groups {0,1}{2,3}{4,5}{6,7}, count 5. */
  const int32_t fused_ranks[] = {0, 1, 2, 3, 4, 5, 6, 7}, fused_sizes[] = {2, 2, 2, 2};
  const int64_t five[] = {5, 5, 5, 5};
  relay_rank_layout l;
  EXPECT_STATUS(
      relay_rank_layout_of(RELAY_REDUCE_SCATTER, 8, fused_ranks, fused_sizes, 4, five, 3, &l),
      RELAY_OK);
  CHECK(l.group == 1 && l.active_index == 1 && l.active == 2 && l.input_elements == 10 &&
            l.output_elements == 5 && l.in_place_output_offset == 5 &&
            l.in_place_input_offset == 0 && l.has_in_place == 1,
        "reduce-scatter layout of rank 3: group %d index %d in %lld out %lld at %lld", l.group,
        l.active_index, (long long)l.input_elements, (long long)l.output_elements,
        (long long)l.in_place_output_offset);
  EXPECT_STATUS(relay_rank_layout_of(RELAY_ALL_GATHER, 8, fused_ranks, fused_sizes, 4, five, 6, &l),
                RELAY_OK);
  CHECK(l.group == 3 && l.active_index == 0 && l.input_elements == 5 && l.output_elements == 10 &&
            l.in_place_input_offset == 0,
        "all-gather layout of rank 6");
  EXPECT_STATUS(relay_rank_layout_of(RELAY_ALL_GATHER, 8, fused_ranks, fused_sizes, 4, five, 7, &l),
                RELAY_OK);
  CHECK(l.in_place_input_offset == 5, "all-gather: rank 7's input sits at output + 5");
  /* Single group {2, 5, 6, 1} of N=8: A=4; rank 0 helps. */
  const int32_t single_ranks[] = {2, 5, 6, 1}, single_size[] = {4};
  const int64_t three[] = {3};
  EXPECT_STATUS(
      relay_rank_layout_of(RELAY_ALL_TO_ALL, 8, single_ranks, single_size, 1, three, 6, &l),
      RELAY_OK);
  CHECK(l.group == 0 && l.active_index == 2 && l.active == 4 && l.input_elements == 12 &&
            l.output_elements == 12 && l.has_in_place == 0,
        "all-to-all layout of rank 6");
  EXPECT_STATUS(
      relay_rank_layout_of(RELAY_ALL_TO_ALL, 8, single_ranks, single_size, 1, three, 0, &l),
      RELAY_OK);
  CHECK(l.group == -1 && l.active_index == -1 && l.input_elements == 0 && l.output_elements == 0,
        "a helper has no buffers");
  /* A repeated layout allocates nothing (a binding may ask for one on every call). */
  counting = 1;
  allocations = 0;
  const int repeated =
      relay_rank_layout_of(RELAY_ALL_TO_ALL, 8, single_ranks, single_size, 1, three, 6, &l);
  counting = 0;
  EXPECT_STATUS(repeated, RELAY_OK);
  CHECK(l.input_elements == 12, "the repeated layout of rank 6: input %lld",
        (long long)l.input_elements);
#ifndef RELAY_C_TEST_SANITIZED
  CHECK(allocations == 0, "the repeated layout allocated %ld times", allocations);
#endif
  /* The call's own errors. */
  const int32_t twice[] = {0, 1, 1, 3}, pair_sizes[] = {2, 2};
  const int64_t two_counts[] = {4, 4};
  EXPECT_STATUS(relay_rank_layout_of(RELAY_ALLREDUCE, 4, twice, pair_sizes, 2, two_counts, 0, &l),
                RELAY_INVALID_GROUP);
  EXPECT_ERROR_TEXT("rank 1 is active in two groups");
  const int64_t negative[] = {4, -1};
  EXPECT_STATUS(
      relay_rank_layout_of(RELAY_ALLREDUCE, 4, fused_ranks, pair_sizes, 2, negative, 0, &l),
      RELAY_INVALID_COUNT);
  /* A = N, one group of every rank: its sizes exist (the direct route runs it); that the relay
   * route needs a helper is the call's to say. */
  const int32_t both[] = {1, 0}, both_size[] = {2};
  const int64_t six[] = {6};
  EXPECT_STATUS(relay_rank_layout_of(RELAY_ALL_GATHER, 2, both, both_size, 1, six, 0, &l),
                RELAY_OK);
  CHECK(l.group == 0 && l.active_index == 1 && l.input_elements == 6 && l.output_elements == 12,
        "A = N all-gather: group %d index %d in %lld out %lld", l.group, l.active_index,
        (long long)l.input_elements, (long long)l.output_elements);
  const int32_t three_of_eight[] = {0, 1, 2}, size3[] = {3};
  EXPECT_STATUS(relay_rank_layout_of(RELAY_ALLREDUCE, 8, three_of_eight, size3, 1, three, 0, &l),
                RELAY_INVALID_SCHEDULE);
  EXPECT_STATUS(relay_rank_layout_of(RELAY_ALLREDUCE, 8, fused_ranks, fused_sizes, 0, five, 0, &l),
                RELAY_INVALID_GROUP);
  EXPECT_STATUS(relay_rank_layout_of(7, 8, fused_ranks, fused_sizes, 4, five, 0, &l),
                RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_rank_layout_of(RELAY_ALLREDUCE, 8, fused_ranks, fused_sizes, 4, five, 8, &l),
                RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_rank_layout_of(RELAY_ALLREDUCE, 8, NULL, fused_sizes, 4, five, 0, &l),
                RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_rank_layout_of(RELAY_ALLREDUCE, 8, fused_ranks, NULL, 4, five, 0, &l),
                RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_rank_layout_of(RELAY_ALLREDUCE, 8, fused_ranks, fused_sizes, 4, NULL, 0, &l),
                RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(
      relay_rank_layout_of(RELAY_ALLREDUCE, 8, fused_ranks, fused_sizes, 4, five, 0, NULL),
      RELAY_INVALID_ARGUMENT);

  /* Counts from buffer sizes. */
  int64_t n = -1;
  EXPECT_STATUS(relay_count_of(RELAY_ALL_TO_ALL, 4, 12, 12, &n), RELAY_OK);
  CHECK(n == 3, "all-to-all of 12 among 4: count %lld", (long long)n);
  EXPECT_STATUS(relay_count_of(RELAY_REDUCE_SCATTER, 2, 14, 7, &n), RELAY_OK);
  CHECK(n == 7, "reduce-scatter 14 -> 7: count %lld", (long long)n);
  EXPECT_STATUS(relay_count_of(RELAY_ALL_GATHER, 4, 6, 24, &n), RELAY_OK);
  CHECK(n == 6, "all-gather 6 -> 24: count %lld", (long long)n);
  EXPECT_STATUS(relay_count_of(RELAY_ALLREDUCE, 2, 9, 9, &n), RELAY_OK);
  CHECK(n == 9, "allreduce of 9: count %lld", (long long)n);
  n = -1;
  EXPECT_STATUS(relay_count_of(RELAY_ALL_TO_ALL, 4, 13, 13, &n), RELAY_INVALID_COUNT);
  EXPECT_ERROR_TEXT("all-to-all among 4 active ranks");
  EXPECT_STATUS(relay_count_of(RELAY_REDUCE_SCATTER, 2, 14, 8, &n), RELAY_INVALID_COUNT);
  EXPECT_STATUS(relay_count_of(RELAY_ALLREDUCE, 2, 9, 8, &n), RELAY_INVALID_COUNT);
  CHECK(n == -1, "a refused count wrote %lld", (long long)n);
  EXPECT_STATUS(relay_count_of(RELAY_ALLREDUCE, 0, 9, 9, &n), RELAY_INVALID_GROUP);
  EXPECT_STATUS(relay_count_of(RELAY_ALLREDUCE, 2, -1, -1, &n), RELAY_INVALID_COUNT);
  EXPECT_STATUS(relay_count_of(9, 2, 9, 9, &n), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_count_of(RELAY_ALLREDUCE, 2, 9, 9, NULL), RELAY_INVALID_ARGUMENT);

  /* Defaults: the cost model's route. */
  relay_options o;
  memset(&o, 0x5a, sizeof o);
  relay_options_init(&o);
  CHECK(o.struct_size == sizeof o && o.mode == RELAY_MODE_GROUPS &&
            o.route == RELAY_ROUTE_AUTOMATIC && o.wire == RELAY_WIRE_NATIVE &&
            o.precision == RELAY_FP32_PARTIALS && o.permille == 0 && o.tiles == 0 &&
            o.alignment > 0 && o.wire_threshold == -1 && o.wire_report == NULL,
        "options defaults");
  relay_options_init(NULL);
  /* The wires' dtypes: native carries every one, fp8 the three floating types below 64 bits. */
  CHECK(relay_wire_carries(RELAY_WIRE_NATIVE, RELAY_INT32) == 1 &&
            relay_wire_carries(RELAY_WIRE_NATIVE, RELAY_FLOAT64) == 1 &&
            relay_wire_carries(RELAY_WIRE_FP8, RELAY_FLOAT32) == 1 &&
            relay_wire_carries(RELAY_WIRE_FP8_E4M3, RELAY_BFLOAT16) == 1 &&
            relay_wire_carries(RELAY_WIRE_FP8_E4M3_FNUZ, RELAY_FLOAT16) == 1 &&
            relay_wire_carries(RELAY_WIRE_FP8, RELAY_INT32) == 0 &&
            relay_wire_carries(RELAY_WIRE_FP8, RELAY_UINT8) == 0 &&
            relay_wire_carries(RELAY_WIRE_FP8, RELAY_FLOAT64) == 0 &&
            relay_wire_carries(4, RELAY_FLOAT32) == 0 &&
            relay_wire_carries(-1, RELAY_FLOAT32) == 0 &&
            relay_wire_carries(RELAY_WIRE_NATIVE, 10) == 0 &&
            relay_wire_carries(RELAY_WIRE_NATIVE, -1) == 0,
        "relay_wire_carries");
  relay_comm_config c;
  memset(&c, 0x5a, sizeof c);
  relay_comm_config_init(&c);
  CHECK(c.struct_size == sizeof c && c.rank == 0 && c.size == 0 && c.transport == NULL &&
            c.memory == RELAY_MEMORY_HOST && c.timeout_ms == 0 && c.all_gather == NULL &&
            c.barrier == NULL && c.user == NULL,
        "config defaults");
  relay_comm_config_init(NULL);

  EXPECT_STATUS(relay_bootstrap_put(NULL, 0, "x", 1), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_bootstrap_fail(NULL, RELAY_TIMEOUT, "x"), RELAY_INVALID_ARGUMENT);
}

/* Every function that takes a communicator, with `comm` not a live one. */
static void expect_bad_handle(relay_comm* comm, const char* what) {
  int32_t i = 0;
  const char* name = NULL;
  int32_t data[4] = {0};
  const int32_t ranks[] = {0, 1}, sizes[] = {2};
  const int64_t counts[] = {1};
  EXPECT_STATUS(relay_comm_rank(comm, &i), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT(what);
  EXPECT_STATUS(relay_comm_size(comm, &i), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_device(comm, &i), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_transport(comm, &name), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_async_status(comm), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_refuse(comm, RELAY_INVALID_BUFFER, "x", NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_register(comm, data, sizeof data), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_deregister(comm, data), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_register_graph_inputs(comm), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_deregister_graph_inputs(comm), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_abort(comm), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_control_limits(comm, &i, &i), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_control_join(comm), RELAY_INVALID_ARGUMENT);
  relay_comm* child = (relay_comm*)&i; /* not NULL: a failed split sets it so */
  EXPECT_STATUS(relay_comm_split(comm, 0, 0, &child), RELAY_INVALID_ARGUMENT);
  CHECK(child == NULL, "a failed split left its out pointer set");
  EXPECT_STATUS(relay_allreduce(comm, data, 4, data, 4, ranks, sizes, 1, counts, RELAY_INT32,
                                RELAY_SUM, NULL, NULL),
                RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_reduce_scatter(comm, data, 8, data, 4, ranks, sizes, 1, counts, RELAY_INT32,
                                     RELAY_SUM, NULL, NULL),
                RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(
      relay_all_gather(comm, data, 4, data, 8, ranks, sizes, 1, counts, RELAY_INT32, NULL, NULL),
      RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_all_to_all(comm, data, 8, data + 2, 8, ranks, sizes, 1, counts, RELAY_INT32,
                                 NULL, NULL),
                RELAY_INVALID_ARGUMENT);
  relay_call call;
  relay_call_init(&call);
  relay_async_call made = {0, 0};
  EXPECT_STATUS(relay_run_call_async(comm, &call, NULL, NULL, &made), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_mark(comm, NULL, NULL, &made), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_order_after(comm, 1, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_join_call(comm, 1, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_call_finished(comm, 1, &i), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_wait_call(comm, 1), RELAY_INVALID_ARGUMENT);
  CHECK(made.call == 0 && made.retired == 0, "a call on a bad handle was numbered");
  if (comm != NULL) EXPECT_STATUS(relay_comm_destroy(comm), RELAY_INVALID_ARGUMENT);
}

/* A one-rank board: the bootstrap of a communicator of size 1. */
static int32_t solo_all_gather(void* user, const void* mine, size_t bytes, int64_t timeout_ms,
                               relay_bootstrap_result* result) {
  (void)user;
  (void)timeout_ms;
  return relay_bootstrap_put(result, 0, mine, bytes);
}
/* The same, recording the least and the most timeout relay passed it. */
static int64_t timeout_passed[2];
static int32_t timed_all_gather(void* user, const void* mine, size_t bytes, int64_t timeout_ms,
                                relay_bootstrap_result* result) {
  if (timeout_ms < timeout_passed[0]) timeout_passed[0] = timeout_ms;
  if (timeout_ms > timeout_passed[1]) timeout_passed[1] = timeout_ms;
  return solo_all_gather(user, mine, bytes, timeout_ms, result);
}
static int32_t failing_all_gather(void* user, const void* mine, size_t bytes, int64_t timeout_ms,
                                  relay_bootstrap_result* result) {
  (void)user;
  (void)mine;
  (void)bytes;
  (void)timeout_ms;
  relay_bootstrap_fail(result, RELAY_TIMEOUT, "rank 5 did not join all-gather #1 (the test's)");
  return RELAY_TIMEOUT;
}
static int32_t forgetful_all_gather(void* user, const void* mine, size_t bytes, int64_t timeout_ms,
                                    relay_bootstrap_result* result) {
  (void)user;
  (void)mine;
  (void)bytes;
  (void)timeout_ms;
  (void)result;
  return RELAY_OK; /* puts nothing */
}

static void test_handles(void) {
  part = "handles";
  expect_bad_handle(NULL, "the communicator is NULL");
  int not_a_comm = 42;
  expect_bad_handle((relay_comm*)&not_a_comm, "not a live relay communicator");
  EXPECT_STATUS(relay_comm_destroy(NULL), RELAY_OK);

  relay_comm* comm = (relay_comm*)&not_a_comm;
  relay_comm_config c;
  relay_comm_config_init(&c);
  EXPECT_STATUS(relay_comm_create(NULL, &comm), RELAY_INVALID_ARGUMENT);
  CHECK(comm == NULL, "a failed create left a handle");
  EXPECT_STATUS(relay_comm_create(&c, NULL), RELAY_INVALID_ARGUMENT);
  c.size = 1;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("config.all_gather is NULL");
  c.all_gather = solo_all_gather;
  c.struct_size = 8;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("relay_comm_config_init");
  c.struct_size = sizeof c;
  c.rank = 1;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_INVALID_ARGUMENT);
  c.rank = 0;
  c.memory = 7;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_INVALID_ARGUMENT);
  c.memory = RELAY_MEMORY_HOST;
  c.device = -1;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_INVALID_ARGUMENT);
  c.device = 0;
  /* The transport rule (capi/transport_choice.hpp). */
  c.transport = "carrier-pigeon";
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("is not one of auto, shm, ipc, nccl");
  c.transport = "ipc";
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_UNSUPPORTED);
  EXPECT_ERROR_TEXT("for host memory use 'shm'");
  c.transport = "shm";
  c.memory = RELAY_MEMORY_DEVICE;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_UNSUPPORTED);
  EXPECT_ERROR_TEXT("'shm' moves host memory");
  if (strcmp(relay_transports(), "shm") == 0) {
    c.transport = "auto";
    EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_UNSUPPORTED);
    EXPECT_ERROR_TEXT("load librelay_c_cuda");
  }
  c.memory = RELAY_MEMORY_HOST;
  c.transport = NULL;
  c.all_gather = failing_all_gather;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_TIMEOUT);
  EXPECT_ERROR_TEXT("rank 5 did not join");
  CHECK(relay_last_error_peer() == 5, "the peer named is %d", relay_last_error_peer());
  c.all_gather = forgetful_all_gather;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("without the bytes of rank 0");
  CHECK(relay_last_error_peer() == -1, "an argument error names peer %d", relay_last_error_peer());

  /* The hosted helpers' fields (docs/hosted-helpers.md): a negative count is refused; an older
   * header's config (struct_size before helper_devices) is accepted, the fields past it unread
   * and RELAY_HELPER_DEVICES read instead: one process hosting a helper on device 0, 2 ranks. */
  c.all_gather = solo_all_gather;
  c.transport_bytes = 1 << 20;
  const int32_t device_zero[] = {0};
  c.helper_devices = device_zero;
  c.num_helper_devices = -1;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("relay_comm_config.num_helper_devices is -1, not a count");
  memset((char*)&c + offsetof(relay_comm_config, helper_devices), 0x5a,
         sizeof c - offsetof(relay_comm_config, helper_devices));
  c.struct_size = offsetof(relay_comm_config, helper_devices);
  setenv("RELAY_HELPER_DEVICES", "0", 1);
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_OK);
  int32_t hosted_size = -1;
  EXPECT_STATUS(relay_comm_size(comm, &hosted_size), RELAY_OK);
  CHECK(hosted_size == 2, "an older config with RELAY_HELPER_DEVICES=0 made %d ranks", hosted_size);
  EXPECT_STATUS(relay_comm_destroy(comm), RELAY_OK);
  comm = NULL;
  unsetenv("RELAY_HELPER_DEVICES");
  c.struct_size = sizeof c;
  c.helper_devices = NULL;
  c.num_helper_devices = 0;

  /* Set-up waits at least 10 s + 100 ms per rank, whatever the calls' timeout: every exchange of
   * a create is passed that (one rank: 10,100 ms), not timeout_ms. */
  c.all_gather = timed_all_gather;
  c.timeout_ms = 50;
  c.transport_bytes = 1 << 20;
  timeout_passed[0] = INT64_MAX;
  timeout_passed[1] = 0;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_OK);
  CHECK(timeout_passed[0] == 10100 && timeout_passed[1] == 10100,
        "set-up passed timeouts of %lld..%lld ms", (long long)timeout_passed[0],
        (long long)timeout_passed[1]);
  EXPECT_STATUS(relay_comm_destroy(comm), RELAY_OK);
  c.timeout_ms = 0;

  /* A communicator of one rank: everything but a collective (N must be 2 or more). */
  c.all_gather = solo_all_gather;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_OK);
  int32_t i = -1;
  const char* name = NULL;
  EXPECT_STATUS(relay_comm_rank(comm, &i), RELAY_OK);
  CHECK(i == 0, "rank %d", i);
  EXPECT_STATUS(relay_comm_size(comm, &i), RELAY_OK);
  CHECK(i == 1, "size %d", i);
  EXPECT_STATUS(relay_comm_device(comm, &i), RELAY_OK);
  CHECK(i == 0, "device %d", i);
  EXPECT_STATUS(relay_comm_transport(comm, &name), RELAY_OK);
  CHECK(name != NULL && strcmp(name, "shm") == 0, "auto on host memory took %s", name);
  EXPECT_STATUS(relay_comm_rank(comm, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_size(comm, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_device(comm, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_transport(comm, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_async_status(comm), RELAY_OK);
  int32_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_STATUS(relay_comm_register(comm, data, sizeof data), RELAY_OK);
  EXPECT_STATUS(relay_comm_deregister(comm, data), RELAY_OK);
  EXPECT_STATUS(relay_comm_register(comm, NULL, 0), RELAY_OK);
  /* Nothing captured, and the host transport stages nothing: accepted, nothing done. */
  EXPECT_STATUS(relay_comm_register_graph_inputs(comm), RELAY_OK);
  EXPECT_STATUS(relay_comm_deregister_graph_inputs(comm), RELAY_OK);
  EXPECT_STATUS(relay_comm_refuse(comm, RELAY_OK, "x", NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_refuse(comm, 99, "x", NULL), RELAY_INVALID_ARGUMENT);

  /* Splits of one rank: a communicator of its own (size 1, the parent's transport), none for
   * RELAY_NO_COLOR, a refused color, and no out pointer. */
  relay_comm* child = NULL;
  EXPECT_STATUS(relay_comm_split(comm, 5, 0, &child), RELAY_OK);
  CHECK(child != NULL && child != comm, "the split made no communicator");
  if (child != NULL) {
    EXPECT_STATUS(relay_comm_size(child, &i), RELAY_OK);
    CHECK(i == 1, "the child's size is %d", i);
    EXPECT_STATUS(relay_comm_transport(child, &name), RELAY_OK);
    CHECK(name != NULL && strcmp(name, "shm") == 0, "the child took %s", name);
    EXPECT_STATUS(relay_comm_destroy(child), RELAY_OK);
  }
  child = comm;
  EXPECT_STATUS(relay_comm_split(comm, RELAY_NO_COLOR, 0, &child), RELAY_OK);
  CHECK(child == NULL, "RELAY_NO_COLOR got a communicator");
  EXPECT_STATUS(relay_comm_split(comm, -2, 0, &child), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("color -2 is neither >= 0 nor relay::no_color (-1)");
  CHECK(child == NULL, "a refused split made a communicator");
  EXPECT_STATUS(relay_comm_split(comm, 0, 0, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_rank(comm, &i), RELAY_OK); /* the parent is untouched */

  const int32_t ranks[] = {0}, sizes[] = {1};
  const int64_t counts[] = {2};
  EXPECT_STATUS(relay_allreduce(comm, data, 8, data, 8, ranks, sizes, 1, counts, RELAY_INT32,
                                RELAY_SUM, NULL, NULL),
                RELAY_INVALID_GROUP);
  EXPECT_ERROR_TEXT("the node size N must be 2..64");
  EXPECT_STATUS(relay_allreduce(comm, data, 8, data, 8, NULL, sizes, 1, counts, RELAY_INT32,
                                RELAY_SUM, NULL, NULL),
                RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_allreduce(comm, data, 8, data, 8, ranks, NULL, 1, counts, RELAY_INT32,
                                RELAY_SUM, NULL, NULL),
                RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_allreduce(comm, data, 8, data, 8, ranks, sizes, 1, NULL, RELAY_INT32,
                                RELAY_SUM, NULL, NULL),
                RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_allreduce(comm, data, 8, data, 8, ranks, sizes, 0, counts, RELAY_INT32,
                                RELAY_SUM, NULL, NULL),
                RELAY_INVALID_GROUP);
  EXPECT_STATUS(
      relay_allreduce(comm, data, 8, data, 8, ranks, sizes, 1, counts, 42, RELAY_SUM, NULL, NULL),
      RELAY_UNSUPPORTED);
  EXPECT_STATUS(
      relay_allreduce(comm, data, 8, data, 8, ranks, sizes, 1, counts, RELAY_INT32, 3, NULL, NULL),
      RELAY_UNSUPPORTED);
  relay_options o;
  relay_options_init(&o);
  o.struct_size = 4;
  EXPECT_STATUS(relay_allreduce(comm, data, 8, data, 8, ranks, sizes, 1, counts, RELAY_INT32,
                                RELAY_SUM, &o, NULL),
                RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("relay_options_init");
  relay_options_init(&o);
  o.mode = RELAY_MODE_FUSED;
  EXPECT_STATUS(relay_reduce_scatter(comm, data, 8, data, 8, ranks, sizes, 1, counts, RELAY_INT32,
                                     RELAY_SUM, &o, NULL),
                RELAY_INVALID_GROUP);
  relay_options_init(&o);
  o.route = 9;
  EXPECT_STATUS(
      relay_all_gather(comm, data, 8, data, 8, ranks, sizes, 1, counts, RELAY_INT32, &o, NULL),
      RELAY_INVALID_ARGUMENT);
  relay_options_init(&o);
  o.wire = -1;
  EXPECT_STATUS(
      relay_all_to_all(comm, data, 8, data, 8, ranks, sizes, 1, counts, RELAY_INT32, &o, NULL),
      RELAY_INVALID_ARGUMENT);
  relay_options_init(&o);
  o.precision = 2;
  EXPECT_STATUS(
      relay_all_to_all(comm, data, 8, data, 8, ranks, sizes, 1, counts, RELAY_INT32, &o, NULL),
      RELAY_INVALID_ARGUMENT);
  /* relay_run_call reads its struct's own fields first: each bad one is this rank's refusal. */
  relay_call call;
  relay_call_init(&call);
  CHECK(call.struct_size == sizeof call && call.collective == RELAY_ALLREDUCE &&
            call.op == RELAY_SUM && call.num_groups == 0 && call.send == NULL &&
            call.options == NULL,
        "relay_call_init");
  relay_call_init(NULL);
  EXPECT_STATUS(relay_run_call(comm, NULL, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("call is NULL");
  call.group_ranks = ranks;
  call.group_sizes = sizes;
  call.num_groups = 1;
  call.counts = counts;
  call.dtype = RELAY_INT32;
  call.send = call.recv = data;
  call.send_bytes = call.recv_bytes = 8;
  call.struct_size = sizeof call - 8;
  EXPECT_STATUS(relay_run_call(comm, &call, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("relay_call_init");
  call.struct_size = sizeof call;
  call.collective = 4;
  EXPECT_STATUS(relay_run_call(comm, &call, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("collective 4 is not a relay_collective");
  call.collective = RELAY_REDUCE_SCATTER;
  call.op = 7;
  EXPECT_STATUS(relay_run_call(comm, &call, NULL), RELAY_UNSUPPORTED);
  EXPECT_ERROR_TEXT("op 7 is not a relay_op");
  call.collective = RELAY_ALLREDUCE;
  call.op = RELAY_SUM;
  EXPECT_STATUS(relay_run_call(comm, &call, NULL), RELAY_INVALID_GROUP); /* the call's own */
  EXPECT_ERROR_TEXT("the node size N must be 2..64");
  call.counts = NULL;
  EXPECT_STATUS(relay_run_call(comm, &call, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("counts is NULL");
  EXPECT_STATUS(relay_run_call(NULL, &call, NULL), RELAY_INVALID_ARGUMENT);
  CHECK(data[0] == 1 && data[7] == 8, "a refused call wrote into the buffer");
  /* The async entries: the same call's checks, a NULL out refused, and no number given to a
   * call that was refused or never made. */
  relay_async_call made = {0, 0};
  EXPECT_STATUS(relay_run_call_async(comm, NULL, NULL, NULL, &made), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("call is NULL");
  EXPECT_STATUS(relay_run_call_async(comm, &call, NULL, NULL, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("out is NULL");
  EXPECT_STATUS(relay_comm_mark(comm, NULL, NULL, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("out is NULL");
  CHECK(made.call == 0 && made.retired == 0, "a refused async call was numbered");
  EXPECT_STATUS(relay_comm_order_after(comm, 1, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("no async call numbered 1 was made on this communicator (it made 0");
  int32_t finished = -1;
  EXPECT_STATUS(relay_comm_call_finished(comm, 1, &finished), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_wait_call(comm, 1), RELAY_INVALID_ARGUMENT);
  CHECK(finished == -1, "a refused question wrote its answer");

  EXPECT_STATUS(relay_comm_abort(comm), RELAY_OK);
  EXPECT_STATUS(relay_allreduce(comm, data, 8, data, 8, ranks, sizes, 1, counts, RELAY_INT32,
                                RELAY_SUM, NULL, NULL),
                RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("aborted");
  EXPECT_STATUS(relay_comm_abort(comm), RELAY_OK);
  EXPECT_STATUS(relay_comm_destroy(comm), RELAY_OK);
  expect_bad_handle(comm, "not a live relay communicator"); /* destroyed */

  /* Without the launcher's variables. */
  unsetenv("RELAY_RANK");
  unsetenv("RANK");
  EXPECT_STATUS(relay_comm_create_from_environment("shm", RELAY_MEMORY_HOST, &comm),
                RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("RELAY_RANK (or RANK) is not set");
  EXPECT_STATUS(relay_comm_create_from_environment("shm", 3, &comm), RELAY_INVALID_ARGUMENT);
  EXPECT_STATUS(relay_comm_create_from_environment("shm", RELAY_MEMORY_HOST, NULL),
                RELAY_INVALID_ARGUMENT);
}

/* ---- part 2: collectives across forked processes -----------------------------------------------
 */

/* rank r's input element i of a call: distinct per rank and element, small enough to sum. */
static int32_t input_of(int r, int i) {
  return 1000 * (r + 1) + i;
}

static void poison(int32_t* p, int n) {
  for (int i = 0; i < n; ++i)
    p[i] = (int32_t)0x7f7f7f7f;
}

/* The four collectives among ranks {1, 3} of 4 (ranks 0 and 2 help, passing NULL), then fused
 * allreduce over {0,1},{2,3}, each output against its value by hand. */
static void run_collectives(relay_comm* comm, int me) {
  enum { n = 37 };
  int32_t in[2 * n], out[2 * n];
  const int32_t single[] = {1, 3}, single_size[] = {2};
  const int64_t count[] = {n};
  const int active = me == 1 || me == 3;
  const int k = me == 3 ? 1 : 0; /* index in the group */
  const int32_t* send = active ? in : NULL;
  int32_t* recv = active ? out : NULL;
  const size_t one = active ? sizeof(int32_t) * n : 0, two = 2 * one;

  part = "allreduce";
  for (int i = 0; i < 2 * n; ++i)
    in[i] = input_of(me, i);
  poison(out, 2 * n);
  EXPECT_STATUS(relay_allreduce(comm, send, one, recv, one, single, single_size, 1, count,
                                RELAY_INT32, RELAY_SUM, NULL, NULL),
                RELAY_OK);
  for (int i = 0; active && i < n; ++i)
    CHECK(out[i] == input_of(1, i) + input_of(3, i), "rank %d out[%d] = %d", me, i, out[i]);
  for (int i = n; i < 2 * n; ++i)
    CHECK(out[i] == (int32_t)0x7f7f7f7f, "rank %d wrote past its output at %d", me, i);
  for (int i = 0; i < 2 * n; ++i)
    CHECK(in[i] == input_of(me, i), "the input changed at %d", i);

  part = "allreduce avg, in place";
  relay_options o;
  relay_options_init(&o);
  o.route = RELAY_ROUTE_DIRECT;
  float f[n];
  for (int i = 0; i < n; ++i)
    f[i] = (float)(me * 4 + i);
  EXPECT_STATUS(relay_allreduce(comm, active ? f : NULL, active ? sizeof f : 0, active ? f : NULL,
                                active ? sizeof f : 0, single, single_size, 1, count, RELAY_FLOAT32,
                                RELAY_AVG, &o, NULL),
                RELAY_OK);
  for (int i = 0; i < n; ++i) {
    const float want = active ? (float)(1 * 4 + i + 3 * 4 + i) / 2 : (float)(me * 4 + i);
    CHECK(f[i] == want, "rank %d avg[%d] = %g, not %g", me, i, f[i], want);
  }

  part = "the wire report";
  /* fp8 with threshold 0 takes the machine's encoding (mi300x: e4m3 fnuz) at any size; the
   * report names it with the bytes compared (n floats) on every rank, helpers too. */
  relay_wire_report report;
  memset(&report, 0x5a, sizeof report);
  o.wire = RELAY_WIRE_FP8;
  o.wire_threshold = 0;
  o.wire_report = &report;
  EXPECT_STATUS(relay_allreduce(comm, active ? f : NULL, active ? sizeof f : 0, active ? f : NULL,
                                active ? sizeof f : 0, single, single_size, 1, count, RELAY_FLOAT32,
                                RELAY_SUM, &o, NULL),
                RELAY_OK);
  CHECK(report.requested == RELAY_WIRE_FP8_E4M3_FNUZ && report.taken == RELAY_WIRE_FP8_E4M3_FNUZ &&
            report.bytes == sizeof f && report.threshold_bytes == 0,
        "rank %d fp8 report: %d %d %llu %llu", me, report.requested, report.taken,
        (unsigned long long)report.bytes, (unsigned long long)report.threshold_bytes);
  /* Below a threshold of one byte more than the call, native, and the report says why. */
  o.wire_threshold = (int64_t)sizeof f + 1;
  EXPECT_STATUS(relay_allreduce(comm, active ? f : NULL, active ? sizeof f : 0, active ? f : NULL,
                                active ? sizeof f : 0, single, single_size, 1, count, RELAY_FLOAT32,
                                RELAY_SUM, &o, NULL),
                RELAY_OK);
  CHECK(report.requested == RELAY_WIRE_FP8_E4M3_FNUZ && report.taken == RELAY_WIRE_NATIVE &&
            report.bytes == sizeof f && report.threshold_bytes == sizeof f + 1,
        "rank %d report below the threshold: %d %d", me, report.requested, report.taken);
  /* A refused call (fp8 on int32) leaves the report as it was. */
  memset(&report, 0x5a, sizeof report);
  EXPECT_STATUS(relay_allreduce(comm, active ? in : NULL, active ? sizeof(int32_t) * n : 0,
                                active ? in : NULL, active ? sizeof(int32_t) * n : 0, single,
                                single_size, 1, count, RELAY_INT32, RELAY_SUM, &o, NULL),
                RELAY_UNSUPPORTED);
  CHECK(report.requested == 0x5a5a5a5a, "rank %d: a refused call wrote the report", me);
  /* Options of the header before wire_report (a smaller struct_size) are accepted. */
  o.struct_size = offsetof(relay_options, wire_report);
  o.wire = RELAY_WIRE_NATIVE;
  EXPECT_STATUS(relay_allreduce(comm, active ? f : NULL, active ? sizeof f : 0, active ? f : NULL,
                                active ? sizeof f : 0, single, single_size, 1, count, RELAY_FLOAT32,
                                RELAY_SUM, &o, NULL),
                RELAY_OK);
  CHECK(report.requested == 0x5a5a5a5a, "rank %d: options without the field wrote it", me);

  part = "reduce-scatter";
  poison(out, 2 * n);
  EXPECT_STATUS(relay_reduce_scatter(comm, send, two, recv, one, single, single_size, 1, count,
                                     RELAY_INT32, RELAY_SUM, NULL, NULL),
                RELAY_OK);
  for (int i = 0; active && i < n; ++i)
    CHECK(out[i] == input_of(1, k * n + i) + input_of(3, k * n + i), "rank %d rs[%d] = %d", me, i,
          out[i]);

  part = "all-gather";
  poison(out, 2 * n);
  EXPECT_STATUS(relay_all_gather(comm, send, one, recv, two, single, single_size, 1, count,
                                 RELAY_INT32, NULL, NULL),
                RELAY_OK);
  for (int j = 0; active && j < 2; ++j)
    for (int i = 0; i < n; ++i)
      CHECK(out[j * n + i] == input_of(j == 0 ? 1 : 3, i), "rank %d ag[%d][%d] = %d", me, j, i,
            out[j * n + i]);

  part = "all-to-all";
  poison(out, 2 * n);
  EXPECT_STATUS(relay_all_to_all(comm, send, two, recv, two, single, single_size, 1, count,
                                 RELAY_INT32, NULL, NULL),
                RELAY_OK);
  /* Segment j of the output is segment k of active rank j's input. */
  for (int j = 0; active && j < 2; ++j)
    for (int i = 0; i < n; ++i)
      CHECK(out[j * n + i] == input_of(j == 0 ? 1 : 3, k * n + i), "rank %d a2a[%d][%d] = %d", me,
            j, i, out[j * n + i]);

  part = "fused allreduce";
  const int32_t fused[] = {0, 1, 2, 3}, fused_sizes[] = {2, 2};
  const int64_t counts[] = {n, 5};
  const int g = me / 2, count_g = g == 0 ? n : 5;
  poison(out, 2 * n);
  EXPECT_STATUS(relay_allreduce(comm, in, sizeof(int32_t) * count_g, out, sizeof(int32_t) * count_g,
                                fused, fused_sizes, 2, counts, RELAY_INT32, RELAY_SUM, NULL, NULL),
                RELAY_OK);
  for (int i = 0; i < count_g; ++i)
    CHECK(out[i] == input_of(2 * g, i) + input_of(2 * g + 1, i), "rank %d fused[%d] = %d", me, i,
          out[i]);
  CHECK(out[count_g] == (int32_t)0x7f7f7f7f, "rank %d wrote past its output", me);

  part = "a repeated call allocates nothing";
  counting = 1;
  allocations = 0;
  const int status =
      relay_allreduce(comm, in, sizeof(int32_t) * count_g, out, sizeof(int32_t) * count_g, fused,
                      fused_sizes, 2, counts, RELAY_INT32, RELAY_SUM, NULL, NULL);
  counting = 0;
  EXPECT_STATUS(status, RELAY_OK);
#ifndef RELAY_C_TEST_SANITIZED
  CHECK(allocations == 0, "rank %d: the repeated call allocated %ld times", me, allocations);
#endif

  part = "relay_run_call";
  /* The same calls as relay_call structs, each output against its value by hand: a repeated
   * call allocates nothing, and all-gather and all-to-all do not read the op. */
  relay_call call;
  relay_call_init(&call);
  call.group_ranks = single;
  call.group_sizes = single_size;
  call.num_groups = 1;
  call.counts = count;
  call.dtype = RELAY_INT32;
  call.send = send;
  call.recv = recv;
  for (int c = RELAY_ALLREDUCE; c <= RELAY_ALL_TO_ALL; ++c) {
    call.collective = c;
    call.op = c == RELAY_ALL_GATHER || c == RELAY_ALL_TO_ALL ? 99 : RELAY_SUM;
    call.send_bytes = c == RELAY_REDUCE_SCATTER || c == RELAY_ALL_TO_ALL ? two : one;
    call.recv_bytes = c == RELAY_ALL_GATHER || c == RELAY_ALL_TO_ALL ? two : one;
    for (int round = 0; round < 2; ++round) {
      poison(out, 2 * n);
      counting = round;
      allocations = 0;
      const int st_call = relay_run_call(comm, &call, NULL);
      counting = 0;
      EXPECT_STATUS(st_call, RELAY_OK);
#ifndef RELAY_C_TEST_SANITIZED
      CHECK(round == 0 || allocations == 0, "rank %d: collective %d repeated allocated %ld", me, c,
            allocations);
#endif
      for (int i = 0; active && i < n; ++i) {
        const int32_t first = c == RELAY_ALLREDUCE ? input_of(1, i) + input_of(3, i)
                              : c == RELAY_REDUCE_SCATTER
                                  ? input_of(1, k * n + i) + input_of(3, k * n + i)
                              : c == RELAY_ALL_GATHER ? input_of(1, i)
                                                      : input_of(1, k * n + i);
        CHECK(out[i] == first, "rank %d: collective %d out[%d] = %d, not %d", me, c, i, out[i],
              first);
        if (c == RELAY_ALL_GATHER || c == RELAY_ALL_TO_ALL) {
          const int32_t second = input_of(3, (c == RELAY_ALL_TO_ALL ? k * n : 0) + i);
          CHECK(out[n + i] == second, "rank %d: collective %d out[%d] = %d, not %d", me, c, n + i,
                out[n + i], second);
        }
      }
    }
  }
  part = "relay_run_call_async";
  /* The allreduce as async calls on shm, which ignores the streams: numbered from 1 and finished
   * when they return (retired = call), each output against its value by hand; a repeated one
   * allocates nothing. */
  call.collective = RELAY_ALLREDUCE;
  call.op = RELAY_SUM;
  call.send_bytes = call.recv_bytes = one;
  relay_async_call made = {0, 0};
  for (uint64_t number = 1; number <= 2; ++number) {
    poison(out, 2 * n);
    counting = number == 2;
    allocations = 0;
    const int st_async = relay_run_call_async(comm, &call, NULL, NULL, &made);
    counting = 0;
    EXPECT_STATUS(st_async, RELAY_OK);
#ifndef RELAY_C_TEST_SANITIZED
    CHECK(number == 1 || allocations == 0, "rank %d: a repeated async call allocated %ld", me,
          allocations);
#endif
    CHECK(made.call == number && made.retired == number, "rank %d: async call %llu: %llu, %llu", me,
          (unsigned long long)number, (unsigned long long)made.call,
          (unsigned long long)made.retired);
    for (int i = 0; active && i < n; ++i)
      CHECK(out[i] == input_of(1, i) + input_of(3, i), "rank %d: async out[%d] = %d", me, i,
            out[i]);
  }
  relay_async_call mark = {0, 0};
  EXPECT_STATUS(relay_comm_mark(comm, NULL, NULL, &mark), RELAY_OK);
  CHECK(mark.call == 3 && mark.retired == 3, "rank %d: the mark is %llu, %llu", me,
        (unsigned long long)mark.call, (unsigned long long)mark.retired);
  int32_t finished = -1;
  EXPECT_STATUS(relay_comm_call_finished(comm, 2, &finished), RELAY_OK);
  CHECK(finished == 1, "rank %d: async call 2 has not finished on shm", me);
  EXPECT_STATUS(relay_comm_order_after(comm, 3, NULL), RELAY_OK);
  EXPECT_STATUS(relay_comm_wait_call(comm, 1), RELAY_OK);
  EXPECT_STATUS(relay_comm_order_after(comm, 4, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("no async call numbered 4 was made on this communicator (it made 3");
  /* Joining a call: the ordering's check, then the async status (nothing failed). */
  EXPECT_STATUS(relay_comm_join_call(comm, 3, NULL), RELAY_OK);
  EXPECT_STATUS(relay_comm_join_call(comm, 4, NULL), RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("no async call numbered 4 was made on this communicator (it made 3");
  EXPECT_STATUS(relay_comm_wait_call(comm, 0), RELAY_INVALID_ARGUMENT);
  /* A NULL out on rank 3 alone is its refusal: every other rank fails at once naming it, nothing
   * is written, and the refused call has no number anywhere. */
  poison(out, 2 * n);
  const int refused_async = relay_run_call_async(comm, &call, NULL, NULL, me == 3 ? NULL : &made);
  CHECK(refused_async == (me == 3 ? RELAY_INVALID_ARGUMENT : RELAY_PEER_ERROR), "rank %d: %s (%s)",
        me, relay_status_name(refused_async), relay_last_error());
  if (me != 3)
    CHECK(relay_last_error_peer() == 3 && strstr(relay_last_error(), "out is NULL") != NULL,
          "rank %d: the error names rank %d (%s)", me, relay_last_error_peer(), relay_last_error());
  for (int i = 0; i < 2 * n; ++i)
    CHECK(out[i] == (int32_t)0x7f7f7f7f, "rank %d: a refused async call wrote out[%d]", me, i);
  EXPECT_STATUS(relay_comm_call_finished(comm, 4, &finished), RELAY_INVALID_ARGUMENT);

  /* A bad field on rank 3 alone is its refusal: every other rank fails at once naming it. */
  call.collective = me == 3 ? 9 : RELAY_ALLREDUCE;
  call.op = RELAY_SUM;
  call.send_bytes = call.recv_bytes = one;
  poison(out, 2 * n);
  const int refused = relay_run_call(comm, &call, NULL);
  CHECK(refused == (me == 3 ? RELAY_INVALID_ARGUMENT : RELAY_PEER_ERROR), "rank %d: %s (%s)", me,
        relay_status_name(refused), relay_last_error());
  if (me != 3)
    CHECK(relay_last_error_peer() == 3 && strstr(relay_last_error(), "collective 9") != NULL,
          "rank %d: the error names rank %d (%s)", me, relay_last_error_peer(), relay_last_error());
  for (int i = 0; i < 2 * n; ++i)
    CHECK(out[i] == (int32_t)0x7f7f7f7f, "rank %d: a refused call wrote out[%d]", me, i);

  part = "a rank's bad buffer";
  /* Rank 3's output is too small: it is refused there, every other rank hears of it, and no
   * output is written anywhere. */
  poison(out, 2 * n);
  const int st = relay_allreduce(comm, in, sizeof(int32_t) * count_g, out,
                                 sizeof(int32_t) * count_g - (me == 3 ? 4 : 0), fused, fused_sizes,
                                 2, counts, RELAY_INT32, RELAY_SUM, NULL, NULL);
  CHECK(st == (me == 3 ? RELAY_INVALID_BUFFER : RELAY_PEER_ERROR), "rank %d: %s (%s)", me,
        relay_status_name(st), relay_last_error());
  if (me != 3)
    CHECK(relay_last_error_peer() == 3, "rank %d: the error names rank %d (%s)", me,
          relay_last_error_peer(), relay_last_error());
  for (int i = 0; i < 2 * n; ++i)
    CHECK(out[i] == (int32_t)0x7f7f7f7f, "rank %d: a refused call wrote out[%d]", me, i);

  part = "after the refused call";
  EXPECT_STATUS(relay_allreduce(comm, in, sizeof(int32_t) * count_g, out, sizeof(int32_t) * count_g,
                                fused, fused_sizes, 2, counts, RELAY_INT32, RELAY_SUM, NULL, NULL),
                RELAY_OK);
  CHECK(out[0] == input_of(2 * g, 0) + input_of(2 * g + 1, 0), "rank %d: wrong after", me);

  part = "a refusal";
  /* Rank 2 refuses the call the others make: each of them fails at once naming it. */
  poison(out, 2 * n);
  const double start = now_ms();
  if (me == 2) {
    EXPECT_STATUS(relay_comm_refuse(comm, RELAY_INVALID_BUFFER, "rank 2's own check failed", NULL),
                  RELAY_INVALID_BUFFER);
    EXPECT_ERROR_TEXT("rank 2's own check failed");
  } else {
    const int refused =
        relay_allreduce(comm, in, sizeof(int32_t) * count_g, out, sizeof(int32_t) * count_g, fused,
                        fused_sizes, 2, counts, RELAY_INT32, RELAY_SUM, NULL, NULL);
    CHECK(refused == RELAY_PEER_ERROR && relay_last_error_peer() == 2, "rank %d: %s naming %d (%s)",
          me, relay_status_name(refused), relay_last_error_peer(), relay_last_error());
    EXPECT_ERROR_TEXT("rank 2's own check failed");
    for (int i = 0; i < 2 * n; ++i)
      CHECK(out[i] == (int32_t)0x7f7f7f7f, "rank %d: a refused call wrote out[%d]", me, i);
  }
  CHECK(now_ms() - start < RANK_TIMEOUT_MS + BUSY_MARGIN_MS, "rank %d: the refusal took %.0f ms",
        me, now_ms() - start);
  EXPECT_STATUS(relay_allreduce(comm, in, sizeof(int32_t) * count_g, out, sizeof(int32_t) * count_g,
                                fused, fused_sizes, 2, counts, RELAY_INT32, RELAY_SUM, NULL, NULL),
                RELAY_OK);
  CHECK(out[0] == input_of(2 * g, 0) + input_of(2 * g + 1, 0), "rank %d: wrong after", me);
}

/* Splits of 4 ranks, each output against its value by hand: the even and the odd ranks, keys
 * reversing their order ({2, 0} and {3, 1}); ranks 0-2 with rank 3 in none (0 then helps the
 * pair {1, 2} on the relay route); a color refused on
 * rank 2 fails the split on every rank naming it. The parent keeps working after each. */
static void run_split(relay_comm* comm, int me) {
  enum { n = 19 };
  int32_t in[n], out[n];
  const int32_t pair[] = {0, 1}, pair_size[] = {2}, last_two[] = {1, 2};
  const int64_t count[] = {n};
  relay_options o;
  relay_options_init(&o);
  o.route = RELAY_ROUTE_DIRECT; /* a communicator of one group has no helper to relay through */
  for (int i = 0; i < n; ++i)
    in[i] = input_of(me, i);

  part = "split by parity";
  relay_comm* half = NULL;
  EXPECT_STATUS(relay_comm_split(comm, me % 2, -me, &half), RELAY_OK);
  if (half == NULL) return;
  int32_t rank = -1, size = -1;
  EXPECT_STATUS(relay_comm_rank(half, &rank), RELAY_OK);
  EXPECT_STATUS(relay_comm_size(half, &size), RELAY_OK);
  CHECK(size == 2 && rank == (me < 2 ? 1 : 0), "rank %d is rank %d of %d", me, rank, size);
  poison(out, n);
  EXPECT_STATUS(relay_allreduce(half, in, sizeof in, out, sizeof out, pair, pair_size, 1, count,
                                RELAY_INT32, RELAY_SUM, &o, NULL),
                RELAY_OK);
  for (int i = 0; i < n; ++i)
    CHECK(out[i] == input_of(me % 2, i) + input_of(me % 2 + 2, i), "rank %d out[%d] = %d", me, i,
          out[i]);
  /* Ranked by key: the child's rank 0 (parent rank 2 or 3) gathers first. */
  int32_t gathered[2 * n];
  poison(gathered, 2 * n);
  const int64_t one[] = {n};
  EXPECT_STATUS(relay_all_gather(half, in, sizeof in, gathered, sizeof gathered, pair, pair_size, 1,
                                 one, RELAY_INT32, &o, NULL),
                RELAY_OK);
  for (int i = 0; i < n; ++i)
    CHECK(gathered[i] == input_of(me % 2 + 2, i) && gathered[n + i] == input_of(me % 2, i),
          "rank %d gathered[%d] = %d, [%d] = %d", me, i, gathered[i], n + i, gathered[n + i]);
  EXPECT_STATUS(relay_comm_destroy(half), RELAY_OK);

  part = "split with one rank in none";
  relay_comm* first = comm;
  EXPECT_STATUS(relay_comm_split(comm, me == 3 ? RELAY_NO_COLOR : 7, me, &first), RELAY_OK);
  CHECK((first == NULL) == (me == 3), "rank %d: %s", me, first ? "a communicator" : "none");
  if (first != NULL) {
    const int active = me != 0;
    poison(out, n);
    EXPECT_STATUS(relay_allreduce(first, active ? in : NULL, active ? sizeof in : 0,
                                  active ? out : NULL, active ? sizeof out : 0, last_two, pair_size,
                                  1, count, RELAY_INT32, RELAY_SUM, NULL, NULL),
                  RELAY_OK);
    for (int i = 0; i < n; ++i)
      CHECK(out[i] == (active ? input_of(1, i) + input_of(2, i) : (int32_t)0x7f7f7f7f),
            "rank %d out[%d] = %d", me, i, out[i]);
    EXPECT_STATUS(relay_comm_destroy(first), RELAY_OK);
  }

  part = "a split refused on rank 2";
  relay_comm* refused = comm;
  const int st = relay_comm_split(comm, me == 2 ? -5 : 0, me, &refused);
  if (me == 2) {
    CHECK(st == RELAY_INVALID_ARGUMENT, "rank 2: %s", relay_status_name(st));
  } else {
    CHECK(st != RELAY_OK && relay_last_error_peer() == 2, "rank %d: %s naming %d (%s)", me,
          relay_status_name(st), relay_last_error_peer(), relay_last_error());
  }
  CHECK(refused == NULL, "rank %d: a failed split made a communicator", me);

  part = "the parent after its splits";
  const int32_t fused[] = {0, 1, 2, 3}, fused_sizes[] = {2, 2};
  const int64_t counts[] = {n, n};
  poison(out, n);
  EXPECT_STATUS(relay_allreduce(comm, in, sizeof in, out, sizeof out, fused, fused_sizes, 2, counts,
                                RELAY_INT32, RELAY_SUM, NULL, NULL),
                RELAY_OK);
  const int g = me / 2;
  for (int i = 0; i < n; ++i)
    CHECK(out[i] == input_of(2 * g, i) + input_of(2 * g + 1, i), "rank %d out[%d] = %d", me, i,
          out[i]);
}

/* Rank 1 aborts: every other rank's next call fails at once naming it. */
/* Serving ranks on a communicator split off the job's: ranks 0 and 1 call (rank 0 publishes), 2
 * and 3 serve; five allreduce and all-gather calls of varying counts, each output against its
 * value by hand; then torchcomms' plan stream, its limits (128 counts, RCCLX's default where
 * NCCL_RELAY_CONTROL_MAX_CALLS is unset; 8186 in a slot), a plan of 129 counts refused, and its
 * five fields against constants (op_code 3, dtype 7, red_op 2, flags 0: distinct, so a swap of
 * any two shows). */
static void run_serving(relay_comm* comm, int me) {
  enum { most = 300, calls = 5 };
  int32_t in[most], out[2 * most + 1];
  const int32_t pair[] = {0, 1}, pair_size[] = {2};
  const int64_t lengths[calls] = {1, 300, 17, 64, 299};
  relay_comm* served = NULL;
  part = "serving: split";
  EXPECT_STATUS(relay_comm_split(comm, 0, me, &served), RELAY_OK);
  if (served == NULL) return;
  part = "serving: attach";
  int32_t max_calls = -1, counts_held = -1;
  EXPECT_STATUS(relay_comm_control_limits(served, &max_calls, &counts_held),
                RELAY_INVALID_ARGUMENT);
  EXPECT_ERROR_TEXT("no control plane");
  EXPECT_STATUS(relay_comm_attach_plane(served, me < 2 ? RELAY_PLANE_CALL : RELAY_PLANE_SERVE),
                RELAY_OK);
  EXPECT_STATUS(relay_comm_control_limits(served, &max_calls, &counts_held), RELAY_OK);
  CHECK(max_calls == 128 && counts_held == 8186, "rank %d: limits %d and %d", me, max_calls,
        counts_held);
  EXPECT_STATUS(relay_comm_control_limits(served, NULL, NULL), RELAY_OK);
  if (me >= 2) {
    part = "serving: serve";
    uint64_t n_served = 0;
    EXPECT_STATUS(relay_comm_serve(served, 0, NULL, &n_served), RELAY_OK);
    CHECK(n_served == calls, "rank %d served %llu calls, not %d", me, (unsigned long long)n_served,
          calls);
  } else {
    part = "serving: a calling rank serves";
    EXPECT_STATUS(relay_comm_serve(served, 0, NULL, NULL), RELAY_INVALID_ARGUMENT);
    EXPECT_ERROR_TEXT("serve() is for the ranks that serve");
    for (int c = 0; c < calls; ++c) {
      const int n = (int)lengths[c];
      const int64_t count[] = {lengths[c]};
      for (int i = 0; i < n; ++i)
        in[i] = input_of(me, i + c);
      poison(out, 2 * most + 1);
      part = "serving: a call";
      if (c % 2 == 0) {
        EXPECT_STATUS(
            relay_allreduce(served, in, sizeof(int32_t) * n, out, sizeof(int32_t) * n, pair,
                            pair_size, 1, count, RELAY_INT32, RELAY_SUM, NULL, NULL),
            RELAY_OK);
        for (int i = 0; i < n; ++i)
          CHECK(out[i] == input_of(0, i + c) + input_of(1, i + c), "call %d: rank %d out[%d] = %d",
                c, me, i, out[i]);
      } else {
        EXPECT_STATUS(
            relay_all_gather(served, in, sizeof(int32_t) * n, out, 2 * sizeof(int32_t) * n, pair,
                             pair_size, 1, count, RELAY_INT32, NULL, NULL),
            RELAY_OK);
        for (int i = 0; i < 2 * n; ++i)
          CHECK(out[i] == input_of(i / n, i % n + c), "call %d: rank %d out[%d] = %d", c, me, i,
                out[i]);
      }
      CHECK(out[2 * most] == (int32_t)0x7f7f7f7f, "call %d wrote past its output", c);
    }
    part = "serving: stop";
    EXPECT_STATUS(relay_comm_stop_serving(served), RELAY_OK);
  }

  part = "serving: torchcomms' plan";
  const int64_t plan_counts[] = {1024, 512, 256};
  if (me == 0) {
    int64_t too_many[129];
    for (int i = 0; i < 129; ++i)
      too_many[i] = 1000 + i;
    EXPECT_STATUS(relay_comm_control_publish(served, 0, too_many, 129, 3, 7, 2, 0, 2000),
                  RELAY_INVALID_ARGUMENT);
    EXPECT_ERROR_TEXT("the plan of epoch 0 has 129 counts; a torchcomms plan holds at most 128");
    EXPECT_STATUS(relay_comm_control_join(served), RELAY_INVALID_ARGUMENT);
    EXPECT_ERROR_TEXT("publishes this plane's plans");
    EXPECT_STATUS(relay_comm_control_publish(served, 0, plan_counts, 3, 3, 7, 2, 1, 2000),
                  RELAY_INVALID_ARGUMENT);
    EXPECT_ERROR_TEXT("flags 1");
    EXPECT_STATUS(relay_comm_control_publish(served, 0, plan_counts, 3, 3, 7, 2, 0, 2000),
                  RELAY_OK);
  } else {
    int32_t op = -1, type = -1, red = -1, flags = -1, n = -1;
    int64_t got[4] = {-1, -1, -1, -1};
    EXPECT_STATUS(relay_comm_control_join(served), RELAY_OK);
    EXPECT_STATUS(relay_comm_control_consume(served, 0, 5000, &op, &type, &red, &flags, got, 2, &n),
                  RELAY_INVALID_ARGUMENT);
    CHECK(n == 3 && got[0] == -1, "rank %d: a plan too long for the room: %d counts, got[0] %lld",
          me, n, (long long)got[0]);
    EXPECT_STATUS(relay_comm_control_consume(served, 0, 5000, &op, &type, &red, &flags, got, 4, &n),
                  RELAY_OK);
    CHECK(op == 3 && type == 7 && red == 2 && flags == 0, "rank %d: op %d dtype %d red %d flags %d",
          me, op, type, red, flags);
    CHECK(n == 3 && got[0] == 1024 && got[1] == 512 && got[2] == 256 && got[3] == -1,
          "rank %d: %d counts %lld %lld %lld %lld", me, n, (long long)got[0], (long long)got[1],
          (long long)got[2], (long long)got[3]);
  }
  EXPECT_STATUS(relay_comm_destroy(served), RELAY_OK);
}

static void run_abort(relay_comm* comm, int me) {
  part = "abort";
  int32_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
  const int32_t fused[] = {0, 1, 2, 3}, fused_sizes[] = {2, 2};
  const int64_t counts[] = {8, 8};
  poison(out, 8);
  const double start = now_ms();
  if (me == 1) {
    EXPECT_STATUS(relay_comm_abort(comm), RELAY_OK);
    EXPECT_STATUS(relay_allreduce(comm, in, sizeof in, out, sizeof out, fused, fused_sizes, 2,
                                  counts, RELAY_INT32, RELAY_SUM, NULL, NULL),
                  RELAY_INVALID_ARGUMENT);
    EXPECT_ERROR_TEXT("aborted");
  } else {
    const int st = relay_allreduce(comm, in, sizeof in, out, sizeof out, fused, fused_sizes, 2,
                                   counts, RELAY_INT32, RELAY_SUM, NULL, NULL);
    CHECK(st != RELAY_OK && relay_last_error_peer() == 1, "rank %d: %s naming %d (%s)", me,
          relay_status_name(st), relay_last_error_peer(), relay_last_error());
    CHECK(out[0] == (int32_t)0x7f7f7f7f, "rank %d: the failed call wrote its output", me);
  }
  CHECK(now_ms() - start < RANK_TIMEOUT_MS + BUSY_MARGIN_MS,
        "rank %d: the abort took %.0f ms to reach it", me, now_ms() - start);
}

/* What the environment's ranks share (mapped before they fork): the store's port, and for the
 * killed helper each rank's pid and a count of the ranks past their earlier calls. */
struct shared {
  int port;
  int arrived;
  pid_t pids[MAX_RANKS];
};
static int killed_rank = -1; /* run_ranks: this rank dies of SIGKILL, as it should */

/* Rank 3, a helper of the pair {0, 1}, is SIGKILLed: every survivor's call fails at once with
 * RELAY_PEER_LOST, its text starting with the dead rank and its pid, the peer rank 3, and the
 * output untouched. */
static void run_killed(relay_comm* comm, int me, struct shared* sh) {
  part = "a killed helper";
  /* Every rank is past its earlier calls before rank 3 dies (alarm() bounds the wait). */
  sh->pids[me] = getpid();
  __atomic_add_fetch(&sh->arrived, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&sh->arrived, __ATOMIC_SEQ_CST) < 4)
    usleep(100);
  if (me == 3) kill(getpid(), SIGKILL);
  int32_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
  const int32_t pair[] = {0, 1}, pair_size[] = {2};
  const int64_t count[] = {8};
  const int active = me < 2;
  poison(out, 8);
  const double start = now_ms();
  const int st = relay_allreduce(comm, active ? in : NULL, active ? sizeof in : 0,
                                 active ? out : NULL, active ? sizeof out : 0, pair, pair_size, 1,
                                 count, RELAY_INT32, RELAY_SUM, NULL, NULL);
  char cause[64];
  snprintf(cause, sizeof cause, "rank 3 (pid %d) exited", (int)sh->pids[3]);
  CHECK(st == RELAY_PEER_LOST && relay_last_error_peer() == 3 &&
            strncmp(relay_last_error(), cause, strlen(cause)) == 0,
        "rank %d: %s naming %d: %s (the cause first: %s)", me, relay_status_name(st),
        relay_last_error_peer(), relay_last_error(), cause);
  CHECK(out[0] == (int32_t)0x7f7f7f7f, "rank %d: the failed call wrote its output", me);
  CHECK(now_ms() - start < RANK_TIMEOUT_MS + BUSY_MARGIN_MS,
        "rank %d: rank 3's death took %.0f ms to reach it", me, now_ms() - start);
}

/* Runs `body(rank)` in `size` forked processes; the number of ranks that failed. */
static int run_ranks(int size, void (*body)(int, void*), void* arg) {
  pid_t pids[MAX_RANKS];
  for (int r = 0; r < size; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      alarm(120);
      failures = 0;
      body(r, arg);
      _exit(failures == 0 ? 0 : 1);
    }
  }
  int failed = 0;
  for (int r = 0; r < size; ++r) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    if (r == killed_rank && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) continue;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "rank %d failed (status %d)\n", r, st);
      ++failed;
    }
  }
  return failed;
}

static void callback_rank(int me, void* arg) {
  struct member m = {(struct board*)arg, me, 4, 0};
  relay_comm_config c;
  relay_comm_config_init(&c);
  c.rank = me;
  c.size = 4;
  c.all_gather = shm_all_gather;
  c.user = &m;
  c.timeout_ms = RANK_TIMEOUT_MS;
  c.transport_bytes = 1 << 20;
  relay_comm* comm = NULL;
  part = "create from callbacks";
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_OK);
  if (comm == NULL) return;
  int32_t rank = -1;
  EXPECT_STATUS(relay_comm_rank(comm, &rank), RELAY_OK);
  CHECK(rank == me, "rank %d says %d", me, rank);
  run_collectives(comm, me);
  run_split(comm, me);
  run_serving(comm, me);
  run_abort(comm, me);
  EXPECT_STATUS(relay_comm_destroy(comm), RELAY_OK);
}

static void environment_rank(int me, void* arg) {
  char text[16];
  snprintf(text, sizeof text, "%d", me);
  setenv("RELAY_RANK", text, 1);
  setenv("RELAY_WORLD_SIZE", "4", 1);
  struct shared* sh = (struct shared*)arg;
  snprintf(text, sizeof text, "%d", sh->port);
  setenv("RELAY_STORE_PORT", text, 1);
  setenv("RELAY_TIMEOUT", "20", 1); /* RANK_TIMEOUT_MS */
  setenv("RELAY_SHM_BYTES", "1M", 1);
  relay_comm* comm = NULL;
  part = "create from the environment";
  EXPECT_STATUS(relay_comm_create_from_environment(NULL, RELAY_MEMORY_HOST, &comm), RELAY_OK);
  if (comm == NULL) return;
  run_collectives(comm, me);
  run_split(comm, me);
  run_killed(comm, me, sh);
  EXPECT_STATUS(relay_comm_destroy(comm), RELAY_OK);
}

/* Hosted helpers (docs/hosted-helpers.md): 2 processes, each creating with `devices`; the
 * creation's status. */
static relay_status create_hosted(struct member* m, const int32_t* devices, int32_t count,
                                  relay_comm** comm) {
  relay_comm_config c;
  relay_comm_config_init(&c);
  c.rank = m->rank;
  c.size = 2;
  c.all_gather = shm_all_gather;
  c.user = m;
  c.timeout_ms = 20000;
  c.transport = "shm";
  c.helper_devices = devices;
  c.num_helper_devices = count;
  return relay_comm_create(&c, comm);
}

/* 2 processes hosting 6 helpers: lists that differ, a list with a negative device (an error on
 * both, naming it), then an 8-rank communicator whose pair {1, 0} reduces and gathers through the
 * hosted ranks (the outputs by hand), and a fused call that would make hosted ranks active
 * (refused on both, naming rank 2). */
static void hosted_rank(int me, void* arg) {
  struct member m = {(struct board*)arg, me, 2, 0};
  const int32_t six[] = {2, 3, 4, 5, 6, 7}, bad[] = {2, 3, 4, 5, 6, -1};
  relay_comm* comm = NULL;

  part = "hosted: lists that differ";
  EXPECT_STATUS(create_hosted(&m, six, me == 0 ? 6 : 5, &comm), RELAY_MISMATCH);
  EXPECT_ERROR_TEXT("rank 1 asked for helper devices 2,3,4,5,6 but rank 0 for 2,3,4,5,6,7");
  CHECK(relay_last_error_peer() == 1, "rank %d: the mismatch names rank %d", me,
        relay_last_error_peer());
  CHECK(comm == NULL, "a failed create left a handle");

  part = "hosted: a negative device";
  EXPECT_STATUS(create_hosted(&m, me == 1 ? bad : six, 6, &comm),
                me == 1 ? RELAY_INVALID_ARGUMENT : RELAY_PEER_ERROR);
  EXPECT_ERROR_TEXT(me == 1 ? "relay_comm_config.helper_devices = '2,3,4,5,6,-1': '-1' is not a "
                              "device number"
                            : "rank 1 could not read its helper devices");
  CHECK(comm == NULL, "a failed create left a handle");

  part = "hosted: create";
  EXPECT_STATUS(create_hosted(&m, six, 6, &comm), RELAY_OK);
  if (comm == NULL) return;
  int32_t rank = -1, size = -1;
  EXPECT_STATUS(relay_comm_rank(comm, &rank), RELAY_OK);
  EXPECT_STATUS(relay_comm_size(comm, &size), RELAY_OK);
  CHECK(rank == me && size == 8, "rank %d: rank %d of %d, not of 8", me, rank, size);

  part = "hosted: allreduce and all-gather of the pair";
  enum { n = 4099 };
  static int32_t in[n], out[2 * n + 1];
  const int32_t pair[] = {1, 0}, pair_size[] = {2};
  const int64_t count[] = {n};
  relay_options o;
  relay_options_init(&o);
  o.route = RELAY_ROUTE_RELAY; /* through the hosted ranks */
  for (int i = 0; i < n; ++i)
    in[i] = input_of(me, i);
  poison(out, 2 * n + 1);
  EXPECT_STATUS(relay_allreduce(comm, in, sizeof in, out, sizeof(int32_t) * n, pair, pair_size, 1,
                                count, RELAY_INT32, RELAY_SUM, &o, NULL),
                RELAY_OK);
  for (int i = 0; i < n; ++i)
    CHECK(out[i] == input_of(0, i) + input_of(1, i), "rank %d out[%d] = %d", me, i, out[i]);
  CHECK(out[n] == (int32_t)0x7f7f7f7f, "rank %d wrote past its output", me);
  poison(out, 2 * n + 1);
  EXPECT_STATUS(relay_all_gather(comm, in, sizeof in, out, sizeof(int32_t) * 2 * n, pair, pair_size,
                                 1, count, RELAY_INT32, &o, NULL),
                RELAY_OK);
  for (int i = 0; i < 2 * n; ++i) /* the group's order: rank 1's block, then rank 0's */
    CHECK(out[i] == input_of(i < n ? 1 : 0, i % n), "rank %d gathered[%d] = %d", me, i, out[i]);
  CHECK(out[2 * n] == (int32_t)0x7f7f7f7f, "rank %d wrote past its output", me);

  part = "hosted: a fused call is refused";
  const int32_t pairs[] = {0, 1, 2, 3, 4, 5, 6, 7}, pairs_size[] = {2, 2, 2, 2};
  const int64_t counts[] = {n, n, n, n};
  poison(out, 2 * n + 1);
  EXPECT_STATUS(relay_allreduce(comm, in, sizeof in, out, sizeof(int32_t) * n, pairs, pairs_size, 4,
                                counts, RELAY_INT32, RELAY_SUM, NULL, NULL),
                RELAY_PEER_ERROR);
  EXPECT_ERROR_TEXT("rank 2 (hosted by rank 0) is a hosted helper");
  CHECK(out[0] == (int32_t)0x7f7f7f7f, "rank %d: a refused call wrote its output", me);
  EXPECT_STATUS(relay_comm_destroy(comm), RELAY_OK);
}

/* A port nobody listens on now (the kernel's choice for port 0). */
static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(s, (struct sockaddr*)&a, sizeof a) == 0 &&
      getsockname(s, (struct sockaddr*)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

/* The nccl transport finds NCCL (RCCL) only when it is asked for: the library loaded without it,
 * and a communicator over it fails, naming the file the variable names, where that file does not
 * exist (no GPU is needed: the library is looked for first). */
static void test_nccl_library(void) {
  part = "nccl library";
  if (strstr(relay_transports(), "nccl") == NULL) return;
  const char* absent = "/nonexistent/relay-test/libnccl.so.2";
  setenv("RELAY_NCCL_LIBRARY", absent, 1);
  setenv("RELAY_RCCL_LIBRARY", absent, 1);
  relay_comm_config c;
  relay_comm_config_init(&c);
  c.size = 1;
  c.all_gather = solo_all_gather;
  c.transport = "nccl";
  c.memory = RELAY_MEMORY_DEVICE;
  relay_comm* comm = NULL;
  EXPECT_STATUS(relay_comm_create(&c, &comm), RELAY_UNSUPPORTED);
  EXPECT_ERROR_TEXT(absent);
  EXPECT_ERROR_TEXT("_LIBRARY");
  CHECK(comm == NULL, "a failed create left a handle");
  unsetenv("RELAY_NCCL_LIBRARY");
  unsetenv("RELAY_RCCL_LIBRARY");
}

/* `bytes` of zeros that the ranks forked later share; NULL (said on stderr) where none. */
static void* shared_zeros(size_t bytes) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    return NULL;
  }
  memset(p, 0, bytes);
  return p;
}

int main(void) {
  setvbuf(stderr, NULL, _IONBF, 0);
  test_library();
  test_handles();
  test_nccl_library();
  if (failures > 0) {
    fprintf(stderr, "%d checks failed in one process\n", failures);
    return 1;
  }
  struct board* b = shared_zeros(sizeof(struct board));
  struct shared* sh = shared_zeros(sizeof(struct shared));
  if (b == NULL || sh == NULL) return 1;
  int failed = run_ranks(4, callback_rank, b);
  sh->port = free_port();
  killed_rank = 3;
  failed += run_ranks(4, environment_rank, sh);
  killed_rank = -1;
  struct board* hosted = shared_zeros(sizeof(struct board));
  if (hosted == NULL) return 1;
  failed += run_ranks(2, hosted_rank, hosted);
  if (failed > 0) {
    fprintf(stderr, "%d ranks failed\n", failed);
    return 1;
  }
  printf("relay C ABI: every check holds (%s)\n", relay_transports());
  return 0;
}
