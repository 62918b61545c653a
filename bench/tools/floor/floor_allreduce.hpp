// The floor of a small allreduce across processes: the fastest single-kernel one-shot allreduce
// we write, the yardstick relay's ipc transport is measured against (relay-bench -x ipc
// --baseline floor, and bench/tools/floor/floor.cu on its own). Each process is one rank; one
// launch per call. Two algorithms (floor_algorithm), the default choosing by size:
//
// ll (the default up to ll_default_max bytes, at most ll_capacity): each rank pushes its input to
// every member, every 4 bytes of data in one 8-byte word with the call's epoch in its other half
// (as NCCL's LL protocol does), into the member's flag area, in a slot of this sender and of the
// call's parity; each rank then reads its own slots, a word at a time until its epoch is the
// call's (the read is the wait: no barrier, no fence, no round trip), and sums in group order.
// A word is written and read whole (8-byte stores and loads are single-copy atomic), so a word
// whose epoch is right holds the right data. Two slots by parity make an exit barrier
// unnecessary: a rank writes slot p of a peer again two calls later with that peer, after it has
// read the peer's data of the call between, which the peer wrote in a kernel queued after the
// one that read slot p. The epoch of a pair of ranks is the number of calls the pair ran
// together (flag_area::ll_calls, in device memory, so a captured graph's replays stay distinct);
// a call's blocks are independent, as many as the size needs (no flags per block).
//
// barrier (the default above ll_default_max): the ranks read each other's inputs in place, and a
// call's blocks each
//   1. tell every member that block b entered (a flag per block and member in that member's flag
//      area, a system-scope release), and wait for every member's flag (acquire loads);
//   2. sum block b's range of every member's input, read where the member keeps it, into this
//      rank's output, members in group order;
//   3. tell every member that block b is done reading, and wait for theirs, so that no member
//      writes an input another still reads once its kernel has ended.
// Flags per block, no grid barrier; per-block epochs in device memory.
//
// Both sum with relay's element arithmetic (core/reduction.hpp: the same bits as relay's
// reduction). At most one block per multiprocessor, divided among the ranks that share the
// device (a rank's blocks wait on its peers' blocks: every block of every rank must be resident).
// Every wait has a deadline: past it the kernel says so in host memory and run() fails.
//
// ll's kernel is launched early (gpu::rt::launch_early, NVIDIA sm_90 and later): it may be made
// resident while the kernel ahead of it on its stream ends, and each block lets the next kernel in
// once its waits are done, as relay's ll kernel does (ipc::options::early_launch). On one H100
// this took a replayed 4 KB call from 2.80 us to 2.16 (bench/results/2026-12-07-h100-early-launch);
// floor_options::early_launch = false keeps the ordinary launch.
//
// Two options for the accounting of relay's costs, chosen per call (floor_options), neither the
// default:
//   - whole_job_entry (barrier only): step 1 meets every rank of the job, not only the group, as
//     the agreement of one relay call over several groups (a fused call) does; step 3 stays the
//     group's;
//   - relay_sized_arguments: the launch carries as many argument bytes as relay's pull kernel
//     (unused padding), to tell a launch's size from its work.
//
// Built with -DFLOOR_TRACE=1, block 0 stamps its wall clock at the start, after the entry (ll:
// after pushing), after its sum and at the end (flag_area::trace, the last trace_calls calls):
// the floor's phases beside relay's own trace (RELAY_IPC_TRACE), for the accounting of relay's
// costs.
//
// Only for relay's own benchmarks: no fp8, out of place only, inputs and outputs 16-byte aligned
// and a multiple of 16 bytes, and (barrier) every member's input at the same offset in the memory
// it mapped (map()), as relay-bench's frames are.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/core/dtype.hpp"
#include "relay/core/no_copy.hpp"
#include "relay/core/reduction.hpp"
#include "relay/core/status.hpp"
#include "relay/gpu/grid_dependency.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/ipc/signals.hpp"

namespace relay::bench::floor {

inline constexpr int max_members = 8;
inline constexpr int max_blocks = 256;
inline constexpr int block_threads = 512;
inline constexpr int trace_calls = 16, trace_points = 4;  // start, entered, summed, end
// ll: the most bytes a call carries (its slots' size), and the default's largest ll call: all
// of it (on one H100, 2 processes, ll beat barrier at every size to 1 MiB, eager and replayed:
// bench/results/2026-12-06-h100-floor-ll-and-async).
inline constexpr std::uint64_t ll_capacity = std::uint64_t{1} << 20;
inline constexpr std::uint64_t ll_default_max = ll_capacity;
// ll: the words of a slot: 16 bytes of input are 4 words of 4 data bytes and a 4-byte epoch.
inline constexpr std::uint64_t ll_words = ll_capacity / 4;

// A rank's flag area, written by its peers and itself (the host-visible error word is
// elsewhere): barrier's flags[phase][block][rank], written by that rank, and the epochs of this
// rank's blocks (calls each has run); ll's calls with each rank (the pair's epoch), the count of
// blocks of the running call that are done, and the slots ll[parity][rank], written by that
// rank; at the end, so that the flags lie together.
struct flag_area {
  std::uint64_t flags[2][max_blocks][max_members];  // the job has at most max_members ranks
  std::uint64_t epochs[max_blocks];
  std::uint64_t trace[trace_calls][trace_points];  // FLOOR_TRACE only
  std::uint64_t ll_calls[max_members];
  std::uint32_t ll_done;
  std::uint64_t ll[2][max_members][ll_words];
};

struct args {
  const unsigned char* inputs[max_members] = {};  // member k's input, as this process maps it
  flag_area* areas[max_members] = {};             // rank q's flag area, likewise
  unsigned char* out = nullptr;
  std::uint64_t bytes = 0;             // of each input and the output
  std::uint32_t members = 0, me = 0;   // me: this rank's index among the members
  std::uint8_t member[max_members]{};  // member k's rank
  std::uint32_t rank = 0;              // this rank
  std::uint32_t entry_ranks = 0;       // 0: step 1 meets the members; else ranks 0..entry_ranks-1
  std::uint64_t timeout_ticks = 0;
  std::uint32_t* error = nullptr;  // mapped host memory: non-zero once a wait timed out
};

// ll's: this rank's input and output, and every member's flag area as this process maps it.
struct ll_args {
  const unsigned char* in = nullptr;
  unsigned char* out = nullptr;
  flag_area* areas[max_members] = {};  // member k's
  std::uint64_t bytes = 0;             // of the input and the output
  std::uint32_t members = 0, me = 0;   // me: this rank's index among the members
  std::uint8_t member[max_members]{};  // member k's rank
  std::uint32_t rank = 0;              // this rank
  std::uint64_t timeout_ticks = 0;
  std::uint32_t* error = nullptr;  // mapped host memory: non-zero once a wait timed out
};

// The arguments padded to relay's pull kernel's size (floor_options::relay_sized_arguments).
inline constexpr std::size_t relay_argument_bytes = 936;
template <class A>
struct padded {
  A a;
  unsigned char padding[relay_argument_bytes - sizeof(A)];
};
using padded_args = padded<args>;
static_assert(sizeof(padded<args>) == relay_argument_bytes);
static_assert(sizeof(padded<ll_args>) == relay_argument_bytes);

// automatic: ll up to ll_default_max bytes, barrier above (and barrier for whole_job_entry).
enum class floor_algorithm : unsigned char { automatic, ll, barrier };
inline const char* name(floor_algorithm a) {
  return a == floor_algorithm::ll ? "ll" : a == floor_algorithm::barrier ? "barrier" : "automatic";
}

struct floor_options {
  floor_algorithm algorithm = floor_algorithm::automatic;
  bool whole_job_entry = false;
  bool relay_sized_arguments = false;
  // ll only: launched early (gpu::rt::launch_early), each block letting the next kernel in once
  // its waits are done, as relay's ll kernel does past its verdict (the faster); false, an
  // ordinary launch.
  bool early_launch = true;
};

namespace detail {

__device__ inline void stamp(std::uint64_t* stamps, int point) {
#if defined(FLOOR_TRACE) && FLOOR_TRACE
  if (blockIdx.x == 0 && threadIdx.x == 0) stamps[point] = ipc::wall_clock();
#else
  (void)stamps;
  (void)point;
#endif
}

// Block b of every rank met: the members, or at the entry of a whole_job_entry call every rank.
__device__ inline void barrier(const args& a, int phase, std::uint64_t epoch) {
  __syncthreads();  // every thread of the block is done with the step before
  const bool job = phase == 0 && a.entry_ranks != 0;
  if (threadIdx.x < (job ? a.entry_ranks : a.members)) {
    const unsigned q = job ? threadIdx.x : a.member[threadIdx.x], b = blockIdx.x;
    __threadfence_system();
    *static_cast<volatile std::uint64_t*>(&a.areas[q]->flags[phase][b][a.rank]) = epoch;
    const volatile std::uint64_t* mine = &a.areas[a.rank]->flags[phase][b][q];
    const std::uint64_t start = ipc::wall_clock();
    while (*mine < epoch)
      if (ipc::wall_clock() - start > a.timeout_ticks) {
        *static_cast<volatile std::uint32_t*>(a.error) = 1;
        break;
      }
    __threadfence_system();
  }
  __syncthreads();
}

// Relay's sum of 16-byte vectors of T, members in group order: the first member's, then each
// next one's added.
template <class T>
struct vector_sum {
  using R = reduction_traits<T>;
  static constexpr int E = 16 / sizeof(T);
  typename R::accumulator acc[E];

  __device__ void add(const uint4& x, bool first) {
    const T* t = reinterpret_cast<const T*>(&x);
#pragma unroll
    for (int i = 0; i < E; ++i)
      acc[i] = first ? R::load(t[i]) : R::add(acc[i], t[i]);
  }
  __device__ uint4 result() const {
    uint4 y;
    T* t = reinterpret_cast<T*>(&y);
#pragma unroll
    for (int i = 0; i < E; ++i)
      t[i] = R::store(acc[i], 1);
    return y;
  }
};

// ll: the 4 words of vector v in a slot of a call of `vectors` vectors (word j of every vector
// together, so that a warp's loads and stores are contiguous).
__device__ inline std::uint64_t ll_word(std::uint64_t v, int j, std::uint64_t vectors) {
  return static_cast<std::uint64_t>(j) * vectors + v;
}

// ll: vector v of a peer's slot, once its 4 words carry epoch `e` (or the deadline has passed:
// then the error word is set, `late` too, and no later wait of this thread waits).
__device__ inline uint4 ll_take(const volatile std::uint64_t* slot, std::uint64_t v,
                                std::uint64_t vectors, std::uint32_t e, std::uint64_t timeout_ticks,
                                std::uint32_t* error, std::uint64_t& deadline, bool& late) {
  std::uint64_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j)
    w[j] = slot[ll_word(v, j, vectors)];
  for (;;) {
    bool ready = true;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      ready = ready && static_cast<std::uint32_t>(w[j] >> 32) == e;
    if (ready || late) break;
    const std::uint64_t now = ipc::wall_clock();
    if (deadline == 0) {
      deadline = now + timeout_ticks;
    } else if (now > deadline) {
      *static_cast<volatile std::uint32_t*>(error) = 1;
      late = true;
      break;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (static_cast<std::uint32_t>(w[j] >> 32) != e) w[j] = slot[ll_word(v, j, vectors)];
  }
  uint4 y;
  y.x = static_cast<std::uint32_t>(w[0]);
  y.y = static_cast<std::uint32_t>(w[1]);
  y.z = static_cast<std::uint32_t>(w[2]);
  y.w = static_cast<std::uint32_t>(w[3]);
  return y;
}

__device__ inline void save_trace(flag_area* mine, std::uint64_t call,
                                  const std::uint64_t* stamps) {
#if defined(FLOOR_TRACE) && FLOOR_TRACE
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (int i = 0; i < trace_points; ++i)
      mine->trace[call % trace_calls][i] = stamps[i];
#else
  (void)mine;
  (void)call;
  (void)stamps;
#endif
}

}  // namespace detail

template <class T>
__device__ __forceinline__ void floor_body(const args& a) {
  __shared__ std::uint64_t epoch;
  __shared__ std::uint64_t stamps[trace_points];
  detail::stamp(stamps, 0);
  flag_area* mine = a.areas[a.rank];
  if (threadIdx.x == 0)
    epoch = *static_cast<volatile std::uint64_t*>(&mine->epochs[blockIdx.x]) + 1;
  __syncthreads();
  const std::uint64_t e = epoch;
  detail::barrier(a, 0, e);
  detail::stamp(stamps, 1);
  const std::uint64_t vectors = a.bytes / 16;
  const std::uint64_t per = (vectors + gridDim.x - 1) / gridDim.x;
  const std::uint64_t begin = per * blockIdx.x;
  const std::uint64_t end = begin + per < vectors ? begin + per : vectors;
  for (std::uint64_t v = begin + threadIdx.x; v < end; v += blockDim.x) {
    detail::vector_sum<T> sum;
    for (std::uint32_t k = 0; k < a.members; ++k)
      sum.add(reinterpret_cast<const uint4*>(a.inputs[k])[v], k == 0);
    reinterpret_cast<uint4*>(a.out)[v] = sum.result();
  }
  detail::stamp(stamps, 2);
  detail::barrier(a, 1, e);
  if (threadIdx.x == 0) *static_cast<volatile std::uint64_t*>(&mine->epochs[blockIdx.x]) = e;
  detail::stamp(stamps, 3);
  detail::save_trace(mine, e, stamps);
}

// ll: the call's epoch with each member read (thread k: member k's, with the slots it pushes to
// and takes from), then every vector of this thread pushed to every peer's slot, then the sums
// read from this rank's slots; the last block to end counts the call.
template <class T>
__device__ __forceinline__ void ll_body(const ll_args& a) {
  __shared__ std::uint64_t calls[max_members];  // member k's call with this rank, counted from 1
  __shared__ std::uint64_t* push[max_members];  // member k's slot of this rank, for this call
  __shared__ const std::uint64_t* take[max_members];  // this rank's slot of member k
  __shared__ std::uint32_t ranks[max_members];        // member k's rank
  __shared__ std::uint64_t stamps[trace_points];
  gpu::wait_for_prior_grids();  // launched early: nothing read before the kernel ahead has ended
  detail::stamp(stamps, 0);
  flag_area* mine = a.areas[a.me];
  const std::uint64_t vectors = a.bytes / 16;
  const std::uint64_t first = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  const auto* in = reinterpret_cast<const uint4*>(a.in);
  // The first vector's load is issued before the epochs' (they do not depend on each other).
  uint4 head{};
  if (first < vectors) head = in[first];
  if (threadIdx.x < a.members) {
    const std::uint32_t k = threadIdx.x, q = a.member[k];
    const std::uint64_t c = *static_cast<volatile std::uint64_t*>(&mine->ll_calls[q]) + 1;
    calls[k] = c;
    push[k] = a.areas[k]->ll[c & 1][a.rank];
    take[k] = mine->ll[c & 1][q];
    ranks[k] = q;
  }
  __syncthreads();
  for (std::uint64_t v = first; v < vectors; v += stride) {
    const uint4 x = v == first ? head : in[v];
    const std::uint32_t words[4] = {x.x, x.y, x.z, x.w};
    for (std::uint32_t k = 0; k < a.members; ++k) {
      if (k == a.me) continue;
      volatile std::uint64_t* slot = push[k];
      const std::uint64_t e = static_cast<std::uint32_t>(calls[k]);
#pragma unroll
      for (int j = 0; j < 4; ++j)
        slot[detail::ll_word(v, j, vectors)] = e << 32 | words[j];
    }
  }
  detail::stamp(stamps, 1);
  std::uint64_t deadline = 0;
  bool late = false;
  for (std::uint64_t v = first; v < vectors; v += stride) {
    detail::vector_sum<T> sum;
    for (std::uint32_t k = 0; k < a.members; ++k)
      sum.add(k == a.me ? in[v]
                        : detail::ll_take(take[k], v, vectors, static_cast<std::uint32_t>(calls[k]),
                                          a.timeout_ticks, a.error, deadline, late),
              k == 0);
    reinterpret_cast<uint4*>(a.out)[v] = sum.result();
  }
  gpu::allow_next_grid();  // this block waits for no other rank past here
  detail::stamp(stamps, 2);
  __syncthreads();  // every thread of the block is done with calls[]
  if (threadIdx.x == 0 && (gridDim.x == 1 || atomicAdd(&mine->ll_done, 1u) == gridDim.x - 1)) {
    // The last block: every block has read the epochs (the next launch sees these writes).
    mine->ll_done = 0;
    for (std::uint32_t k = 0; k < a.members; ++k)
      if (k != a.me) mine->ll_calls[ranks[k]] = calls[k];
  }
  detail::stamp(stamps, 3);
  detail::save_trace(mine, calls[a.me == 0 ? 1 : 0], stamps);
}

template <class T>
__global__ void __launch_bounds__(block_threads) floor_kernel(args a) {
  floor_body<T>(a);
}
template <class T>
__global__ void __launch_bounds__(block_threads) floor_kernel_padded(padded_args p) {
  floor_body<T>(p.a);
}
// ll's kernels read their argument in place (a grid constant: CUDA; HIP's kernel arguments are in
// memory already), rather than from a copy on the stack that the members' arrays, indexed at run
// time, would otherwise cost (every read of them through local memory).
#if defined(RELAY_GPU_HIP)
#define FLOOR_GRID_CONSTANT
#else
#define FLOOR_GRID_CONSTANT __grid_constant__
#endif
template <class T>
__global__ void __launch_bounds__(block_threads) ll_kernel(const FLOOR_GRID_CONSTANT ll_args a) {
  ll_body<T>(a);
}
template <class T>
__global__ void __launch_bounds__(block_threads)
    ll_kernel_padded(const FLOOR_GRID_CONSTANT padded<ll_args> p) {
  ll_body<T>(p.a);
}

// The element types the floor sums (sum only).
template <class T>
inline constexpr bool is_summed = std::is_same_v<T, float> || std::is_same_v<T, bfloat16> ||
                                  std::is_same_v<T, float16> || std::is_same_v<T, std::int32_t>;
inline bool supports(dtype t) {
  return visit_dtype(t, [](auto x) { return is_summed<decltype(x)>; });
}

class floor_allreduce : relay::no_copy {
 public:
  ~floor_allreduce() { close(); }

  // Collective over `boot` (2 to max_members ranks): this rank's flag area, exported, and every
  // peer's, mapped.
  status open(bootstrap& boot, int device, std::chrono::milliseconds timeout) {
    device_ = device;
    me_ = boot.rank();
    ranks_ = boot.size();
    if (ranks_ > max_members)
      return {errc::unsupported,
              "the floor runs jobs of at most 8 ranks, not " + std::to_string(ranks_)};
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device); e != gpu::rt::success)
      return gpu::failure("selecting the device", device, e);
    void* p = nullptr;
    if (gpu::rt::error_t e = gpu::rt::malloc(&p, sizeof(flag_area)); e != gpu::rt::success)
      return gpu::failure("allocating the floor's flags", device, e);
    flags_ = static_cast<flag_area*>(p);
    if (gpu::rt::error_t e = gpu::rt::memset(p, 0, sizeof(flag_area)); e != gpu::rt::success)
      return gpu::failure("clearing the floor's flags", device, e);
    void* host = nullptr;
    if (gpu::rt::error_t e = gpu::rt::host_alloc_mapped(&host, sizeof(std::uint32_t));
        e != gpu::rt::success)
      return gpu::failure("allocating the floor's error word", device, e);
    error_host_ = static_cast<std::uint32_t*>(host);
    *error_host_ = 0;
    void* d = nullptr;
    if (gpu::rt::error_t e = gpu::rt::device_address(&d, host); e != gpu::rt::success)
      return gpu::failure("mapping the floor's error word", device, e);
    error_device_ = static_cast<std::uint32_t*>(d);
    if (gpu::rt::error_t e = ipc::ticks_per_ms(&ticks_per_ms_, device); e != gpu::rt::success)
      return gpu::failure("reading the device clock's rate", device, e);
    int sms = 0;
    if (gpu::rt::error_t e = gpu::rt::sm_count(&sms, device); e != gpu::rt::success)
      return gpu::failure("counting the multiprocessors", device, e);
    // Every rank's flag area mapped here, and how many ranks share each device: the grid is
    // the smallest share of multiprocessors, the same on every rank (block b meets block b).
    struct record {
      std::uint64_t pid = 0, pointer = 0;
      std::int64_t sms = 0;
      std::array<char, 32> place{};
      gpu::rt::ipc_handle_t handle{};
    } rec;
#if defined(RELAY_GPU_HIP)
    const gpu::rt::error_t placed = hipDeviceGetPCIBusId(rec.place.data(), 31, device);
#else
    const gpu::rt::error_t placed = cudaDeviceGetPCIBusId(rec.place.data(), 31, device);
#endif
    if (placed != gpu::rt::success) return gpu::failure("reading the PCI address", device, placed);
    rec.pid = static_cast<std::uint64_t>(::getpid());
    rec.pointer = reinterpret_cast<std::uintptr_t>(flags_);
    rec.sms = sms;
    if (gpu::rt::error_t e = gpu::rt::ipc_get_handle(&rec.handle, flags_); e != gpu::rt::success)
      return gpu::failure("exporting the floor's flags", device, e);
    std::vector<std::vector<std::byte>> all;
    if (status s = boot.all_gather(std::as_bytes(std::span(&rec, 1)), all, timeout); !s) return s;
    std::vector<record> recs(all.size());
    for (std::size_t q = 0; q < all.size(); ++q) {
      if (all[q].size() != sizeof(record)) return {errc::mismatch, "a malformed floor record"};
      std::memcpy(&recs[q], all[q].data(), sizeof(record));
    }
    grid_ = max_blocks;
    areas_.assign(all.size(), nullptr);
    opened_.assign(all.size(), false);
    for (std::size_t q = 0; q < recs.size(); ++q) {
      const auto share = std::count_if(recs.begin(), recs.end(),
                                       [&](const record& r) { return r.place == recs[q].place; });
      grid_ =
          std::min<int>(grid_, static_cast<int>(std::max<std::int64_t>(1, recs[q].sms / share)));
      if (static_cast<int>(q) == me_) {
        areas_[q] = flags_;
      } else if (recs[q].pid == rec.pid) {
        areas_[q] = reinterpret_cast<flag_area*>(recs[q].pointer);
      } else {
        void* mapped = nullptr;
        if (gpu::rt::error_t e = gpu::rt::ipc_open(&mapped, recs[q].handle); e != gpu::rt::success)
          return gpu::failure("opening a peer's floor flags", device, e);
        areas_[q] = static_cast<flag_area*>(mapped);
        opened_[q] = true;
      }
    }
    inputs_.assign(all.size(), nullptr);
    inputs_opened_.assign(all.size(), false);
    if (gpu::rt::error_t e = gpu::rt::device_synchronize(); e != gpu::rt::success)
      return gpu::failure("clearing the floor's flags", device, e);
    return {};
  }

  // Collective, every rank with its own memory (null: none): the allocation holding the
  // buffers of the calls to come, mapped by every peer. A rank whose memory is the one it mapped
  // last (the same allocation: the same handle) says so, and its peers keep their mapping.
  status map(bootstrap& boot, void* memory, std::chrono::milliseconds timeout) {
    const gpu::device_guard keep;
    (void)gpu::rt::set_device(device_);
    struct record {
      std::uint64_t pid = 0, pointer = 0;
      std::int32_t changed = 0;
      gpu::rt::ipc_handle_t handle{};
    } rec;
    rec.pid = static_cast<std::uint64_t>(::getpid());
    rec.pointer = reinterpret_cast<std::uintptr_t>(memory);
    // A new allocation may come back at the old one's address: its handle tells them apart.
    if (memory != nullptr)
      if (gpu::rt::error_t e = gpu::rt::ipc_get_handle(&rec.handle, memory); e != gpu::rt::success)
        return gpu::failure("exporting the floor's buffers", device_, e);
    rec.changed =
        memory != memory_ || std::memcmp(&rec.handle, &handle_, sizeof handle_) != 0 ? 1 : 0;
    handle_ = rec.handle;
    std::vector<std::vector<std::byte>> all;
    if (status s = boot.all_gather(std::as_bytes(std::span(&rec, 1)), all, timeout); !s) return s;
    // The peers' kernels that read the old mappings are done: this rank's stream is idle
    // before relay-bench reallocates, and the peers' calls ended with the barrier-like gather.
    for (std::size_t q = 0; q < all.size(); ++q) {
      record r;
      if (all[q].size() != sizeof r) return {errc::mismatch, "a malformed floor record"};
      std::memcpy(&r, all[q].data(), sizeof r);
      if (r.changed == 0) continue;
      if (inputs_opened_[q]) (void)gpu::rt::ipc_close(inputs_[q]);
      inputs_[q] = nullptr;
      inputs_opened_[q] = false;
      if (static_cast<int>(q) == me_ || r.pointer == 0) {
        inputs_[q] = reinterpret_cast<void*>(r.pointer);
      } else if (r.pid == rec.pid) {
        inputs_[q] = reinterpret_cast<void*>(r.pointer);
      } else {
        if (gpu::rt::error_t e = gpu::rt::ipc_open(&inputs_[q], r.handle); e != gpu::rt::success)
          return gpu::failure("opening a peer's floor buffers", device_, e);
        inputs_opened_[q] = true;
      }
    }
    memory_ = memory;
    return {};
  }

  // Closes this rank's mappings of its peers' buffers (local: no peer takes part), before the
  // caller frees and reallocates its own: a process that still maps a peer's old allocation
  // cannot map that peer's new one (CUDA refuses the second mapping when the new allocation
  // comes back at the old one's address), and relay's registration of it would fail too. The
  // next map() maps them all again.
  void unmap() {
    const gpu::device_guard keep;
    (void)gpu::rt::set_device(device_);
    for (std::size_t q = 0; q < inputs_.size(); ++q) {
      if (inputs_opened_[q]) (void)gpu::rt::ipc_close(inputs_[q]);
      inputs_[q] = nullptr;
      inputs_opened_[q] = false;
    }
    memory_ = nullptr;
    handle_ = {};
  }

  // The algorithm a call of `bytes` runs with `how` (floor_options::algorithm resolved).
  static floor_algorithm algorithm(std::uint64_t bytes, floor_options how) {
    if (how.algorithm != floor_algorithm::automatic) return how.algorithm;
    return how.whole_job_entry || bytes > ll_default_max ? floor_algorithm::barrier
                                                         : floor_algorithm::ll;
  }

  // One allreduce (sum) among `group` (this rank in it), out of place, enqueued on `stream`;
  // every member calls with the same `bytes` and `how`, and a rank's calls run one after another
  // (ll's slots by parity count on it: one stream, or streams ordered by the caller). barrier:
  // `send` and `recv` lie in the mapped memory, `send` at the same offset on every member; with
  // `how.whole_job_entry` every rank of the job must call with the same `bytes` (block b meets
  // block b of every rank). ll: at most ll_capacity bytes, and no whole-job entry; a call of no
  // bytes launches nothing.
  status run(std::span<const int> group, const void* send, void* recv, std::uint64_t bytes,
             dtype type, std::chrono::milliseconds timeout, gpu::rt::stream_t stream,
             floor_options how = {}) {
    if (status s = error(); !s) return s;
    if (!supports(type) || group.size() < 2 || group.size() > max_members || bytes % 16 != 0 ||
        reinterpret_cast<std::uintptr_t>(send) % 16 != 0 ||
        reinterpret_cast<std::uintptr_t>(recv) % 16 != 0)
      return {errc::unsupported, "the floor runs sums of 2 to 8 ranks on 16-byte multiples"};
    const bool ll = algorithm(bytes, how) == floor_algorithm::ll;
    if (ll && how.whole_job_entry)
      return {errc::unsupported, "the floor's whole-job entry is the barrier algorithm's"};
    if (ll && bytes > ll_capacity)
      return {errc::unsupported, "the floor's ll algorithm runs calls of at most " +
                                     std::to_string(ll_capacity) + " bytes, not " +
                                     std::to_string(bytes)};
    if (!ll && memory_ == nullptr)
      return {errc::invalid_argument, "the floor has no mapped memory"};
    if (ll && bytes == 0) return {};
    const std::uint64_t ticks = static_cast<std::uint64_t>(timeout.count()) * ticks_per_ms_;
    const gpu::rt::error_t e =
        ll ? launch_ll(group, send, recv, bytes, type, ticks, stream, how)
           : launch_barrier(group, send, recv, bytes, type, ticks, stream, how);
    if (e != gpu::rt::success) return gpu::failure("launching the floor kernel", device_, e);
    return {};
  }

  // A wait of an earlier call that timed out.
  status error() const {
    if (error_host_ != nullptr && *static_cast<volatile std::uint32_t*>(error_host_) != 0)
      return {errc::timeout, "a floor kernel's wait for a peer timed out"};
    return {};
  }
  int grid() const {
    return grid_;
  }
  // Block 0's stamps of the last trace_calls calls (FLOOR_TRACE), once the device is idle.
  gpu::rt::error_t trace(std::uint64_t (&out)[trace_calls][trace_points]) const {
    return gpu::rt::memcpy(out, flags_->trace, sizeof out);
  }

 private:
  // The launches of run(), which has checked the call.
  gpu::rt::error_t launch_ll(std::span<const int> group, const void* send, void* recv,
                             std::uint64_t bytes, dtype type, std::uint64_t ticks,
                             gpu::rt::stream_t stream, floor_options how) {
    ll_args a;
    a.in = static_cast<const unsigned char*>(send);
    a.out = static_cast<unsigned char*>(recv);
    a.members = static_cast<std::uint32_t>(group.size());
    for (std::size_t k = 0; k < group.size(); ++k) {
      if (group[k] == me_) a.me = static_cast<std::uint32_t>(k);
      a.areas[k] = areas_[static_cast<std::size_t>(group[k])];
      a.member[k] = static_cast<std::uint8_t>(group[k]);
    }
    a.rank = static_cast<std::uint32_t>(me_);
    a.bytes = bytes;
    a.timeout_ticks = ticks;
    a.error = error_device_;
    // A thread per 16 bytes: one block of as many warps as the call needs, or more blocks of
    // block_threads (they never wait on each other).
    const std::uint64_t vectors = bytes / 16;
    const auto threads =
        static_cast<unsigned>(std::min<std::uint64_t>(block_threads, (vectors + 31) / 32 * 32));
    const auto grid = static_cast<unsigned>(std::clamp<std::uint64_t>(
        (vectors + threads - 1) / threads, 1, static_cast<std::uint64_t>(grid_)));
    return visit_dtype(type, [&](auto x) {
      using T = decltype(x);
      if constexpr (is_summed<T>) {
        auto launch = [&](auto kernel, const auto& arguments) {
          return gpu::rt::launch_early(how.early_launch, kernel, grid, threads, stream, arguments);
        };
        if (!how.relay_sized_arguments) return launch(ll_kernel<T>, a);
        padded<ll_args> p{};
        p.a = a;
        return launch(ll_kernel_padded<T>, p);
      } else
        return gpu::rt::error_t{};
    });
  }

  gpu::rt::error_t launch_barrier(std::span<const int> group, const void* send, void* recv,
                                  std::uint64_t bytes, dtype type, std::uint64_t ticks,
                                  gpu::rt::stream_t stream, floor_options how) {
    args a;
    const std::uintptr_t offset =
        reinterpret_cast<std::uintptr_t>(send) - reinterpret_cast<std::uintptr_t>(memory_);
    a.members = static_cast<std::uint32_t>(group.size());
    for (std::size_t k = 0; k < group.size(); ++k) {
      const auto q = static_cast<std::size_t>(group[k]);
      if (group[k] == me_) a.me = static_cast<std::uint32_t>(k);
      a.inputs[k] = static_cast<const unsigned char*>(inputs_[q]) + offset;
      a.member[k] = static_cast<std::uint8_t>(q);
    }
    for (std::size_t q = 0; q < areas_.size(); ++q)
      a.areas[q] = areas_[q];
    a.rank = static_cast<std::uint32_t>(me_);
    a.entry_ranks = how.whole_job_entry ? static_cast<std::uint32_t>(ranks_) : 0;
    a.out = static_cast<unsigned char*>(recv);
    a.bytes = bytes;
    a.timeout_ticks = ticks;
    a.error = error_device_;
    const auto grid = static_cast<unsigned>(std::clamp<std::uint64_t>(
        (bytes / 16 + block_threads - 1) / block_threads, 1, static_cast<std::uint64_t>(grid_)));
    return visit_dtype(type, [&](auto x) {
      using T = decltype(x);
      if constexpr (is_summed<T>) {
        if (!how.relay_sized_arguments)
          return gpu::rt::launch(floor_kernel<T>, grid, block_threads, stream, a);
        padded_args p{};
        p.a = a;
        return gpu::rt::launch(floor_kernel_padded<T>, grid, block_threads, stream, p);
      } else
        return gpu::rt::error_t{};
    });
  }

  void close() {
    const gpu::device_guard keep;
    (void)gpu::rt::set_device(device_);
    (void)gpu::rt::device_synchronize();
    for (std::size_t q = 0; q < inputs_.size(); ++q)
      if (inputs_opened_[q]) (void)gpu::rt::ipc_close(inputs_[q]);
    for (std::size_t q = 0; q < areas_.size(); ++q)
      if (opened_[q]) (void)gpu::rt::ipc_close(areas_[q]);
    inputs_.clear();
    areas_.clear();
    if (flags_ != nullptr) (void)gpu::rt::free(flags_);
    if (error_host_ != nullptr) (void)gpu::rt::host_free(error_host_);
    flags_ = nullptr;
    error_host_ = nullptr;
  }

  int device_ = 0, me_ = 0, ranks_ = 0, grid_ = 1;
  std::uint64_t ticks_per_ms_ = 1;
  flag_area* flags_ = nullptr;
  std::vector<flag_area*> areas_;   // every rank's flags, here
  std::vector<bool> opened_;        // areas_[q] was opened here (and is closed here)
  void* memory_ = nullptr;          // this rank's mapped buffers
  gpu::rt::ipc_handle_t handle_{};  // and their handle
  std::vector<void*> inputs_;       // every rank's, here
  std::vector<bool> inputs_opened_;
  std::uint32_t* error_host_ = nullptr;
  std::uint32_t* error_device_ = nullptr;
};

}  // namespace relay::bench::floor
