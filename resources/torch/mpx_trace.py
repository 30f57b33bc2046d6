"""Record a loss-scaling trace from your own PyTorch training, for `mpx-cli replay`.

Three lines in a training loop (PyTorch >= 1.13, nothing else):

    import mpx_trace                                   # `mpx-cli trace --script > mpx_trace.py`
    recorder = mpx_trace.Recorder("trace.csv", model)  # once, after building the model

    scaler.scale(loss).backward()
    recorder.record(loss, scaler=scaler, optimizer=optimizer)   # after backward, before clipping and scaler.step
    scaler.step(optimizer); scaler.update()

Where `record` goes: after the step's last backward and before anything that changes the gradients
(clip_grad_norm_, scaler.step). With clipping, either before `scaler.unscale_(optimizer)` or right after
it: the recorder reads GradScaler's per-optimizer stage (pass `optimizer=`) and does not divide
gradients that unscale_ already divided. After clip_grad_norm_ the amax would be the clipped one, and
after scaler.step the step is spent: `record` refuses a stepped optimizer with one line.

Evaluation or any other forward/backward pass between two steps goes inside `with recorder.paused():`
(its values would count towards the next step otherwise).

Without a GradScaler, pass the scale the loss was multiplied by, with the gradients still multiplied
by it: recorder.record(loss, scale=S, optimizer=optimizer, skipped=...).

A step that overflows hides its amax (censored). Pass `reprobe=lambda: loss_fn(model(x), y)` (the
step's own forward on the same batch, under the same autocast) and the recorder runs it again at
half the scale, then a quarter, ... until the gradients are finite, records that amax (exact: the
scales are powers of two apart) and marks the step uncensored; the step's own gradients are put
back untouched, so the optimizer step and GradScaler see what they would have. It costs a forward
and backward per halving, on overflow steps only. An overflow step whose forward held inf/NaN with a
finite loss is probed too: a halving that clears it shows the scale overflowed, not the forward's inf
(which a ReLU may have removed); if none does in max_halvings passes, the forward's inf reached the
gradients. With dropout or other randomness in the forward, the probe sees another draw unless the
closure restores the RNG state. Close it at the end (recorder.close(), or use it as a context
manager); rows are flushed every step, so a crashed run keeps what it recorded.

What one row holds, per optimizer step (trace.csv):
  step, scale            the scale this step's loss was multiplied by
  found_inf, skipped     whether a gradient held inf/NaN, and whether the step was skipped
  loss                   the unscaled loss
  amax, amax_site        the largest |gradient| of the step, unscaled (stored value / scale), over
                         the parameters' gradients and every module's output gradient (backward
                         intermediates), and where it was; measured after the gradients were stored
                         in their own format, so a replay at a power-of-two scale is exact
  censored               1 where the step overflowed: its finite values bound the amax from below
                         only (amax then holds that bound); 0 on an overflow step re-probed below
                         its scale (reprobe=), whose amax is then exact
  forward_nonfinite      inf/NaN values in the forward pass's module outputs (they appear at every
  forward_site           scale: no loss scale avoids them), and the first module that produced one;
                         whether they reached the gradients is the loss's and found_inf's to say (an
                         inf that a ReLU turns to 0 leaves both finite, and the step is not skipped)
  grad_norm, lr          the unscaled gradient norm (empty when not finite), the first group's LR

Output gradients are read by a hook on the autograd node of each leaf module's output (registered in
a forward hook), not by full backward hooks: those wrap outputs in a view that an in-place op after
the module (ReLU(inplace=True), as torchvision's ResNet and VGG have) is refused on. The node is
taken when the module runs, so an in-place op after it does not move the hook.

Every `every` steps, trace.histograms.csv gets each module's output
gradient as log2 histograms in `mpx-cli run --histograms` columns (run, step, layer, tensor,
bin_log2, count; tensor grad_output, values as scaled by the loss scale, as mpx records them).

Cost: one host synchronisation per step for the amaxes (all reduced on the device first); the
histograms only every `every` steps. A path that is not a regular file (/dev/null, a FIFO) is written
to as it is and gets no histograms file beside it.
"""

import contextlib
import math
import os
import stat

import torch

VERSION = 1
BINS = range(-64, 64)


def _stage(scaler, optimizer):
    """GradScaler's stage for `optimizer` ("READY", "UNSCALED" or "STEPPED", torch.cuda.amp's and
    torch.amp's OptState names), read from its per-optimizer state; "READY" for a scaler without one."""
    states = getattr(scaler, "_per_optimizer_states", None)
    if states is None:
        return "READY"
    if optimizer is not None:
        state = states.get(id(optimizer))  # .get: the defaultdict must not gain an entry here
        return getattr(state["stage"], "name", "READY") if state else "READY"
    stages = {getattr(s["stage"], "name", "READY") for s in states.values()}
    if stages - {"READY"}:
        raise ValueError("mpx_trace: the GradScaler has unscaled or stepped an optimizer; pass optimizer= "
                         "to record(), so the recorder knows whether its gradients are still scaled")
    return "READY"


def _log2_bins(t):
    """Counts per floor(log2|x|) bin (clamped to -64..63), and zeros, infs and NaNs."""
    t = t.detach().float().reshape(-1)
    nan = int(torch.isnan(t).sum())
    inf = int(torch.isinf(t).sum())
    finite = t[torch.isfinite(t)]
    zero = int((finite == 0).sum())
    nonzero = finite[finite != 0].abs()
    counts = {}
    if nonzero.numel():
        _, exponent = torch.frexp(nonzero)  # |x| = m * 2^e, m in [0.5, 1): floor(log2|x|) = e - 1
        bins = (exponent.long() - 1).clamp(-64, 63) + 64
        for b, c in enumerate(torch.bincount(bins, minlength=128).tolist()):
            if c:
                counts[str(b - 64)] = c
    for name, c in (("zero", zero), ("inf", inf), ("nan", nan)):
        if c:
            counts[name] = c
    return counts


class Recorder:
    """Hooks every leaf module of `model` and writes one trace row per optimizer step."""

    def __init__(self, path, model, every=50, run="trace"):
        self.path, self.every, self.run = path, every, run
        self.step_index = 0
        self._fwd_nonfinite = []   # (module name, 0-d count) in forward order, this step
        self._grad_amax = []       # (module name, 0-d amax of |grad_output| as scaled)
        self._grad_outputs = {}    # module name -> grad_output, on histogram steps
        self._handles = []
        self._paused = False
        self._probing = False
        self.names = []
        for name, module in model.named_modules():
            if list(module.children()) or not name:
                continue  # leaves only: a container's output is its last leaf's
            self.names.append(name)
            self._handles.append(module.register_forward_hook(self._forward_hook(name)))
        self.params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self._file = open(path, "w", encoding="utf-8", newline="")
        self._file.write(f"# mpx-trace {VERSION}; torch {torch.__version__}; every {every}\n")
        self._file.write("step,scale,found_inf,skipped,loss,amax,amax_site,censored,forward_nonfinite,"
                         "forward_site,grad_norm,lr\n")
        # A trace written to a device or a FIFO (/dev/null, to time the hooks) gets no histograms
        # beside it: "/dev/null.histograms.csv" would be a new regular file in /dev.
        self._hist = None
        if stat.S_ISREG(os.stat(path).st_mode):
            hist_path = os.path.splitext(path)[0] + ".histograms.csv"
            self._hist = open(hist_path, "w", encoding="utf-8", newline="")
            self._hist.write("run,step,layer,tensor,bin_log2,count\n")

    def _forward_hook(self, name):
        def hook(module, inputs, output):
            if self._paused or not torch.is_tensor(output) or not output.is_floating_point():
                return
            self._fwd_nonfinite.append((name, (~torch.isfinite(output.detach())).sum()))
            if output.grad_fn is not None:
                # The gradient of this output is the node's grad_outputs[output_nr] once the node runs.
                output.grad_fn.register_hook(self._gradient_hook(name, output.output_nr))
        return hook

    def _gradient_hook(self, name, output_nr):
        def hook(grad_inputs, grad_outputs):
            g = grad_outputs[output_nr] if output_nr < len(grad_outputs) else None
            if g is None or self._paused:
                return
            g = g.detach()
            self._grad_amax.append((name, torch.nan_to_num(g.float().abs(), nan=0.0, posinf=0.0).max()))
            if self._histogram_step():
                self._grad_outputs[name] = g.clone()
        return hook

    def _histogram_step(self):
        return self.every > 0 and self.step_index % self.every == 0 and not self._probing

    def _measure(self, param_factor=1.0):
        """The step's gradients so far: (sites with their amax as stored, found_inf, forward inf/NaN
        count, first forward site), with one transfer for every reduction. `param_factor` brings the
        parameters' gradients back to the scaled values the backward stored (the scale, where GradScaler
        has unscaled them already; the module outputs' were read during the backward, still scaled)."""
        grads = [(n, p.grad.detach()) for n, p in self.params if p.grad is not None]
        sites = [(n, torch.nan_to_num(g.float().abs(), nan=0.0, posinf=0.0).max() * param_factor) for n, g in grads]
        sites += self._grad_amax
        nonfinite = [(~torch.isfinite(g)).sum() for _, g in grads]
        pending = [v for _, v in sites] + nonfinite + [c for _, c in self._fwd_nonfinite]
        values = torch.stack([v.float().cpu() for v in pending]).tolist() if pending else []
        amaxes = values[:len(sites)]
        found_inf = any(v > 0 for v in values[len(sites):len(sites) + len(nonfinite)])
        fwd = values[len(sites) + len(nonfinite):]
        fwd_site = next((self._fwd_nonfinite[i][0] for i, v in enumerate(fwd) if v > 0), "")
        best = max(range(len(amaxes)), key=lambda i: amaxes[i]) if amaxes else None
        top = (amaxes[best], sites[best][0]) if best is not None else (0.0, "")
        return grads, top, found_inf, int(sum(fwd)), fwd_site

    def _reprobe(self, closure, scale, max_halvings):
        """(unscaled amax, site) of the step's batch at the first of scale/2, scale/4, ... whose
        gradients are finite, or None; the step's gradients and per-step state are put back."""
        saved = [(p, p.grad) for _, p in self.params]
        stash = (self._grad_amax, self._fwd_nonfinite, self._grad_outputs)
        self._probing = True
        try:
            probe = scale
            for _ in range(max_halvings):
                probe /= 2.0
                self._grad_amax, self._fwd_nonfinite, self._grad_outputs = [], [], {}
                for _, p in self.params:
                    p.grad = None
                (closure() * probe).backward()
                _, (amax, site), found_inf, _, _ = self._measure()
                if not found_inf:
                    return amax / probe, site
            return None
        finally:
            for p, g in saved:
                p.grad = g
            self._grad_amax, self._fwd_nonfinite, self._grad_outputs = stash
            self._probing = False

    def record(self, loss, scaler=None, scale=None, optimizer=None, skipped=None, reprobe=None, max_halvings=40):
        """One optimizer step, after backward and before clipping and the optimizer step (before or
        right after scaler.unscale_(optimizer)).
        `reprobe`: the step's forward as a closure returning the unscaled loss (see the module's text)."""
        unscaled = False
        if scaler is not None:
            scale = float(scaler.get_scale())
            stage = _stage(scaler, optimizer)
            if stage == "STEPPED":
                raise ValueError("mpx_trace: record() goes before scaler.step(optimizer); this optimizer has "
                                 "stepped, and its gradients are no longer the step's")
            unscaled = stage == "UNSCALED"  # scaler.unscale_(optimizer) ran: the .grads are divided already
        if scale is None or not scale > 0:
            raise ValueError("mpx_trace: give the GradScaler or the scale the loss was multiplied by")
        grads, (amax, site), found_inf, fwd_count, fwd_site = self._measure(scale if unscaled else 1.0)
        amax /= scale
        censored = found_inf
        # A forward inf/NaN with a finite loss may have stopped short of the gradients (a ReLU turns
        # -inf to 0): the probe says whether a lower scale clears them.
        if found_inf and reprobe is not None and (not fwd_count or math.isfinite(float(loss))):
            probed = self._reprobe(reprobe, scale, max_halvings)
            if probed is not None:
                (amax, site), censored = probed, False
        grad_norm = ""
        if not found_inf and grads:
            norm = math.sqrt(sum(float(g.double().pow(2).sum()) for _, g in grads))
            grad_norm = repr(norm if unscaled else norm / scale)
        lr = optimizer.param_groups[0]["lr"] if optimizer is not None else ""
        if skipped is None:
            skipped = found_inf  # GradScaler's rule: a step with inf/NaN gradients is skipped
        row = [self.step_index, repr(scale), int(found_inf), int(bool(skipped)), repr(float(loss)), repr(amax), site,
               int(censored), fwd_count, fwd_site, grad_norm, repr(float(lr)) if lr != "" else ""]
        self._file.write(",".join(str(v) for v in row) + "\n")
        self._file.flush()
        if self._grad_outputs and self._hist is not None:
            for name, g in self._grad_outputs.items():
                for b, c in _log2_bins(g).items():
                    self._hist.write(f"{self.run},{self.step_index},{name},grad_output,{b},{c}\n")
            self._hist.flush()
        self._fwd_nonfinite.clear()
        self._grad_amax.clear()
        self._grad_outputs.clear()
        self.step_index += 1

    @contextlib.contextmanager
    def paused(self):
        """Forward and backward passes inside are not recorded (evaluation, probes)."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    def close(self):
        for h in self._handles:
            h.remove()
        self._handles.clear()
        for f in (self._file, self._hist):
            if f is not None and not f.closed:
                f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
