// relay's dtypes as NCCL's, for the files that call NCCL (nccl_baseline.cpp, nccl_rank.cpp).
#pragma once

#include <nccl.h>

#include "relay/core/dtype.hpp"

namespace relay::bench {

inline ncclDataType_t nccl_type(dtype t) {
  switch (t) {
    case dtype::int8: return ncclInt8;
    case dtype::uint8: return ncclUint8;
    case dtype::int32: return ncclInt32;
    case dtype::uint32: return ncclUint32;
    case dtype::int64: return ncclInt64;
    case dtype::uint64: return ncclUint64;
    case dtype::float16: return ncclFloat16;
    case dtype::bfloat16: return ncclBfloat16;
    case dtype::float32: return ncclFloat32;
    case dtype::float64: break;
  }
  return ncclFloat64;
}

}  // namespace relay::bench
