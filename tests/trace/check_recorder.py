#!/usr/bin/python3
"""The recorder on what real training brings (tests/test_trace_replay.cpp runs this; issue 43).

1. A Conv-BatchNorm-ReLU(inplace=True) model, torchvision's ResNet and VGG shape, records: every
   step's amax and its site equal those read from the same model with ReLU(inplace=False) by full
   backward hooks (which the in-place model refuses: shown too).
2. Recording right after scaler.unscale_(optimizer), the clipping recipe, gives the same amax, site and
   found_inf as recording before it, and the grad_norm within 1e-12; after scaler.step, and after
   unscale_ without optimizer=, record() refuses with one line.
3. A planted forward overflow whose -inf a ReLU removes (fc1's first bias is -1e6, stored as -inf in
   FP16 from step P): the loss and gradients stay finite and GradScaler does not skip for it; the
   replay of PyTorch's rule predicts GradScaler's found_inf and scale on every step (no skip for the
   forward's inf), and the verdict says the inf never reached the gradients.

GradScaler is torch 1.13's own (torch.cuda.amp): its unscale_, step, update and per-optimizer state
run unchanged on the CPU; only its two CUDA-only kernels get CPU twins here, written from
aten/src/ATen/native/cuda/AmpKernels.cu, and two assertions that tensors are on a GPU are left out.

Prints one line of figures per check and exits 1 if any fails.
    check_recorder.py MPX_CLI RESOURCES_TORCH_DIR WORK_DIR
"""
import copy
import csv
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch.cuda.amp import grad_scaler

cli, resources, work = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, resources)
import mpx_trace  # noqa: E402

torch.set_num_threads(1)


def _unscale_cpu(grads, found_inf, inv_scale):
    """_amp_foreach_non_finite_check_and_unscale_: found_inf = 1 where any value is inf/NaN; every
    gradient multiplied by inv_scale in place."""
    for g in grads:
        if not bool(torch.isfinite(g).all()):
            found_inf.fill_(1.0)
        g.mul_(inv_scale)


def _update_scale_cpu(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """_amp_update_scale_: back off on inf; grow after growth_interval clean steps in a row, where the
    grown scale is finite in FP32."""
    if float(found_inf) > 0:
        scale.mul_(backoff_factor)
        growth_tracker.fill_(0)
    else:
        successful = int(growth_tracker) + 1
        if successful == growth_interval:
            grown = torch.tensor(float(scale) * growth_factor, dtype=torch.float32)
            if bool(torch.isfinite(grown)):
                scale.fill_(grown)
            growth_tracker.fill_(0)
        else:
            growth_tracker.fill_(successful)
    return scale


torch._amp_foreach_non_finite_check_and_unscale_ = _unscale_cpu
torch._amp_update_scale_ = _update_scale_cpu
grad_scaler.amp_definitely_not_available = lambda: False


class _Replicator(grad_scaler._MultiDeviceReplicator):
    def __init__(self, master_tensor):  # without its assertion that the tensor is on a GPU
        self.master = master_tensor
        self._per_device_tensors = {}


grad_scaler._MultiDeviceReplicator = _Replicator


class CpuGradScaler(grad_scaler.GradScaler):
    def scale(self, outputs):  # GradScaler.scale without its assertion that the loss is on a GPU
        if self._scale is None:
            self._lazy_init_scale_growth_tracker(outputs.device)
        return outputs * self._scale


failed = False


def check(ok, line):
    global failed
    print(("ok    " if ok else "FAIL  ") + line)
    failed |= not ok


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def conv_net(inplace):
    torch.manual_seed(5)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(inplace=inplace),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(inplace=inplace),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))


gen = torch.Generator().manual_seed(11)
IMAGES = torch.randn(512, 3, 8, 8, generator=gen)
LABELS = IMAGES[:, :, :4, :4].mean(dim=(2, 3)).argmax(dim=1) % 4
BATCHES = [torch.randint(0, 512, (32,), generator=gen) for _ in range(40)]


def reference_amax(model, idx, scale):
    """(amax, site) of the step by full backward hooks on a twin whose ReLUs are not in place."""
    twin = copy.deepcopy(model)
    for m in twin.modules():
        if isinstance(m, torch.nn.ReLU):
            m.inplace = False
    sites = []
    for n, m in twin.named_modules():
        if n and not list(m.children()):
            m.register_full_backward_hook(
                lambda m, gi, go, n=n: sites.append((n, float(go[0].detach().abs().max()))) if go[0] is not None else None)
    (F.cross_entropy(twin(IMAGES[idx]), LABELS[idx]) * scale).backward()
    grads = [(n, float(p.grad.abs().max())) for n, p in twin.named_parameters() if p.grad is not None]
    best = max(grads + sites, key=lambda s: s[1])  # parameters first, then outputs in backward order
    return best[1] / scale, best[0]


# 1. Conv-BatchNorm-ReLU(inplace=True).
refused = ""
probe = conv_net(True)
for n, m in probe.named_modules():
    if n and not list(m.children()):
        m.register_full_backward_hook(lambda *a: None)
try:
    probe(IMAGES[:4]).sum().backward()
except RuntimeError as e:
    refused = str(e).splitlines()[0]
model = conv_net(True)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
path = os.path.join(work, "conv.csv")
same = 0
with mpx_trace.Recorder(path, model, every=10) as rec:
    want = []
    for step, idx in enumerate(BATCHES):
        want.append(reference_amax(model, idx, 1024.0))
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(IMAGES[idx]), LABELS[idx])
        (loss * 1024.0).backward()
        rec.record(loss, scale=1024.0, optimizer=opt)
        for p in model.parameters():
            p.grad.mul_(1.0 / 1024.0)
        opt.step()
got = rows(path)
same = sum(float(r["amax"]) == a and r["amax_site"] == s for r, (a, s) in zip(got, want))
layers = {r["layer"] for r in rows(os.path.splitext(path)[0] + ".histograms.csv")}
check("modified inplace" in refused and same == len(BATCHES) == len(got) and layers == {str(i) for i in range(9)},
      f"Conv-BatchNorm-ReLU(inplace=True): recorded {len(got)} steps; amax and site equal to full backward hooks on "
      f"the out-of-place twin on {same} of {len(BATCHES)}; histograms of {len(layers)} of 9 modules (full backward "
      f"hooks on it: '{refused[:60]}...')")

# 2. Before and right after scaler.unscale_(optimizer), with clipping after it.
model = conv_net(True)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = CpuGradScaler(init_scale=2.0 ** 16, growth_interval=5)
before_path, after_path = os.path.join(work, "before.csv"), os.path.join(work, "after.csv")
skips = 0
refusals = []
with mpx_trace.Recorder(before_path, model, every=0) as before, mpx_trace.Recorder(after_path, model, every=0) as after:
    for step, idx in enumerate(BATCHES[:30]):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(IMAGES[idx]), LABELS[idx])
        scaled = scaler.scale(loss)
        (scaled * (math.inf if step in (7, 8) else 1.0)).backward()  # two overflow steps: inf gradients
        before.record(loss, scaler=scaler, optimizer=opt)
        scaler.unscale_(opt)
        if step == 12:
            try:
                after.record(loss, scaler=scaler)
            except ValueError as e:
                refusals.append(str(e))
        after.record(loss, scaler=scaler, optimizer=opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        scaler.step(opt)
        if step == 29:
            try:
                after.record(loss, scaler=scaler, optimizer=opt)
            except ValueError as e:
                refusals.append(str(e))
        skips += sum(float(v) for v in scaler._per_optimizer_states[id(opt)]["found_inf_per_device"].values()) > 0
        scaler.update()
b, a = rows(before_path), rows(after_path)
alike = sum(x["amax"] == y["amax"] and x["amax_site"] == y["amax_site"] and x["found_inf"] == y["found_inf"] and
            x["scale"] == y["scale"] and (x["grad_norm"] == y["grad_norm"] == "" or
                                          abs(float(x["grad_norm"]) / float(y["grad_norm"]) - 1) <= 1e-12)
            for x, y in zip(b, a))
scales = sorted({float(r["scale"]) for r in b})
check(alike == len(b) == len(a) == 30 and skips == 2 and sum(r["found_inf"] == "1" for r in a) == 2 and len(scales) > 2 and
      len(refusals) == 2 and "pass optimizer=" in refusals[0] and "record() goes before scaler.step(optimizer)" in refusals[1],
      f"recorded after scaler.unscale_(optimizer): amax, site, found_inf and scale equal to recording before it, grad_norm "
      f"within 1e-12, on {alike} of {len(b)} steps ({skips} skipped, scales {scales[0]:g} to {scales[-1]:g}); refused "
      f"without optimizer= and after scaler.step ({len(refusals)} of 2)")


# 3. A forward -inf that a ReLU removes, in an MLP with FP16 emulated at its storage points.
class Fp16(torch.autograd.Function):
    """A value stored in FP16 on the way forward, its gradient stored in FP16 on the way back."""

    @staticmethod
    def forward(ctx, x):
        return x.half().float()

    @staticmethod
    def backward(ctx, g):
        return g.half().float()


class Lin16(torch.nn.Linear):
    def forward(self, x):
        return Fp16.apply(F.linear(Fp16.apply(x), Fp16.apply(self.weight), Fp16.apply(self.bias)))


N, B, STEPS, PLANT = 4096, 128, 120, 40
X = torch.randn(N, 8, generator=gen) * 4.0
Y = X[:, :4].abs().argmax(dim=1)
ORDER = [torch.randint(0, N, (B,), generator=gen) for _ in range(STEPS)]


def train_relu(path, reprobe):
    """GradScaler's found_inf and scale per step, the losses, with the recorder (re-probing or not)."""
    torch.manual_seed(3)
    mlp = torch.nn.Sequential(Lin16(8, 64), torch.nn.ReLU(), Lin16(64, 64), torch.nn.ReLU(), Lin16(64, 4))
    opt = torch.optim.SGD(mlp.parameters(), lr=0.02)
    scaler = CpuGradScaler(init_scale=2.0 ** 16, growth_interval=10)
    found, scales, losses = [], [], []
    with mpx_trace.Recorder(path, mlp, every=0) as rec:
        for step in range(STEPS):
            if step == PLANT:
                with torch.no_grad():
                    mlp[0].bias[0] = -1.0e6  # FP16 stores -inf; the ReLU after it gives 0, and 0 gradient back
            opt.zero_grad(set_to_none=True)
            idx = ORDER[step]
            loss = F.cross_entropy(mlp(X[idx]), Y[idx])
            scaler.scale(loss).backward()
            rec.record(loss, scaler=scaler, optimizer=opt,
                       reprobe=(lambda: F.cross_entropy(mlp(X[idx]), Y[idx])) if reprobe else None)
            scales.append(scaler.get_scale())
            scaler.step(opt)
            found.append(sum(float(v) for v in scaler._per_optimizer_states[id(opt)]["found_inf_per_device"].values()) > 0)
            losses.append(float(loss))
            scaler.update()
    return found, scales, losses


def replay_relu(path):
    out = os.path.join(work, "replay.csv")
    p = subprocess.run([cli, "replay", path, "--scaler", "pytorch", "--set", "scaler.init_scale=65536", "--set",
                        "scaler.growth_interval=10", "--csv", out], capture_output=True, text=True)
    verdict = next((l[len("verdict: "):] for l in p.stdout.splitlines() if l.startswith("verdict: ")), p.stderr.strip())
    return (rows(out) if p.returncode == 0 else []), verdict


path, plain_path = os.path.join(work, "relu.csv"), os.path.join(work, "relu_plain.csv")
real_found, real_scale, losses = train_relu(path, reprobe=True)
plain_found, plain_scale, _ = train_relu(plain_path, reprobe=False)
replayed, verdict = replay_relu(path)
plain_replayed, plain_verdict = replay_relu(plain_path)
recorded = rows(path)
planted = [int(r["forward_nonfinite"]) > 0 for r in recorded]
same_found = sum((r["found_inf"] == "1") == f for r, f in zip(replayed, real_found))
same_scale = sum(float(r["scale"]) == s for r, s in zip(replayed, real_scale))
poisoned = sum(r["forward_overflow"] == "1" for r in replayed)
real_skips = sum(f for f, q in zip(real_found, planted) if q)
check(planted == [s >= PLANT for s in range(STEPS)] and all(math.isfinite(v) for v in losses) and
      same_found == same_scale == STEPS and poisoned == 0 and real_skips < STEPS - PLANT and
      "never reached the loss or gradients" in verdict and not verdict.startswith("forward overflow"),
      f"a forward -inf a ReLU removes, steps {PLANT}-{STEPS - 1}, recorded with reprobe=: GradScaler skipped {real_skips} "
      f"of them (its own overflows), the replay predicts its found_inf on {same_found} and its scale on {same_scale} of "
      f"{STEPS} steps, {poisoned} steps poisoned; verdict '{verdict}'")
# Without reprobe=, a planted step that overflowed by the scale cannot say which inf it was: the replay
# takes the forward's (an overflow at every scale, as recorded) and the verdict says how to tell.
plain_same = sum((r["found_inf"] == "1") == f and float(r["scale"]) == s
                 for r, f, s in zip(plain_replayed, plain_found, plain_scale))
undecided = sum(r["forward_overflow"] == "1" for r in plain_replayed)
check(plain_found == real_found and plain_same == STEPS and undecided == real_skips and
      "record with reprobe= to tell" in plain_verdict,
      f"... recorded without reprobe=: found_inf and scale predicted on {plain_same} of {STEPS} steps; the {undecided} "
      f"planted steps that overflowed are undecided ('{plain_verdict[:120]}...')")
sys.exit(1 if failed else 0)
