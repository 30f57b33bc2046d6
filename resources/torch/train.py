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
    mpx-cli compare --expect mpx.csv torch.csv --sidecar-b DIR

It prints its progress and writes the CSV as it trains, a row a run a step (flushed), so a run
stopped early leaves a valid CSV of the steps it took.

Each precision is written as PyTorch users write it:

  fp32, scaling-only   plain FP32 (TF32 off on CUDA)
  tf32                 torch.backends.cuda.matmul.allow_tf32 on CUDA
  amp-*                torch.autocast(device, dtype) around the forward pass (Run.autocast); a
                       layer mpx keeps in FP32 runs with autocast off; the loss, LayerNorm and
                       softmax in FP32 (mpx's categories, forced here: CPU autocast would leave
                       LayerNorm in BF16)
  half-*, pure-*,      per-layer dtypes: each nn.Linear in its weights' format (.to(torch.float16)
  selective-*          / .to(torch.bfloat16)) and its input cast to it; half-* and selective-* with
                       FP32 master copies the optimizer updates (Apex O2), pure-* without (the
                       optimizer's own arithmetic then runs in the low format, where mpx's
                       computes in FP32)

Where the installed PyTorch cannot run a precision on the device (FP16 on the CPU before 2.x, TF32
off CUDA), the run stops with a line saying so, and --emulate trains it in FP32 arithmetic with
every tensor rounded where the precision stores it (tensor.half().float() rounds exactly): GEMM
operands and their gradients, activations and their gradients, weights, gradients and optimizer
state, each in the format session.json names for its layer. `--emulate all` emulates every run.

The optimizer is torch.optim's (SGD, Adam, AdamW); the learning rate comes from TableLR, an
lr_scheduler over data/lr.npy (mpx hands its optimizer the schedule's values in FP32, which
StepLR's or a LambdaLR's doubles miss in the last bits). The loss scaler is PyTorch's own
GradScaler where the run's rule is PyTorch's and the installed PyTorch has one for the device
(torch.amp.GradScaler from 2.3, torch.cuda.amp.GradScaler on CUDA before); otherwise
MirrorScaler, a GradScaler subclass with the run's rule (DeepSpeed's, Megatron's, Apex's, Keras's,
or PyTorch's where PyTorch has no scaler for the device) from its settings in session.json. Both
answer scale / unscale_ / step / update / state_dict, so one training loop (Run.step) serves
every run.

Lifting it: the classes and functions are importable, as in

    import sys; sys.path.insert(0, "DIR")          # the export's folder
    import train
    session = train.load_session()
    data = train.load_data(session)                  # batches, held-out set, initial weights, lr
    run = train.build_run(session, data, "fp32")     # .model, .formats, .optimizer, .scheduler, .scaler
    for step in range(3):
        for x, target, keep in data.micro_batches(step):
            run.optimizer.zero_grad(set_to_none=True)
            with run.autocast():
                logits = run.model(x, run.formats, keep)
            loss = run.loss(logits, target, session["loss"])
            run.scaler.scale(loss).backward()
            run.scaler.step(run.optimizer)
            run.scaler.update()
            run.scheduler.step()

(`Run.step` is that loop with mpx's details: micro-batches, FP32 masters, clipping, emulation.)
"""

import argparse
import ast
import contextlib
import json
import math
import os
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ["run", "precision", "mode", "step", "loss", "loss_scale", "found_inf", "skipped", "scale_event",
           "grad_norm", "lr", "eval_loss", "eval_accuracy"]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
# GradScaler's class: torch.amp's, for any device (PyTorch >= 2.3), or torch.cuda.amp's before.
GRAD_SCALER = getattr(torch.amp, "GradScaler", None) or torch.cuda.amp.GradScaler


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


class Data:
    """What every run of the session trains from: `lrs` (the learning rate after k schedule steps),
    `init` (the initial weights by their state_dict names), the held-out set `x_test`, `y_test`,
    and `micro_batches(step)`: the step's micro-batches as (inputs, targets, dropout keep-masks or
    None), on the device."""

    def __init__(self, lrs, init, micro_batches, x_test, y_test):
        self.lrs, self.init, self.micro_batches = lrs, init, micro_batches
        self.x_test, self.y_test = x_test, y_test


def load_data(session, device="cpu"):
    """The export's data files, checked against session.json, as a Data."""
    steps, t = session["steps"], session["train"]
    batch, accum = t["batch"], t["accumulation"]
    if session["model"].get("kind") == "gpt":
        return load_gpt_data(session, device)
    sizes = session["model"]["sizes"]
    n = len(sizes) - 1
    x_train = load_npy("data/x_train.npy")
    x_test = load_npy("data/x_test.npy")
    if x_train.shape[1:] != (session["features"],) or x_test.shape[1:] != (session["features"],):
        raise ExportError(f"{HERE}/data: the data sets do not have {session['features']} features; export again")
    if session["loss"] == "mse":
        y_train, y_test = load_npy("data/t_train.npy"), load_npy("data/t_test.npy")
    else:
        y_train, y_test = load_npy("data/y_train.npy").long(), load_npy("data/y_test.npy").long()
    if y_train.shape[0] != x_train.shape[0] or y_test.shape[0] != x_test.shape[0]:
        raise ExportError(f"{HERE}/data: labels and examples differ in number; export again")
    init = {}
    for i in range(n):
        for part, shape in (("weight", (sizes[i + 1], sizes[i])), ("bias", (sizes[i + 1],))):
            name = f"data/init_fc{i + 1}_{part}.npy"
            init[f"fc{i + 1}.{part}"] = expect_shape(name, load_npy(name), shape)
    batches = expect_shape("data/batches.npy", load_npy("data/batches.npy"), (steps, accum, batch)).long()
    if batches.numel() and (int(batches.min()) < 0 or int(batches.max()) >= x_train.shape[0]):
        raise ExportError(f"{HERE}/data/batches.npy: an index outside the training set; export again")
    lrs = load_lrs(session)
    masks = []
    if session["model"]["dropout"] > 0:
        keep_scale = session["model"]["dropout_keep_scale"]
        for i in range(n - 1):
            name = f"data/dropout_fc{i + 1}.npy"
            masks.append(expect_shape(name, load_npy(name), (steps, accum, batch, sizes[i + 1])))
    x_train, y_train = x_train.to(device), y_train.to(device)

    def micro_batches(step):
        micro = []
        for k in range(accum):
            idx = batches[step, k].to(device)
            keep = [m[step, k].to(device).float() * keep_scale for m in masks] if masks else None
            micro.append((x_train[idx], y_train[idx], keep))
        return micro

    return Data(lrs, init, micro_batches, x_test.to(device), y_test.to(device))


def load_lrs(session):
    return expect_shape("data/lr.npy", load_npy("data/lr.npy"), (session["steps"],)).tolist()


def load_gpt_data(session, device):
    """The GPT: windows of the text's token ids (data/tokens.npy), inputs and their next characters,
    at the training starts of data/batches.npy and the held-out starts of data/eval_starts.npy."""
    m, t, text = session["model"], session["train"], session["text"]
    batch, accum, block = t["batch"], t["accumulation"], m["block_size"]
    tokens = expect_shape("data/tokens.npy", load_npy("data/tokens.npy").long(), (text["characters"],))
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= m["vocab_size"]):
        raise ExportError(f"{HERE}/data/tokens.npy: a token outside the vocabulary; export again")
    init = {p["name"]: load_npy(f"data/init/{p['name']}.npy") for p in m["params"]}
    batches = expect_shape("data/batches.npy", load_npy("data/batches.npy"), (session["steps"], accum, batch)).long()
    eval_starts = load_npy("data/eval_starts.npy").long()
    last_train = text["train_size"] - block - 1
    if batches.numel() and (int(batches.min()) < 0 or int(batches.max()) > last_train):
        raise ExportError(f"{HERE}/data/batches.npy: a window outside the training text; export again")
    if eval_starts.numel() and (int(eval_starts.min()) < text["train_size"] or
                                int(eval_starts.max()) + block >= text["characters"]):
        raise ExportError(f"{HERE}/data/eval_starts.npy: a window outside the held-out text; export again")
    lrs = load_lrs(session)
    offsets = torch.arange(block)

    def windows(starts):
        at = starts.reshape(-1, 1) + offsets
        return tokens[at].to(device), tokens[at + 1].to(device)

    def micro_batches(step):
        micro = []
        for k in range(accum):
            x, y = windows(batches[step, k])
            micro.append((x, y.reshape(-1), None))
        return micro

    x_test, y_test = windows(eval_starts)
    return Data(lrs, init, micro_batches, x_test, y_test)


# ---- formats: rounding to where a precision stores a value (--emulate) ------------------------------

def round_tf32(t):
    """Nearest-even to TF32's 10 fraction bits; inf and NaN pass through. The gradient passes as
    through .half().float() (t plus an exact, detached difference), so a penalty can differentiate it."""
    bits = t.contiguous().view(torch.int32)
    rounded = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF
    return torch.where(torch.isfinite(t), t + (rounded.view(torch.float32) - t).detach(), t)


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
    bias gradients are written in the layer's grad_through format. The inputs are saved and rounded
    again on the way back, so a penalty's create_graph=True differentiates the backward too."""

    @staticmethod
    def forward(ctx, x, w, b, layer):
        c = layer["compute"]
        ctx.save_for_backward(x, w)
        xc, wc = ROUND[c](x), ROUND[c](w)
        ctx.layer = layer
        ctx.has_bias = b is not None
        return F.linear(xc, wc, ROUND[c](b) if b is not None and c in DTYPES else b)

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        c, through = ctx.layer["compute"], ctx.layer["grad_through"]
        xc, wc = ROUND[c](x), ROUND[c](w)
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


class Formats:
    """Where a run's values meet its formats, read from session.json: per layer the run's formats
    (`layers`) and, for the GPT, the formats of the stream between ops (`gpt_formats`: the residual
    stream, a LayerNorm's output, attention's probabilities). Natively, PyTorch's own dtypes do the
    rounding: autocast casts each Linear's and batched product's operands (a layer mpx keeps in
    FP32 runs with autocast off), and LayerNorm, softmax and GELU run in FP32 with autocast off,
    their results cast to the format named (CUDA's autocast puts layer_norm and softmax in FP32;
    PyTorch 1.13's CPU autocast leaves them in BF16, which session.json's cpu-1.13 policy names).
    Emulated, every value is rounded where that format stores it (Store) and each product computes
    in FP32 from operands rounded to the compute format."""

    def __init__(self, spec, device, emulated):
        self.layers, self.stream = spec["layers"], spec.get("gpt_formats")
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


# ---- the models --------------------------------------------------------------------------------

def activation(name, z):
    if name == "relu":
        return F.relu(z)
    if name == "gelu":
        return F.gelu(z, approximate="tanh")
    if name == "tanh":
        return torch.tanh(z)
    return z


class MLPNet(nn.Module):
    """The MLP session.json's model describes: fc1 ... fcN as nn.Linear (state_dict names fc1.weight,
    fc1.bias, ..., as data/init_fcN_*.npy hold them), a LayerNorm lnK after each hidden Linear
    where the model has them, the activation, and dropout by the exported keep-masks. forward(x,
    f, keep) takes a batch (batch, features), the run's Formats and the step's keep-masks (None: no
    dropout); it returns the logits (batch, outputs)."""

    def __init__(self, m):
        super().__init__()
        sizes = m["sizes"]
        self.n, self.activation = len(sizes) - 1, m["activation"]
        for i in range(self.n):  # registered in mpx's order: fc1.weight, fc1.bias, ln1.weight, ln1.bias, fc2...
            self.add_module(f"fc{i + 1}", nn.Linear(sizes[i], sizes[i + 1]))
            if m["layernorm"] and i + 1 < self.n:
                self.add_module(f"ln{i + 1}", nn.LayerNorm(sizes[i + 1], eps=m["layernorm_eps"]))

    def linears(self):
        return [getattr(self, f"fc{i + 1}") for i in range(self.n)]

    def param_layers(self):
        """(name, layer index, whether it is a LayerNorm's) for each parameter, in order."""
        return [(name, int(name.split(".")[0][2:]) - 1, name.startswith("ln")) for name, _ in self.named_parameters()]

    def forward(self, x, f, keep=None):
        h = f.store(x, f.layers[0]["weight"])  # the input as fc1's weights are stored (mpx's input site)
        for i, fc in enumerate(self.linears()):
            z = f.linear(h, fc.weight, fc.bias, i)
            if i + 1 == self.n:
                return z
            a = f.layers[i]["activation"]
            ln = getattr(self, f"ln{i + 1}", None)
            if ln is not None:  # statistics in FP32, the result stored in the layer's format
                z = layer_norm(z, ln, ln.eps, f, a)
            # Computed in FP32 and stored once in the layer's format, as CUDA's kernels do (the CPU's
            # BF16 GELU of PyTorch 1.13 rounds its intermediate steps to BF16).
            h = f.store(activation(self.activation, z.float()), a)
            if keep is not None:
                h = f.store(h.float() * keep[i], a)


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

    def forward(self, idx, f, keep=None):  # keep: dropout's masks, which the GPT has none of
        batch, t = idx.shape
        tr = self.transformer
        pos = torch.arange(t, device=idx.device)
        x = f.store(tr.wte(idx) + tr.wpe(pos), f.stream["residual"]).view(batch * t, -1)
        for block in tr.h:
            x = block(x, f, batch)
        x = layer_norm(x, tr.ln_f, tr.ln_f.eps, f, f.stream["norm"][self.site_head], f.stream["norm_stats"][self.site_head])
        return f.linear(x, self.lm_head.weight, None, self.site_head)


# ---- the optimizer and its learning rate ----------------------------------------------------------

def make_optimizer(params, t, lr):
    """torch.optim's optimizer for session.json's `train`: SGD (momentum), Adam or AdamW."""
    if t["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=t["momentum"], weight_decay=t["weight_decay"])
    cls = torch.optim.Adam if t["optimizer"] == "adam" else torch.optim.AdamW
    return cls(params, lr=lr, betas=(t["beta1"], t["beta2"]), eps=t["eps"], weight_decay=t["weight_decay"])


class TableLR(torch.optim.lr_scheduler._LRScheduler):
    """The learning rate after k scheduler steps, from a table (data/lr.npy), its last value past
    the end. mpx's schedules are StepLR's and a LambdaLR's warm-up and cosine, but mpx hands its
    optimizer each value in FP32, and those compute in double: they part from mpx in the last bits,
    which Adam carries into every step, so the table is read instead."""

    def __init__(self, optimizer, table, last_epoch=-1):
        if not table:
            raise ExportError("TableLR: an empty learning-rate table")
        self.table = [float(v) for v in table]
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.table[min(self.last_epoch, len(self.table) - 1)] for _ in self.optimizer.param_groups]


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


class MirrorGradScaler(GRAD_SCALER):
    """GradScaler's interface (scale, unscale_, step, update, get_scale, state_dict,
    load_state_dict) over a run's MirrorScaler rule, on any device. As GradScaler does, unscale_
    multiplies every gradient by 1/scale (the reciprocal in double, the product in FP32) and notes
    whether one is inf or NaN, step skips optimizer.step() on such a step (where the rule skips:
    `skip_on_inf`), and update applies the rule; `event` says what the last update did (none, grow,
    backoff or hysteresis). `store_unscaled(grads)`, where given, stores the unscaled gradients in
    their formats before the check (--emulate)."""

    def __init__(self, settings, skip_on_inf=True, store_unscaled=None):
        super().__init__(enabled=False)  # GradScaler's own machinery stays off: the rule does the work
        self.rule = MirrorScaler(settings)
        self.skip_on_inf, self.store_unscaled = skip_on_inf, store_unscaled
        self.event = "none"
        self.found_inf = None  # this step's, once unscale_ has checked
        self.stepped = False

    def is_enabled(self):
        return True

    def get_scale(self):
        return self.rule.scale

    def scale(self, outputs):
        if isinstance(outputs, torch.Tensor):
            return outputs * self.rule.scale
        return type(outputs)(self.scale(o) for o in outputs)

    def unscale_(self, optimizer):
        if self.found_inf is not None:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        inv = as_fp32(1.0 / self.rule.scale)
        with torch.no_grad():
            for g in grads:
                g.mul_(inv)
            if self.store_unscaled:
                self.store_unscaled(grads)
        self.found_inf = not all(bool(torch.isfinite(g).all()) for g in grads)

    def step(self, optimizer, *args, **kwargs):
        if self.stepped:
            raise RuntimeError("step() has already been called since the last update().")
        if self.found_inf is None:
            self.unscale_(optimizer)
        self.stepped = True
        if self.found_inf and self.skip_on_inf:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """The rule's step (ScaleAtMinimum where the rule refuses to go below its minimum)."""
        found_inf, self.found_inf, self.stepped = self.found_inf, None, False
        if new_scale is not None:
            self.rule.scale = self.rule.stored(float(new_scale))
            return
        if found_inf is None:
            raise RuntimeError("No inf checks were recorded prior to update.")
        self.event = self.rule.update(found_inf)

    STATE = ("scale", "tracker", "hysteresis_left", "iteration", "last_overflow")

    def state_dict(self):
        r = self.rule
        return dict({k: getattr(r, k) for k in self.STATE}, growth_factor=r.c["growth_factor"],
                    backoff_factor=r.c["backoff_factor"], growth_interval=r.c["growth_interval"])

    def load_state_dict(self, state):
        for k in self.STATE:
            setattr(self.rule, k, state[k])


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
    if hasattr(torch.amp, "GradScaler"):  # PyTorch >= 2.3: one class, any device
        try:
            return torch.amp.GradScaler(device, **kwargs)
        except Exception:
            return None
    if device == "cuda":
        return torch.cuda.amp.GradScaler(**kwargs)
    return None


def make_scaler(spec, device="cpu", native=True, store_unscaled=None):
    """The run's loss scaler: PyTorch's GradScaler where the rule is PyTorch's, the device has one
    and the optimizer's parameters are FP32 (`native`: GradScaler refuses to unscale FP16
    gradients); MirrorGradScaler over the run's rule otherwise."""
    return (native and torch_grad_scaler(device, spec["scaler"])) or MirrorGradScaler(
        spec["scaler"], spec["skips_on_inf"], store_unscaled)


def scale_event(scaler, before, found_inf):
    """What the scaler's last update did: MirrorGradScaler says; PyTorch's GradScaler by its scale."""
    if isinstance(scaler, MirrorGradScaler):
        return scaler.event
    return "grow" if scaler.get_scale() > before else "backoff" if found_inf else "none"


# ---- a run: its model, optimizer, schedule and scaler, and the one training step -------------------

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


FP32_LAYER = dict(weight="fp32", grad="fp32", grad_through="fp32", unscaled="fp32", state="fp32")


def build_model(session, spec, init, device="cpu", emulated=False):
    """The run's model (MLPNet or GPT), its parameters loaded with load_state_dict from the exported
    initial weights (`init`, by state_dict name; LayerNorm's start at 1 and 0 where none is
    exported): natively each Linear in its weights' dtype (per-layer .to(dtype): half-*, pure-*,
    selective-*), emulated FP32 tensors holding values rounded to that format. Returns the model,
    its parameters in order, each one's formats (a LayerNorm's gamma and beta stay FP32 in every
    mode) and its FP32 initial value (where an FP32 master copy starts)."""
    m, layers = session["model"], spec["layers"]
    gpt = m.get("kind") == "gpt"
    net = (GPT(m) if gpt else MLPNet(m)).to(device)
    named = dict(net.named_parameters())
    if gpt:
        listed = [(p["name"], p["layer"], p["norm"]) for p in m["params"]]
        if [name for name, _, _ in listed] != list(named):
            raise ExportError(f"{HERE}/session.json: its model.params are not this script's GPT's; export again")
    else:
        listed = net.param_layers()
    state, fmt, initial = {}, [], []
    for name, layer, norm in listed:
        lay = dict(layers[layer], **FP32_LAYER) if norm else layers[layer]
        t = (init[name] if name in init else named[name].detach()).to(device).float().clone()
        initial.append(t.clone())
        state[name] = ROUND[lay["weight"]](t) if emulated else t
        fmt.append(lay)
    if gpt and m["tie_embeddings"]:
        state["lm_head.weight"] = state["transformer.wte.weight"]
    net.load_state_dict(state)
    if not emulated and not gpt:  # per-layer dtypes (a GPT with FP16/BF16 weights trains emulated only)
        for fc, lay in zip(net.linears(), layers):
            fc.to(DTYPES.get(lay["weight"], torch.float32))
    named = dict(net.named_parameters())
    return net, [named[name] for name, _, _ in listed], fmt, initial


def build_run(session, data, label, device="cpu", emulate=None):
    """The run `label` of the session, built from the export: Run's model, optimizer, scheduler and
    scaler. `emulate`: None (native, or an ExportError saying what this PyTorch lacks), "needed"
    (emulate only what it lacks) or "all"."""
    for spec in session["runs"]:
        if spec["label"] == label:
            return Run(spec, session, data, device, emulate)
    raise ExportError(f"unknown run {label}; this export has {', '.join(r['label'] for r in session['runs'])}")


class Run:
    """One run of the session: its model (`model`, `formats`), torch.optim optimizer, TableLR
    scheduler and loss scaler, built from the export; step() is the training step every run takes,
    and evaluate() the held-out loss and accuracy."""

    def __init__(self, spec, session, data, device="cpu", emulate=None):
        self.spec, self.session, self.device = spec, session, device
        self.label = spec["label"]
        self.layers = spec["layers"]
        self.model_cfg = session["model"]
        self.gpt = self.model_cfg.get("kind") == "gpt"
        self.train_cfg = session["train"]
        self.emulated = emulate == "all"
        why = self.native_problem()
        if why and emulate:
            self.emulated, why = True, None
        if why:
            raise ExportError(f"{self.label}: {why}; run with --emulate, or on a device that has it")
        low = {l["weight"] for l in self.layers} - {"fp32"}
        self.working_dtype = DTYPES[low.pop()] if low and not self.emulated else torch.float32
        self.has_master = any(l["master"] for l in self.layers)
        self.model, self.params, self.fmt, initial = build_model(session, spec, data.init, device, self.emulated)
        self.formats = Formats(spec, device, self.emulated)
        # The optimizer updates FP32 master copies where the run keeps them (starting from the FP32
        # initial values, the working copies from them rounded), else the model's parameters.
        self.masters = [t.requires_grad_(True) for t in initial] if self.has_master else []
        self.opt_params = self.masters if self.has_master else self.params
        self.optimizer = make_optimizer(self.opt_params, self.train_cfg, data.lrs[0])
        self.scheduler = TableLR(self.optimizer, data.lrs)
        native_fp32_params = not self.emulated and not self.has_master and self.working_dtype == torch.float32
        self.scaler = make_scaler(spec, device, native_fp32_params, self.store_unscaled if self.emulated else None)
        self.skips_on_inf = spec["skips_on_inf"]
        self.penalty = spec.get("penalty")  # {scaled_grads, unscale}: where the session has a gradient penalty
        self.stopped = None

    def native_problem(self):
        """Why this PyTorch cannot run the run natively on the device, or None."""
        formats = {l[k] for l in self.layers for k in ("compute", "weight")}
        if self.gpt and {l["weight"] for l in self.layers} != {"fp32"}:
            return "this script trains a GPT whose weights are stored in FP16/BF16 in emulation only"
        if "tf32" in formats and self.device != "cuda":
            return "TF32 is a CUDA tensor-core format"
        for name, dtype in DTYPES.items():
            if name in formats and not can_run(self.device, dtype):
                return f"PyTorch {torch.__version__} cannot run {name.upper()} (autocast and GEMMs) on the {self.device}"
        return None

    def autocast(self):
        """The run's autocast region (amp-*: torch.autocast(device, dtype)); none for the others."""
        if self.spec["autocast"] and not self.emulated:
            return torch.autocast(device_type=self.device, dtype=DTYPES[self.spec["autocast"]])
        return contextlib.nullcontext()

    def forward(self, x, keep=None):
        with self.autocast():
            return self.model(x, self.formats, keep)

    @staticmethod
    def loss(logits, target, kind, z_loss=0.0):
        logits = logits.float()  # the loss in FP32 (softmax too), in every mode
        if kind == "cross_entropy":
            if z_loss:  # PaLM's z-loss on the log-normaliser (session.json's train.z_loss)
                return F.cross_entropy(logits, target) + z_loss * torch.logsumexp(logits, -1).pow(2).mean()
            return F.cross_entropy(logits, target)
        return F.mse_loss(logits, target)

    def store_unscaled(self, grads):
        """Emulated: the unscaled gradients stored in their formats (MirrorGradScaler.unscale_ calls it)."""
        for g, lay in zip(grads, self.fmt):
            g.copy_(ROUND[lay["unscaled"]](g))

    def step(self, micro, loss_kind):
        """One optimizer step over the step's micro-batches; returns the CSV row's training values."""
        t = self.train_cfg
        lr = self.optimizer.param_groups[0]["lr"]
        scale = self.scaler.get_scale()
        if self.stopped:
            return dict(loss=math.nan, loss_scale=scale, found_inf=0, skipped=1, scale_event="none", grad_norm=None, lr=lr,
                        penalty=None)
        self.model.zero_grad(set_to_none=True)
        self.optimizer.zero_grad(set_to_none=True)
        factor = t["loss_weight"] / len(micro)
        loss_sum, penalty_sum = 0.0, 0.0
        for x, target, keep in micro:
            loss = self.loss(self.forward(x, keep), target, loss_kind, t.get("z_loss", 0.0))
            loss_sum += loss.item()
            # (loss x factor) x scale, as PyTorch users average micro-batches; mpx multiplies by one
            # factor, scale x factor: the same bits while the scale is a power of two (every preset's).
            loss = loss * factor
            if self.penalty:
                loss, penalty = self.add_penalty(loss)
                penalty_sum += penalty
            self.scaler.scale(loss).backward()
            if self.emulated:  # each micro-batch's gradients added into the stored ones, in their format
                for p, lay in zip(self.params, self.fmt):
                    p.grad = ROUND[lay["grad"]](p.grad)
        for mp, p in zip(self.masters, self.params):
            mp.grad = p.grad.float()
        # Unscale, then check every gradient; clip (after unscaling, with no inf or NaN).
        self.scaler.unscale_(self.optimizer)
        grads = [p.grad for p in self.opt_params]
        found_inf = not all(bool(torch.isfinite(g).all()) for g in grads)
        grad_norm = math.inf if found_inf else math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads))
        if t["clip_norm"] > 0 and not found_inf:
            torch.nn.utils.clip_grad_norm_(self.opt_params, t["clip_norm"])
        skipped = found_inf and self.skips_on_inf
        self.scaler.step(self.optimizer)  # optimizer.step(), unless the scaler skips this step
        if not skipped:
            self.write_back()
        try:
            self.scaler.update()
            event = scale_event(self.scaler, scale, found_inf)
        except ScaleAtMinimum as e:
            self.stopped, event = str(e), "none"
        if not skipped or t["advance_on_skip"]:
            self.scheduler.step()
        return dict(loss=loss_sum / len(micro) * t["loss_weight"], loss_scale=scale, found_inf=int(found_inf),
                    skipped=int(skipped), scale_event=event, grad_norm=grad_norm, lr=lr,
                    penalty=penalty_sum if self.penalty else None)

    def add_penalty(self, loss):
        """PyTorch's AMP examples, "Gradient penalty": the gradients of the scaled loss, unscaled by
        hand (unscale_ is for gradients an optimizer owns), their norm (or its square) under autocast,
        λ times it added to the loss. Returns the total and λ·norm. session.json's two switches each
        drop one step, to show the classic mistakes: scaled_grads false takes the gradients of the
        unscaled loss; unscale false forgets the 1/S (the penalty is S times too heavy)."""
        lam, t = self.train_cfg["gradient_penalty"], self.train_cfg["penalty"]  # the page's λ is 1
        if self.penalty["scaled_grads"]:
            scaled_grad_params = torch.autograd.grad(outputs=self.scaler.scale(loss), inputs=self.params,
                                                     create_graph=True)
        else:  # the mistake: no scaler.scale, so FP16 gradients underflow
            scaled_grad_params = torch.autograd.grad(outputs=loss, inputs=self.params, create_graph=True)
        if self.penalty["unscale"]:
            inv_scale = 1. / self.scaler.get_scale()
            grad_params = [p * inv_scale for p in scaled_grad_params]
        else:  # the mistake: no 1/S (or nothing to unscale)
            grad_params = list(scaled_grad_params)
        if self.emulated:  # `p * inv_scale` keeps the gradient's dtype (half-fp16: FP16)
            grad_params = [ROUND[lay["grad"]](g) for g, lay in zip(grad_params, self.fmt)]
        with self.autocast():
            grad_norm = 0
            for grad in grad_params:
                grad_norm += grad.pow(2).sum()
            if t == "norm":
                grad_norm = grad_norm.sqrt()
            penalty = lam * grad_norm
            loss = loss + penalty
        return loss, penalty.item()

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
            if self.gpt:  # a label per position of each window
                ts = ts.reshape(-1)
            logits = self.forward(xs)
            loss_sum += self.loss(logits, ts, loss_kind).item() * xs.shape[0]
            if loss_kind == "cross_entropy":
                correct += int((logits.float().argmax(dim=1) == ts).sum())
                labelled += ts.shape[0]
        accuracy = correct / labelled if loss_kind == "cross_entropy" else None
        return loss_sum / rows * self.train_cfg["loss_weight"], accuracy

    def describe(self):
        """A line saying how the run is trained (the CSV's first lines)."""
        how = ("emulated (FP32 arithmetic, values rounded to their formats)" if self.emulated
               else f"torch.autocast({self.device}, {self.spec['autocast']})" if self.spec["autocast"]
               else f"model in {self.working_dtype}" + (" with FP32 master weights" if self.has_master else ""))
        if not isinstance(self.scaler, MirrorGradScaler):
            sc = f"scaler: torch GradScaler ({type(self.scaler).__module__})"
        elif self.spec["scaler"]["kind"] == "dynamic":
            follows = self.spec.get("scaler_follows", {})
            sc = (f"scaler: MirrorGradScaler, the rule of {follows.get('framework', '?')} "
                  f"({follows.get('source', '?')})")
            if "snippet" in self.spec:
                sc += f"; {self.spec['snippet']['framework']}'s own settings for it: session.json, this run's 'snippet'"
        else:
            sc = f"scaler: {self.spec['scaler']['kind']} (scale {self.scaler.get_scale():g})"
        if self.penalty:  # which steps of the AMP examples' recipe this run takes (add_penalty)
            p = self.penalty
            sc += ("; gradient penalty: " + self.train_cfg["penalty"] + ", " + ("the mistake: no 1/S" if p["scaled_grads"]
                   and not p["unscale"] else "the mistake: grads of the unscaled loss" if not p["scaled_grads"] else "the recipe"))
        return f"# {self.label}: {how}; {sc}"


# ---- the script: every run in lockstep, the CSV written as it goes ----------------------------------

def number(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
    return str(v)


class CsvLog:
    """The CSV in mpx's columns, written as training goes: the # lines and the header first, then
    each row as soon as its step is trained, flushed, so a run stopped early leaves every row so
    far (compare reads the steps both files hold). A device or a FIFO (--csv /dev/null, to time a
    run) is written to like a file."""

    def __init__(self, path, header, columns=COLUMNS):
        self.path, self.rows, self.columns = path, 0, columns
        try:
            self.f = open(path, "w", encoding="utf-8", newline="")
            self.f.write("".join(line + "\n" for line in header) + ",".join(columns) + "\n")
            self.f.flush()
        except OSError as e:
            raise ExportError(f"{path}: cannot write it ({e.strerror})") from None

    def write(self, rec):
        try:
            self.f.write(",".join(number(rec[c]) for c in self.columns) + "\n")
            self.f.flush()
        except OSError as e:
            raise ExportError(f"{self.path}: cannot write it ({e.strerror})") from None
        self.rows += 1

    def close(self):
        try:
            self.f.close()
        except OSError as e:
            raise ExportError(f"{self.path}: cannot write it ({e.strerror})") from None


def main():
    ap = argparse.ArgumentParser(description="Train the exported mpx session in PyTorch; write mpx's CSV columns.")
    ap.add_argument("--csv", required=True, help="where to write the records (mpx's column names), row by row")
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
        train(args)
    except ExportError as e:
        print(f"train.py: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: the CSV keeps every row written so far
        print(f"train.py: stopped; {args.csv} holds the rows of the steps taken", file=sys.stderr)
        return 130
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
    # A step the scaler skips still advances the schedule where the rule says so, as with GradScaler.
    warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)` before `optimizer\.step\(\)`")
    steps = session["steps"] if args.steps is None else min(args.steps, session["steps"])
    data = load_data(session, args.device)
    labels = [r["label"] for r in session["runs"]]
    wanted = labels
    if args.runs:
        wanted = [r.strip() for r in args.runs.split(",") if r.strip()]
        unknown = [w for w in wanted if w not in labels]
        if unknown:
            raise ExportError(f"--runs: unknown run {', '.join(unknown)}; this export has {', '.join(labels)}")
    runs = []
    for label in (l for l in labels if l in wanted):
        tf32_for(args.device, session, label)
        runs.append(build_run(session, data, label, args.device, args.emulate))
    header = [f"# train.py from mpx export-torch ({session['program']}, preset {session['preset']}); "
              f"torch {torch.__version__}, device {args.device}"] + [r.describe() for r in runs]
    # mpx's `penalty` column (λ·‖g‖ summed over micro-batches) where the session has a gradient penalty.
    log = CsvLog(args.csv, header, COLUMNS + ["penalty"] * ("gradient_penalty" in session["train"]))
    train_loop(session, steps, runs, data, log, args.device)
    log.close()
    print(f"train.py: wrote {args.csv} ({log.rows} rows)", file=sys.stderr)


def tf32_for(device, session, label):
    """On CUDA, TF32 GEMMs only for a run with TF32 layers."""
    if device == "cuda":
        spec = next(r for r in session["runs"] if r["label"] == label)
        torch.backends.cuda.matmul.allow_tf32 = any(l["compute"] == "tf32" for l in spec["layers"])


def train_loop(session, steps, runs, data, log, device):
    """Every run steps in lockstep on the same micro-batches; the held-out set every eval_every steps.
    A line of progress about every twentieth step, and at the last."""
    batch, eval_every, loss_kind = session["train"]["batch"], session["eval_every"], session["loss"]
    every = max(1, steps // 20)
    for step in range(steps):
        micro = data.micro_batches(step)
        evaluate = (eval_every >= 1 and data.x_test.shape[0] > 0
                    and (step % eval_every == 0 or step + 1 == session["steps"]))
        said = []
        for r in runs:
            tf32_for(device, session, r.label)
            rec = r.step(micro, loss_kind)
            rec.update(run=r.label, precision=r.spec["precision"], mode=r.spec["mode"], step=step,
                       eval_loss=None, eval_accuracy=None)
            if evaluate and not r.stopped:
                rec["eval_loss"], rec["eval_accuracy"] = r.evaluate(data.x_test, data.y_test, batch, loss_kind)
            log.write(rec)
            said.append(f"{r.label} {rec['loss']:.6g}" + (" (skipped)" if rec["skipped"] else ""))
        if step % every == 0 or step + 1 == steps:
            print(f"step {step + 1}/{steps}  loss: " + "  ".join(said), flush=True)


if __name__ == "__main__":
    sys.exit(main())
