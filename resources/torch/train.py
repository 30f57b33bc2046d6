#!/usr/bin/env python3
"""Train in PyTorch the runs of an mpx session, and log them in mpx's CSV columns.

`mpx-cli export-torch --out DIR` wrote this file beside everything it trains from, all made by
mpx's own code, so that both programs start from the same numbers:

  session.json               the settings: model, optimizer, and per run its layers' formats and
                             its loss scaler
  data/x_train.npy ...       training and held-out sets (labels, or targets for regression)
  data/init_fc1_weight.npy   the initial weights and biases (PyTorch's nn.Linear layout)
  data/batches.npy           the example indices of every step: steps x micro-batches x batch
  data/dropout_fcN.npy       where dropout is on: its keep-masks, steps x micro-batches x batch x width
  data/lr.npy                the learning rate after k schedule steps

session.json's `config` is the mpx configuration the export was made from, for reading (and for
`mpx-cli compare --expect`): this script never reads it, so editing it changes nothing. Change a
setting in mpx and export again.

The .npy files are NumPy's format (exact float32 bits, and numpy.load reads them); this script
reads them with the standard library, so it needs nothing beyond torch.

    python3 train.py --csv torch.csv [--device cpu|cuda] [--runs a,b] [--emulate [all]]
    mpx-cli compare mpx.csv torch.csv

Each precision is written as PyTorch users write it:

  fp32, scaling-only   plain FP32 (TF32 off on CUDA)
  tf32                 torch.backends.cuda.matmul.allow_tf32 on CUDA
  amp-*, selective-*   torch.autocast(device, dtype) around the forward pass; a layer mpx keeps in
                       FP32 runs with autocast off; the loss, LayerNorm and softmax in FP32 (mpx's
                       categories, forced here: CPU autocast would leave LayerNorm in BF16)
  half-*, pure-*       the model in FP16/BF16 (.half() / .bfloat16()); half-* with an FP32 master
                       copy the optimizer updates (Apex O2), pure-* without (the optimizer's own
                       arithmetic then runs in the low format, where mpx's computes in FP32)

Where the installed PyTorch cannot run a precision on the device (FP16 on the CPU before 2.x, TF32
off CUDA), the run stops with a line saying so, and --emulate trains it in FP32 arithmetic with
every tensor rounded where the precision stores it (tensor.half().float() rounds exactly): GEMM
operands and their gradients, activations and their gradients, weights, gradients and optimizer
state, each in the format session.json names for its layer. `--emulate all` emulates every run.

The loss scaler: torch.amp.GradScaler (torch.cuda.amp.GradScaler before 2.3) where the run's scaler
is PyTorch's and the installed PyTorch has one for the device; otherwise MirrorScaler below, which
implements the run's scaler rule from its settings in session.json (the framework it follows is
named there, and on the CSV's first lines).
"""

import argparse
import ast
import contextlib
import json
import math
import os
import stat
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ["run", "precision", "mode", "step", "loss", "loss_scale", "found_inf", "skipped", "scale_event",
           "grad_norm", "lr", "eval_loss", "eval_accuracy"]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


class ExportError(Exception):
    """A problem with the export or the device, said in one line."""


# ---- reading the export --------------------------------------------------------------------------

NPY_TYPES = {"<f4": (torch.float32, 4), "<i4": (torch.int32, 4), "|u1": (torch.uint8, 1)}


def load_npy(name):
    """A .npy file of the export as a tensor (float32, int32 or uint8), checked against its header."""
    path = os.path.join(HERE, name)
    if os.path.exists(path) and not os.path.isfile(path):
        raise ExportError(f"{path}: not a regular file")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ExportError(f"{path}: cannot read it ({e.strerror}); export the session again") from None
    if raw[:6] != b"\x93NUMPY" or len(raw) < 10:
        raise ExportError(f"{path}: not a .npy file")
    size_bytes = 2 if raw[6] == 1 else 4
    start = 8 + size_bytes
    length = int.from_bytes(raw[8:start], "little")
    try:
        header = ast.literal_eval(raw[start:start + length].decode("latin1"))
        dtype, itemsize = NPY_TYPES[header["descr"]]
        shape = tuple(int(d) for d in header["shape"])
        assert not header["fortran_order"]
    except Exception:
        raise ExportError(f"{path}: unreadable .npy header") from None
    count = math.prod(shape)
    data = raw[start + length:]
    if len(data) != count * itemsize:
        raise ExportError(f"{path}: truncated: {len(data)} bytes of data where its header says "
                          f"{count * itemsize} ({shape}); export the session again")
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(data), dtype=dtype).reshape(shape).clone()


def load_session():
    path = os.path.join(HERE, "session.json")
    if os.path.exists(path) and not os.path.isfile(path):
        raise ExportError(f"{path}: not a regular file")
    try:
        with open(path, encoding="utf-8") as f:
            session = json.load(f)
    except OSError as e:
        raise ExportError(f"{path}: cannot read it ({e.strerror})") from None
    except ValueError as e:
        raise ExportError(f"{path}: not valid JSON ({e})") from None
    if session.get("format") != "mpx-export-torch" or session.get("version") != 1:
        raise ExportError(f"{path}: not an mpx export-torch session (format version 1)")
    return session


def expect_shape(name, t, shape):
    if tuple(t.shape) != tuple(shape):
        raise ExportError(f"{os.path.join(HERE, name)}: shape {tuple(t.shape)} where session.json needs "
                          f"{tuple(shape)}; export the session again")
    return t


# ---- formats: rounding to where a precision stores a value (--emulate) ------------------------------

def round_tf32(t):
    """Nearest-even to TF32's 10 fraction bits; inf and NaN pass through."""
    bits = t.contiguous().view(torch.int32)
    rounded = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF
    return torch.where(torch.isfinite(t), rounded.view(torch.float32), t)


ROUND = {
    "fp32": lambda t: t,
    "tf32": round_tf32,
    "fp16": lambda t: t.half().float(),
    "bf16": lambda t: t.bfloat16().float(),
}


class Store(torch.autograd.Function):
    """A tensor stored in `fmt` on the way forward, and its gradient in `grad_fmt` on the way back."""

    @staticmethod
    def forward(ctx, x, fmt, grad_fmt):
        ctx.grad_fmt = grad_fmt
        return ROUND[fmt](x)

    @staticmethod
    def backward(ctx, g):
        return ROUND[ctx.grad_fmt](g), None, None


class EmulatedLinear(torch.autograd.Function):
    """y = x w^T + b as a GEMM with operands in `compute` accumulates it: products in FP32, operands
    (the gradient dy too, on the way back) rounded to the compute format; a FP16/BF16 GEMM writes
    its outputs in that format (autocast casts the bias too), a TF32 one in FP32; the weight and
    bias gradients are written in the layer's grad_through format."""

    @staticmethod
    def forward(ctx, x, w, b, layer):
        c = layer["compute"]
        xc, wc = ROUND[c](x), ROUND[c](w)
        ctx.save_for_backward(xc, wc)
        ctx.layer = layer
        ctx.has_bias = b is not None
        return F.linear(xc, wc, ROUND[c](b) if b is not None and c in DTYPES else b)

    @staticmethod
    def backward(ctx, dy):
        xc, wc = ctx.saved_tensors
        c, through = ctx.layer["compute"], ctx.layer["grad_through"]
        written = c if c in DTYPES else "fp32"
        dyc = ROUND[c](dy)
        dx = ROUND[written](dyc @ wc)
        dw = ROUND[through](dyc.t() @ xc)
        db = ROUND[through](dy.sum(0)) if ctx.has_bias else None
        return dx, dw, db, None


class EmulatedMatmul(torch.autograd.Function):
    """a @ b as a batched product with operands in `compute` computes it (attention's q·kᵀ and
    probabilities · v): products in FP32, operands and the incoming gradient rounded to the compute
    format, the operands' gradients written in it (FP32 where the compute format is FP32/TF32)."""

    @staticmethod
    def forward(ctx, a, b, compute):
        ac, bc = ROUND[compute](a), ROUND[compute](b)
        ctx.save_for_backward(ac, bc)
        ctx.compute = compute
        return ac @ bc

    @staticmethod
    def backward(ctx, g):
        ac, bc = ctx.saved_tensors
        c = ctx.compute
        written = c if c in DTYPES else "fp32"
        gc = ROUND[c](g)
        return ROUND[written](gc @ bc.transpose(-2, -1)), ROUND[written](ac.transpose(-2, -1) @ gc), None


# ---- the loss scaler -------------------------------------------------------------------------------

def as_fp32(x):
    """A double as a float32 tensor stores it (nearest even; beyond FLT_MAX: inf)."""
    return torch.tensor(x, dtype=torch.float64).float().item()


class ScaleAtMinimum(Exception):
    pass


class MirrorScaler:
    """The run's loss-scaler rule, from its settings in session.json: the framework it follows is
    named in session.json's `scaler_follows` for the run (REFERENCE: every field below is one of
    that framework's behaviours). Scale backs off on an overflow (after `hysteresis` overflows),
    grows after `growth_interval` clean steps, in float32 (`scale_storage` fp32: a tensor) or a
    Python float (fp64)."""

    def __init__(self, c):
        self.c = c
        self.kind = c["kind"]
        self.scale = 1.0 if self.kind == "none" else self.stored(c["init_scale"])
        self.tracker = 0
        self.hysteresis_left = c["hysteresis"]
        self.iteration = 0
        self.last_overflow = -1

    def stored(self, x):
        return as_fp32(x) if self.c["scale_storage"] == "fp32" else float(x)

    def update(self, found_inf):
        """One step of the rule; returns the event: none, grow, backoff or hysteresis."""
        c, event = self.c, "none"
        if self.kind != "dynamic":
            self.iteration += 1
            return event
        if found_inf:
            if c["hysteresis_decrement"] == "always":
                self.hysteresis_left -= 1
                back_off = self.hysteresis_left <= 0
            else:
                back_off = c["hysteresis"] == 1 or self.hysteresis_left <= 1
                if not back_off:
                    self.hysteresis_left -= 1
            if back_off:
                low = self.stored(c["min_scale"])
                if c["at_min"] == "error" and self.scale == low:
                    raise ScaleAtMinimum(f"current loss scale already at minimum: {self.scale}")
                self.scale = max(self.stored(self.scale * c["backoff_factor"]), low)
                event = "backoff"
            else:
                event = "hysteresis"
            self.tracker = 0
            self.last_overflow = self.iteration
        else:
            if c["hysteresis_reset"] == "on_clean_step":
                self.hysteresis_left = c["hysteresis"]
            since = self.iteration - self.last_overflow
            if c["growth_count"] == "since_last_overflow":
                grow = since % c["growth_interval"] == 0
            elif c["growth_count"] == "stable_interval":
                grow = since - 1 > 0 and (since - 1) % c["growth_interval"] == 0
            else:
                self.tracker += 1
                grow = self.tracker == c["growth_interval"]
                if grow:
                    self.tracker = 0
            if grow:
                if c["hysteresis_reset"] == "on_growth":
                    self.hysteresis_left = c["hysteresis"]
                high = math.inf if c["max_scale"] is None else self.stored(c["max_scale"])
                grown = min(self.stored(self.scale * c["growth_factor"]), high)
                old = self.scale
                if math.isfinite(grown) or c["non_finite_growth"] == "apply":
                    self.scale = grown
                if self.scale > old:
                    event = "grow"
        self.iteration += 1
        return event


def torch_grad_scaler(device, c):
    """PyTorch's own GradScaler for a run whose scaler is PyTorch's, where this PyTorch has one for
    the device; None otherwise."""
    pytorch_rule = (c["kind"] == "dynamic" and c["preset"] in ("pytorch", "custom") and c["hysteresis"] == 1
                    and c["min_scale"] == 0 and c["max_scale"] is None and c["scale_storage"] == "fp32"
                    and c["growth_count"] == "consecutive" and c["non_finite_growth"] == "refuse")
    if not pytorch_rule:
        return None
    kwargs = dict(init_scale=c["init_scale"], growth_factor=c["growth_factor"],
                  backoff_factor=c["backoff_factor"], growth_interval=c["growth_interval"])
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):  # PyTorch >= 2.3: one class, any device
        try:
            return amp.GradScaler(device, **kwargs)
        except Exception:
            return None
    if device == "cuda":
        return torch.cuda.amp.GradScaler(**kwargs)
    return None


# ---- the model -----------------------------------------------------------------------------------

def activation(name, z):
    if name == "relu":
        return F.relu(z)
    if name == "gelu":
        return F.gelu(z, approximate="tanh")
    if name == "tanh":
        return torch.tanh(z)
    return z


class Formats:
    """Where a GPT run's values meet its formats, read from session.json: per site layer the run's
    formats (`layers`) and the formats of the stream between ops (`gpt_formats`: the residual
    stream, a LayerNorm's output, attention's probabilities). Natively, PyTorch's own dtypes do
    the rounding: autocast casts each Linear's and batched product's operands (a layer mpx keeps in
    FP32 runs with autocast off), and LayerNorm, softmax and GELU run in FP32 with autocast off,
    their results cast to the format named (CUDA's autocast puts layer_norm and softmax in FP32;
    PyTorch 1.13's CPU autocast leaves them in BF16, which session.json's cpu-1.13 policy names).
    Emulated, every value is rounded where that format stores it (Store) and each product computes
    in FP32 from operands rounded to the compute format."""

    def __init__(self, spec, device, emulated):
        self.layers, self.stream = spec["layers"], spec["gpt_formats"]
        self.device, self.emulated = device, emulated
        self.autocast = spec["autocast"]

    def store(self, t, fmt):
        if self.emulated:
            return Store.apply(t.float(), fmt, fmt)
        return t.to(DTYPES.get(fmt, torch.float32))

    def fp32(self):
        """A region computed in FP32 (LayerNorm, softmax, GELU): autocast off."""
        if self.emulated or not self.autocast:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device, enabled=False)

    def kept_fp32(self, layer):
        return self.autocast and self.layers[layer]["compute"] in ("fp32", "tf32")

    def linear(self, x, w, b, layer):
        lay = self.layers[layer]
        if self.emulated:
            return Store.apply(EmulatedLinear.apply(x, w, b, lay), lay["activation"], lay["activation"])
        if self.kept_fp32(layer):
            with torch.autocast(device_type=self.device, enabled=False):
                return F.linear(x.float(), w, b)
        return F.linear(x if self.autocast else x.to(w.dtype), w, b)

    def matmul(self, a, b, layer):
        lay = self.layers[layer]
        if self.emulated:
            return Store.apply(EmulatedMatmul.apply(a, b, lay["compute"]), lay["activation"], lay["activation"])
        if self.kept_fp32(layer):
            with torch.autocast(device_type=self.device, enabled=False):
                return a.float() @ b.float()
        return a @ b


class QKNorm(nn.Module):
    """QK-norm's LayerNorm over a head's channels: a learnable weight, no bias (ViT-22B's norms have
    none; nn.LayerNorm(bias=False) is PyTorch 2.1's)."""

    def __init__(self, n, eps):
        super().__init__()
        self.weight, self.bias, self.eps = nn.Parameter(torch.ones(n)), None, eps


class CausalSelfAttention(nn.Module):
    """One packed QKV Linear, the scores q·kᵀ with 1/√d where session.json's attention.scale puts
    it, the causal mask, softmax, probabilities · v, and the output projection: attention written
    out as math (PyTorch 1.13 has no scaled_dot_product_attention)."""

    def __init__(self, m, block):
        super().__init__()
        c = m["n_embd"]
        self.c_attn = nn.Linear(c, 3 * c)
        self.c_proj = nn.Linear(c, c)
        self.n_head, self.n_embd, self.att = m["n_head"], c, m["attention"]
        if self.att.get("qk_norm"):  # ViT-22B's QK-norm: a LayerNorm(head_size) without β on q and on k
            self.q_norm = QKNorm(c // m["n_head"], m["layernorm_eps"])
            self.k_norm = QKNorm(c // m["n_head"], m["layernorm_eps"])
        self.site_qkv, self.site_att, self.site_proj = 1 + 5 * block, 2 + 5 * block, 3 + 5 * block
        t = m["block_size"]
        self.register_buffer("mask", torch.tril(torch.ones(t, t, dtype=torch.bool)), persistent=False)

    def forward(self, x, f, batch):
        n, c = x.shape
        t, h = n // batch, self.n_head
        out = f.layers[self.site_att]["activation"]
        qkv = f.linear(x, self.c_attn.weight, self.c_attn.bias, self.site_qkv)
        q, k, v = (z.view(batch, t, h, c // h).transpose(1, 2) for z in qkv.split(c, dim=1))
        qk = out  # the format q and k are stored in: the QKV Linear's, or the norm's under QK-norm
        if self.att.get("qk_norm"):  # each head's q and k, FP32 statistics, stored in the norm's format
            qk = f.stream["norm"][self.site_att]
            q = layer_norm(q, self.q_norm, self.q_norm.eps, f, qk)
            k = layer_norm(k, self.k_norm, self.k_norm.eps, f, qk)
        if self.att["q_factor"] != 1.0:  # scale before (q/√d) or split (d^-1/4 on q and on k)
            q = f.store(q * self.att["q_factor"], qk)
        if self.att["k_factor"] != 1.0:
            k = f.store(k * self.att["k_factor"], qk)
        att = f.matmul(q, k.transpose(-2, -1), self.site_att)  # the scores: where FP16 passes 65504
        if self.att["scores_factor"] != 1.0:  # scale after (llm.c's order)
            att = f.store(att * self.att["scores_factor"], out)
        cap = self.att["softcap"]
        if cap > 0:  # Gemma's soft-cap c·tanh(x/c), three ops
            att = f.store(att / cap, out)
            att = f.store(torch.tanh(att), out)
            att = f.store(att * cap, out)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
        with f.fp32():
            att = f.store(F.softmax(att.float(), dim=-1), f.stream["probs"][self.site_att])
        y = f.matmul(att, v, self.site_att)
        y = y.transpose(1, 2).contiguous().view(n, c)
        return f.linear(y, self.c_proj.weight, self.c_proj.bias, self.site_proj)


class MLP(nn.Module):
    def __init__(self, m, block):
        super().__init__()
        c = m["n_embd"]
        self.c_fc = nn.Linear(c, 4 * c)
        self.c_proj = nn.Linear(4 * c, c)
        self.site_fc, self.site_proj = 4 + 5 * block, 5 + 5 * block

    def forward(self, x, f):
        x = f.linear(x, self.c_fc.weight, self.c_fc.bias, self.site_fc)
        with f.fp32():  # GELU (tanh form) in FP32, stored once in the layer's format
            x = f.store(F.gelu(x.float(), approximate="tanh"), f.layers[self.site_fc]["activation"])
        return f.linear(x, self.c_proj.weight, self.c_proj.bias, self.site_proj)


class StorageStatsLayerNorm(torch.autograd.Function):
    """LayerNorm whose statistics are computed in `fmt` (session.json's norm.stats = storage: a kernel
    that accumulates in BF16, pytorch#92164, where ones(5120) sums to 256): the row's running sum, one
    column at a time, each addition rounded to fmt; the mean (sum / D); each deviation x - mean and its
    square; the variance's running sum; the variance; var + eps, its square root and 1/that, each
    rounded. The output (x - mean) * rstd * weight + bias is FP32. The backward is PyTorch's own
    LayerNorm backward from those saved statistics (aten.native_layer_norm_backward), as such a
    kernel's backward reads what its forward saved."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps, fmt):
        r = ROUND[fmt]
        x = x.float()
        d = x.shape[-1]
        s = torch.zeros_like(x[:, 0])
        for c in range(d):
            s = r(s + x[:, c])
        width = torch.full_like(s, float(d))  # a true division (a scalar divisor may multiply by 1/D)
        mean = r(s / width)
        dev = r(x - mean[:, None])
        sq = r(dev * dev)
        v = torch.zeros_like(s)
        for c in range(d):
            v = r(v + sq[:, c])
        var = r(v / width)
        rstd = r(torch.ones_like(var) / r(torch.sqrt(r(var + eps))))
        mean, rstd = mean[:, None], rstd[:, None]
        ctx.save_for_backward(x, weight, bias, mean, rstd)
        return (x - mean) * rstd * weight + bias

    @staticmethod
    def backward(ctx, g):
        x, weight, bias, mean, rstd = ctx.saved_tensors
        dx, dw, db = torch.ops.aten.native_layer_norm_backward(g.float().contiguous(), x, [x.shape[-1]], mean, rstd,
                                                               weight, bias, [True, True, True])
        return dx, dw, db, None, None


def layer_norm(x, ln, eps, f, fmt, stats="fp32"):
    """LayerNorm's statistics and result in FP32 (the statistics in `stats` under norm.stats =
    storage), stored in `fmt`."""
    with f.fp32():
        if stats != "fp32":
            return f.store(StorageStatsLayerNorm.apply(x, ln.weight, ln.bias, eps, stats), fmt)
        return f.store(F.layer_norm(x.float(), (x.shape[-1],), ln.weight, ln.bias, eps), fmt)


class Block(nn.Module):
    def __init__(self, m, block):
        super().__init__()
        c = m["n_embd"]
        self.ln_1 = nn.LayerNorm(c, eps=m["layernorm_eps"])
        self.attn = CausalSelfAttention(m, block)
        self.ln_2 = nn.LayerNorm(c, eps=m["layernorm_eps"])
        self.mlp = MLP(m, block)

    def forward(self, x, f, batch):
        eps, resid = self.ln_1.eps, f.stream["residual"]
        norm, stats, qkv, fc = f.stream["norm"], f.stream["norm_stats"], self.attn.site_qkv, self.mlp.site_fc
        x = f.store(x + self.attn(layer_norm(x, self.ln_1, eps, f, norm[qkv], stats[qkv]), f, batch), resid)
        return f.store(x + self.mlp(layer_norm(x, self.ln_2, eps, f, norm[fc], stats[fc]), f), resid)


class GPT(nn.Module):
    """nanoGPT's shape, pre-LN, as session.json's model describes it; its parameters in nanoGPT's
    names and order (load_state_dict takes the exported initial weights). forward(idx, f) takes a
    (batch, block_size) tensor of token ids and a run's Formats; it returns the logits, one row per
    position, (batch · block_size, vocab_size)."""

    def __init__(self, m):
        super().__init__()
        c = m["n_embd"]
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(m["vocab_size"], c),
            wpe=nn.Embedding(m["block_size"], c),
            h=nn.ModuleList([Block(m, b) for b in range(m["n_layer"])]),
            ln_f=nn.LayerNorm(c, eps=m["layernorm_eps"]),
        ))
        self.lm_head = nn.Linear(c, m["vocab_size"], bias=False)
        if m["tie_embeddings"]:
            self.lm_head.weight = self.transformer.wte.weight  # nanoGPT's weight tying
        self.site_head = 5 * m["n_layer"] + 1

    def forward(self, idx, f):
        batch, t = idx.shape
        tr = self.transformer
        pos = torch.arange(t, device=idx.device)
        x = f.store(tr.wte(idx) + tr.wpe(pos), f.stream["residual"]).view(batch * t, -1)
        for block in tr.h:
            x = block(x, f, batch)
        x = layer_norm(x, tr.ln_f, tr.ln_f.eps, f, f.stream["norm"][self.site_head], f.stream["norm_stats"][self.site_head])
        return f.linear(x, self.lm_head.weight, None, self.site_head)


def can_run(device, dtype):
    """Whether this PyTorch multiplies `dtype` matrices on the device, and autocasts to it there."""
    try:
        a = torch.ones(2, 2, device=device, dtype=dtype)
        a @ a
        with torch.autocast(device_type=device, dtype=dtype):
            out = F.linear(torch.ones(2, 2, device=device), torch.ones(2, 2, device=device))
        return out.dtype == dtype
    except Exception:
        return False


class Run:
    """One run of the session: its model (as parameters), optimizer and scaler, trained step by step."""

    def __init__(self, spec, session, init, lrs, device, emulate):
        self.spec, self.session, self.device = spec, session, device
        self.lrs = lrs  # the learning rate after k schedule steps (data/lr.npy)
        self.label = spec["label"]
        self.layers = spec["layers"]
        self.model = session["model"]
        self.train_cfg = session["train"]
        self.emulated = emulate == "all"
        self.why = self.native_problem()
        if self.why and emulate:
            self.emulated, self.why = True, None
        if self.why:
            raise ExportError(f"{self.label}: {self.why}; run with --emulate, or on a device that has it")
        low = {l["weight"] for l in self.layers} - {"fp32"}
        self.working_dtype = DTYPES[low.pop()] if low and not self.emulated else torch.float32
        self.has_master = any(l["master"] for l in self.layers)
        # Parameters in the model's order: fc1.weight, fc1.bias, (LayerNorm gamma, beta), fc2.weight, ...
        self.params, self.fmt, self.initial = [], [], []
        self.net = None
        if self.model.get("kind") == "gpt":
            self.init_gpt(init)
        n = 0 if self.net else len(self.model["sizes"]) - 1
        for i in range(n):
            lay = self.layers[i]
            for t in (init[f"fc{i + 1}_weight"], init[f"fc{i + 1}_bias"]):
                self.add_param(t, lay["weight"], lay)
            if self.model["layernorm"] and i + 1 < n:  # LayerNorm's gamma and beta stay FP32 in every mode
                width = self.model["sizes"][i + 1]
                fp32 = dict(lay, weight="fp32", grad="fp32", grad_through="fp32", unscaled="fp32", state="fp32")
                self.add_param(torch.ones(width), "fp32", fp32, dtype=torch.float32)
                self.add_param(torch.zeros(width), "fp32", fp32, dtype=torch.float32)
        # The optimizer updates the FP32 master copies where the run keeps them, else the working ones.
        if self.has_master:
            # The masters start from the FP32 initial values, the working copies from them rounded.
            self.masters = [t.clone().requires_grad_(True) for t in self.initial]
            self.opt_params = self.masters
        else:
            self.opt_params = self.params
        t = self.train_cfg
        kind = t["optimizer"]
        if kind == "sgd":
            self.optimizer = torch.optim.SGD(self.opt_params, lr=0.0, momentum=t["momentum"],
                                             weight_decay=t["weight_decay"])
        elif kind == "adam":
            self.optimizer = torch.optim.Adam(self.opt_params, lr=0.0, betas=(t["beta1"], t["beta2"]), eps=t["eps"],
                                              weight_decay=t["weight_decay"])
        else:
            self.optimizer = torch.optim.AdamW(self.opt_params, lr=0.0, betas=(t["beta1"], t["beta2"]), eps=t["eps"],
                                               weight_decay=t["weight_decay"])
        sc = spec["scaler"]
        # GradScaler unscales FP32 gradients only: runs with FP16/BF16 parameters take the mirror.
        native_fp32_params = not self.emulated and not self.has_master and self.working_dtype == torch.float32
        self.grad_scaler = torch_grad_scaler(device, sc) if native_fp32_params else None
        self.mirror = None if self.grad_scaler else MirrorScaler(sc)
        self.skips_on_inf = spec["skips_on_inf"]
        self.schedule_steps = 0
        self.stopped = None

    def init_gpt(self, init):
        """The GPT as an nn.Module, its parameters loaded from the exported initial weights (each
        rounded to its format when emulated), in nanoGPT's order (session.json's model.params)."""
        self.net = GPT(self.model).to(self.device)
        self.formats = Formats(self.spec, self.device, self.emulated)
        named = dict(self.net.named_parameters())
        listed = [p["name"] for p in self.model["params"]]
        if list(named) != listed:
            raise ExportError(f"{HERE}/session.json: its model.params are not this script's GPT's; export again")
        state = {}
        for p in self.model["params"]:
            lay = self.layers[p["layer"]]
            if p["norm"]:  # LayerNorm's gamma and beta stay FP32 in every mode
                lay = dict(lay, weight="fp32", grad="fp32", grad_through="fp32", unscaled="fp32", state="fp32")
            t = init[p["name"]].to(self.device)
            self.initial.append(t.clone())
            state[p["name"]] = ROUND[lay["weight"]](t) if self.emulated else t
            self.params.append(named[p["name"]])
            self.fmt.append(lay)
        if self.model["tie_embeddings"]:
            state["lm_head.weight"] = state["transformer.wte.weight"]
        self.net.load_state_dict(state)

    def add_param(self, t, fmt, layer, dtype=None):
        t = t.to(self.device).clone()  # every run starts from its own copy of the initial values
        self.initial.append(t.float().clone())
        if self.emulated:
            t = ROUND[fmt](t.float())
        else:
            t = t.to(dtype or (DTYPES[fmt] if fmt in DTYPES else torch.float32))
        self.params.append(t.requires_grad_(True))
        self.fmt.append(layer)

    def native_problem(self):
        """Why this PyTorch cannot run the run natively on the device, or None."""
        formats = {l[k] for l in self.layers for k in ("compute", "weight")}
        if self.model.get("kind") == "gpt" and {l["weight"] for l in self.layers} != {"fp32"}:
            return "this script trains a GPT whose weights are stored in FP16/BF16 in emulation only"
        if "tf32" in formats and self.device != "cuda":
            return "TF32 is a CUDA tensor-core format"
        for name, dtype in DTYPES.items():
            if name in formats and not can_run(self.device, dtype):
                return f"PyTorch {torch.__version__} cannot run {name.upper()} (autocast and GEMMs) on the {self.device}"
        return None

    def scale(self):
        return self.grad_scaler.get_scale() if self.grad_scaler else self.mirror.scale

    # The forward pass, in the run's precision. `keep` holds the step's dropout masks (None: no dropout).
    def forward(self, x, keep):
        if self.net is not None:
            autocast = self.spec["autocast"]
            with (torch.autocast(device_type=self.device, dtype=DTYPES[autocast]) if autocast and not self.emulated
                  else contextlib.nullcontext()):
                return self.net(x, self.formats)
        return self.forward_emulated(x, keep) if self.emulated else self.forward_native(x, keep)

    def layer_params(self, i):
        k = 0
        n = len(self.model["sizes"]) - 1
        for j in range(i):
            k += 4 if self.model["layernorm"] and j + 1 < n else 2
        ln = self.model["layernorm"] and i + 1 < n
        return self.params[k], self.params[k + 1], (self.params[k + 2] if ln else None), (self.params[k + 3] if ln else None)

    def forward_emulated(self, x, keep):
        m, n = self.model, len(self.model["sizes"]) - 1
        h = ROUND[self.layers[0]["weight"]](x)  # the input is stored as fc1's weights are
        for i in range(n):
            lay = self.layers[i]
            a = lay["activation"]
            w, b, gamma, beta = self.layer_params(i)
            z = Store.apply(EmulatedLinear.apply(h, w, b, lay), a, a)
            if i + 1 == n:
                return z
            if gamma is not None:
                z = Store.apply(F.layer_norm(z, (z.shape[1],), gamma, beta, m["layernorm_eps"]), a, a)
            h = Store.apply(activation(m["activation"], z), a, a)
            if keep is not None:
                h = Store.apply(h * keep[i], a, a)

    def forward_native(self, x, keep):
        m, n = self.model, len(self.model["sizes"]) - 1
        autocast = self.spec["autocast"]
        outer = (torch.autocast(device_type=self.device, dtype=DTYPES[autocast]) if autocast
                 else contextlib.nullcontext())
        with outer:
            h = x.to(self.layer_params(0)[0].dtype)  # the input as fc1's weights are stored (mpx's input site)
            for i in range(n):
                lay = self.layers[i]
                w, b, gamma, beta = self.layer_params(i)
                if autocast and lay["compute"] in ("fp32", "tf32"):  # a layer mpx keeps in FP32
                    with torch.autocast(device_type=self.device, enabled=False):
                        z = F.linear(h.float(), w, b)
                else:  # autocast casts; a model in FP16/BF16 (half-*, pure-*, selective-*) casts per layer
                    z = F.linear(h if autocast else h.to(w.dtype), w, b)
                if i + 1 == n:
                    return z
                if gamma is not None:  # statistics in FP32, the result stored as the layer stores it
                    with torch.autocast(device_type=self.device, enabled=False):
                        z = F.layer_norm(z.float(), (z.shape[1],), gamma, beta, m["layernorm_eps"]).to(z.dtype)
                # Computed in FP32 and stored once in the layer's format, as CUDA's kernels do (the
                # CPU's BF16 GELU of PyTorch 1.13 rounds its intermediate steps to BF16).
                h = activation(m["activation"], z.float()).to(z.dtype)
                if keep is not None:
                    h = (h.float() * keep[i]).to(h.dtype)

    def loss(self, logits, target, kind, z_loss=0.0):
        logits = logits.float()  # the loss in FP32 (softmax too), in every mode
        if kind == "cross_entropy":
            if z_loss:  # PaLM's z-loss on the log-normaliser (session.json's train.z_loss)
                return F.cross_entropy(logits, target) + z_loss * torch.logsumexp(logits, -1).pow(2).mean()
            return F.cross_entropy(logits, target)
        return F.mse_loss(logits, target)

    # One optimizer step over its micro-batches; returns the CSV row's training values.
    def step(self, index, micro, loss_kind):
        t = self.train_cfg
        lr = float(self.lrs[min(self.schedule_steps, len(self.lrs) - 1)])
        if self.stopped:
            return dict(loss=math.nan, loss_scale=self.scale(), found_inf=0, skipped=1, scale_event="none",
                        grad_norm=None, lr=lr)
        for p in self.params + (self.masters if self.has_master else []):
            p.grad = None
        scale = self.scale()
        factor = t["loss_weight"] / len(micro)
        loss_sum = 0.0
        for x, target, keep in micro:
            logits = self.forward(x, keep)
            loss = self.loss(logits, target, loss_kind, t.get("z_loss", 0.0))
            loss_sum += loss.item()
            if self.grad_scaler:
                self.grad_scaler.scale(loss * factor).backward()
            else:
                (loss * (scale * factor)).backward()
            if self.emulated:  # each micro-batch's gradients added into the stored ones, in their format
                for p, lay in zip(self.params, self.fmt):
                    p.grad = ROUND[lay["grad"]](p.grad)
        # Unscale (the reciprocal in double, multiplied in FP32), then check every gradient.
        if self.has_master:
            for mp, p in zip(self.masters, self.params):
                mp.grad = p.grad.float()
        grads = [p.grad for p in self.opt_params]
        if self.grad_scaler:
            self.grad_scaler.unscale_(self.optimizer)
        else:
            inv = as_fp32(1.0 / scale)
            for g, lay in zip(grads, self.fmt):
                g.mul_(inv)
                if self.emulated:
                    g.copy_(ROUND[lay["unscaled"]](g))
        found_inf = not all(bool(torch.isfinite(g).all()) for g in grads)
        grad_norm = math.inf if found_inf else math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads))
        if t["clip_norm"] > 0 and not found_inf:
            torch.nn.utils.clip_grad_norm_(self.opt_params, t["clip_norm"])
        skipped = found_inf and self.skips_on_inf
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        if self.grad_scaler:
            self.grad_scaler.step(self.optimizer)
            self.grad_scaler.update()
            new = self.grad_scaler.get_scale()
            event = "grow" if new > scale else "backoff" if found_inf else "none"
        else:
            if not skipped:
                self.optimizer.step()
                self.write_back()
            try:
                event = self.mirror.update(found_inf)
            except ScaleAtMinimum as e:
                self.stopped, event = str(e), "none"
        if not skipped or t["advance_on_skip"]:
            self.schedule_steps += 1
        return dict(loss=loss_sum / len(micro) * t["loss_weight"], loss_scale=scale, found_inf=int(found_inf),
                    skipped=int(skipped), scale_event=event, grad_norm=grad_norm, lr=lr)

    def write_back(self):
        """After the optimizer: working copies from the masters; emulated, every value stored in its format."""
        with torch.no_grad():
            if self.has_master:
                for p, mp, lay in zip(self.params, self.masters, self.fmt):
                    p.copy_(ROUND[lay["weight"]](mp) if self.emulated else mp)
            elif self.emulated:
                for p, lay in zip(self.params, self.fmt):
                    p.copy_(ROUND[lay["weight"]](p))
            if self.emulated:
                for p, lay in zip(self.opt_params, self.fmt):
                    for key, v in self.optimizer.state[p].items():
                        if key != "step" and torch.is_tensor(v) and v.is_floating_point():
                            v.copy_(ROUND[lay["state"]](v))

    @torch.no_grad()
    def evaluate(self, x, target, batch, loss_kind):
        """Held-out loss (mean over examples, as mpx: chunk means x rows) and accuracy; no dropout."""
        loss_sum, correct, labelled, rows = 0.0, 0, 0, x.shape[0]
        for first in range(0, rows, batch):
            xs, ts = x[first:first + batch], target[first:first + batch]
            if self.net is not None:  # the GPT: a label per position of each window
                ts = ts.reshape(-1)
            logits = self.forward(xs, None)
            loss_sum += self.loss(logits, ts, loss_kind).item() * xs.shape[0]
            if loss_kind == "cross_entropy":
                correct += int((logits.float().argmax(dim=1) == ts).sum())
                labelled += ts.shape[0]
        accuracy = correct / labelled if loss_kind == "cross_entropy" else None
        return loss_sum / rows * self.train_cfg["loss_weight"], accuracy


def number(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
    return str(v)


def main():
    ap = argparse.ArgumentParser(description="Train the exported mpx session in PyTorch; write mpx's CSV columns.")
    ap.add_argument("--csv", required=True, help="where to write the records (mpx's column names)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--runs", help="only these runs, by label (comma-separated)")
    ap.add_argument("--steps", type=int, help="stop after this many steps (default: the session's)")
    ap.add_argument("--threads", type=int, default=1,
                    help="CPU threads for PyTorch (default 1: its GEMMs then sum in one order, so a rerun gives "
                         "the same bits)")
    ap.add_argument("--emulate", nargs="?", const="needed", choices=["needed", "all"],
                    help="train runs this PyTorch cannot run natively on the device in emulation "
                         "(FP32 arithmetic, values rounded where the format stores them); 'all': every run")
    args = ap.parse_args()
    try:
        write_csv(args, train(args))
    except ExportError as e:
        print(f"train.py: {e}", file=sys.stderr)
        return 2
    return 0


def train(args):
    session = load_session()
    if args.threads < 1:
        raise ExportError("--threads: give 1 or more")
    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ExportError("--device cuda: this PyTorch sees no CUDA device")
    if args.device == "cuda":  # TF32 only where a run asks for it (set per run below)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    dev = args.device
    steps = session["steps"] if args.steps is None else min(args.steps, session["steps"])
    t = session["train"]
    batch, accum = t["batch"], t["accumulation"]
    if session["model"].get("kind") == "gpt":
        return train_gpt(args, session, steps)
    sizes = session["model"]["sizes"]
    n = len(sizes) - 1
    regression = session["loss"] == "mse"
    x_train = load_npy("data/x_train.npy")
    x_test = load_npy("data/x_test.npy")
    if x_train.shape[1:] != (session["features"],) or x_test.shape[1:] != (session["features"],):
        raise ExportError(f"{HERE}/data: the data sets do not have {session['features']} features; export again")
    if regression:
        y_train, y_test = load_npy("data/t_train.npy"), load_npy("data/t_test.npy")
    else:
        y_train, y_test = load_npy("data/y_train.npy").long(), load_npy("data/y_test.npy").long()
    if y_train.shape[0] != x_train.shape[0] or y_test.shape[0] != x_test.shape[0]:
        raise ExportError(f"{HERE}/data: labels and examples differ in number; export again")
    init = {}
    for i in range(n):
        init[f"fc{i + 1}_weight"] = expect_shape(f"data/init_fc{i + 1}_weight.npy",
                                                 load_npy(f"data/init_fc{i + 1}_weight.npy"), (sizes[i + 1], sizes[i]))
        init[f"fc{i + 1}_bias"] = expect_shape(f"data/init_fc{i + 1}_bias.npy",
                                               load_npy(f"data/init_fc{i + 1}_bias.npy"), (sizes[i + 1],))
    batches = expect_shape("data/batches.npy", load_npy("data/batches.npy"), (session["steps"], accum, batch)).long()
    if batches.numel() and (int(batches.min()) < 0 or int(batches.max()) >= x_train.shape[0]):
        raise ExportError(f"{HERE}/data/batches.npy: an index outside the training set; export again")
    lrs = expect_shape("data/lr.npy", load_npy("data/lr.npy"), (session["steps"],)).tolist()
    dropout = session["model"]["dropout"] > 0
    masks = []
    if dropout:
        keep_scale = session["model"]["dropout_keep_scale"]
        for i in range(n - 1):
            name = f"data/dropout_fc{i + 1}.npy"
            masks.append(expect_shape(name, load_npy(name), (session["steps"], accum, batch, sizes[i + 1])))

    runs, notes = make_runs(args, session, init, lrs)
    x_train, x_test = x_train.to(dev), x_test.to(dev)
    y_train, y_test = y_train.to(dev), y_test.to(dev)

    def micro_batches(step):
        micro = []
        for k in range(accum):
            idx = batches[step, k].to(dev)
            keep = [masks[i][step, k].to(dev).float() * keep_scale for i in range(n - 1)] if dropout else None
            micro.append((x_train[idx], y_train[idx], keep))
        return micro

    return train_loop(args, session, steps, runs, notes, micro_batches, x_test, y_test)


def make_runs(args, session, init, lrs):
    """The runs --runs asks for (all by default), each with its model, optimizer and scaler, and a
    line per run saying how it is trained."""
    dev = args.device
    specs = session["runs"]
    if args.runs:
        wanted = [r.strip() for r in args.runs.split(",") if r.strip()]
        labels = [r["label"] for r in specs]
        unknown = [w for w in wanted if w not in labels]
        if unknown:
            raise ExportError(f"--runs: unknown run {', '.join(unknown)}; this export has {', '.join(labels)}")
        specs = [r for r in specs if r["label"] in wanted]
    runs = []
    for spec in specs:
        if args.device == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = any(l["compute"] == "tf32" for l in spec["layers"])
        runs.append(Run(spec, session, init, lrs, dev, args.emulate))
    notes = []
    for r in runs:
        how = ("emulated (FP32 arithmetic, values rounded to their formats)" if r.emulated
               else f"torch.autocast({dev}, {r.spec['autocast']})" if r.spec["autocast"]
               else f"model in {r.working_dtype}" + (" with FP32 master weights" if r.has_master else ""))
        if r.grad_scaler:
            sc = f"scaler: torch GradScaler ({type(r.grad_scaler).__module__})"
        elif r.spec["scaler"]["kind"] == "dynamic":
            follows = r.spec.get("scaler_follows", {})
            sc = f"scaler: MirrorScaler, the rule of {follows.get('framework', '?')} ({follows.get('source', '?')})"
            if "snippet" in r.spec:
                sc += f"; {r.spec['snippet']['framework']}'s own settings for it: session.json, this run's 'snippet'"
        else:
            sc = f"scaler: {r.spec['scaler']['kind']} (scale {r.scale():g})"
        notes.append(f"# {r.label}: {how}; {sc}")
    return runs, notes


def train_loop(args, session, steps, runs, notes, micro_batches, x_test, y_test):
    """Every run steps in lockstep on the same micro-batches; the held-out set every eval_every steps."""
    dev, batch = args.device, session["train"]["batch"]
    rows = []
    eval_every = session["eval_every"]
    for step in range(steps):
        micro = micro_batches(step)
        evaluate = eval_every >= 1 and x_test.shape[0] > 0 and (step % eval_every == 0 or step + 1 == session["steps"])
        for r in runs:
            if args.device == "cuda":
                torch.backends.cuda.matmul.allow_tf32 = any(l["compute"] == "tf32" for l in r.spec["layers"])
            rec = r.step(step, micro, session["loss"])
            rec.update(run=r.label, precision=r.spec["precision"], mode=r.spec["mode"], step=step,
                       eval_loss=None, eval_accuracy=None)
            if evaluate and not r.stopped:
                rec["eval_loss"], rec["eval_accuracy"] = r.evaluate(x_test, y_test, batch, session["loss"])
            rows.append(rec)
    header = [f"# train.py from mpx export-torch ({session['program']}, preset {session['preset']}); "
              f"torch {torch.__version__}, device {dev}"] + notes
    return header, rows


def train_gpt(args, session, steps):
    """The GPT: windows of the text's token ids (data/tokens.npy), inputs and their next characters,
    at the training starts of data/batches.npy and the held-out starts of data/eval_starts.npy."""
    dev, m, t = args.device, session["model"], session["train"]
    batch, accum, block = t["batch"], t["accumulation"], m["block_size"]
    tokens = load_npy("data/tokens.npy").long()
    text = session["text"]
    expect_shape("data/tokens.npy", tokens, (text["characters"],))
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= m["vocab_size"]):
        raise ExportError(f"{HERE}/data/tokens.npy: a token outside the vocabulary; export again")
    init = {}
    for p in m["params"]:
        name = f"data/init/{p['name']}.npy"
        init[p["name"]] = load_npy(name)
    batches = expect_shape("data/batches.npy", load_npy("data/batches.npy"), (session["steps"], accum, batch)).long()
    eval_starts = load_npy("data/eval_starts.npy").long()
    last_train = text["train_size"] - block - 1
    if batches.numel() and (int(batches.min()) < 0 or int(batches.max()) > last_train):
        raise ExportError(f"{HERE}/data/batches.npy: a window outside the training text; export again")
    if eval_starts.numel() and (int(eval_starts.min()) < text["train_size"] or
                                int(eval_starts.max()) + block >= text["characters"]):
        raise ExportError(f"{HERE}/data/eval_starts.npy: a window outside the held-out text; export again")
    lrs = expect_shape("data/lr.npy", load_npy("data/lr.npy"), (session["steps"],)).tolist()
    offsets = torch.arange(block)

    def windows(starts):
        at = starts.reshape(-1, 1) + offsets
        return tokens[at].to(dev), tokens[at + 1].to(dev)

    def micro_batches(step):
        micro = []
        for k in range(accum):
            x, y = windows(batches[step, k])
            micro.append((x, y.reshape(-1), None))
        return micro

    runs, notes = make_runs(args, session, init, lrs)
    x_test, y_test = windows(eval_starts)
    return train_loop(args, session, steps, runs, notes, micro_batches, x_test, y_test)


def write_csv(args, result):
    header, rows = result
    text = "".join(line + "\n" for line in header) + ",".join(COLUMNS) + "\n"
    text += "".join(",".join(number(rec[c]) for c in COLUMNS) + "\n" for rec in rows)
    try:
        mode = os.stat(args.csv).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        # A device or a FIFO (--csv /dev/null, to time a run) is written to, never replaced:
        # os.replace would put a regular file where the node was (issue 41, class 9).
        try:
            with open(args.csv, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        except OSError as e:
            raise ExportError(f"{args.csv}: cannot write it ({e.strerror})") from None
        print(f"train.py: wrote {args.csv} ({len(rows)} rows)", file=sys.stderr)
        return
    tmp = f"{args.csv}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, args.csv)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise ExportError(f"{args.csv}: cannot write it ({e.strerror})") from None
    print(f"train.py: wrote {args.csv} ({len(rows)} rows)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
