// The one portability macro the core needs: functions the GPU kernels share with the host.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define RELAY_HOST_DEVICE __host__ __device__
#else
#define RELAY_HOST_DEVICE
#endif

// `constexpr` for the functions that return or hold a std::optional<schedule> (a run-time
// schedule, with vectors inside). nvcc's front end takes an optional of a type with a destructor
// for non-literal and rejects such a constexpr function outright, so under nvcc they are plain
// inline functions: a GPU translation unit can then include the plan layer and call the
// collectives. The static_asserts that use them are compiled by the host compiler.
#if defined(__CUDACC__) && !defined(__clang__)
#define RELAY_CONSTEXPR_SCHEDULE inline
#else
#define RELAY_CONSTEXPR_SCHEDULE constexpr
#endif
