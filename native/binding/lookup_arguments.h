// The arguments every lookup-shaped call takes: (table, name, values, rowSplits,
// weights | null, combiner), read into a SparseLookupRequest.
#pragma once

#include <napi.h>

#include <string>

#include "native/embedding/embedding_lookup.h"

namespace hb {
namespace binding {

// How the id arrays are read. Copied, not viewed: the checks and the kernel must see the
// same values even if JS writes to or detaches the arrays while the call is queued.
// Borrowed: the arrays' own memory, for a lookup that runs on the JS thread before the
// call returns (ownLookupIds copies them if it is queued after all).
enum class IdArrays { Copied, Borrowed };

// info[0..5] as above; `op` names the call in errors.
SparseLookupRequest readLookupArguments(const Napi::CallbackInfo& info, const char* op, IdArrays how = IdArrays::Copied);

// Borrowed id arrays replaced by copies of their own.
void ownLookupIds(SparseLookupRequest* request);

// 'sum' | 'mean' | 'sqrtn' as a Combiner; a TypeError naming `op` and `name` otherwise.
Combiner combinerArgument(const Napi::Value& value, const char* op, const std::string& name);

// The ids part alone (values, rowSplits, weights | null | undefined, combiner), read as
// above into `request`, whose name the errors use.
void readLookupIds(const Napi::Value& values, const Napi::Value& rowSplits, const Napi::Value& weights,
                   const Napi::Value& combiner, const char* op, SparseLookupRequest* request,
                   IdArrays how = IdArrays::Copied);

}  // namespace binding
}  // namespace hb
