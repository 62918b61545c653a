/* relay's C ABI: one shared library (librelay_c.so: the shm transport; librelay_c_cuda.so and,
 * on AMD, librelay_c_hip.so: shm, ipc and nccl, the same symbols) for languages other than C++.
 * C99, no C++ types.
 *
 *   relay_comm* comm = NULL;
 *   relay_comm_config cfg;
 *   relay_comm_config_init(&cfg);
 *   cfg.rank = rank; cfg.size = size; cfg.all_gather = my_gather; cfg.user = my_store;
 *   if (relay_comm_create(&cfg, &comm) != RELAY_OK) puts(relay_last_error());
 *   int32_t ranks[] = {0, 1, 2, 3, 4, 5, 6, 7}, sizes[] = {2, 2, 2, 2};   // 4 groups of 2
 *   int64_t counts[] = {n, n, n, n};
 *   relay_allreduce(comm, send, send_bytes, recv, recv_bytes, ranks, sizes, 4, counts,
 *                   RELAY_BFLOAT16, RELAY_SUM, NULL, NULL);
 *
 * Rules every function keeps:
 *   - Nothing throws or aborts across the ABI: every fallible function returns a relay_status;
 *     the text of this thread's last failure is relay_last_error(), the rank it names (a peer
 *     that timed out, refused or disagreed) relay_last_error_peer().
 *   - A handle that is not a live communicator (never created, destroyed, NULL) is
 *     RELAY_INVALID_ARGUMENT, as is a NULL where a pointer is required.
 *   - A communicator is used by one thread at a time.
 *   - The collectives are the C++ library's rank-local calls (comm/collectives.hpp): every rank
 *     of the communicator makes every call with the same groups, counts, dtype, op and options;
 *     a rank active in no group (a helper) passes NULL buffers. A failure on any rank is an
 *     error on every rank.
 *   - A repeated call (the same arguments as an earlier call, buffers aside) allocates nothing
 *     and, on the ipc transport, only enqueues work on `stream` (cudaStream_t; NULL: the default
 *     stream): it may be captured into a CUDA graph. Creating, destroying, registering and a
 *     call shape's first call are not capturable.
 */
#ifndef RELAY_C_RELAY_H
#define RELAY_C_RELAY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define RELAY_C_API
#else
#define RELAY_C_API __attribute__((visibility("default")))
#endif

/* Incremented when a function or struct changes incompatibly. */
#define RELAY_C_ABI_VERSION 1

/* relay::errc, value for value. */
typedef enum relay_status {
  RELAY_OK = 0,
  RELAY_INVALID_SCHEDULE = 1, /* A, N, mode or route has no schedule */
  RELAY_INVALID_GROUP = 2,    /* a rank out of range, duplicated, active in two groups, ... */
  RELAY_INVALID_COUNT = 3,    /* counts do not match the groups, or are negative */
  RELAY_INVALID_BUFFER = 4,   /* a null, too small or wrongly overlapping buffer */
  RELAY_INVALID_ARGUMENT = 5, /* any other argument out of its range, a bad handle */
  RELAY_UNSUPPORTED = 6,      /* a dtype, operator or in-place form the collective lacks */
  RELAY_GPU_ERROR = 7,
  RELAY_OUT_OF_MEMORY = 8,
  RELAY_TIMEOUT = 9,     /* a peer did not arrive within the timeout */
  RELAY_MISMATCH = 10,   /* the ranks of one call disagree on its arguments */
  RELAY_PEER_ERROR = 11, /* another rank of the call failed; this rank's part was fine */
  RELAY_SYSTEM_ERROR = 12,
  RELAY_PEER_LOST = 13 /* a peer process exited, was killed or closed its communicator */
} relay_status;

/* Which memory a communicator's calls pass: what transport "auto" decides from. */
typedef enum relay_memory { RELAY_MEMORY_HOST = 0, RELAY_MEMORY_DEVICE = 1 } relay_memory;

/* Names, parsed by the library so that bindings hold no tables of their own. */
typedef enum relay_vocabulary {
  RELAY_VOCAB_DTYPE = 0,      /* int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32
                                 float64 (and half, bf16, float, double, ...) */
  RELAY_VOCAB_OP = 1,         /* sum avg */
  RELAY_VOCAB_COLLECTIVE = 2, /* allreduce reduce-scatter all-gather all-to-all */
  RELAY_VOCAB_MODE = 3,       /* groups (from the number of groups), fused, single */
  RELAY_VOCAB_ROUTE = 4,      /* relay direct legacy pipelined automatic */
  RELAY_VOCAB_WIRE = 5,       /* native fp8 fp8_e4m3 fp8_e4m3_fnuz */
  RELAY_VOCAB_PRECISION = 6   /* fp32_partials native_partials */
} relay_vocabulary;

/* Element types and operators, relay::dtype and relay::reduce_op value for value. */
typedef enum relay_dtype {
  RELAY_INT8 = 0,
  RELAY_UINT8 = 1,
  RELAY_INT32 = 2,
  RELAY_UINT32 = 3,
  RELAY_INT64 = 4,
  RELAY_UINT64 = 5,
  RELAY_FLOAT16 = 6,
  RELAY_BFLOAT16 = 7,
  RELAY_FLOAT32 = 8,
  RELAY_FLOAT64 = 9
} relay_dtype;
/* RELAY_AVG: the sum divided once by the contributions; on integer dtypes the sum wraps in the
 * dtype's width and the division truncates toward zero (-7 / 2 is -3). */
typedef enum relay_op { RELAY_SUM = 0, RELAY_AVG = 1 } relay_op;
typedef enum relay_collective {
  RELAY_ALLREDUCE = 0,
  RELAY_REDUCE_SCATTER = 1,
  RELAY_ALL_GATHER = 2,
  RELAY_ALL_TO_ALL = 3
} relay_collective;
/* RELAY_MODE_GROUPS: one group is single mode, several are fused; the others must agree. */
typedef enum relay_mode {
  RELAY_MODE_GROUPS = 0,
  RELAY_MODE_FUSED = 1,
  RELAY_MODE_SINGLE = 2
} relay_mode;
typedef enum relay_route {
  RELAY_ROUTE_RELAY = 0,
  RELAY_ROUTE_DIRECT = 1,
  RELAY_ROUTE_LEGACY = 2,
  RELAY_ROUTE_PIPELINED = 3,
  RELAY_ROUTE_AUTOMATIC = 4
} relay_route;
typedef enum relay_wire {
  RELAY_WIRE_NATIVE = 0,
  RELAY_WIRE_FP8 = 1,
  RELAY_WIRE_FP8_E4M3 = 2,
  RELAY_WIRE_FP8_E4M3_FNUZ = 3
} relay_wire;
typedef enum relay_precision { RELAY_FP32_PARTIALS = 0, RELAY_NATIVE_PARTIALS = 1 } relay_precision;

/* ---- the library ------------------------------------------------------------------------ */

RELAY_C_API const char* relay_version(void); /* "0.1.0" */
RELAY_C_API int relay_abi_version(void);     /* RELAY_C_ABI_VERSION of the library loaded */
/* The transports this library was built with, comma-separated: "shm" or "shm,ipc,nccl". */
RELAY_C_API const char* relay_transports(void);
/* The text of this thread's last failure ("" before any); valid until its next failure. */
RELAY_C_API const char* relay_last_error(void);
/* The rank that failure names as its root cause (a peer that timed out, exited, refused or
 * disagreed), however many ranks passed it on; -1 where it names none. A failure's text names
 * that rank first: "rank 7 (pid 1234) exited during call #3 (seen by rank 5; every rank
 * stopped)". */
RELAY_C_API int32_t relay_last_error_peer(void);
/* "ok", "timeout", ... (relay::name(errc)); "unknown" outside the enumeration. */
RELAY_C_API const char* relay_status_name(int32_t status);
/* `name` of `vocabulary` into *value (RELAY_INVALID_ARGUMENT naming the choices otherwise). */
RELAY_C_API relay_status relay_parse(int32_t vocabulary, const char* name, int32_t* value);
/* The name of `value` (NULL outside the enumeration). */
RELAY_C_API const char* relay_name(int32_t vocabulary, int32_t value);
RELAY_C_API int32_t relay_dtype_size(int32_t dtype); /* bytes; 0 outside the enumeration */

/* ---- sizes: what a rank's buffers hold for a call (the library's rule, not the caller's) -- */

/* groups: the active ranks of each group, flat (group_ranks), with each group's size
 * (group_sizes, num_groups entries); counts: one per group (count, recvCount, sendCount or
 * segmentCount). Offsets and sizes in elements. */
typedef struct relay_rank_layout {
  int32_t group;                           /* the group `rank` is active in; -1: a helper */
  int32_t active_index;                    /* its index there; -1: a helper */
  int32_t active;                          /* A, the ranks per group */
  int64_t input_elements, output_elements; /* 0 on a helper */
  /* In place (where the collective has it): the input lies at output + in_place_input_offset
   * (all-gather), or the output at input + in_place_output_offset (reduce-scatter); allreduce
   * has both 0. */
  int64_t in_place_input_offset, in_place_output_offset;
  int32_t has_in_place; /* 0 for all-to-all */
} relay_rank_layout;
/* Checks the groups and counts as a call on the direct route would (RELAY_INVALID_GROUP, _COUNT,
 * _SCHEDULE with the call's message) and fills *out for `rank` of `ranks`. The sizes are the same
 * on every route; a route's own limits (the relay route needs a helper, A < N) are the call's. */
RELAY_C_API relay_status relay_rank_layout_of(int32_t collective, int32_t ranks,
                                              const int32_t* group_ranks,
                                              const int32_t* group_sizes, int32_t num_groups,
                                              const int64_t* counts, int32_t rank,
                                              relay_rank_layout* out);
/* The per-group count of a collective whose active rank holds input_elements and
 * output_elements among `active` ranks (allreduce: the elements; reduce-scatter: the output's;
 * all-gather: the input's; all-to-all: the input's / active); RELAY_INVALID_COUNT where the
 * two do not fit one count. */
RELAY_C_API relay_status relay_count_of(int32_t collective, int32_t active, int64_t input_elements,
                                        int64_t output_elements, int64_t* count);

/* ---- bootstrap callbacks: the caller's store serves relay's set-up exchanges ---------------- */

/* What a callback hands back: every rank's bytes (all-gather), or a failure. */
typedef struct relay_bootstrap_result relay_bootstrap_result;
/* Rank `rank`'s contribution (copied). Every rank 0..size-1 must be put once on success. */
RELAY_C_API relay_status relay_bootstrap_put(relay_bootstrap_result* result, int32_t rank,
                                             const void* data, size_t bytes);
/* The callback failed: `status` and why ("rank 3 did not join all-gather #2 within 30000 ms":
 * relay_last_error_peer reads the rank a message names first). */
RELAY_C_API relay_status relay_bootstrap_fail(relay_bootstrap_result* result, int32_t status,
                                              const char* message);
/* Every rank contributes `mine` (any length, 0 included); the callback puts every rank's bytes
 * into `result` within timeout_ms, or fails it. Returns RELAY_OK or the failure's status. One
 * outcome on every rank: an exchange that fails on one rank must fail on all (decide it once,
 * for example with a compare-and-set of an outcome key, as relay.torch does over torch's store),
 * or the exchanges relay runs over it (the nccl transport's agreements, splits) can end ok on a
 * rank whose peer already failed. */
typedef int32_t (*relay_all_gather_fn)(void* user, const void* mine, size_t bytes,
                                       int64_t timeout_ms, relay_bootstrap_result* result);
/* Returns once every rank has entered it (or fails naming a rank that did not). */
typedef int32_t (*relay_barrier_fn)(void* user, int64_t timeout_ms, relay_bootstrap_result* result);

/* ---- communicators ---------------------------------------------------------------------- */

typedef struct relay_comm relay_comm;

typedef struct relay_comm_config {
  size_t struct_size; /* sizeof(relay_comm_config); relay_comm_config_init sets it */
  int32_t rank, size;
  int32_t device; /* the device this rank drives (device memory) */
  /* "auto" (or NULL): ipc for device memory when every rank is on one node, shm for host memory
   * there; "shm", "ipc", "nccl" by name. Every rank passes the same. */
  const char* transport;
  int32_t memory; /* relay_memory: what the calls pass */
  /* Every wait for a peer; <= 0: RELAY_TIMEOUT, else 30 s. Set-up (relay_comm_create, a split)
   * waits at least 10 s + 100 ms per rank (docs/multiprocess.md, "Set-up"), and passes the
   * callbacks that longer timeout. */
  int64_t timeout_ms;
  /* The shm/ipc data area of a rank; 0: RELAY_SHM_BYTES / RELAY_IPC_BYTES. On shm rank 0's value
   * sizes every rank's area; on ipc each rank's own does, and calls are cut by the smallest. A
   * call larger than the area runs in pieces. Pass the same on every rank. */
  uint64_t transport_bytes;
  /* The bootstrap: all_gather is required, barrier may be NULL (an empty all-gather serves).
   * They and `user` stay valid until relay_comm_destroy returns (teardown may use them). */
  relay_all_gather_fn all_gather;
  relay_barrier_fn barrier;
  void* user;
  /* Hosted helpers (docs/hosted-helpers.md): one device per helper rank that these `size`
   * processes run beside their own, so the communicator has size + num_helper_devices ranks
   * (ranks 0..size-1 the processes). Every process passes the same list; creation agrees on it.
   * NULL: RELAY_HELPER_DEVICES where it is set, else no helper. */
  const int32_t* helper_devices;
  int32_t num_helper_devices;
} relay_comm_config;

RELAY_C_API void relay_comm_config_init(relay_comm_config* config);
/* Collective: every rank calls it. */
RELAY_C_API relay_status relay_comm_create(const relay_comm_config* config, relay_comm** out);
/* The same from the environment of relay-run, torchrun or an mpirun-style launcher (RELAY_RANK
 * or RANK, ...: docs/multiprocess.md), through relay's TCP store. */
RELAY_C_API relay_status relay_comm_create_from_environment(const char* transport, int32_t memory,
                                                            relay_comm** out);
/* Collective (the transports' teardown meets the peers; bounded). NULL is accepted. */
RELAY_C_API relay_status relay_comm_destroy(relay_comm* comm);
/* As ncclCommSplit: collective over `parent`. The ranks that pass one color (>= 0) get a
 * communicator of their own in *out, ranked by `key` (ties by parent rank), over the parent's
 * transport, device and timeout; RELAY_NO_COLOR takes part and gets NULL. All or nothing: ok on
 * every rank, or an error on every rank naming the rank that failed, with *out NULL everywhere.
 * The parent stays usable, and either may be destroyed first. Why: one call agrees across every
 * rank of its communicator, so groups that need not fail together run faster apart
 * (docs/multiprocess.md, "Split communicators"). A parent made from callbacks joins its split
 * ranks over loopback: they must share one host. */
#define RELAY_NO_COLOR (-1)
RELAY_C_API relay_status relay_comm_split(relay_comm* parent, int32_t color, int32_t key,
                                          relay_comm** out);
/* This rank refuses the split its peers are making now (its own checks of its arguments failed,
 * a binding's type or range checks say): it takes part in the split as a refusal, so every peer
 * returns RELAY_PEER_ERROR naming this rank at once, and returns `why` with `message` as its
 * error text. The parent stays usable on every rank. */
RELAY_C_API relay_status relay_comm_split_refuse(relay_comm* parent, int32_t why,
                                                 const char* message);
/* This rank is gone: its peers fail at once instead of waiting out their timeout; the
 * communicator is unusable afterwards (destroy it). */
RELAY_C_API relay_status relay_comm_abort(relay_comm* comm);
RELAY_C_API relay_status relay_comm_rank(const relay_comm* comm, int32_t* rank);
RELAY_C_API relay_status relay_comm_size(const relay_comm* comm, int32_t* size);
RELAY_C_API relay_status relay_comm_device(const relay_comm* comm, int32_t* device);
/* "shm", "ipc" or "nccl": the transport the rule chose. */
RELAY_C_API relay_status relay_comm_transport(const relay_comm* comm, const char** name);
/* What a stream transport's device work reported so far (RELAY_OK, or why this rank gave up);
 * RELAY_OK on the host transport after its calls returned. Asks the host, never the device. */
RELAY_C_API relay_status relay_comm_async_status(relay_comm* comm);
/* This rank refuses the call its peers are making now (it found its own arguments wrong): it
 * takes part in that call's agreement as a refusal, so every peer returns RELAY_PEER_ERROR
 * naming this rank at once, and returns `why` with `message` as its error text. `stream`: the
 * one the refused call would have run on (a stream transport enqueues its part there). */
RELAY_C_API relay_status relay_comm_refuse(relay_comm* comm, int32_t why, const char* message,
                                           void* stream);

/* Registered buffers (as ncclCommRegister): collective, every rank calls them, each with its own
 * buffer or NULL. The ipc transport writes outputs in registered memory directly; the others
 * accept them and do nothing. Not during graph capture. */
RELAY_C_API relay_status relay_comm_register(relay_comm* comm, void* data, size_t bytes);
RELAY_C_API relay_status relay_comm_deregister(relay_comm* comm, void* data);
/* After capturing calls into a graph: registers the memory their inputs lie in, so that replays
 * read those inputs in place instead of staging them (the ipc transport; vLLM's
 * register_graph_buffers). Collective; not during capture; replays are right before and after.
 * The graphs' buffers must stay allocated until relay_comm_deregister_graph_inputs, which ends
 * every such registration (replays then stage again). The other transports do nothing. */
RELAY_C_API relay_status relay_comm_register_graph_inputs(relay_comm* comm);
RELAY_C_API relay_status relay_comm_deregister_graph_inputs(relay_comm* comm);

/* ---- serving ranks ---------------------------------------------------------------------- */

/* Ranks that do not run the model (helpers that never see the shapes) serve the calls the ranks
 * that do make, learned from a control plane in shared memory on the node (docs/serving.md).
 *
 *   relay_comm_attach_plane(comm, rank < 2 ? RELAY_PLANE_CALL : RELAY_PLANE_SERVE);
 *   if (rank < 2) { ...calls as before...; relay_comm_stop_serving(comm); }
 *   else relay_comm_serve(comm, 0, NULL, &served);
 */
typedef enum relay_plane_role {
  RELAY_PLANE_CALL = 1, /* makes its own calls; the lowest such rank publishes */
  RELAY_PLANE_SERVE = 2 /* makes, as a helper, each call the calling ranks make */
} relay_plane_role;

/* Collective: gives the communicator its control plane, each rank saying its role. From then on
 * the publisher writes every call's shape into the plane before the call's agreement. Fails on
 * every rank where no rank calls or a role is not a relay_plane_role. */
RELAY_C_API relay_status relay_comm_attach_plane(relay_comm* comm, int32_t role);
/* A serving rank: makes every call the calling ranks make, with no buffers, until they stop it;
 * RELAY_OK then. A served call that fails alike on every rank (a mismatch, a refusal) is counted
 * and serving goes on; a publisher that stalls past `timeout_ms` (0: the communicator's timeout)
 * or dies, or a call that breaks the communicator, is an error naming its cause. `stream`: where
 * served calls run on a stream transport. `calls_served` (NULL: not wanted): the calls served. */
RELAY_C_API relay_status relay_comm_serve(relay_comm* comm, int64_t timeout_ms, void* stream,
                                          uint64_t* calls_served);
/* Every calling rank, after its last call: the serving ranks return from relay_comm_serve once
 * they served every call made before it. */
RELAY_C_API relay_status relay_comm_stop_serving(relay_comm* comm);
/* torchcomms' control plane (RCCLX's relay_control_publish / relay_control_consume): a forward's
 * plan by epoch (0, 1, 2, ...), its five fields carried as given: op_code (0 shutdown, 1
 * all_reduce, 2 reduce_scatter, 3 all_gather, 4 all_to_all), dtype, red_op, flags (0) and one
 * count per call. Publish: the publisher only (the lowest calling rank), waiting at most
 * `timeout_ms` (0: the communicator's timeout) for consumers still reading an older epoch.
 * Consume: any other rank, waiting as long for the epoch; a wait that times out names the
 * publisher. `counts` holds `capacity` counts; *num_counts says how many the plan has (where more
 * than `capacity`: RELAY_INVALID_ARGUMENT, nothing else written). */
RELAY_C_API relay_status relay_comm_control_publish(relay_comm* comm, uint64_t epoch,
                                                    const int64_t* counts, int32_t num_counts,
                                                    int32_t op_code, int32_t dtype, int32_t red_op,
                                                    int32_t flags, int64_t timeout_ms);
RELAY_C_API relay_status relay_comm_control_consume(relay_comm* comm, uint64_t epoch,
                                                    int64_t timeout_ms, int32_t* op_code,
                                                    int32_t* dtype, int32_t* red_op, int32_t* flags,
                                                    int64_t* counts, int32_t capacity,
                                                    int32_t* num_counts);
/* How many counts a plan may have: *max_calls (NCCL_RELAY_CONTROL_MAX_CALLS where set when the
 * plane was attached, else 128, RCCLX's default; the same on every rank, which attach_plane
 * checks) and *counts_held (what the plane's plan slots hold: 8186). A plan of more than
 * *max_calls counts is refused before anything is published. Either pointer may be NULL. */
RELAY_C_API relay_status relay_comm_control_limits(relay_comm* comm, int32_t* max_calls,
                                                   int32_t* counts_held);
/* A rank that will consume plans says so before its first consume (which does it too): the
 * publisher waits for it from then on before it reuses a slot. A consumer that may start more
 * than the stream's depth (4 epochs) behind the publisher joins first, then meets it (a barrier,
 * say). The publisher may not join. */
RELAY_C_API relay_status relay_comm_control_join(relay_comm* comm);

/* ---- the collectives -------------------------------------------------------------------- */

/* The wire a call took and why (relay::wire_choice): what every rank of the call decided alike,
 * from the call's arguments alone. */
typedef struct relay_wire_report {
  int32_t requested;        /* relay_wire as asked, RELAY_WIRE_FP8 made the machine's encoding */
  int32_t taken;            /* RELAY_WIRE_NATIVE, RELAY_WIRE_FP8_E4M3 or RELAY_WIRE_FP8_E4M3_FNUZ */
  uint64_t bytes;           /* what the threshold is compared with: largest count * dtype size */
  uint64_t threshold_bytes; /* fp8 from this many bytes on; 0 where native was asked, UINT64_MAX
                               where fp8 never pays */
} relay_wire_report;

typedef struct relay_options {
  size_t struct_size;     /* sizeof(relay_options); relay_options_init sets it */
  int32_t mode;           /* relay_mode */
  int32_t route;          /* relay_route; default RELAY_ROUTE_AUTOMATIC: the cost model's */
  int32_t wire;           /* relay_wire */
  int32_t precision;      /* relay_precision */
  int32_t permille;       /* allreduce offload share (relay route); 0: the link-balanced default */
  int32_t tiles;          /* pipeline depth: 2..64 on the pipelined route, which has no default
                             (0 is refused there); 0 on the relay, direct and legacy routes;
                             unread with RELAY_ROUTE_AUTOMATIC, which picks its own */
  int64_t alignment;      /* chunk alignment in elements; 0: the default */
  int64_t wire_threshold; /* fp8 below this many bytes runs natively; -1: the cost model's */
  /* Where a call that returns RELAY_OK wrote the wire it took (every rank, helpers too); NULL:
   * nowhere. Options of an older header, without this field (a smaller struct_size), are read
   * as NULL here. */
  relay_wire_report* wire_report;
} relay_options;

/* The defaults (NULL options mean them): the route the cost model predicts fastest for the call
 * (RELAY_ROUTE_AUTOMATIC; a group of every rank takes the direct route), the native wire. */
RELAY_C_API void relay_options_init(relay_options* options);
/* 1 where `wire` carries `dtype` (every wire carries every dtype natively; the fp8 wires take
 * float32, float16 and bfloat16), 0 where a call with both is refused. */
RELAY_C_API int32_t relay_wire_carries(int32_t wire, int32_t dtype);

/* send/recv: THIS rank's buffers and their sizes in bytes (NULL and 0 on a helper); in place is
 * recognized from the pointers as NCCL does (relay_rank_layout_of says where). counts: one per
 * group: count (allreduce), recvCount (reduce-scatter), sendCount (all-gather), segmentCount
 * (all-to-all). stream: cudaStream_t for the ipc and nccl transports (enqueue and return); the
 * shm transport ignores it and returns when this rank's part is done. */
RELAY_C_API relay_status relay_allreduce(relay_comm* comm, const void* send, size_t send_bytes,
                                         void* recv, size_t recv_bytes, const int32_t* group_ranks,
                                         const int32_t* group_sizes, int32_t num_groups,
                                         const int64_t* counts, int32_t dtype, int32_t op,
                                         const relay_options* options, void* stream);
RELAY_C_API relay_status relay_reduce_scatter(relay_comm* comm, const void* send, size_t send_bytes,
                                              void* recv, size_t recv_bytes,
                                              const int32_t* group_ranks,
                                              const int32_t* group_sizes, int32_t num_groups,
                                              const int64_t* recv_counts, int32_t dtype, int32_t op,
                                              const relay_options* options, void* stream);
RELAY_C_API relay_status relay_all_gather(relay_comm* comm, const void* send, size_t send_bytes,
                                          void* recv, size_t recv_bytes, const int32_t* group_ranks,
                                          const int32_t* group_sizes, int32_t num_groups,
                                          const int64_t* send_counts, int32_t dtype,
                                          const relay_options* options, void* stream);
RELAY_C_API relay_status relay_all_to_all(relay_comm* comm, const void* send, size_t send_bytes,
                                          void* recv, size_t recv_bytes, const int32_t* group_ranks,
                                          const int32_t* group_sizes, int32_t num_groups,
                                          const int64_t* segment_counts, int32_t dtype,
                                          const relay_options* options, void* stream);

/* One collective call as a struct: the arguments of the four functions above, for a caller that
 * makes the same call many times (a binding fills it once, then each call is one crossing of
 * three arguments). relay_run_call(comm, &call, stream) is exactly the collective's own function
 * with these arguments: the same checks on every call (a bad field is refused through the
 * library, so the peers fail at once naming this rank), the same statuses. */
typedef struct relay_call {
  size_t struct_size; /* sizeof(relay_call); relay_call_init sets it */
  int32_t collective; /* relay_collective */
  int32_t dtype;      /* relay_dtype */
  int32_t op; /* relay_op: allreduce and reduce-scatter; all-gather and all-to-all ignore it */
  int32_t num_groups;
  const int32_t* group_ranks;
  const int32_t* group_sizes;
  const int64_t* counts; /* one per group, as the collective's function takes them */
  const void* send;      /* this rank's buffers (NULL and 0 on a helper) */
  size_t send_bytes;
  void* recv;
  size_t recv_bytes;
  const relay_options* options; /* NULL: the defaults */
} relay_call;

/* Zeroes *call and sets struct_size: an allreduce (RELAY_SUM) with no groups yet. */
RELAY_C_API void relay_call_init(relay_call* call);
/* The call `call` describes, on `stream` (as the collectives' own `stream`). A NULL `call`, or
 * one whose struct_size is not sizeof(relay_call) or whose collective is not a relay_collective,
 * is refused as a bad argument is. */
RELAY_C_API relay_status relay_run_call(relay_comm* comm, const relay_call* call, void* stream);

/* Asynchronous calls (torch.distributed's async_op=True, as a binding makes them): a call runs on
 * an operation stream of the caller's, after the work enqueued on the caller's stream so far,
 * and the caller later orders a stream after it, asks whether it has finished, or waits for it,
 * by its number. On a stream transport (ipc, nccl) the library orders the streams with events
 * it keeps (made at the communicator's first async call: a repeated call allocates nothing and
 * may be captured into a CUDA graph); the shm transport ignores the streams and its call has
 * finished when it returns. A call captured into a graph is never asked about on the host (its
 * graph's replays run it): a stream is ordered after it within its capture, before
 * RELAY_ASYNC_DEPTH later async calls are numbered, after which it counts as finished. */
typedef struct relay_async_call {
  uint64_t call;    /* this call's number among its communicator's async calls: 1, 2, ... */
  uint64_t retired; /* every async call numbered up to this one has finished (0: none known) */
} relay_async_call;

/* The call `call` describes (as relay_run_call), on `op_stream`, once `stream`'s work enqueued so
 * far is done (op_stream waits for it; the host does not); *out says its number. At most
 * RELAY_ASYNC_DEPTH of a communicator's async calls are in flight: the next waits on the host
 * for the oldest to finish (each call older than its last RELAY_ASYNC_DEPTH has finished: out's
 * retired). A NULL `out` is refused as a bad argument is; a call that fails has no number. */
#define RELAY_ASYNC_DEPTH 16
RELAY_C_API relay_status relay_run_call_async(relay_comm* comm, const relay_call* call,
                                              void* stream, void* op_stream, relay_async_call* out);
/* An async call of no collective (a mark): `op_stream` waits for `stream`'s work enqueued so far,
 * and the number *out gets stands for the work enqueued on `op_stream` so far, a binding's own
 * included (the copies around its calls there): ordered after, asked about and waited for as
 * relay_run_call_async's calls are. `stream` may be `op_stream`: then it only marks. */
RELAY_C_API relay_status relay_comm_mark(relay_comm* comm, void* stream, void* op_stream,
                                         relay_async_call* out);
/* `stream` waits for async call number `call` (enqueued: the host does not block). A number
 * this communicator has not given is RELAY_INVALID_ARGUMENT. Reports no call's failure: that is
 * relay_comm_async_status's. */
RELAY_C_API relay_status relay_comm_order_after(relay_comm* comm, uint64_t call, void* stream);
/* relay_comm_order_after, then relay_comm_async_status's answer, in one call (a binding's
 * Work.wait: the stream joins the call, then whatever failure the communicator has learned of is
 * reported). Returns the ordering's failure where it fails, else the async status. */
RELAY_C_API relay_status relay_comm_join_call(relay_comm* comm, uint64_t call, void* stream);
/* *finished: 1 where async call number `call` has finished, else 0. */
RELAY_C_API relay_status relay_comm_call_finished(relay_comm* comm, uint64_t call,
                                                  int32_t* finished);
/* Blocks this thread until async call number `call` has finished (the device's work of it; its
 * own waits are bounded by the communicator's timeout). */
RELAY_C_API relay_status relay_comm_wait_call(relay_comm* comm, uint64_t call);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_C_RELAY_H */
