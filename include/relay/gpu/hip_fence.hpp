// HIP 5.2's fences on a compiler that no longer links hip.bc.
//
// HIP's headers before ROCm 6 implement __threadfence(), __threadfence_system() and
// __syncthreads() by calling __atomic_work_item_fence, which only ROCm 5's hip.bc device library
// defines. Newer clangs (Debian's clang-22) do not link hip.bc, so the device link fails with the
// symbol undefined. Where the build says so (RELAY_HIP_WORK_ITEM_FENCE: cmake/RelayHip.cmake asks
// the compiler whether it links hip.bc), this header defines it as hip.bc does: the OpenCL
// atomic_work_item_fence, a fence of the given order at the given scope (work item: none;
// sub-group: wavefront; work group; device: agent; all SVM devices: system).
//
// Included by gpu/runtime.hpp after <hip/hip_runtime.h>; device code only.
#pragma once

#if defined(RELAY_HIP_WORK_ITEM_FENCE) && defined(__HIP_DEVICE_COMPILE__)

// One order at every scope (the builtin takes its order and scope as constants).
#define RELAY_FENCE_AT(order, scope)                                                   \
  switch (scope) {                                                                     \
    case __memory_scope_work_item: break;                                              \
    case __memory_scope_sub_group: __builtin_amdgcn_fence(order, "wavefront"); break;  \
    case __memory_scope_work_group: __builtin_amdgcn_fence(order, "workgroup"); break; \
    case __memory_scope_device: __builtin_amdgcn_fence(order, "agent"); break;         \
    case __memory_scope_all_svm_devices: __builtin_amdgcn_fence(order, ""); break;     \
  }

// Inline, as hip.bc's is linkonce_odr: every unit that includes this header defines it, and a
// fence of constant arguments folds to the one instruction sequence.
extern "C" __device__ inline void __atomic_work_item_fence(__cl_mem_fence_flags,
                                                           __memory_order order,
                                                           __memory_scope scope) {
  switch (order) {
    case __memory_order_relaxed: break;
    case __memory_order_acquire: RELAY_FENCE_AT(__ATOMIC_ACQUIRE, scope) break;
    case __memory_order_release: RELAY_FENCE_AT(__ATOMIC_RELEASE, scope) break;
    case __memory_order_acq_rel: RELAY_FENCE_AT(__ATOMIC_ACQ_REL, scope) break;
    case __memory_order_seq_cst: RELAY_FENCE_AT(__ATOMIC_SEQ_CST, scope) break;
  }
}

#undef RELAY_FENCE_AT

#endif
