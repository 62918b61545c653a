// relay: link-balanced relay collectives for GPU nodes where every pair has one link.
//
// The layers, in the order data flows through them:
//   schedule/  what moves where, symbolic in the count (compile-time or run-time values)
//   check/     the properties a schedule must satisfy (dataflow, hazards, scratch bounds), and
//              the naive reference a run's outputs are checked against
//   topology/  the machines the cost model knows
//   cost/      link loads, beta and alpha-beta cost, ceilings, lower bounds, route choice
//   plan/      one call made concrete: physical ranks, byte offsets, validation; its
//              operations on host memory
//   exec/      executors that run plans (the host reference executor here; gpu/ for GPUs)
//   api/       the collective calls a communication library makes
//
// This header is the entry for one process that holds every rank's buffers; one process per
// rank includes relay/rank_local.hpp.
#pragma once

#include "relay/api/collectives.hpp"
#include "relay/check/reference.hpp"
#include "relay/check/verify.hpp"
#include "relay/core/affine.hpp"
#include "relay/core/collective.hpp"
#include "relay/core/dtype.hpp"
#include "relay/core/ratio.hpp"
#include "relay/cost/bounds.hpp"
#include "relay/cost/link_cost.hpp"
#include "relay/cost/route.hpp"
#include "relay/exec/host_executor.hpp"
#include "relay/plan/buffers.hpp"
#include "relay/plan/make_plan.hpp"
#include "relay/plan/scratch.hpp"
#include "relay/schedule/evaluate.hpp"
#include "relay/schedule/generate.hpp"
#include "relay/topology/parse.hpp"
#include "relay/topology/topology.hpp"
