#!/usr/bin/python3
"""Steps/s of mpx's engine beside PyTorch eager on the same MLP shapes, batch and optimizer.

Both are measured in this one script, one after the other, so the figures share the machine's state;
report ratios, not absolute numbers.

--device cpu (default): mpx's CPU backend against PyTorch on the CPU (Debian's python3-torch), both
on --threads threads (default 2: torch.set_num_threads and mpx-cli bench --threads). PyTorch's CPU
autocast supports only BF16, so its AMP-FP16 column is empty. Where the CPU has AVX512_BF16, PyTorch's
BF16 GEMMs run on it (oneDNN's avx512_core_bf16 kernels), which flush subnormals: not the faithful
emulation mpx runs, so that column compares unlike work. Debian's PyTorch does its FP32 GEMMs in the
BLAS that libblas.so.3 names: the reference BLAS (slow on large layers) unless OpenBLAS is installed.
--blas openblas (default where Debian's OpenBLAS is installed) runs PyTorch on OpenBLAS whichever BLAS
Debian's alternative names (this script starts itself again with LD_LIBRARY_PATH on OpenBLAS's folder,
its threads as many as --threads), so the FP32 anchor is what a user with OpenBLAS gets; --blas system
keeps the alternative's. The BLAS PyTorch loaded is printed (read from /proc/self/maps).
--device cuda: mpx's CUDA backend against PyTorch eager AMP on the same GPU (FP16 with GradScaler,
as mpx's amp-fp16 runs its dynamic scaler; BF16 without), timed between torch.cuda.synchronize().
--gemm N: also PyTorch's rate on four N×N linear layers at batch N (forward and backward, 6·N³ FLOP a
layer), to set beside `mpx-cuda-check --gemm N`.

    bench/compare_pytorch.py [--cli build/bin/mpx-cli] [--seconds 2] [--threads 2] [--device cpu|cuda] [--gemm N]
                             [--blas openblas|system]
"""
import argparse
import csv
import glob
import io
import os
import subprocess
import sys
import time

# Debian's OpenBLAS flavours, each a folder with its own libblas.so.3: the first installed one.
OPENBLAS_DIRS = [d for f in ("openblas-pthread", "openblas-openmp", "openblas-serial")
                 for d in glob.glob(f"/usr/lib/*-linux-gnu/{f}") if os.path.exists(f"{d}/libblas.so.3")]


def args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/bin/mpx-cli")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--gemm", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--blas", choices=("openblas", "system"), default="openblas" if OPENBLAS_DIRS else "system")
    return ap.parse_args()


A = args()
if A.blas == "openblas" and os.environ.get("MPX_BENCH_BLAS_DIR") is None:
    if not OPENBLAS_DIRS:
        sys.exit("compare_pytorch.py: --blas openblas, but no Debian OpenBLAS is installed (apt-get install libopenblas0-pthread)")
    # The dynamic loader reads LD_LIBRARY_PATH when the process starts: start again with it set.
    env = dict(os.environ, MPX_BENCH_BLAS_DIR=OPENBLAS_DIRS[0], OPENBLAS_NUM_THREADS=str(A.threads),
               LD_LIBRARY_PATH=":".join(filter(None, [OPENBLAS_DIRS[0], os.environ.get("LD_LIBRARY_PATH")])))
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

# PyTorch's OpenMP threads would otherwise spin for a while after each of its steps and take a core
# from the mpx-cli measured next (2-64-64-2 lost 40 % of its rate on 2 cores): they sleep instead.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
import torch.nn as nn


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def timed(step, device, seconds, warmup=20):
    """Steps/s of `step`, after warm-up, in batches of 10 between synchronisations."""
    for _ in range(warmup):
        step()
    sync(device)
    n, t0 = 0, time.perf_counter()
    while True:
        for _ in range(10):
            step()
        n += 10
        sync(device)
        el = time.perf_counter() - t0
        if el >= seconds:
            return n / el


def torch_steps_per_s(sizes, batch, amp_dtype, seconds, device="cpu"):
    torch.manual_seed(1)
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, sizes[0], device=device)
    y = torch.randint(0, sizes[-1], (batch,), device=device)
    loss_fn = nn.CrossEntropyLoss()
    scaler = torch.cuda.amp.GradScaler() if device == "cuda" and amp_dtype == torch.float16 else None

    def step():
        opt.zero_grad(set_to_none=True)
        if amp_dtype is None:
            loss = loss_fn(model(x), y)
        else:
            with torch.autocast(device, dtype=amp_dtype):
                loss = loss_fn(model(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    return timed(step, device, seconds)


def torch_gemm_tflops(n, kind, seconds, device):
    """Four n×n linear layers (no bias) at batch n, forward and backward: 6·n³ FLOP a layer."""
    torch.backends.cuda.matmul.allow_tf32 = kind == "tf32"
    dtype = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}.get(kind)
    model = nn.Sequential(*[nn.Linear(n, n, bias=False) for _ in range(4)]).to(device)
    x = torch.randn(n, n, device=device, requires_grad=True)

    def step():
        model.zero_grad(set_to_none=True)
        if dtype is None:
            out = model(x)
        else:
            with torch.autocast(device, dtype=dtype):
                out = model(x)
        out.float().sum().backward()

    rate = timed(step, device, seconds, warmup=3)
    torch.backends.cuda.matmul.allow_tf32 = False
    return rate * 6.0 * n ** 3 * 4 / 1e12


def loaded_blas():
    """The BLAS libraries this process has mapped (PyTorch's, through libblas.so.3)."""
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "blas" in line.rsplit("/", 1)[-1].lower()})
    return ", ".join(libs) or "none mapped"


def mpx_steps_per_s(cli, model, batch, precisions, seconds, device="cpu", threads=0):
    # mpx-cli without this script's LD_LIBRARY_PATH: it links its own OpenBLAS flavour (CMakeLists.txt).
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "MPX_BENCH_BLAS_DIR")}
    out = subprocess.run([cli, "bench", "--model", model, "--batch", str(batch), "--precision",
                          ",".join(precisions), "--seconds", str(seconds), "--device", device, "--csv",
                          "--threads", str(threads)],
                         check=True, capture_output=True, text=True, env=env).stdout
    return {r["precision"]: float(r["steps_per_s"]) for r in csv.DictReader(io.StringIO(out))}


def main():
    a = A
    dev = a.device
    if dev == "cpu":
        torch.set_num_threads(a.threads)
    where = torch.cuda.get_device_name(0) if dev == "cuda" else f"{torch.get_num_threads()} CPU thread(s)"
    print(f"torch {torch.__version__} on {where}; mpx {dev} backend"
          + (f" on {a.threads} thread(s)" if dev == "cpu" else ""))
    print(f"torch's BLAS (--blas {a.blas}): {loaded_blas()}")
    print(f"{'model':<12} {'batch':>5} | {'torch fp32':>10} {'torch fp16':>10} {'torch bf16':>10} | "
          f"{'mpx fp32':>9} {'mpx fp16':>9} {'mpx bf16':>9} | {'mpx/torch fp32':>14} {'fp16':>6} {'bf16':>6} | "
          f"{'fp16 cost':>9} {'bf16 cost':>9}")
    models = (("2-64-64-2", 256), ("784-512-10", 128), ("784-1024-1024-10", 256))
    for model, batch in models:
        sizes = [int(s) for s in model.split("-")]
        t = {"fp32": torch_steps_per_s(sizes, batch, None, a.seconds, dev),
             "amp-bf16": torch_steps_per_s(sizes, batch, torch.bfloat16, a.seconds, dev)}
        if dev == "cuda":
            t["amp-fp16"] = torch_steps_per_s(sizes, batch, torch.float16, a.seconds, dev)
        m = mpx_steps_per_s(a.cli, model, batch, ["fp32", "amp-fp16", "amp-bf16"], a.seconds, dev,
                            a.threads if dev == "cpu" else 0)
        col = lambda d, k: f"{d[k]:.1f}" if k in d else "-"
        ratio = lambda k: f"{m[k] / t[k]:.2f}" if k in t else "-"
        print(f"{model:<12} {batch:>5} | {col(t, 'fp32'):>10} {col(t, 'amp-fp16'):>10} {col(t, 'amp-bf16'):>10} | "
              f"{m['fp32']:>9.1f} {m['amp-fp16']:>9.1f} {m['amp-bf16']:>9.1f} | {ratio('fp32'):>14} "
              f"{ratio('amp-fp16'):>6} {ratio('amp-bf16'):>6} | {m['fp32'] / m['amp-fp16']:>9.2f} "
              f"{m['fp32'] / m['amp-bf16']:>9.2f}")
    print("mpx/torch: steps/s ratio per precision; cost: an mpx AMP step's time over an mpx FP32 step's")
    if a.gemm:
        for kind in ("fp32", "tf32", "amp-fp16", "amp-bf16"):
            if dev == "cpu" and kind in ("tf32", "amp-fp16"):
                continue
            print(f"torch {kind} linear layers, four {a.gemm}x{a.gemm} at batch {a.gemm}: "
                  f"{torch_gemm_tflops(a.gemm, kind, a.seconds, dev):.2f} TFLOP/s")


if __name__ == "__main__":
    main()
