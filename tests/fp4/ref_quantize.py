#!/usr/bin/python3
"""Independent reference of `mpx-cli quantize` (NVFP4 and MXFP4 block quantization).

Written from the procedure of NVIDIA Transformer Engine's pure-PyTorch reference
(transformer_engine/pytorch/custom_recipes/quantization_ref_nvfp4.py), in numpy float32, without
torch and without any of mpx's code. tests/test_fp4_reference.cpp runs it beside mpx-cli and asks
for bit-for-bit agreement.

Same command line as the CLI:
  ref_quantize.py --format nvfp4|mxfp4 --in X.csv --out Y.csv [--scales S.csv] [--2d] [--rht]
                  [--mx-scale-rule floor|ceil|rceil|even]
X.csv: M rows of N comma-separated decimal or C99 hex floats, each rounded once to float32.
Y.csv: the dequantized M x N matrix, each value as C's %a of the float promoted to double.
S.csv: `s_dec,<%a>` then the block scales (1D: M x ceil(N/B); --2d: ceil(M/16) x ceil(N/16)).
Also `ref_quantize.py --batch LIST`: one run per line of LIST, its arguments separated by tabs.
Exit status 3 (with a message) when numpy is missing.

Every arithmetic step is one IEEE binary32 operation, round to nearest even:
NVFP4 (B = 16)
  1. --rht: each 16-element chunk c of a row (zero-padded) becomes y_j = sum_k c_k * T[k][j],
     accumulated from 0.0f in k order, T[k][j] = s[k] * H16[k][j] / 4 (Sylvester H16, TE's sign
     vector s).
  2. zero-pad N (and M with --2d) to multiples of 16.
  3. amax = max |x| (NaN if any NaN).
  4. S_enc = min(2688 / amax, FLT_MAX) (NaN stays), 0 -> 1; S_dec = 1 / S_enc.
  5. mult = S_enc * (1/6)f.
  6. per 1x16 block (or 16x16 tile): d = min(vmax * mult, FLT_MAX), clamp [-448, 448],
     block scale = E4M3 (e4m3fn, round to nearest even).
  7. enc = min(1 / (scale * S_dec), FLT_MAX).
  8. v = clamp(x * enc, -6, 6), E2M1 code by TE's thresholds (NaN -> code 0).
  9. dequantized = (e2m1 * scale) * S_dec.
MXFP4 (B = 32): scale 2^e, e by rule (floor, ceil, rceil, even) clamped to [-127, 127]; vmax 0
  gives -127, vmax inf/NaN a NaN scale (the block all NaN); v = clamp(x * 2^-e, -6, 6);
  dequantized = e2m1 * 2^e.
"""

import argparse
import math
import sys
from fractions import Fraction

try:
    import numpy as np
except ImportError:  # the test skips on this exit code and message
    sys.stderr.write("ref_quantize.py: numpy is not installed (Debian: python3-numpy)\n")
    sys.exit(3)

F32 = np.float32
FLT_MAX = F32(np.finfo(np.float32).max)
E4M3_MAX = F32(448.0)
E2M1_MAX = F32(6.0)
ONE = F32(1.0)
SIXTH = ONE / F32(6.0)  # correctly rounded float32 quotient: 0x1.555556p-3
assert float(SIXTH).hex() == "0x1.5555560000000p-3", float(SIXTH).hex()

# TE's sign vector (get_wgrad_sign_vector) and the Sylvester Hadamard matrix.
RHT_SIGNS = [1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1]


def sylvester(n):
    h = [[1]]
    while len(h) < n:
        h = [row + row for row in h] + [row + [-v for v in row] for row in h]
    return h


def rht_matrix():
    h = sylvester(16)
    # Entries are exactly +-0.25, so every product c_k * T[k][j] is exact (bar underflow).
    return np.array([[RHT_SIGNS[k] * h[k][j] * 0.25 for j in range(16)] for k in range(16)],
                    dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# Parsing to float32 exactly as strtof does (one rounding from the decimal or hex value).

def _round_fraction_to_f32(q):
    """The float32 nearest to the exact rational q (ties to even), inf past the overflow bound."""
    if q == 0:
        return F32(0.0)
    sign = -1.0 if q < 0 else 1.0
    a = -q if q < 0 else q
    # exponent e with 2^e <= a < 2^(e+1)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    elif Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, -126)  # subnormal range shares the quantum 2^-149
    quantum = Fraction(2) ** (e - 23)
    m = a / quantum
    n = m.numerator // m.denominator
    rem = m - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    value = n * quantum  # exact
    if value >= Fraction(2) ** 128:
        return F32(sign * math.inf)
    return F32(sign * float(value))  # float32 values are exact doubles


def _exact_fraction(s):
    t = s.strip()
    neg = t.startswith("-")
    if t[:1] in "+-":
        t = t[1:]
    if t[:2].lower() == "0x":
        body = t[2:].lower()
        exp = 0
        if "p" in body:
            body, p = body.split("p", 1)
            exp = int(p)
        if "." in body:
            ip, fp = body.split(".", 1)
        else:
            ip, fp = body, ""
        mant = int((ip + fp) or "0", 16)
        q = Fraction(mant) * Fraction(2) ** (exp - 4 * len(fp))
    else:
        q = Fraction(t)
    return -q if neg else q


def parse_f32(s):
    t = s.strip()
    low = t.lower().lstrip("+-")
    if low in ("nan", "inf", "infinity") or low.startswith("nan("):
        v = math.nan if low.startswith("nan") else math.inf
        return F32(-v if t.startswith("-") else v)
    d = float.fromhex(t) if "0x" in t.lower() else float(t)  # one rounding, to double
    f = F32(d)
    # A second rounding (double -> float32) can differ from strtof's single rounding only when
    # the double fell exactly halfway between two float32 neighbours: then round exactly.
    if math.isfinite(d) and float(f) != d:
        other = np.nextafter(f, F32(math.copysign(math.inf, d - float(f))), dtype=np.float32)
        if math.isfinite(float(other)) and float(f) + float(other) == 2.0 * d:
            return _round_fraction_to_f32(_exact_fraction(t))
        if not math.isfinite(float(f)):  # overflow boundary: decide exactly as well
            return _round_fraction_to_f32(_exact_fraction(t))
    return f


def read_matrix(path):
    rows = []
    with open(path, "r", encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            rows.append([parse_f32(cell) for cell in line.split(",")])
    if not rows:
        raise ValueError(f"{path}: no rows")
    n = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != n:
            raise ValueError(f"{path}: row {i + 1} has {len(r)} values, row 1 has {n}")
    return np.array(rows, dtype=np.float32).reshape(len(rows), n)


# ---------------------------------------------------------------------------------------------
# Printing as C's printf("%a", (double)f) does with glibc.

def c_hex(f):
    d = float(f)
    if math.isnan(d):
        return "-nan" if math.copysign(1.0, d) < 0 else "nan"
    if math.isinf(d):
        return "-inf" if d < 0 else "inf"
    if d == 0.0:
        return "-0x0p+0" if math.copysign(1.0, d) < 0 else "0x0p+0"
    h = d.hex()  # [-]0x1.<13 hex digits>p<exp>; a float32 is never a subnormal double
    sign = "-" if h.startswith("-") else ""
    h = h.lstrip("-")
    mant, exp = h[2:].split("p")
    ip, _, fp = mant.partition(".")
    fp = fp.rstrip("0")
    e = int(exp)
    return f"{sign}0x{ip}{'.' + fp if fp else ''}p{'+' if e >= 0 else '-'}{abs(e)}"


def write_matrix(path, mat, first_line=None):
    with open(path, "w", encoding="utf-8") as fh:
        if first_line is not None:
            fh.write(first_line + "\n")
        for row in mat:
            fh.write(",".join(c_hex(v) for v in row) + "\n")


# ---------------------------------------------------------------------------------------------
# Element codes: FP4 E2M1 by TE's cast_to_fp4x2 thresholds, later assignments winning.

E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                        -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float32)


def e2m1_codes(x):
    f = F32
    r = np.zeros(x.shape, dtype=np.int64)  # NaN matches nothing: code 0
    r[(x >= f(0.0)) & (x <= f(0.25))] = 0  # -0.0 >= 0.0 too: a negative zero gets code 0 (+0)
    r[(x > f(0.25)) & (x < f(0.75))] = 1
    r[(x >= f(0.75)) & (x <= f(1.25))] = 2
    r[(x > f(1.25)) & (x < f(1.75))] = 3
    r[(x >= f(1.75)) & (x <= f(2.5))] = 4
    r[(x > f(2.5)) & (x < f(3.5))] = 5
    r[(x >= f(3.5)) & (x <= f(5.0))] = 6
    r[x > f(5.0)] = 7
    r[(x >= f(-0.25)) & (x < f(-0.0))] = 8
    r[(x < f(-0.25)) & (x > f(-0.75))] = 9
    r[(x <= f(-0.75)) & (x >= f(-1.25))] = 10
    r[(x < f(-1.25)) & (x > f(-1.75))] = 11
    r[(x <= f(-1.75)) & (x >= f(-2.5))] = 12
    r[(x < f(-2.5)) & (x > f(-3.5))] = 13
    r[(x <= f(-3.5)) & (x >= f(-5.0))] = 14
    r[x < f(-5.0)] = 15
    return r


def e2m1_dequantize_codes(x):
    return E2M1_VALUES[e2m1_codes(x)]


# ---------------------------------------------------------------------------------------------
# FP8 E4M3 ("e4m3fn": bias 7, 3 mantissa bits, max 448, subnormals to 2^-9, no inf), round to
# nearest even, for inputs already clamped to [-448, 448]. Done in float64, where every step is
# exact: the inputs are float32 values and the quantum a power of two.

def to_e4m3(d):
    d64 = d.astype(np.float64)
    a = np.abs(d64)
    _, k = np.frexp(np.where(np.isfinite(a), a, 1.0))  # a = m 2^k, m in [0.5, 1)
    exp = np.maximum(k - 1, -6)                      # binade; below 2^-6 the subnormal quantum
    quantum = np.ldexp(1.0, exp - 3)
    r = np.round(a / quantum) * quantum              # np.round: halves to even
    r = np.copysign(r, d64)
    r = np.where(np.isnan(d64), np.nan, r)
    assert not np.any(np.abs(r) > 448.0)
    return r.astype(np.float32)


# ---------------------------------------------------------------------------------------------

def pad_to(x, rows, cols):
    m, n = x.shape
    out = np.zeros((rows, cols), dtype=np.float32)
    out[:m, :n] = x
    return out


def ceil_to(n, b):
    return (n + b - 1) // b * b


def hadamard_rows(x):
    """Each row's 16-element chunks times T, accumulated in float32 in k order from 0.0f."""
    m, n = x.shape
    assert n % 16 == 0
    t = rht_matrix()
    c = x.reshape(m, n // 16, 16)
    acc = np.zeros((m, n // 16, 16), dtype=np.float32)
    for k in range(16):
        acc = acc + c[:, :, k:k + 1] * t[k][None, None, :]  # float32 product (exact) then sum
        assert acc.dtype == np.float32
    return acc.reshape(m, n)


def quantize_nvfp4(x, two_d, rht):
    m, n = x.shape
    npad = ceil_to(n, 16)
    mpad = ceil_to(m, 16) if two_d else m
    xp = pad_to(x, m, npad)
    if rht:
        xp = hadamard_rows(xp)
    xp = pad_to(xp, mpad, npad)

    amax = np.max(np.abs(xp))  # NaN propagates
    s_enc = F32(2688.0) / amax
    s_enc = np.minimum(s_enc, FLT_MAX)  # NaN stays NaN
    if s_enc == F32(0.0):
        s_enc = ONE
    s_enc = F32(s_enc)
    s_dec = F32(ONE / s_enc)
    mult = F32(s_enc * SIXTH)

    if two_d:
        tiles = xp.reshape(mpad // 16, 16, npad // 16, 16)
        vmax = np.max(np.abs(tiles), axis=(1, 3))                 # (mpad/16, npad/16)
        vmax_el = np.repeat(np.repeat(vmax, 16, axis=0), 16, axis=1)
    else:
        vmax = np.max(np.abs(xp.reshape(mpad, npad // 16, 16)), axis=2)  # (m, npad/16)
        vmax_el = np.repeat(vmax, 16, axis=1)
    assert vmax.dtype == np.float32

    def block_scale(v):
        d = v * mult
        d = np.minimum(d, FLT_MAX)
        d = np.clip(d, -E4M3_MAX, E4M3_MAX)  # NaN stays NaN
        return to_e4m3(d)

    scales = block_scale(vmax)
    scale_el = block_scale(vmax_el)  # same values, one per element
    enc = np.minimum(ONE / (scale_el * s_dec), FLT_MAX)
    v = np.clip(xp * enc, -E2M1_MAX, E2M1_MAX)
    q = e2m1_dequantize_codes(v)
    y = (q * scale_el) * s_dec
    for a in (enc, v, q, y, scales):
        assert a.dtype == np.float32
    return y[:m, :n], s_dec, scales


def mx_exponent(vmax, rule):
    """Exponent e of the block scale 2^e (float64 array; NaN where the scale is NaN)."""
    v = vmax.astype(np.float64)
    finite_pos = np.isfinite(v) & (v > 0)
    safe = np.where(finite_pos, v, 1.0)
    mant, k = np.frexp(safe)  # v = mant 2^k, mant in [0.5, 1): floor(log2 v) = k - 1, exactly
    flog = (k - 1).astype(np.float64)
    if rule == "floor":
        e = flog - 2
    elif rule == "ceil":
        e = np.where(mant == 0.5, flog, flog + 1) - 2
    elif rule == "even":
        # significand 2*mant in [1, 2) rounded to one fractional bit (ties to even): 2 from 1.75 up
        e = flog + np.where(2.0 * mant >= 1.75, 1.0, 0.0) - 2
    elif rule == "rceil":
        d = (vmax / F32(6.0)).astype(np.float64)  # float32 quotient
        dpos = d > 0
        dm, dk = np.frexp(np.where(dpos, d, 1.0))
        # smallest e with 2^e >= d: d = dm 2^dk, dm in [0.5, 1)
        e = np.where(dm == 0.5, dk - 1, dk).astype(np.float64)
        e = np.where(dpos, e, -np.inf)  # d underflowed to 0: e = -inf, clamped to -127 below
    else:
        raise ValueError(f"unknown --mx-scale-rule {rule}")
    e = np.where(finite_pos, e, -np.inf)  # vmax == 0
    e = np.clip(e, -127.0, 127.0)
    e = np.where(np.isfinite(v), e, np.nan)  # inf or NaN in the block: NaN scale
    return e


def quantize_mxfp4(x, rule):
    m, n = x.shape
    npad = ceil_to(n, 32)
    xp = pad_to(x, m, npad)
    vmax = np.max(np.abs(xp.reshape(m, npad // 32, 32)), axis=2)
    e = mx_exponent(vmax, rule)
    nan_block = np.isnan(e)
    ei = np.where(nan_block, 0, e).astype(np.int64)
    scale = np.ldexp(ONE, ei).astype(np.float32)      # 2^e, exact (2^-127 is a float32 subnormal)
    inv = np.ldexp(ONE, -ei).astype(np.float32)       # 2^-e, exact
    scale = np.where(nan_block, F32(np.nan), scale).astype(np.float32)
    inv = np.where(nan_block, F32(np.nan), inv).astype(np.float32)
    scale_el = np.repeat(scale, 32, axis=1)
    inv_el = np.repeat(inv, 32, axis=1)
    v = np.clip(xp * inv_el, -E2M1_MAX, E2M1_MAX)  # float32 product: rounds only on underflow
    q = e2m1_dequantize_codes(v)
    y = q * scale_el
    for a in (scale, inv, v, q, y):
        assert a.dtype == np.float32
    return y[:m, :n], ONE, scale


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--format", required=True, choices=["nvfp4", "mxfp4"])
    ap.add_argument("--in", dest="inp", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--scales")
    ap.add_argument("--2d", dest="two_d", action="store_true")
    ap.add_argument("--rht", action="store_true")
    ap.add_argument("--mx-scale-rule", default="rceil", choices=["floor", "ceil", "rceil", "even"])
    args = ap.parse_args(argv)
    if args.format == "mxfp4" and (args.two_d or args.rht):
        ap.error("--2d and --rht are NVFP4 options")

    with np.errstate(all="ignore"):
        x = read_matrix(args.inp)
        if args.format == "nvfp4":
            y, s_dec, scales = quantize_nvfp4(x, args.two_d, args.rht)
        else:
            y, s_dec, scales = quantize_mxfp4(x, args.mx_scale_rule)
    write_matrix(args.out, y)
    if args.scales:
        write_matrix(args.scales, scales, first_line="s_dec," + c_hex(s_dec))
    return 0


def batch(list_path):
    """One run per line of list_path, its arguments separated by tabs: the test starts Python (and
    imports numpy) once per matrix instead of once per mode."""
    with open(list_path, "r", encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line:
                main(line.split("\t"))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--batch":
        sys.exit(batch(sys.argv[2]))
    sys.exit(main(sys.argv[1:]))
