#!/bin/bash
# Whether two mpx-cli builds train every preset to the same bits: each preset's CSV (timing columns
# dropped), exponent histograms and FP8 scales, plus a clipped run and an SGD run with overflows,
# compared byte for byte. For a change that must not move any number (a refactor, a new backend
# op): build the commit before it into another folder and compare.
#
#     bench/csv_identity.sh BIN_A BIN_B [STEPS]     e.g. /tmp/base/build/bin/mpx-cli build/bin/mpx-cli
#
# The same binary twice with other flags for each side proves a setting changes no bit, e.g. the
# thread count (the GEMMs' row blocks, on Eigen or OpenBLAS, docs/benchmarks.md):
#
#     A_ARGS="--threads 1" B_ARGS="--threads 3" bench/csv_identity.sh build/bin/mpx-cli build/bin/mpx-cli
#
# Exit status 0 when everything is identical, 1 when a file differs (the columns that differ are
# named), 2 when a run failed.
set -u
A=$1 B=$2 STEPS=${3:-400}
A_ARGS=${A_ARGS:-} B_ARGS=${B_ARGS:-}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
runs=(
    "bf16-no-scaler" "default" "formats" "fp8" "hysteresis" "lost-updates" "overflow-storm" "underflow"
    "clip:default --set train.clip_norm=0.5"
    "sgd:overflow-storm --set train.optimizer=sgd --set train.clip_norm=1.0"
    "step-lr:hysteresis --set train.schedule=step --set train.step_size=9 --set train.advance_on_skip=false"
    "gpt-classroom" "gpt-nanogpt-cpu"
)
status=0
for r in "${runs[@]}"; do
    name=${r%%:*}
    args=${r#*:}
    [ "$name" = "$r" ] && args=$r
    for side in a b; do
        bin=$A extra=$A_ARGS
        [ $side = b ] && bin=$B extra=$B_ARGS
        # shellcheck disable=SC2086  # args holds several words on purpose
        if ! "$bin" run --config $args $extra --steps "$STEPS" --quiet --csv "$OUT/$name.$side.csv" \
            --histograms "$OUT/$name.$side.hist.csv" --fp8-scales "$OUT/$name.$side.fp8.csv" \
            > "$OUT/$name.$side.log" 2>&1; then
            # --fp8-scales is refused for sessions without FP8 runs: run again without it
            # shellcheck disable=SC2086
            "$bin" run --config $args $extra --steps "$STEPS" --quiet --csv "$OUT/$name.$side.csv" \
                --histograms "$OUT/$name.$side.hist.csv" > "$OUT/$name.$side.log" 2>&1 ||
                { echo "FAIL $name ($bin): $(tail -1 "$OUT/$name.$side.log")"; status=2; continue 2; }
        fi
    done
    python3 - "$name" "$OUT/$name.a.csv" "$OUT/$name.b.csv" <<'PY' || status=$(( status > 1 ? status : 1 ))
import csv, sys
name, pa, pb = sys.argv[1:4]
a, b = list(csv.reader(open(pa))), list(csv.reader(open(pb)))
drop = {i for i, h in enumerate(a[0]) if "time" in h}
keep = lambda r: [v for i, v in enumerate(r) if i not in drop]
if len(a) != len(b) or a[0] != b[0]:
    print(f"DIFF {name}: {len(a)} vs {len(b)} rows or other columns"); sys.exit(1)
cols = sorted({a[0][i] for r, s in zip(a, b) for i, (x, y) in enumerate(zip(r, s))
               if i not in drop and x != y})
if cols:
    print(f"DIFF {name}: {', '.join(cols)}"); sys.exit(1)
print(f"same {name}: {len(a) - 1} rows")
PY
    for kind in hist fp8; do
        fa="$OUT/$name.a.$kind.csv" fb="$OUT/$name.b.$kind.csv"
        [ -f "$fa" ] || [ -f "$fb" ] || continue
        what=fp8-scales
        [ $kind = hist ] && what=histograms
        if cmp -s "$fa" "$fb"; then echo "same $name --$what"
        else echo "DIFF $name --$what"; status=$(( status > 1 ? status : 1 )); fi
    done
done
exit $status
