// Each binding file adds its functions to the module's exports.
#pragma once

#include <napi.h>

namespace hb {
namespace binding {

void exportBackend(Napi::Env env, Napi::Object exports);
void exportCudaEmulation(Napi::Env env, Napi::Object exports);
void exportTensor(Napi::Env env, Napi::Object exports);
void exportEmbedding(Napi::Env env, Napi::Object exports);
void exportRowGather(Napi::Env env, Napi::Object exports);
void exportShuffleBuffer(Napi::Env env, Napi::Object exports);
void exportSyntheticRows(Napi::Env env, Napi::Object exports);
void exportStrings(Napi::Env env, Napi::Object exports);
void exportRouting(Napi::Env env, Napi::Object exports);
void exportTrain(Napi::Env env, Napi::Object exports);
void exportFeature(Napi::Env env, Napi::Object exports);
void exportKernel(Napi::Env env, Napi::Object exports);
void exportPlan(Napi::Env env, Napi::Object exports);
void exportRegistry(Napi::Env env, Napi::Object exports);
void exportIo(Napi::Env env, Napi::Object exports);
void exportDistribute(Napi::Env env, Napi::Object exports);
void exportDynamicTable(Napi::Env env, Napi::Object exports);

}  // namespace binding
}  // namespace hb
