// The one place that knows which GPU runtime is underneath: HIP on AMD, the CUDA runtime on
// NVIDIA. Everything else in relay::gpu calls these wrappers, and kernels are written once (the
// triple-chevron launch and the __global__/__device__ keywords mean the same in both).
//
// The NVIDIA path includes the CUDA runtime directly rather than HIP's NVIDIA headers: HIP's
// CUDA shim lags CUDA releases (HIP 5.2's does not build against CUDA 13), and nothing here needs
// more than the handful of calls below. Most calls are spelled alike but for the prefix
// (hipMalloc, cudaMalloc), which RELAY_RT supplies; the few that differ are written out twice.
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>

#include "relay/gpu/hip_fence.hpp"
#define RELAY_GPU_HIP 1
#define RELAY_RT(name) hip##name
#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#define RELAY_GPU_CUDA 1
#define RELAY_RT(name) cuda##name
#else
#error "relay/gpu: compile this translation unit with nvcc (CUDA) or hipcc (HIP)"
#endif

namespace relay::gpu::rt {

using error_t = RELAY_RT(Error_t);
using stream_t = RELAY_RT(Stream_t);
using event_t = RELAY_RT(Event_t);
inline constexpr error_t success = RELAY_RT(Success);

inline error_t device_count(int* n) {
  return RELAY_RT(GetDeviceCount)(n);
}
inline error_t set_device(int d) {
  return RELAY_RT(SetDevice)(d);
}
inline error_t get_device(int* d) {
  return RELAY_RT(GetDevice)(d);
}
inline error_t malloc(void** p, std::size_t n) {
  return RELAY_RT(Malloc)(p, n);
}
inline error_t free(void* p) {
  return RELAY_RT(Free)(p);
}
// Any direction: both runtimes address host and device memory in one space.
inline error_t memcpy(void* d, const void* s, std::size_t n) {
  return RELAY_RT(Memcpy)(d, s, n, RELAY_RT(MemcpyDefault));
}
// Host to device, landed on return. A plain memcpy from pageable host memory may return once the
// bytes are staged, before the device has them, and work on a non-blocking stream does not wait
// for it: a kernel there could read the old bytes.
inline error_t upload(void* d, const void* host, std::size_t n) {
  const error_t e = RELAY_RT(Memcpy)(d, host, n, RELAY_RT(MemcpyDefault));
  return e == RELAY_RT(Success) ? RELAY_RT(DeviceSynchronize)() : e;
}
inline error_t memcpy_async(void* d, const void* s, std::size_t n, stream_t st) {
  return RELAY_RT(MemcpyAsync)(d, s, n, RELAY_RT(MemcpyDefault), st);
}
inline error_t memcpy_peer_async(void* d, int dd, const void* s, int sd, std::size_t n,
                                 stream_t st) {
  return RELAY_RT(MemcpyPeerAsync)(d, dd, s, sd, n, st);
}
inline error_t memset(void* d, int v, std::size_t n) {
  return RELAY_RT(Memset)(d, v, n);
}
// Non-blocking: the legacy default stream (where a caller's plain memcpy runs) does not
// serialize with the executor's streams.
inline error_t stream_create(stream_t* s) {
  return RELAY_RT(StreamCreateWithFlags)(s, RELAY_RT(StreamNonBlocking));
}
inline error_t stream_destroy(stream_t s) {
  return RELAY_RT(StreamDestroy)(s);
}
inline error_t stream_synchronize(stream_t s) {
  return RELAY_RT(StreamSynchronize)(s);
}
// success when everything issued on s has finished, not_ready while work is pending.
inline error_t stream_query(stream_t s) {
  return RELAY_RT(StreamQuery)(s);
}
inline constexpr error_t not_ready = RELAY_RT(ErrorNotReady);
// What asking an event recorded during a graph capture returns: the capture's, not the host's.
inline constexpr error_t captured_event = RELAY_RT(ErrorCapturedEvent);
inline error_t stream_wait_event(stream_t s, event_t e) {
  return RELAY_RT(StreamWaitEvent)(s, e, 0);
}
// Ordering events skip timing, which makes recording them cheaper.
inline error_t event_create(event_t* e, bool timing = false) {
  return RELAY_RT(EventCreateWithFlags)(
      e, timing ? RELAY_RT(EventDefault) : RELAY_RT(EventDisableTiming));
}
inline error_t event_destroy(event_t e) {
  return RELAY_RT(EventDestroy)(e);
}
inline error_t event_record(event_t e, stream_t s) {
  return RELAY_RT(EventRecord)(e, s);
}
inline error_t event_synchronize(event_t e) {
  return RELAY_RT(EventSynchronize)(e);
}
// success when the work before the event's record has finished, not_ready while it is pending.
inline error_t event_query(event_t e) {
  return RELAY_RT(EventQuery)(e);
}
inline error_t event_elapsed_ms(float* ms, event_t a, event_t b) {
  return RELAY_RT(EventElapsedTime)(ms, a, b);
}
inline error_t device_synchronize() {
  return RELAY_RT(DeviceSynchronize)();
}
inline error_t can_access_peer(int* can, int d, int peer) {
  return RELAY_RT(DeviceCanAccessPeer)(can, d, peer);
}
// Enables access from the current device to `peer`; "already enabled" counts as success.
inline error_t enable_peer_access(int peer) {
  const error_t e = RELAY_RT(DeviceEnablePeerAccess)(peer, 0);
  if (e == RELAY_RT(ErrorPeerAccessAlreadyEnabled)) {
    (void)RELAY_RT(GetLastError)();
    return success;
  }
  return e;
}
inline error_t get_last_error() {
  return RELAY_RT(GetLastError)();
}
inline const char* error_string(error_t e) {
  return RELAY_RT(GetErrorString)(e);
}
inline const char* error_name(error_t e) {
  return RELAY_RT(GetErrorName)(e);
}
// Reads a kernel's attributes, which loads its code on the current device now: under lazy module
// loading (CUDA's default) a kernel is otherwise loaded at its first launch, and a load waits for
// the device's running kernels.
template <class Kernel>
inline error_t load_kernel(Kernel k) {
  RELAY_RT(FuncAttributes) attributes{};
  return RELAY_RT(FuncGetAttributes)(&attributes, reinterpret_cast<const void*>(k));
}
template <class Kernel>
inline error_t max_active_blocks(int* n, Kernel k, int block) {
  return RELAY_RT(OccupancyMaxActiveBlocksPerMultiprocessor)(n, k, block, 0);
}
#if defined(RELAY_GPU_HIP)
using device_properties = hipDeviceProp_t;
#else
using device_properties = cudaDeviceProp;
#endif
inline error_t device_name(std::string& out, int d) {
  device_properties p{};
  const error_t e = RELAY_RT(GetDeviceProperties)(&p, d);
  if (e == success) out = p.name;
  return e;
}
// The device's architecture as core/fp8_target.hpp reads it: "gfx942:sramecc+:xnack-" (HIP's
// gcnArchName), "sm_90" (CUDA's compute capability).
inline error_t device_architecture(std::string& out, int d) {
  device_properties p{};
  const error_t e = RELAY_RT(GetDeviceProperties)(&p, d);
#if defined(RELAY_GPU_HIP)
  if (e == success) out = p.gcnArchName;
#else
  if (e == success) out = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
#endif
  return e;
}

enum class pointer_kind : unsigned char { other, device, managed };

// What differs: names, and where a pointer's attributes say managed or device memory.
#if defined(RELAY_GPU_HIP)
inline constexpr const char* platform = "HIP";
inline constexpr auto sm_count_attribute = hipDeviceAttributeMultiprocessorCount;
inline constexpr error_t out_of_memory = hipErrorOutOfMemory;
using pointer_attributes = hipPointerAttribute_t;
#if HIP_VERSION_MAJOR >= 6
inline bool is_managed(const pointer_attributes& a) {
  return a.type == hipMemoryTypeManaged;
}
inline bool is_device(const pointer_attributes& a) {
  return a.type == hipMemoryTypeDevice;
}
#else
inline bool is_managed(const pointer_attributes& a) {
  return a.isManaged != 0;
}
inline bool is_device(const pointer_attributes& a) {
  return a.memoryType == hipMemoryTypeDevice;
}
#endif
#else
inline constexpr const char* platform = "CUDA";
inline constexpr auto sm_count_attribute = cudaDevAttrMultiProcessorCount;
inline constexpr error_t out_of_memory = cudaErrorMemoryAllocation;
using pointer_attributes = cudaPointerAttributes;
inline bool is_managed(const pointer_attributes& a) {
  return a.type == cudaMemoryTypeManaged;
}
inline bool is_device(const pointer_attributes& a) {
  return a.type == cudaMemoryTypeDevice;
}
#endif

inline error_t sm_count(int* n, int d) {
  return RELAY_RT(DeviceGetAttribute)(n, sm_count_attribute, d);
}
inline bool is_out_of_memory(error_t e) {
  return e == out_of_memory;
}
// What the runtime knows of a pointer: device memory (and of which device), managed memory, or
// neither (host memory). A failed query also sets the last error, which is cleared here.
inline pointer_kind classify(const void* p, int* device) {
  pointer_attributes a{};
  if (RELAY_RT(PointerGetAttributes)(&a, p) != success) {
    (void)RELAY_RT(GetLastError)();
    return pointer_kind::other;
  }
  *device = a.device;
  if (is_managed(a)) return pointer_kind::managed;
  return is_device(a) ? pointer_kind::device : pointer_kind::other;
}

// Launches kernel<<<grid, block, 0, stream>>>(args...) and returns the launch's error, so that no
// launch goes unchecked.
template <class... Params, class... Args>
inline error_t launch(void (*kernel)(Params...), unsigned grid, unsigned block, stream_t stream,
                      Args&&... args) {
  kernel<<<grid, block, 0, stream>>>(static_cast<Args&&>(args)...);
  return get_last_error();
}

// launch(), where `early`, of a kernel that may be made resident before the kernel ahead of it on
// `stream` has ended (CUDA's programmatic stream serialization, gpu/grid_dependency.hpp): the
// kernel must call gpu::wait_for_prior_grids before it reads anything that kernel may write. HIP
// has no such launch: there, as where `early` is false, it is an ordinary one.
template <class... Params, class... Args>
inline error_t launch_early(bool early, void (*kernel)(Params...), unsigned grid, unsigned block,
                            stream_t stream, Args&&... args) {
#if defined(RELAY_GPU_CUDA)
  if (early) {
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(grid);
    config.blockDim = dim3(block);
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    if (const error_t e = cudaLaunchKernelEx(&config, kernel, static_cast<Args&&>(args)...);
        e != success)
      return e;
    return get_last_error();
  }
#else
  (void)early;
#endif
  return launch(kernel, grid, block, stream, static_cast<Args&&>(args)...);
}

// ---- the ipc transport's calls (transport/ipc/memory.hpp) and graph capture --------------------

using ipc_handle_t = RELAY_RT(IpcMemHandle_t);
inline error_t ipc_get_handle(ipc_handle_t* h, void* p) {
  return RELAY_RT(IpcGetMemHandle)(h, p);
}
// One lock for a process's opening and closing of handles: the runtime counts a handle opened
// twice in one process (two hosted ranks of it map the same peer), but two threads opening one
// handle at once can be told it is already mapped.
inline std::mutex& ipc_handles_lock() {
  static std::mutex m;
  return m;
}
// Maps a peer process's exported allocation; peer access to its device is enabled as needed.
inline error_t ipc_open(void** p, const ipc_handle_t& h) {
  const std::lock_guard<std::mutex> hold(ipc_handles_lock());
  return RELAY_RT(IpcOpenMemHandle)(p, h, RELAY_RT(IpcMemLazyEnablePeerAccess));
}
inline error_t ipc_close(void* p) {
  const std::lock_guard<std::mutex> hold(ipc_handles_lock());
  return RELAY_RT(IpcCloseMemHandle)(p);
}
// The allocation that holds `p`: its start and size. Registering a user buffer exports the whole
// allocation (an exported handle names an allocation, and a peer maps it from its start), so the
// buffer's offset in it is needed. HIP has the call; the CUDA runtime has none, so the driver's
// cuMemGetAddressRange is looked up through the runtime (no link to libcuda).
inline error_t address_range(void** base, std::size_t* bytes, const void* p) {
#if defined(RELAY_GPU_HIP)
  hipDeviceptr_t b = nullptr;
  const error_t e = hipMemGetAddressRange(&b, bytes, const_cast<void*>(p));
  *base = b;
  return e;
#else
  using range_fn = int (*)(unsigned long long*, std::size_t*, unsigned long long);
  static range_fn fn = []() -> range_fn {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000,
                                                           cudaEnableDefault, &found);
#else
    const cudaError_t e =
        cudaGetDriverEntryPoint("cuMemGetAddressRange", &f, cudaEnableDefault, &found);
#endif
    return e == cudaSuccess && found == cudaDriverEntryPointSuccess ? reinterpret_cast<range_fn>(f)
                                                                    : nullptr;
  }();
  if (fn == nullptr) return cudaErrorNotSupported;
  unsigned long long b = 0;
  if (fn(&b, bytes, reinterpret_cast<unsigned long long>(p)) != 0) return cudaErrorInvalidValue;
  *base = reinterpret_cast<void*>(b);
  return cudaSuccess;
#endif
}
// Stream-ordered pool memory (what the ipc transport must refuse to register; its tests make some).
inline error_t malloc_async(void** p, std::size_t n, stream_t s) {
  return RELAY_RT(MallocAsync)(p, n, s);
}
inline error_t free_async(void* p, stream_t s) {
  return RELAY_RT(FreeAsync)(p, s);
}
// Pinned host memory that the device writes directly (its device address from device_address).
// Device memory that kernels on other devices write while this device's kernels poll it: on AMD
// uncached (hipDeviceMallocUncached: every access bypasses the caches), or fine-grained where the
// HIP headers have no such flag (HIP 5: coherent while kernels run, through the page tables'
// coherence bit); plain device memory on NVIDIA, whose peer memory is coherent at system scope.
// uncached_kind names which, as the configure step prints it.
#if defined(RELAY_GPU_HIP) && defined(hipDeviceMallocUncached)
inline constexpr const char* uncached_kind = "uncached (hipDeviceMallocUncached)";
#elif defined(RELAY_GPU_HIP)
inline constexpr const char* uncached_kind = "fine-grained (hipDeviceMallocFinegrained)";
#else
inline constexpr const char* uncached_kind = "device memory (cudaMalloc)";
#endif
inline error_t malloc_uncached(void** p, std::size_t n) {
#if defined(RELAY_GPU_HIP) && defined(hipDeviceMallocUncached)
  return hipExtMallocWithFlags(p, n, hipDeviceMallocUncached);
#elif defined(RELAY_GPU_HIP)
  return hipExtMallocWithFlags(p, n, hipDeviceMallocFinegrained);
#else
  return cudaMalloc(p, n);
#endif
}
// Device memory that kernels on other devices write and this device's kernels read after a
// signal: fine-grained on AMD (coherent while kernels run; coarse-grained memory is coherent
// only at kernel boundaries), plain device memory on NVIDIA.
inline error_t malloc_fine_grained(void** p, std::size_t n) {
#if defined(RELAY_GPU_HIP)
  return hipExtMallocWithFlags(p, n, hipDeviceMallocFinegrained);
#else
  return cudaMalloc(p, n);
#endif
}
// Host memory mapped into the device, coherent while kernels run (AMD: hipHostMallocCoherent, so
// a kernel's stores reach the host and the host's reach polling kernels without a synchronize).
inline error_t host_alloc_mapped(void** p, std::size_t n) {
#if defined(RELAY_GPU_HIP)
  return hipHostMalloc(p, n, hipHostMallocMapped | hipHostMallocCoherent);
#else
  return cudaHostAlloc(p, n, cudaHostAllocMapped);
#endif
}
inline error_t host_free(void* p) {
#if defined(RELAY_GPU_HIP)
  return hipHostFree(p);
#else
  return cudaFreeHost(p);
#endif
}
inline error_t device_address(void** d, void* host) {
  return RELAY_RT(HostGetDevicePointer)(d, host, 0);
}
// Whether work issued on s is being captured into a graph.
inline error_t is_capturing(stream_t s, bool* capturing) {
  RELAY_RT(StreamCaptureStatus) st = RELAY_RT(StreamCaptureStatusNone);
  const error_t e = RELAY_RT(StreamIsCapturing)(s, &st);
  *capturing = st != RELAY_RT(StreamCaptureStatusNone);
  return e;
}
using graph_t = RELAY_RT(Graph_t);
using graph_exec_t = RELAY_RT(GraphExec_t);
// Capture of this thread's work on s (other threads may keep calling the runtime meanwhile).
inline error_t begin_capture(stream_t s) {
  return RELAY_RT(StreamBeginCapture)(s, RELAY_RT(StreamCaptureModeThreadLocal));
}
inline error_t end_capture(stream_t s, graph_t* g) {
  return RELAY_RT(StreamEndCapture)(s, g);
}
inline error_t graph_instantiate(graph_exec_t* x, graph_t g) {
#if defined(RELAY_GPU_HIP)
  return hipGraphInstantiate(x, g, nullptr, nullptr, 0);
#else
  return cudaGraphInstantiate(x, g, 0);
#endif
}
inline error_t graph_launch(graph_exec_t x, stream_t s) {
  return RELAY_RT(GraphLaunch)(x, s);
}
inline error_t graph_exec_destroy(graph_exec_t x) {
  return RELAY_RT(GraphExecDestroy)(x);
}
inline error_t graph_destroy(graph_t g) {
  return RELAY_RT(GraphDestroy)(g);
}

// "cudaErrorInvalidValue (invalid argument)"
inline std::string describe(error_t e) {
  return std::string(error_name(e)) + " (" + error_string(e) + ")";
}

}  // namespace relay::gpu::rt

#undef RELAY_RT
