#!/usr/bin/env bash
# The cost of an FP4 step against an AMP-BF16 step on the CPU backend (docs/fp4.md, "Measured"):
# bench/fp8_cost.sh's procedure with nvfp4 and mxfp4 as the runs.
# Usage: bench/fp4_cost.sh [build/bin/mpx-cli] [REPS]
MPX_PRECISIONS="amp-bf16 nvfp4 mxfp4" exec "$(dirname "$0")/fp8_cost.sh" "$@"
