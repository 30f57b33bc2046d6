// The double-precision reference of tests/test_hvp.cpp and tests/test_penalty.cpp: a small MLP whose
// gradient is written here independently in double (its activations included), central differences
// of that gradient, and the R-operator in double with engine/core/r_op.hpp's rules.
// Rule: nothing here calls the engine's first-order arithmetic; only the R-rules under test.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/core/r_op.hpp"
#include "engine/model/model.hpp"

namespace mpx::test {

using Vec = std::vector<double>;


// A small MLP in double: parameters flat in the engine's order (per layer W (out, in), b (out), and
// for a hidden layer with LayerNorm γ, β (out)); a batch X (B, n0) with labels or targets.
struct Net {
    std::vector<int> sizes;
    Activation act = Activation::tanh;
    bool ln = false;
    float p = 0.0f;               // dropout
    std::uint64_t seed = 7;       // the step's dropout seed (Mlp's masks)
    bool mse = false;
    int B = 4;
    Vec X, Y;                     // inputs (B, n0); MSE targets (B, nL)
    std::vector<int> labels;
    int layers() const { return static_cast<int>(sizes.size()) - 1; }
    bool hidden(int l) const { return l + 1 < layers(); }
    bool has_ln(int l) const { return ln && hidden(l); }
    // Offsets of W, b, γ, β of layer l in the flat vector (γ, β: -1 when absent), and its size.
    struct Off { int w, b, g, be; };
    std::vector<Off> offsets() const {
        std::vector<Off> o;
        int at = 0;
        for (int l = 0; l < layers(); ++l) {
            Off f{at, at + sizes[l] * sizes[l + 1], -1, -1};
            at = f.b + sizes[l + 1];
            if (has_ln(l)) {
                f.g = at;
                f.be = at + sizes[l + 1];
                at += 2 * sizes[l + 1];
            }
            o.push_back(f);
        }
        return o;
    }
    int count() const {
        int n = 0;
        for (int l = 0; l < layers(); ++l) n += sizes[l] * sizes[l + 1] + sizes[l + 1] * (has_ln(l) ? 3 : 1);
        return n;
    }
    double mask(int l, int i) const {  // the engine's dropout mask and scale (Mlp::forward_layer)
        if (p == 0.0f || !hidden(l)) return 1.0;
        return core::dropout_keeps(p, dropout_layer_seed(seed, l), static_cast<std::size_t>(i))
                   ? static_cast<double>(core::dropout_keep_scale(p))
                   : 0.0;
    }
};

// First-order activations, written here (not core's) so the reference is independent.
inline double act(Activation a, double z) {
    const double c = std::sqrt(2.0 / M_PI);
    switch (a) {
        case Activation::relu: return z > 0 ? z : 0;
        case Activation::tanh: return std::tanh(z);
        case Activation::gelu: return 0.5 * z * (1 + std::tanh(c * (z + 0.044715 * z * z * z)));
        case Activation::none: break;
    }
    return z;
}
inline double act_d(Activation a, double z) {
    if (a == Activation::gelu) {  // by a 4th-order central difference of act, to 1e-12
        const double h = 1e-3;
        return (-act(a, z + 2 * h) + 8 * act(a, z + h) - 8 * act(a, z - h) + act(a, z - 2 * h)) / (12 * h);
    }
    if (a == Activation::relu) return z > 0 ? 1 : 0;
    if (a == Activation::tanh) return 1 - std::tanh(z) * std::tanh(z);
    return 1;
}

// Row-major (r, c) helpers.
struct Mat {
    int r, c;
    Vec v;
    Mat(int rows, int cols) : r(rows), c(cols), v(static_cast<std::size_t>(rows * cols), 0.0) {}
    double& operator()(int i, int j) { return v[static_cast<std::size_t>(i * c + j)]; }
    double operator()(int i, int j) const { return v[static_cast<std::size_t>(i * c + j)]; }
};

// The gradient of the mean loss at θ, by a plain double forward and backward.
inline Vec gradient(const Net& n, const Vec& th) {
    const auto off = n.offsets();
    const int L = n.layers(), B = n.B;
    std::vector<Mat> a, z, y, xh;
    std::vector<Vec> rstd;
    a.emplace_back(B, n.sizes[0]);
    a[0].v = n.X;
    for (int l = 0; l < L; ++l) {
        const int in = n.sizes[l], out = n.sizes[l + 1];
        Mat zl(B, out);
        for (int i = 0; i < B; ++i)
            for (int o = 0; o < out; ++o) {
                double s = th[off[l].b + o];
                for (int k = 0; k < in; ++k) s += a[l](i, k) * th[off[l].w + o * in + k];
                zl(i, o) = s;
            }
        z.push_back(zl);
        Mat yl = zl, xl(B, out);
        Vec rs(B, 1.0);
        if (n.has_ln(l))
            for (int i = 0; i < B; ++i) {
                double m = 0, v = 0;
                for (int o = 0; o < out; ++o) m += zl(i, o);
                m /= out;
                for (int o = 0; o < out; ++o) v += (zl(i, o) - m) * (zl(i, o) - m);
                v /= out;
                rs[i] = 1 / std::sqrt(v + core::k_layernorm_eps);
                for (int o = 0; o < out; ++o) {
                    xl(i, o) = (zl(i, o) - m) * rs[i];
                    yl(i, o) = th[off[l].g + o] * xl(i, o) + th[off[l].be + o];
                }
            }
        y.push_back(yl);
        xh.push_back(xl);
        rstd.push_back(rs);
        Mat al(B, out);
        for (int i = 0; i < B; ++i)
            for (int o = 0; o < out; ++o)
                al(i, o) = n.hidden(l) ? act(n.act, yl(i, o)) * n.mask(l, i * out + o) : zl(i, o);
        a.push_back(al);
    }
    const int C = n.sizes[L];
    Mat d(B, C);
    for (int i = 0; i < B; ++i) {
        if (n.mse) {
            for (int c = 0; c < C; ++c) d(i, c) = 2 * (z[L - 1](i, c) - n.Y[i * C + c]) / (B * C);
            continue;
        }
        double mx = z[L - 1](i, 0), s = 0;
        for (int c = 1; c < C; ++c) mx = std::max(mx, z[L - 1](i, c));
        for (int c = 0; c < C; ++c) s += std::exp(z[L - 1](i, c) - mx);
        for (int c = 0; c < C; ++c) d(i, c) = (std::exp(z[L - 1](i, c) - mx) / s - (c == n.labels[i] ? 1 : 0)) / B;
    }
    Vec g(th.size(), 0.0);
    for (int l = L - 1; l >= 0; --l) {
        const int in = n.sizes[l], out = n.sizes[l + 1];
        for (int o = 0; o < out; ++o)
            for (int i = 0; i < B; ++i) {
                g[off[l].b + o] += d(i, o);
                for (int k = 0; k < in; ++k) g[off[l].w + o * in + k] += d(i, o) * a[l](i, k);
            }
        if (l == 0) break;
        Mat dz(B, in);  // layer l−1's: through its mask, activation and LayerNorm
        for (int i = 0; i < B; ++i)
            for (int k = 0; k < in; ++k) {
                double s = 0;
                for (int o = 0; o < out; ++o) s += d(i, o) * th[off[l].w + o * in + k];
                dz(i, k) = s * n.mask(l - 1, i * in + k) * act_d(n.act, y[l - 1](i, k));
            }
        if (n.has_ln(l - 1))
            for (int i = 0; i < B; ++i) {
                double s1 = 0, s2 = 0;
                for (int k = 0; k < in; ++k) {
                    g[off[l - 1].g + k] += dz(i, k) * xh[l - 1](i, k);
                    g[off[l - 1].be + k] += dz(i, k);
                    const double dx = dz(i, k) * th[off[l - 1].g + k];
                    s1 += dx;
                    s2 += dx * xh[l - 1](i, k);
                }
                for (int k = 0; k < in; ++k) {
                    const double dx = dz(i, k) * th[off[l - 1].g + k];
                    dz(i, k) = rstd[l - 1][i] * (dx - s1 / in - xh[l - 1](i, k) * s2 / in);
                }
            }
        d = dz;
    }
    return g;
}

// H·v by central differences of the gradient: (g(θ + εv) − g(θ − εv)) / 2ε.
inline Vec hv_differences(const Net& n, const Vec& th, const Vec& v, double eps) {
    Vec plus = th, minus = th;
    for (std::size_t i = 0; i < th.size(); ++i) {
        plus[i] += eps * v[i];
        minus[i] -= eps * v[i];
    }
    const Vec gp = gradient(n, plus), gm = gradient(n, minus);
    Vec h(th.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = (gp[i] - gm[i]) / (2 * eps);
    return h;
}

// H·v by the R-operator in double: this file's plumbing of the MLP's passes, core's R-rules.
inline Vec hv_r_operator(const Net& n, const Vec& th, const Vec& v) {
    return core::with_activation(n.act, [&](auto k) {
        constexpr Activation A = decltype(k)::value;
        const auto off = n.offsets();
        const int L = n.layers(), B = n.B;
        std::vector<Mat> a, ra, z, rz, y, ry;
        std::vector<Vec> mean, rstd;
        a.emplace_back(B, n.sizes[0]);
        a[0].v = n.X;
        ra.emplace_back(B, n.sizes[0]);
        for (int l = 0; l < L; ++l) {
            const int in = n.sizes[l], out = n.sizes[l + 1];
            Mat zl(B, out), rzl(B, out);
            for (int i = 0; i < B; ++i)
                for (int o = 0; o < out; ++o) {
                    double s = th[off[l].b + o], r = v[off[l].b + o];
                    for (int q = 0; q < in; ++q) {
                        s += a[l](i, q) * th[off[l].w + o * in + q];
                        r += a[l](i, q) * v[off[l].w + o * in + q] + ra[l](i, q) * th[off[l].w + o * in + q];
                    }
                    zl(i, o) = s;
                    rzl(i, o) = r;
                }
            Mat yl = zl, ryl = rzl;
            Vec mu(B, 0.0), rs(B, 1.0);
            if (n.has_ln(l))
                for (int i = 0; i < B; ++i) {
                    double m = 0, var = 0;
                    for (int o = 0; o < out; ++o) m += zl(i, o);
                    m /= out;
                    for (int o = 0; o < out; ++o) var += (zl(i, o) - m) * (zl(i, o) - m);
                    mu[i] = m;
                    rs[i] = 1 / std::sqrt(var / out + core::k_layernorm_eps);
                    double rm, s;
                    core::layernorm_r_stats([&](int c) { return zl(i, c); }, [&](int c) { return rzl(i, c); }, out,
                                            mu[i], rs[i], rm, s);
                    for (int o = 0; o < out; ++o) {
                        yl(i, o) = th[off[l].g + o] * (zl(i, o) - m) * rs[i] + th[off[l].be + o];
                        ryl(i, o) = core::layernorm_r_value(zl(i, o), rzl(i, o), mu[i], rs[i], rm, s, th[off[l].g + o],
                                                            v[off[l].g + o], v[off[l].be + o]);
                    }
                }
            Mat al(B, out), ral(B, out);
            for (int i = 0; i < B; ++i)
                for (int o = 0; o < out; ++o) {
                    const double m = n.mask(l, i * out + o);
                    al(i, o) = n.hidden(l) ? core::act_value<A>(yl(i, o)) * m : zl(i, o);
                    ral(i, o) = n.hidden(l) ? core::act_first<A>(yl(i, o)) * ryl(i, o) * m : rzl(i, o);
                }
            z.push_back(zl), rz.push_back(rzl), y.push_back(yl), ry.push_back(ryl);
            a.push_back(al), ra.push_back(ral), mean.push_back(mu), rstd.push_back(rs);
        }
        const int C = n.sizes[L];
        Mat d(B, C), rd(B, C);
        for (int i = 0; i < B; ++i) {
            if (n.mse) {
                for (int c = 0; c < C; ++c) {
                    d(i, c) = 2 * (z[L - 1](i, c) - n.Y[i * C + c]) / (B * C);
                    rd(i, c) = core::mse_r_grad(rz[L - 1](i, c), double(B * C), 1.0);
                }
                continue;
            }
            double mx = z[L - 1](i, 0), s = 0;
            for (int c = 1; c < C; ++c) mx = std::max(mx, z[L - 1](i, c));
            for (int c = 0; c < C; ++c) s += std::exp(z[L - 1](i, c) - mx);
            for (int c = 0; c < C; ++c) d(i, c) = (std::exp(z[L - 1](i, c) - mx) / s - (c == n.labels[i] ? 1 : 0)) / B;
            core::softmax_xent_r_row([&](int c) { return z[L - 1](i, c); }, [&](int c) { return rz[L - 1](i, c); }, C,
                                     1.0 / B, 1.0, [&](int c, double x) { rd(i, c) = x; });
        }
        Vec h(th.size(), 0.0);
        for (int l = L - 1; l >= 0; --l) {
            const int in = n.sizes[l], out = n.sizes[l + 1];
            for (int o = 0; o < out; ++o)
                for (int i = 0; i < B; ++i) {
                    h[off[l].b + o] += rd(i, o);
                    for (int q = 0; q < in; ++q) h[off[l].w + o * in + q] += rd(i, o) * a[l](i, q) + d(i, o) * ra[l](i, q);
                }
            if (l == 0) break;
            Mat da(B, in), rda(B, in), dy(B, in), rdy(B, in);
            for (int i = 0; i < B; ++i)
                for (int q = 0; q < in; ++q) {
                    double s = 0, r = 0;
                    for (int o = 0; o < out; ++o) {
                        s += d(i, o) * th[off[l].w + o * in + q];
                        r += rd(i, o) * th[off[l].w + o * in + q] + d(i, o) * v[off[l].w + o * in + q];
                    }
                    const double m = n.mask(l - 1, i * in + q);
                    da(i, q) = s * m;
                    rda(i, q) = r * m;
                    dy(i, q) = core::act_first<A>(y[l - 1](i, q)) * da(i, q);
                    rdy(i, q) = core::act_r_backward<A>(y[l - 1](i, q), ry[l - 1](i, q), da(i, q), rda(i, q));
                }
            Mat dz = dy, rdz = rdy;
            if (n.has_ln(l - 1)) {
                const Net::Off& f = off[l - 1];
                for (int i = 0; i < B; ++i) {
                    const auto X = [&](int c) { return z[l - 1](i, c); };
                    const auto RX = [&](int c) { return rz[l - 1](i, c); };
                    const auto G = [&](int c) { return th[f.g + c]; };
                    const auto RG = [&](int c) { return v[f.g + c]; };
                    const auto DY = [&](int c) { return dy(i, c); };
                    const auto RDY = [&](int c) { return rdy(i, c); };
                    const double mu = mean[l - 1][i], rs = rstd[l - 1][i];
                    double rm, s, s1 = 0, s2 = 0, rs1, rs2;
                    core::layernorm_r_stats(X, RX, in, mu, rs, rm, s);
                    for (int c = 0; c < in; ++c) {
                        s1 += dy(i, c) * th[f.g + c];
                        s2 += dy(i, c) * th[f.g + c] * (z[l - 1](i, c) - mu) * rs;
                    }
                    core::layernorm_r_row_sums(X, RX, G, RG, DY, RDY, in, mu, rs, rm, s, rs1, rs2);
                    for (int c = 0; c < in; ++c) {
                        dz(i, c) = rs * (dy(i, c) * th[f.g + c] - s1 / in - (z[l - 1](i, c) - mu) * rs * s2 / in);
                        rdz(i, c) = core::layernorm_r_dx(z[l - 1](i, c), rz[l - 1](i, c), dy(i, c), rdy(i, c), th[f.g + c],
                                                         v[f.g + c], mu, rs, rm, s, in, s1, s2, rs1, rs2);
                        h[f.g + c] += core::layernorm_r_dgamma(z[l - 1](i, c), rz[l - 1](i, c), dy(i, c), rdy(i, c), mu,
                                                               rs, rm, s);
                        h[f.be + c] += rdy(i, c);
                    }
                }
            }
            d = dz;
            rd = rdz;
        }
        return h;
    });
}

inline double uniform(std::uint64_t& s) {  // a small LCG: the test's data, independent of the engine's Rng
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

inline Net make_net(Activation a, bool ln, float p, bool mse) {
    Net n;
    n.sizes = {5, 7, 6, 3};
    n.act = a;
    n.ln = ln;
    n.p = p;
    n.mse = mse;
    std::uint64_t s = 12345;
    for (int i = 0; i < n.B * n.sizes[0]; ++i) n.X.push_back(uniform(s) * 1.5);
    for (int i = 0; i < n.B * n.sizes.back(); ++i) n.Y.push_back(uniform(s));
    for (int i = 0; i < n.B; ++i) n.labels.push_back(i % n.sizes.back());
    return n;
}

// θ and v: weights U(−1/√in, 1/√in) as FP32 values (so the engine holds the same numbers), LayerNorm's
// γ near 1 and β near 0; v of the same scale.
inline void make_point(const Net& n, Vec& th, Vec& v) {
    std::uint64_t s = 99;
    th.assign(static_cast<std::size_t>(n.count()), 0.0);
    v.assign(th.size(), 0.0);
    const auto off = n.offsets();
    for (int l = 0; l < n.layers(); ++l) {
        const double bound = 1.0 / std::sqrt(double(n.sizes[l]));
        const int end = off[l].b + n.sizes[l + 1];
        for (int i = off[l].w; i < end; ++i) th[i] = static_cast<float>(uniform(s) * bound);
        if (off[l].g >= 0)
            for (int i = 0; i < n.sizes[l + 1]; ++i) {
                th[off[l].g + i] = static_cast<float>(1.0 + 0.3 * uniform(s));
                th[off[l].be + i] = static_cast<float>(0.2 * uniform(s));
            }
    }
    for (double& x : v) x = static_cast<float>(uniform(s) * 0.5);
}

inline double rel_error(const Vec& a, const Vec& b) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return std::sqrt(num / den);
}

}  // namespace mpx::test
