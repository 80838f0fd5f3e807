// One FIFO worker thread per device. Work submitted to a device runs in submission
// order, so an op queued after another sees its results, as on a CUDA stream; the
// Node event loop never waits for it (see native/binding/async_task.h).
#pragma once

#include <functional>
#include <future>
#include <string>

#include "native/core/device.h"

namespace hb {

// Queues `work` on the device's worker. `work` must not throw.
void submitToDevice(Device device, std::function<void()> work);

// Queues `work` on a named FIFO thread of its own (e.g. a process group's, whose
// collectives block while peers catch up), bound to `device` when that is a GPU.
void submitToQueue(const std::string& queue, Device device, std::function<void()> work);

// Runs `work` on the device's executor after everything queued there before, and
// returns when it has run, rethrowing what it threw. For another queue's thread that
// needs a device's buffers; called on the device's own thread, it runs `work` at once.
void runOnDeviceAndWait(Device device, const std::function<void()>& work);

// True when nothing is queued or running on the device's executor: every write queued
// there is done and visible to the caller, so a host read of what only that queue writes
// needs no trip through it. (Work on other queues is not covered: a queued read was not
// ordered after it either.)
bool deviceIsIdle(Device device);

// Inside work running on an executor: counts that work as done from here on, so
// deviceIsIdle may hold before it returns. For work that has made every write it will
// make and only has to notify the JS thread: a JS thread woken by that notice then finds
// the queue idle, and a small op it starts next can run at once instead of queueing
// behind a task that has finished (a race the notice usually lost on 2 busy cores).
// Elsewhere, or a second time, it does nothing. Only the work the executor took from its
// queue may say so: work that runOnDeviceAndWait runs inline inside it would count the
// outer work done.
void finishRunningWork();

// A host block went back to the block cache outside the host executor's work (a tensor
// dropped on the JS thread, an array JS collected): the executor, if it has already
// emptied the cache for being idle, starts counting idle time again, so that block is
// freed as well once nothing more runs. Cheap where the executor has not (one load).
void noteHostBlockCached();

// Ready once everything queued on `device` so far has run. A task on another device
// that reads this device's buffers waits on it first. No cycle can form: a marker is
// always queued before the task that waits on it.
std::shared_future<void> queueMarker(Device device);

}  // namespace hb
