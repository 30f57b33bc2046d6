#!/usr/bin/env bash
# The cost of an FP8 step against an AMP-BF16 step on the CPU backend (docs/benchmarks.md, FP8):
# user CPU time of `mpx-cli run` for each precision, a 1-step run for the fixed cost, then
# REPS repetitions with the precisions alternating. Prints each time and the ratios
# (mean time minus fixed cost, over AMP-BF16's). Usage: bench/fp8_cost.sh [build/bin/mpx-cli] [REPS]
# MPX_PRECISIONS replaces the runs (amp-bf16 first): bench/fp4_cost.sh measures the FP4 runs so.
set -euo pipefail
cli=${1:-build/bin/mpx-cli}
reps=${2:-3}
read -r -a precisions <<< "${MPX_PRECISIONS:-amp-bf16 fp8-hybrid+delayed fp8-hybrid+current mxfp8}"
t=$(mktemp)
trap 'rm -f "$t"' EXIT
cpu() { /usr/bin/time -o "$t" -f %U "$cli" run "$@" --set eval_every=0 --set instruments.every=0 --quiet >/dev/null; cat "$t"; }
for model in "2-64-64-2/256|--steps 6000" "784-512-10/128|--config fp8 --model 784-512-10 --steps 300"; do
    name=${model%%|*}
    read -r -a args <<< "${model#*|}"
    declare -A fixed=() sum=()
    for p in "${precisions[@]}"; do
        fixed[$p]=$(cpu "${args[@]:0:${#args[@]}-1}" 1 --precision "$p")
        sum[$p]=0
    done
    for ((r = 1; r <= reps; ++r)); do
        for p in "${precisions[@]}"; do
            s=$(cpu "${args[@]}" --precision "$p")
            echo "$name $p rep $r: $s s"
            sum[$p]=$(awk -v a="${sum[$p]}" -v b="$s" 'BEGIN { print a + b }')
        done
    done
    for p in "${precisions[@]:1}"; do
        awk -v n="$name" -v p="$p" -v r="$reps" -v s="${sum[$p]}" -v f="${fixed[$p]}" \
            -v bs="${sum[amp-bf16]}" -v bf="${fixed[amp-bf16]}" \
            'BEGIN { printf "%s %s: %.2fx amp-bf16\n", n, p, (s / r - f) / (bs / r - bf) }'
    done
done
