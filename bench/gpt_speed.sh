#!/usr/bin/env bash
# The GPT's speed against PyTorch on the same shapes and threads (docs/benchmarks.md, "The GPT"):
# mpx-cli's mean step time per run (its CSV's step_time_us, steps 5 on) and bench/gpt_pytorch.py's
# steps/s, for fp32 and amp-bf16 (PyTorch: CPU BF16 autocast, oneDNN), on both GPT presets.
# Usage: bench/gpt_speed.sh [path/to/mpx-cli] [threads] [steps]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cli=${1:-"$root/build/bin/mpx-cli"}
threads=${2:-2}
steps=${3:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $threads threads"
for preset in gpt-classroom gpt-nanogpt-cpu; do
  shape=$("$cli" run --config "$preset" --print-config --steps 1 --quiet 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; c=json.load(sys.stdin); m=c["model"]; t=c["train"];
print(m["n_layer"], m["n_head"], m["n_embd"], m["block_size"], t["batch"])')
  read -r nl nh ne bs batch <<<"$shape"
  for precision in fp32 amp-bf16; do
    "$cli" run --config "$preset" --precision "$precision" --steps "$steps" --set eval_every=0 \
      --set instruments.every=0 --threads "$threads" --quiet --csv "$tmp/r.csv" >/dev/null 2>&1
    mpx=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "step_time_us") c = i }
                   NR > 1 && $4 >= 5 { s += $c; n++ } END { printf "%.2f", 1e6 * n / s }' "$tmp/r.csv")
    torch_p=$([ "$precision" = fp32 ] && echo fp32 || echo bf16)
    torch=$(/usr/bin/python3 "$root/bench/gpt_pytorch.py" --n-layer "$nl" --n-head "$nh" --n-embd "$ne" \
      --block-size "$bs" --batch "$batch" --vocab 99 --steps 10 --threads "$threads" --precision "$torch_p")
    rate=$(echo "$torch" | awk '{print $3}')
    echo "$preset $precision: mpx $mpx steps/s; $torch; ratio $(awk -v a="$mpx" -v b="$rate" 'BEGIN{printf "%.1f", a/b}')x"
  done
done
