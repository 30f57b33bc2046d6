// NVFP4 and MXFP4 quantization of a matrix (engine/precision/fp4_quant.hpp).
#include "engine/precision/fp4_quant.hpp"

#include <cmath>

#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"
#include "engine/core/write_back.hpp"

namespace mpx {

namespace {

constexpr int k_rht_signs[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};

int round_up(int n, int m) { return (n + m - 1) / m * m; }

// |x| with NaN kept: max over a range propagates NaN, as torch.amax does.
struct Amax {
    float v = 0.0f;
    bool nan = false;
    void add(float x) {
        if (x != x) nan = true;
        else v = std::fabs(x) > v ? std::fabs(x) : v;
    }
    float value() const { return nan ? NAN : v; }
};

FloatMatrix padded(const FloatMatrix& x, int rows, int cols) {
    if (rows == x.rows && cols == x.cols) return x;
    FloatMatrix p{rows, cols, std::vector<float>(static_cast<std::size_t>(rows) * cols, 0.0f)};
    for (int r = 0; r < x.rows; ++r)
        for (int c = 0; c < x.cols; ++c)
            p.values[static_cast<std::size_t>(r) * cols + c] = x.values[static_cast<std::size_t>(r) * x.cols + c];
    return p;
}

}  // namespace

float rht_entry(int k, int j) {
    // Sylvester: H16[k][j] = (−1)^popcount(k & j).
    const int h = (__builtin_popcount(static_cast<unsigned>(k & j)) & 1) ? -1 : 1;
    return static_cast<float>(k_rht_signs[k] * h) * 0.25f;
}

FloatMatrix rht_rows(const FloatMatrix& x) {
    const FloatMatrix p = padded(x, x.rows, round_up(x.cols, core::k_nvfp4_block));
    FloatMatrix y{p.rows, p.cols, std::vector<float>(p.values.size())};
    for (int r = 0; r < p.rows; ++r)
        for (int b = 0; b < p.cols; b += 16) {
            const float* in = &p.values[static_cast<std::size_t>(r) * p.cols + b];
            float* out = &y.values[static_cast<std::size_t>(r) * p.cols + b];
            for (int j = 0; j < 16; ++j) {
                float acc = 0.0f;
                for (int k = 0; k < 16; ++k) acc = acc + in[k] * rht_entry(k, j);
                out[j] = acc;
            }
        }
    return y;
}

Fp4Matrix quantize_fp4(const FloatMatrix& x, const Fp4Options& o) {
    if (x.rows < 1 || x.cols < 1) throw ConfigError("--in", "the matrix is empty");
    const bool nv = o.kind == Fp4Kind::nvfp4;
    if (!nv && o.two_d) throw ConfigError("--2d", "MXFP4 scales blocks of 1x32 only; 16x16 tiles are NVFP4's");
    if (!nv && o.rht) throw ConfigError("--rht", "the Hadamard transform is part of the NVFP4 recipe only");
    const int block = nv ? core::k_nvfp4_block : core::k_mxfp4_block;
    const int tile_rows = nv && o.two_d ? core::k_nvfp4_block : 1;
    const FloatMatrix src = o.rht ? rht_rows(x) : x;
    const FloatMatrix p = padded(src, round_up(src.rows, tile_rows), round_up(src.cols, block));
    const std::size_t n = p.values.size();

    Fp4Matrix out;
    out.rows = x.rows;
    out.cols = x.cols;
    out.scale_rows = p.rows / tile_rows;
    out.scale_cols = p.cols / block;
    out.scales.assign(static_cast<std::size_t>(out.scale_rows) * out.scale_cols, 0.0f);
    core::Nvfp4Global g;
    if (nv) {
        Amax a;
        for (float v : p.values) a.add(v);
        out.amax = a.value();
        g = core::nvfp4_global(out.amax);
        out.s_dec = g.dec;
    }
    // Block scales, then the elements, in the padded matrix.
    for (int br = 0; br < out.scale_rows; ++br)
        for (int bc = 0; bc < out.scale_cols; ++bc) {
            Amax a;
            for (int r = br * tile_rows; r < (br + 1) * tile_rows; ++r)
                for (int c = bc * block; c < (bc + 1) * block; ++c) a.add(p.values[static_cast<std::size_t>(r) * p.cols + c]);
            float& s = out.scales[static_cast<std::size_t>(br) * out.scale_cols + bc];
            if (nv) {
                s = core::nvfp4_block_scale(a.value(), g);
            } else {
                const int e = core::mxfp4_exponent(a.value(), o.mx_rule);
                s = e == core::k_mx_nan_exponent ? NAN : core::mx_scale_value(e);
            }
        }
    std::vector<std::uint8_t> codes(n);
    std::vector<float> values(n);
    const std::uint64_t key = o.sr_seed ? core::round_key(*o.sr_seed, 0, 0) : 0;
    parallel_for(static_cast<std::size_t>(p.rows), [&](std::size_t r) {
        for (int c = 0; c < p.cols; ++c) {
            const std::size_t i = r * static_cast<std::size_t>(p.cols) + static_cast<std::size_t>(c);
            const float s = out.scales[(r / static_cast<std::size_t>(tile_rows)) * static_cast<std::size_t>(out.scale_cols) +
                                       static_cast<std::size_t>(c / block)];
            float v;
            if (nv) {
                v = core::fp4_scaled(p.values[i], core::nvfp4_encode_scale(s, g));
            } else {
                // x · 2^-e in FP32 (exact unless it underflows); NaN scale: every element NaN.
                v = s != s ? NAN : core::fp4_scaled(p.values[i], 1.0f / s);
            }
            const std::uint32_t code = o.sr_seed ? core::e2m1_code_stochastic(v, core::round_word(key, i)) : core::e2m1_code(v);
            codes[i] = static_cast<std::uint8_t>(code);
            values[i] = nv ? core::nvfp4_decode(code, s, g) : (s != s ? NAN : core::e2m1_value(code) * s);
        }
    });
    // Cut back to the input's shape.
    out.codes.resize(static_cast<std::size_t>(x.rows) * x.cols);
    out.values.resize(out.codes.size());
    for (int r = 0; r < x.rows; ++r)
        for (int c = 0; c < x.cols; ++c) {
            const std::size_t from = static_cast<std::size_t>(r) * p.cols + c, to = static_cast<std::size_t>(r) * x.cols + c;
            out.codes[to] = codes[from];
            out.values[to] = values[from];
        }
    return out;
}

}  // namespace mpx
