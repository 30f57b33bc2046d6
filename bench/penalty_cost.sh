#!/usr/bin/env bash
# The cost of a gradient-penalty step against a plain step on the CPU backend (docs/benchmarks.md,
# gradient penalty): user CPU time of `mpx-cli run` with and without train.gradient_penalty, for
# each precision, a 1-step run for the fixed cost, then REPS repetitions alternating plain and
# penalty. Prints each time and the ratio (mean time minus fixed cost, penalty over plain).
# Usage: bench/penalty_cost.sh [build/bin/mpx-cli] [REPS]
set -euo pipefail
cli=${1:-build/bin/mpx-cli}
reps=${2:-3}
t=$(mktemp)
trap 'rm -f "$t"' EXIT
cpu() { /usr/bin/time -o "$t" -f %U "$cli" run "$@" --threads 1 --set eval_every=0 --set instruments.every=0 --quiet >/dev/null; cat "$t"; }
for model in "2-64-64-2/256|--steps 3000" "784-512-10/128|--config fp8 --model 784-512-10 --steps 200"; do
    name=${model%%|*}
    read -r -a args <<< "${model#*|}"
    for p in fp32 amp-fp16; do
        declare -A fixed=() sum=()
        for k in plain penalty; do
            extra=()
            [[ $k == penalty ]] && extra=(--set train.gradient_penalty=0.1)
            fixed[$k]=$(cpu "${args[@]:0:${#args[@]}-1}" 1 --precision "$p" "${extra[@]}")
            sum[$k]=0
        done
        for ((r = 1; r <= reps; ++r)); do
            for k in plain penalty; do
                extra=()
                [[ $k == penalty ]] && extra=(--set train.gradient_penalty=0.1)
                s=$(cpu "${args[@]}" --precision "$p" "${extra[@]}")
                echo "$name $p $k rep $r: $s s"
                sum[$k]=$(awk -v a="${sum[$k]}" -v b="$s" 'BEGIN { print a + b }')
            done
        done
        awk -v n="$name" -v p="$p" -v r="$reps" -v s="${sum[penalty]}" -v f="${fixed[penalty]}" \
            -v bs="${sum[plain]}" -v bf="${fixed[plain]}" \
            'BEGIN { printf "%s %s: a penalty step costs %.2fx a plain step\n", n, p, (s / r - f) / (bs / r - bf) }'
    done
done
