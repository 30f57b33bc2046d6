#!/usr/bin/env python3
"""PyTorch's speed on mpx's GPT shapes: steps/s of a nanoGPT-shaped model (pre-LN, packed QKV,
attention written out as math, tanh GELU, tied LM head, AdamW) in FP32 and under CPU BF16 autocast,
on the threads given. The reference for bench/gpt_speed.sh (docs/benchmarks.md, "The GPT").

Usage: gpt_pytorch.py --n-layer 4 --n-head 4 --n-embd 128 --block-size 64 --batch 12 --vocab 99
                      --steps 50 --threads 2 --precision fp32|bf16
Prints one line: "pytorch <precision> <steps/s> steps/s (<BLAS>)".
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.register_buffer("mask", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, n_layer, n_head, n_embd, block_size):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


def main():
    p = argparse.ArgumentParser()
    for name, default in [("n-layer", 4), ("n-head", 4), ("n-embd", 128), ("block-size", 64), ("batch", 12),
                          ("vocab", 99), ("steps", 50), ("threads", 2)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = GPT(a.vocab, a.n_layer, a.n_head, a.n_embd, a.block_size)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    x = torch.randint(a.vocab, (a.batch, a.block_size))
    y = torch.randint(a.vocab, (a.batch, a.block_size))

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            logits = model(x)
            loss = F.cross_entropy(logits.float().view(-1, a.vocab), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    rate = a.steps / (time.perf_counter() - t0)
    cfg = torch.__config__.show()
    info = cfg.split("BLAS_INFO=")[1].split(",")[0] if "BLAS_INFO=" in cfg else "unknown"
    blas = f"torch {torch.__version__}, BLAS_INFO={info}, {torch.get_num_threads()} threads"
    print(f"pytorch {a.precision} {rate:.3f} steps/s ({blas})")


if __name__ == "__main__":
    main()
