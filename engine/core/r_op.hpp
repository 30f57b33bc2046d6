// Pearlmutter's R-operator (Neural Computation 6(1):147–160, 1994; REFERENCE.md "Gradient penalty
// under AMP"): R{·} = ∂/∂r (·)(θ + r·v) at r = 0, one rule per op of the MLP beside its first-order
// rule in op_math.hpp, so that one R-forward and one R-backward pass give H·v.
// Rule: each R-rule is the exact directional derivative of the first-order expression it sits beside
// (written in the same order, so T = float runs under the run's policy as the kernels do and T = double
// is what tests/test_hvp.cpp checks against central differences of the gradient to 1e-6).
#pragma once

#include <cmath>

#include "engine/core/op_math.hpp"

namespace mpx::core {

MPX_HOST_DEVICE inline float tanh_of(float x) { return tanh_f32(x); }
MPX_HOST_DEVICE inline double tanh_of(double x) { return ::tanh(x); }
MPX_HOST_DEVICE inline float exp_of(float x) { return expf(x); }
MPX_HOST_DEVICE inline double exp_of(double x) { return ::exp(x); }
MPX_HOST_DEVICE inline float log_of(float x) { return logf(x); }
MPX_HOST_DEVICE inline double log_of(double x) { return ::log(x); }

// ---- activations: σ(z), σ′(z) and σ″(z) in T (float: op_math.hpp's expressions) -------------------

template <Activation A, class T>
MPX_HOST_DEVICE T act_value(T z) {
    if constexpr (A == Activation::relu) return z > T(0) ? z : T(0);
    else if constexpr (A == Activation::gelu) {
        const T c = T(0.7978845608028654);
        return T(0.5) * z * (T(1) + tanh_of(c * (z + T(0.044715) * z * z * z)));
    } else if constexpr (A == Activation::tanh) return tanh_of(z);
    else return z;
}
// σ′(z): ReLU 1 or 0, tanh 1 − t², GELU gelu_grad's expression.
template <Activation A, class T>
MPX_HOST_DEVICE T act_first(T z) {
    if constexpr (A == Activation::relu) return z > T(0) ? T(1) : T(0);
    else if constexpr (A == Activation::gelu) {
        const T c = T(0.7978845608028654);
        const T t = tanh_of(c * (z + T(0.044715) * z * z * z));
        return T(0.5) * (T(1) + t) + T(0.5) * z * (T(1) - t * t) * c * (T(1) + T(3) * T(0.044715) * z * z);
    } else if constexpr (A == Activation::tanh) {
        const T t = tanh_of(z);
        return T(1) - t * t;
    } else return T(1);
}
// σ″(z): ReLU and none 0; tanh −2t(1 − t²); GELU (tanh form, u = c(z + a z³), u′ = c(1 + 3a z²),
// u″ = 6ac·z): (1 − t²)·(u′ − z·t·u′² + ½ z·u″).
template <Activation A, class T>
MPX_HOST_DEVICE T act_second(T z) {
    if constexpr (A == Activation::gelu) {
        const T c = T(0.7978845608028654), a = T(0.044715);
        const T t = tanh_of(c * (z + a * z * z * z));
        const T du = c * (T(1) + T(3) * a * z * z);
        return (T(1) - t * t) * (du - z * t * du * du + T(3) * a * c * z * z);
    } else if constexpr (A == Activation::tanh) {
        const T t = tanh_of(z);
        return T(-2) * t * (T(1) - t * t);
    } else return T(0);
}
// The R-forward of an activation is its backward rule: R{a} = σ′(z)·R{z} = act_backward(z, R{z}).
// The R-backward of dz = σ′(z)·dh: R{dz} = σ″(z)·R{z}·dh + σ′(z)·R{dh} (ReLU: act_backward(z, R{dh})).
template <Activation A, class T>
MPX_HOST_DEVICE T act_r_backward(T z, T rz, T dh, T rdh) {
    if constexpr (A == Activation::relu) return z > T(0) ? rdh : T(0);
    else if constexpr (A == Activation::none) return rdh;
    else return act_second<A>(z) * rz * dh + act_first<A>(z) * rdh;
}

// ---- LayerNorm, one row of width D: x̂ = (x − μ)·r, r = 1/√(σ² + ε), y = γ⊙x̂ + β ---------------------

// The row's two R-statistics: m = mean(R{x}) and s = mean(x̂ ⊙ (R{x} − m)·r); then
// R{r} = −r·s and R{x̂} = (R{x} − m)·r − x̂·s (the derivative of layernorm_row_stats' μ, σ², r).
template <class T, class X, class RX>
MPX_HOST_DEVICE void layernorm_r_stats(X x, RX rx, int D, T mean, T rstd, T& m, T& s) {
    T sum = T(0);
    for (int c = 0; c < D; ++c) sum += rx(c);
    m = sum / T(D);
    T acc = T(0);
    for (int c = 0; c < D; ++c) acc += ((x(c) - mean) * rstd) * ((rx(c) - m) * rstd);
    s = acc / T(D);
}
template <class T>
MPX_HOST_DEVICE T layernorm_r_xhat(T x, T rx, T mean, T rstd, T m, T s) {
    return (rx - m) * rstd - ((x - mean) * rstd) * s;
}
// R{y} = R{γ}⊙x̂ + γ⊙R{x̂} + R{β}, one element.
template <class T>
MPX_HOST_DEVICE T layernorm_r_value(T x, T rx, T mean, T rstd, T m, T s, T g, T rg, T rb) {
    const T xhat = (x - mean) * rstd;
    return rg * xhat + g * layernorm_r_xhat(x, rx, mean, rstd, m, s) + rb;
}
// The R-backward's two row sums beside layernorm_row_sums' Σ dy·γ and Σ dy·γ·x̂:
// Σ R{dy·γ} and Σ (R{dy·γ}·x̂ + dy·γ·R{x̂}), with R{dy·γ} = R{dy}·γ + dy·R{γ}.
template <class T, class X, class RX, class G, class RG, class DY, class RDY>
MPX_HOST_DEVICE void layernorm_r_row_sums(X x, RX rx, G g, RG rg, DY dy, RDY rdy, int D, T mean, T rstd, T m, T s,
                                          T& r_sum_dyg, T& r_sum_dyg_xhat) {
    T s1 = T(0), s2 = T(0);
    for (int c = 0; c < D; ++c) {
        const T xhat = (x(c) - mean) * rstd;
        const T rdyg = rdy(c) * g(c) + dy(c) * rg(c);
        s1 += rdyg;
        s2 += rdyg * xhat + dy(c) * g(c) * layernorm_r_xhat(x(c), rx(c), mean, rstd, m, s);
    }
    r_sum_dyg = s1;
    r_sum_dyg_xhat = s2;
}
// R{dx} of layernorm_dx = r·(dy·γ − Σdyγ/D − x̂·Σdyγx̂/D), one element.
template <class T>
MPX_HOST_DEVICE T layernorm_r_dx(T x, T rx, T dy, T rdy, T g, T rg, T mean, T rstd, T m, T s, int D, T sum_dyg,
                                 T sum_dyg_xhat, T r_sum_dyg, T r_sum_dyg_xhat) {
    const T inv_d = T(1) / T(D);
    const T xhat = (x - mean) * rstd;
    const T rxhat = layernorm_r_xhat(x, rx, mean, rstd, m, s);
    const T dyg = dy * g, rdyg = rdy * g + dy * rg;
    const T inner = dyg - inv_d * sum_dyg - xhat * inv_d * sum_dyg_xhat;
    const T r_inner = rdyg - inv_d * r_sum_dyg - rxhat * inv_d * sum_dyg_xhat - xhat * inv_d * r_sum_dyg_xhat;
    return (-rstd * s) * inner + rstd * r_inner;
}
// (H·v) for γ and β, one element of a column: R{dy}·x̂ + dy·R{x̂} and R{dy} (summed over rows in row
// order by the caller, as layernorm_column_sums).
template <class T>
MPX_HOST_DEVICE T layernorm_r_dgamma(T x, T rx, T dy, T rdy, T mean, T rstd, T m, T s) {
    return rdy * ((x - mean) * rstd) + dy * layernorm_r_xhat(x, rx, mean, rstd, m, s);
}

// ---- losses ---------------------------------------------------------------------------------------

// Softmax cross-entropy, one row: R{δ} = (p⊙R{z} − p·(pᵀR{z}))·inv_b·scale (softmax_xent_row's
// gradient (p − onehot)·inv_b·scale differentiated along R{z}); p recomputed as that row computes it.
template <class T, class L, class RL, class Put>
MPX_HOST_DEVICE void softmax_xent_r_row(L logit, RL rlogit, int C, T inv_b, T scale, Put put) {
    T mx = logit(0);
    for (int c = 1; c < C; ++c) {
        const T v = logit(c);
        mx = mx < v ? v : mx;
    }
    T sum = T(0);
    for (int c = 0; c < C; ++c) sum += exp_of(logit(c) - mx);
    const T lse = mx + log_of(sum);
    T pr = T(0);
    for (int c = 0; c < C; ++c) pr += exp_of(logit(c) - lse) * rlogit(c);
    for (int c = 0; c < C; ++c) {
        const T prob = exp_of(logit(c) - lse);
        put(c, ((prob * rlogit(c) - prob * pr) * inv_b) * scale);
    }
}
// MSE, element i: R{δ} = (2·R{pred}/n)·scale (mse_grad's gradient along R{pred}).
template <class T>
MPX_HOST_DEVICE T mse_r_grad(T rpred, T n, T scale) {
    return (T(2) * rpred / n) * scale;
}

}  // namespace mpx::core
