#!/usr/bin/env bash
# Retakes docs/lessons/: every lesson run live at --pace fast under Xvfb and captured from the
# screen (import -window root, not the app's own repaint) once its last step is done, on a 1280×800
# laptop in the classroom view and on a 1600×1000 screen in the normal view.
# Usage: scripts/lesson_pictures.sh [build/bin/mpx] [preset ...]   (needs xvfb-run and ImageMagick)
set -euo pipefail
cd "$(dirname "$0")/.."
mpx=${1:-build/bin/mpx}
shift || true
presets=("$@")
if [ ${#presets[@]} -eq 0 ]; then
    presets=(formats underflow bf16-no-scaler overflow-storm lost-updates hysteresis fp8 fp4 accumulation
             attention-overflow keep-ends-in-bf16 softmax-and-norms fp16-for-rl default)
fi
# Seconds a preset needs to finish at --pace fast on two cores, with room to spare.
declare -A wait=([attention-overflow]=60 [keep-ends-in-bf16]=60 [softmax-and-norms]=60 [fp16-for-rl]=60
                 [fp4]=45 [fp8]=45 [accumulation]=45)
home=$(mktemp -d)
trap 'rm -rf "$home"; rm -f docs/lessons/*.tmp.png' EXIT  # a stopped run leaves no half picture
for p in "${presets[@]}"; do
    for shot in "1280x800 classroom --classroom" "1600x1000 normal"; do
        read -r size view flag <<<"$shot"
        out="docs/lessons/$p-$size-$view.png"
        HOME="$home" XDG_CONFIG_HOME="$home/.config" xvfb-run -a -s "-screen 0 ${size}x24" bash -c \
            "'$mpx' --config '$p' --start --pace fast $flag & app=\$!; sleep ${wait[$p]:-30}; import -window root '$out.tmp.png'; kill \$app" \
            >/dev/null 2>&1
        mv "$out.tmp.png" "$out"
        echo "$out"
    done
done
