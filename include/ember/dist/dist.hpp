// ember::dist: data-parallel training on MPI (processes and hosts) and NCCL (GPUs). See
// docs/distributed.md. Its CMake target, ember::dist, carries MPI (Debian: libopenmpi-dev);
// built without MPI it still gives a world of one.
//
//   world.hpp        dist::init(argc, argv) -> World: rank, size, local rank, timeouts
//   collectives.hpp  all_reduce, broadcast, all_gather, reduce_scatter, barrier (and *_async)
//   ddp.hpp          DistributedDataParallel: bucketed gradient all-reduce overlapped with backward
//   sync_batch_norm.hpp  sync_batch_norm(model), SyncBatchNorm2d: batch norm on the statistics
//                        of the global batch
//   zero.hpp         ZeroRedundancyOptimizer: ZeRO stage 1, the optimizer's state sharded
#pragma once

#include "collectives.hpp"
#include "ddp.hpp"
#include "sync_batch_norm.hpp"
#include "world.hpp"
#include "zero.hpp"
