#!/usr/bin/python3
"""The replay of a recorded trace against real runs (tests/test_trace_replay.cpp runs this).

A small MLP is trained in PyTorch with FP16 emulated at autocast's storage points (train.py's
rounding functions: every GEMM operand and output, every activation and gradient rounded to FP16),
with mpx_trace.Recorder in the loop, exactly as a user would record their own model. Then:

1. exact per step: at every step, the same batch on the same weights is run again at each
   power-of-two scale 2^k; `mpx-cli replay --scaler static --set scaler.init_scale=2^k` must predict
   every one of those overflow decisions from the trace recorded at one scale;
2. over a run: two other scaler settings train their own runs; replaying each setting over the
   recorded trace must match the run's skipped steps within 2 and its per-step decisions on >= 94 %;
3. a planted forward overflow (fc2's weights scaled so its output passes 65504 from step P): the
   replay's verdict names the site, and PyTorch's rule collapses the scale on it step for step as
   the replay predicts.

Also: the underflow share the replay predicts at a lower scale from the recorded histograms is within
1 point of the real one on the same weights.

Prints one line of figures per check and exits 1 on the first that fails.
    check_replay.py MPX_CLI RESOURCES_TORCH_DIR WORK_DIR
"""
import copy
import csv
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

cli, resources, work = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, resources)
import mpx_trace  # noqa: E402
from train import ROUND, MirrorScaler  # noqa: E402  (the export's FP16 rounding and scaler rules)

torch.manual_seed(3)
torch.set_num_threads(1)  # one summation order: the runs compared here differ only where the check says
FP16 = ROUND["fp16"]


class RoundGrad(torch.autograd.Function):
    """Identity forward; the gradient stored in FP16 on the way back (what arrives at a module's output)."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return FP16(g)


class RoundValue(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return FP16(x)

    @staticmethod
    def backward(ctx, g):
        return g


class Fp16Linear(torch.nn.Module):
    """autocast's FP16 linear: operands and output rounded, weight gradients written in FP16."""

    def __init__(self, i, o):
        super().__init__()
        init = torch.nn.Linear(i, o)  # PyTorch's default initialisation; the module itself is a leaf
        self.weight = torch.nn.Parameter(init.weight.detach().clone())
        self.bias = torch.nn.Parameter(init.bias.detach().clone())

    def forward(self, x):
        x = RoundGrad.apply(x)
        w = RoundGradValue.apply(self.weight)
        b = RoundGradValue.apply(self.bias)
        return RoundValue.apply(F.linear(RoundValue.apply(x), w, b))


class RoundGradValue(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return FP16(x)

    @staticmethod
    def backward(ctx, g):
        return FP16(g)


class Fp16Relu(torch.nn.Module):
    def forward(self, x):
        return RoundValue.apply(F.relu(RoundGrad.apply(x)))


def make_model():
    torch.manual_seed(5)
    return torch.nn.Sequential(Fp16Linear(8, 64), Fp16Relu(), Fp16Linear(64, 64), Fp16Relu(), Fp16Linear(64, 4))


N, B, STEPS = 4096, 128, 240
gen = torch.Generator().manual_seed(11)
X = torch.randn(N, 8, generator=gen) * 4.0
Y = (X[:, :4].abs().argmax(dim=1))
ORDER = [torch.randint(0, N, (B,), generator=gen) for _ in range(STEPS)]


def loss_of(model, step):
    idx = ORDER[step]
    return F.cross_entropy(RoundGrad.apply(model(X[idx])).float(), Y[idx])


def overflows(model, step, scale):
    """Whether the step's stored FP16 gradients hold inf/NaN at `scale` (weights untouched)."""
    model.zero_grad(set_to_none=True)
    (loss_of(model, step) * scale).backward()
    bad = any(not bool(torch.isfinite(p.grad).all()) for p in model.parameters())
    model.zero_grad(set_to_none=True)
    return bad


make_model_at = {}  # step -> the model as it was at that step (for probes after training)


def pytorch_rule(**kw):
    c = dict(preset="pytorch", kind="dynamic", init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5,
             growth_interval=2000, min_scale=0.0, max_scale=None, hysteresis=1, hysteresis_reset="on_growth",
             growth_count="consecutive", at_min="clamp", scale_storage="fp32", non_finite_growth="refuse",
             hysteresis_decrement="stop_at_one")
    c.update(kw)
    return c


def train(path, rule, probes=(), plant_at=None, steps=STEPS, keep_every=0, reprobe=False):
    """Trains with the rule (a MirrorScaler over the settings), recording a trace at `path`; returns
    each step's found_inf and, per probe scale, each step's overflow decision on the same weights."""
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    snapshots = {}
    scaler = MirrorScaler(rule)
    found, probed, scales = [], {k: [] for k in probes}, []
    with mpx_trace.Recorder(path, model, every=40) as rec:
        for step in range(steps):
            if plant_at is not None and step == plant_at:
                with torch.no_grad():
                    model[2].weight.mul_(1.0e5)  # fc2's output passes FP16's 65504
            with rec.paused():
                for k in probes:
                    probed[k].append(overflows(model, step, 2.0 ** k))
            if keep_every and step % keep_every == 0:
                snapshots[step] = copy.deepcopy(model)
            opt.zero_grad(set_to_none=True)
            s = scaler.scale
            loss = loss_of(model, step)
            (loss * s).backward()
            rec.record(loss, scale=s, optimizer=opt, reprobe=(lambda: loss_of(model, step)) if reprobe else None)
            bad = any(not bool(torch.isfinite(p.grad).all()) for p in model.parameters())
            if not bad:
                for p in model.parameters():
                    p.grad.mul_(1.0 / s)
                opt.step()
            scaler.update(bad)
            found.append(bad)
            scales.append(s)
    make_model_at.update(snapshots)
    return found, probed, scales


def replay(trace, preset, *sets):
    out = os.path.join(work, "replay.csv")
    args = [cli, "replay", trace, "--scaler", preset, "--csv", out]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"mpx-cli replay failed: {p.stderr.strip()}")
    with open(out) as f:
        rows = list(csv.DictReader(f))
    verdict = next((l[len("verdict: "):] for l in p.stdout.splitlines() if l.startswith("verdict: ")), "")
    return rows, verdict


failed = False


def check(ok, line):
    global failed
    print(("ok    " if ok else "FAIL  ") + line)
    failed |= not ok


# 1. One recording at 2^8 with a static scale; each power of two probed on the same weights.
trace = os.path.join(work, "trace.csv")
probes = list(range(12, 25))
found, probed, _ = train(trace, pytorch_rule(kind="static", init_scale=256.0), probes=probes, keep_every=40)
right = total = over = 0
for k in probes:
    rows, _ = replay(trace, "static", f"scaler.init_scale={2 ** k}")
    predicted = [r["found_inf"] == "1" for r in rows]
    right += sum(a == b for a, b in zip(predicted, probed[k]))
    total += len(probed[k])
    over += sum(probed[k])
check(right == total and 0 < over < total,
      f"per step, scales 2^12..2^24 on the recorded weights: {right} of {total} overflow decisions predicted "
      f"({over} overflows)")

# 1a. Recorded at 2^20, where many steps overflow and hide their amax, with the recorder re-probing
# each at half the scale, a quarter, ... (reprobe=): every decision at 2^12..2^24 is then predicted,
# none uncertain, and the recording run's own steps train as they would have (same decisions).
trace_rp = os.path.join(work, "trace_reprobe.csv")
found_rp, probed_rp, _ = train(trace_rp, pytorch_rule(kind="static", init_scale=2.0 ** 20), probes=probes, steps=120,
                               reprobe=True)
with open(trace_rp) as f:
    recorded = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
reprobed = sum(1 for r in recorded if r["found_inf"] == "1" and r["censored"] == "0")
right = total = uncertain = 0
for k in probes:
    rows, _ = replay(trace_rp, "static", f"scaler.init_scale={2 ** k}")
    right += sum((r["found_inf"] == "1") == b for r, b in zip(rows, probed_rp[k]))
    uncertain += sum(r["uncertain"] == "1" for r in rows)
    total += len(probed_rp[k])
check(right == total and uncertain == 0 and reprobed == sum(found_rp) and 10 < reprobed < len(recorded),
      f"re-probed overflow steps: {reprobed} of {len(recorded)} steps overflowed at 2^20 and were re-probed; "
      f"{right} of {total} decisions at 2^12..2^24 predicted, {uncertain} uncertain")

# 1b. The underflow share at a lower scale (2^0) from the recorded histograms, against the real
# share on the same weights: the recorded non-zero output gradients that are zero at 2^0. The
# prediction shifts each layer's recorded values alone; in the real pass what is computed from a
# flushed or subnormal gradient changes too, so the two may differ (here: by at most 1 point).
def flush_share(step, low, high):
    model = make_model_at[step]
    got = {}
    handles = [m.register_full_backward_hook(lambda m, gi, go, n=n: got.setdefault(n, []).append(go[0].detach().clone()))
               for n, m in model.named_modules() if n and not list(m.children())]
    for scale in (high, low):
        model.zero_grad(set_to_none=True)
        (loss_of(model, step) * scale).backward()
    for h in handles:
        h.remove()
    nonzero = flushed = 0
    for g_high, g_low in got.values():
        keep = g_high != 0
        nonzero += int(keep.sum())
        flushed += int((keep & (g_low == 0)).sum())
    return flushed / nonzero


rows, _ = replay(trace, "static", "scaler.init_scale=1")
predicted = {int(r["step"]): float(r["underflow_share"]) for r in rows if r["underflow_share"]}
real = {s: flush_share(s, 1.0, 256.0) for s in predicted}
check(predicted and all(abs(predicted[s] - real[s]) <= 0.01 for s in predicted) and max(real.values()) > 0.05,
      "underflow at 2^0 from histograms recorded at 2^8: predicted " +
      ", ".join(f"{100 * predicted[s]:.1f} %" for s in sorted(predicted)) + "; real " +
      ", ".join(f"{100 * real[s]:.1f} %" for s in sorted(real)) + " (within 1 point)")

# 2. Other settings, real runs against replays of the one trace (recorded with PyTorch's rule).
trace2 = os.path.join(work, "trace2.csv")
train(trace2, pytorch_rule(init_scale=2.0 ** 20, growth_interval=25))
for name, rule, sets in [
    ("growth_interval 50, init 2^22", pytorch_rule(init_scale=2.0 ** 22, growth_interval=50),
     ["scaler.init_scale=4194304", "scaler.growth_interval=50"]),
    ("backoff 0.25, growth_interval 40", pytorch_rule(init_scale=2.0 ** 20, growth_interval=40, backoff_factor=0.25),
     ["scaler.init_scale=1048576", "scaler.growth_interval=40", "scaler.backoff_factor=0.25"]),
]:
    real, _, _ = train(os.path.join(work, "real.csv"), rule)
    rows, _ = replay(trace2, "pytorch", *sets)
    predicted = [r["found_inf"] == "1" for r in rows]
    same = sum(a == b for a, b in zip(predicted, real))
    check(abs(sum(predicted) - sum(real)) <= 2 and same >= 0.94 * len(real),
          f"over a run, {name}: replay skips {sum(predicted)}, real run {sum(real)}; {same} of {len(real)} steps alike "
          f"({100.0 * same / len(real):.1f} %)")

# 3. A planted forward overflow at step 60: the verdict names fc2's module; the scale collapses as predicted.
trace3 = os.path.join(work, "trace3.csv")
found3, _, scales3 = train(trace3, pytorch_rule(), plant_at=60, steps=120)
rows, verdict = replay(trace3, "pytorch")
same_scale = sum(float(r["scale"]) == s for r, s in zip(rows, scales3))
check("forward overflow at `2` from step 60" in verdict and same_scale == len(scales3) and all(found3[60:]),
      f"planted forward overflow: verdict '{verdict}'; replayed scale equal to the real one on {same_scale} of "
      f"{len(scales3)} steps; real scale at the end {scales3[-1]:g}")
sys.exit(1 if failed else 0)
