#!/usr/bin/python3
"""Steps/s of mpx's CPU engine beside PyTorch eager on the same MLP shapes, batch and optimizer.

Both are measured in this one script, one after the other, so the figures share the machine's state;
report ratios, not absolute numbers. Needs Debian's python3-torch (CPU). PyTorch's CPU autocast
supports only BF16, so its AMP-FP16 column is empty.

    bench/compare_pytorch.py [--cli build/bin/mpx-cli] [--seconds 2]
"""
import argparse
import csv
import io
import subprocess
import time

import torch
import torch.nn as nn


def torch_steps_per_s(sizes, batch, amp_dtype, seconds):
    torch.manual_seed(1)
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, sizes[0])
    y = torch.randint(0, sizes[-1], (batch,))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        if amp_dtype is None:
            loss = loss_fn(model(x), y)
        else:
            with torch.autocast("cpu", dtype=amp_dtype):
                loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(20):
        step()
    n, t0 = 0, time.perf_counter()
    while True:
        for _ in range(10):
            step()
        n += 10
        el = time.perf_counter() - t0
        if el >= seconds:
            return n / el


def mpx_steps_per_s(cli, model, batch, precisions, seconds):
    out = subprocess.run([cli, "bench", "--model", model, "--batch", str(batch), "--precision",
                          ",".join(precisions), "--seconds", str(seconds), "--csv"],
                         check=True, capture_output=True, text=True).stdout
    return {r["precision"]: float(r["steps_per_s"]) for r in csv.DictReader(io.StringIO(out))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/bin/mpx-cli")
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); mpx CPU backend single-threaded")
    print(f"{'model':<12} {'batch':>5} | {'torch fp32':>10} {'torch bf16':>10} | {'mpx fp32':>9} "
          f"{'mpx fp16':>9} {'mpx bf16':>9} | {'mpx/torch fp32':>14} {'fp16 cost':>9} {'bf16 cost':>9}")
    for model, batch in (("2-64-64-2", 256), ("784-512-10", 128)):
        sizes = [int(s) for s in model.split("-")]
        t32 = torch_steps_per_s(sizes, batch, None, a.seconds)
        tbf = torch_steps_per_s(sizes, batch, torch.bfloat16, a.seconds)
        m = mpx_steps_per_s(a.cli, model, batch, ["fp32", "amp-fp16", "amp-bf16"], a.seconds)
        print(f"{model:<12} {batch:>5} | {t32:>10.1f} {tbf:>10.1f} | {m['fp32']:>9.1f} {m['amp-fp16']:>9.1f} "
              f"{m['amp-bf16']:>9.1f} | {m['fp32'] / t32:>14.2f} {m['fp32'] / m['amp-fp16']:>9.2f} "
              f"{m['fp32'] / m['amp-bf16']:>9.2f}")


if __name__ == "__main__":
    main()
