// nvcc compiles every header of engine/core/ here, so a change nvcc cannot compile fails the build.
#include "engine/core/accumulate.hpp"
#include "engine/core/attention.hpp"
#include "engine/core/format_core.hpp"
#include "engine/core/fp4.hpp"
#include "engine/core/fp8_math.hpp"
#include "engine/core/host_device.hpp"
#include "engine/core/op_math.hpp"
#include "engine/core/r_op.hpp"
#include "engine/core/rng.hpp"
#include "engine/core/scaler_rule.hpp"
#include "engine/core/step_stats.hpp"
#include "engine/core/write_back.hpp"

// Device code builds core's plain data as the kernels do (a default member initializer nvcc cannot
// evaluate on the device fails here).
__global__ void mpx_core_device_check(mpx::ScalerRule* out) { *out = mpx::core::no_scaler(); }
