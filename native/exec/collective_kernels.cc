// The exchanges of a compiled step between the ranks of a job, run inside the step (one
// native call per rank and step, collectives included) on the world's process group
// (native/distribute/world.h), in the plan's order, which is the same on every rank:
//
//   step_sync  allreduce(max) of a few int32 flags fed by every rank; flags[0] != 0
//              (some rank's input ended, or it is stopping) ends the step on every rank
//              before anything else has run (HB_ERR_PEER_STOPPED)
//   alltoallv  rows to each rank by counts (a sharded lookup's ids, rows and gradients),
//              float32 rows optionally on a float16 / bfloat16 wire, scaled on arrival
//   allreduce  float32 tensors summed or averaged, all in one exchange (data-parallel
//              gradients)
//   allgather  every rank's rows (a replicated table's sparse gradients), float32 rows
//              scaled on arrival
//
// A plan compiled for a world of one runs them without a process group: they pass
// their inputs through. A rank whose own arguments fail still joins the exchange with
// its reason, so its peers fail at once with it instead of waiting for the timeout.
#include <algorithm>
#include <cstring>
#include <optional>

#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/distribute/collectives.h"
#include "native/distribute/world.h"
#include "native/exec/kernel_def.h"

namespace hb {

namespace {

using distribute::CollectiveKind;
using distribute::ProcessGroup;

// The group a step compiled for a world of `worldSize` exchanges on; nullptr in a world
// of one without hb.distribute (the step then passes its input through).
std::shared_ptr<ProcessGroup> groupFor(const KernelArgs& args, double worldSize, CollectiveKind kind) {
  std::shared_ptr<ProcessGroup> group = distribute::worldGroup();
  if (!group) {
    HB_CHECK_CODE(worldSize == 1, Communication, args.name, ": this step was compiled for a world of ", worldSize,
                  " processes, but hb.distribute is not initialized in this one");
    return nullptr;
  }
  if (double(group->worldSize()) != worldSize) {
    distribute::announceFailure(*group, kind, args.name + ": this step was compiled for a world of " +
                                                  std::to_string(int64_t(worldSize)) + " processes, the job has " +
                                                  std::to_string(group->worldSize()));
  }
  return group;
}

// Fails this rank's step with `why`, telling the peers in the exchange they wait in.
[[noreturn]] void refuse(const KernelArgs& args, ProcessGroup* group, CollectiveKind kind, const std::string& why) {
  if (group != nullptr && group->worldSize() > 1) distribute::announceFailure(*group, kind, args.name + ": " + why);
  fail(args.name, ": ", why);
}

// The result of an exchange as output `index`: the exchange's own tensor (fresh memory)
// when it is on the output's device, else a copy.
void setOutput(KernelArgs& args, size_t index, const Tensor& result, bool fresh) {
  HB_CHECK_CODE(args.out[index].dtype == result.dtype, Type, args.name, ": output ", index, " must be ",
                dtypeName(result.dtype), ", got ", dtypeName(args.out[index].dtype));
  if (fresh && result.device() == args.outputDevice) {
    args.out[index] = result;
    return;
  }
  Tensor& out = allocateOutput(args, index, result.shape);
  if (result.bytes()) copyBytes(out.buffer->data(), out.device(), result.buffer->data(), result.device(), result.bytes());
}

void scaleRows(Tensor& rows, float scale) {
  if (scale == 1.0f) return;
  float* v = rows.data<float>();
  parallelFor(rows.size(), 16384, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) v[i] *= scale;
  });
}

void stepSyncKernel(KernelArgs& args) {
  const Tensor& flags = args.in[0];
  std::shared_ptr<ProcessGroup> group = groupFor(args, args.attrs[0], CollectiveKind::Allreduce);
  if (flags.shape.size() != 1 || flags.size() < 1 || args.out[0].shape != flags.shape) {
    refuse(args, group.get(), CollectiveKind::Allreduce, "flags must be int32 [n >= 1] with an output of the same shape, got " +
                                                              flags.shapeString());
  }
  const Tensor agreed = group ? distribute::allreduce(*group, flags, distribute::ReduceOp::Max) : flags;
  std::memcpy(args.out[0].buffer->data(), agreed.buffer->data(), flags.bytes());
  const int32_t stopped = args.out[0].data<int32_t>()[0];
  if (stopped != 0) {
    failWith(ErrorCode::PeerStopped, args.name, ": the step did not run: the input of rank ", stopped - 1,
             " ended (every rank stops at the same step)");
  }
}

void alltoallvKernel(KernelArgs& args) {
  const Tensor& values = args.in[0];
  const Tensor& counts = args.in[1];
  const double worldSize = args.attrs[0];
  const int wireCode = int(args.attrs[1]);
  const float scale = float(args.attrs[2]);
  std::shared_ptr<ProcessGroup> group = groupFor(args, worldSize, CollectiveKind::Alltoallv);
  const int64_t world = int64_t(worldSize);
  if (counts.size() != world) {
    refuse(args, group.get(), CollectiveKind::Alltoallv, "sendCounts must be int32 [" + std::to_string(world) + "], got " +
                                                             counts.shapeString());
  }
  if (args.out[1].size() != world) {
    refuse(args, group.get(), CollectiveKind::Alltoallv, "recvCounts must be int32 [" + std::to_string(world) + "]");
  }
  if (args.out[0].dtype != values.dtype) {
    refuse(args, group.get(), CollectiveKind::Alltoallv, std::string("the received rows must have the values' dtype (") +
                                                             dtypeName(values.dtype) + ")");
  }
  if (scale != 1.0f && values.dtype != DType::Float32) {
    refuse(args, group.get(), CollectiveKind::Alltoallv, "only float32 rows can be scaled");
  }
  std::vector<int64_t> sendRows(counts.data<int32_t>(), counts.data<int32_t>() + world);
  std::optional<DType> wire;
  if (wireCode == 1) wire = DType::Float16;
  if (wireCode == 2) wire = DType::BFloat16;
  distribute::RowsResult received;
  if (group) {
    received = distribute::alltoallv(*group, values, sendRows, wire);
  } else {
    int64_t total = 0;
    for (int64_t c : sendRows) total += c;
    HB_CHECK_CODE(sendRows[0] >= 0 && total == (values.shape.empty() ? -1 : values.shape[0]), Shape, args.name,
                  ": sendCounts add up to ", total, " rows but the values have ", values.shapeString());
    received = distribute::RowsResult{values, sendRows};
  }
  const bool fresh = group != nullptr && group->backend() != "local";
  setOutput(args, 0, received.tensor, fresh);
  scaleRows(args.out[0], scale);
  int32_t* recv = args.out[1].data<int32_t>();
  for (int64_t p = 0; p < world; ++p) recv[p] = int32_t(received.rowsPerRank[size_t(p)]);
}

// Every input reduced in one exchange (packed side by side): a model's dense
// gradients cost one round trip, not one per variable.
void allreduceKernel(KernelArgs& args) {
  std::shared_ptr<ProcessGroup> group = groupFor(args, args.attrs[0], CollectiveKind::Allreduce);
  int64_t total = 0;
  for (size_t i = 0; i < args.in.size(); ++i) {
    if (i >= args.out.size() || args.out[i].shape != args.in[i].shape) {
      refuse(args, group.get(), CollectiveKind::Allreduce, "output " + std::to_string(i) + " must have its input's shape " +
                                                               args.in[i].shapeString());
    }
    total += args.in[i].size();
  }
  const distribute::ReduceOp op = distribute::ReduceOp(int(args.attrs[1]));
  Tensor packed{Buffer::allocate(Device::cpu(), size_t(std::max<int64_t>(total, 1)) * sizeof(float)), DType::Float32, {total}};
  int64_t at = 0;
  for (const Tensor& in : args.in) {
    if (in.bytes()) std::memcpy(packed.data<float>() + at, in.buffer->data(), in.bytes());
    at += in.size();
  }
  const Tensor reduced = group ? distribute::allreduce(*group, packed, op) : packed;
  at = 0;
  for (size_t i = 0; i < args.in.size(); ++i) {
    if (args.out[i].bytes()) std::memcpy(args.out[i].buffer->data(), reduced.data<float>() + at, args.out[i].bytes());
    at += args.out[i].size();
  }
}

void allgatherKernel(KernelArgs& args) {
  const Tensor& values = args.in[0];
  std::shared_ptr<ProcessGroup> group = groupFor(args, args.attrs[0], CollectiveKind::Allgather);
  if (args.out[0].dtype != values.dtype) {
    refuse(args, group.get(), CollectiveKind::Allgather, "the output must have the input's dtype");
  }
  const float scale = float(args.attrs[1]);
  if (scale != 1.0f && values.dtype != DType::Float32) refuse(args, group.get(), CollectiveKind::Allgather, "only float32 rows can be scaled");
  const Tensor gathered = group ? distribute::allgather(*group, values).tensor : values;
  setOutput(args, 0, gathered, group != nullptr && group->backend() != "local");
  scaleRows(args.out[0], scale);
}

std::vector<DType> rowTypes() { return {DType::Float32, DType::Int32, DType::Int64}; }

}  // namespace

HB_REGISTER_KERNEL(KernelDef("step_sync", stepSyncKernel, KernelPlacement::Host)
                       .input("flags", i32()).output("agreed", i32())
                       .integer("worldSize")
                       .exchanges(int(CollectiveKind::Allreduce)));
HB_REGISTER_KERNEL(KernelDef("alltoallv", alltoallvKernel, KernelPlacement::Host)
                       .input("values", rowTypes()).input("sendCounts", i32())
                       .sizedOutput("received", rowTypes()).output("recvCounts", i32())
                       .integer("worldSize").enumeration("wire", {"float32", "float16", "bfloat16"}).number("scale", 1.0)
                       .exchanges(int(CollectiveKind::Alltoallv)));
HB_REGISTER_KERNEL(KernelDef("allreduce", allreduceKernel, KernelPlacement::Host)
                       .input("values", f32()).output("reduced", f32()).repeatInputs(0).repeatOutputs(0)
                       .integer("worldSize").enumeration("op", {"sum", "mean", "max", "min"})
                       .exchanges(int(CollectiveKind::Allreduce)));
HB_REGISTER_KERNEL(KernelDef("allgather", allgatherKernel, KernelPlacement::Host)
                       .input("values", rowTypes()).sizedOutput("gathered", rowTypes())
                       .integer("worldSize").number("scale", 1.0)
                       .exchanges(int(CollectiveKind::Allgather)));

}  // namespace hb
