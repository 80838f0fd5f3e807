// Reading an optimizer's hyperparameters ({ kind, learningRate, ... } from lib/train)
// into the native rule's form.
#pragma once

#include <napi.h>

#include "native/kernels/optimizer_rules.h"

namespace hb {
namespace binding {

OptimizerHyper parseHyper(const Napi::Value& value);

}  // namespace binding
}  // namespace hb
