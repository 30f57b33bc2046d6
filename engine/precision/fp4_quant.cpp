// NVFP4 and MXFP4 quantization of a matrix (engine/precision/fp4_quant.hpp).
#include "engine/precision/fp4_quant.hpp"

#include "engine/base/error.hpp"
#include "engine/core/write_back.hpp"

namespace mpx {

namespace {

int round_up(int n, int m) { return (n + m - 1) / m * m; }

FloatMatrix padded(const FloatMatrix& x, int rows, int cols) {
    if (rows == x.rows && cols == x.cols) return x;
    FloatMatrix p{rows, cols, std::vector<float>(static_cast<std::size_t>(rows) * cols, 0.0f)};
    for (int r = 0; r < x.rows; ++r)
        for (int c = 0; c < x.cols; ++c)
            p.values[static_cast<std::size_t>(r) * cols + c] = x.values[static_cast<std::size_t>(r) * x.cols + c];
    return p;
}

}  // namespace

FloatMatrix rht_rows(const FloatMatrix& x) {
    FloatMatrix p = padded(x, x.rows, round_up(x.cols, core::k_nvfp4_block));
    rht_in_place(p.values.data(), p.rows, p.cols, MxAxis::rows);
    return p;
}

Fp4Matrix quantize_fp4(const FloatMatrix& x, const Fp4Options& o) {
    if (x.rows < 1 || x.cols < 1) throw ConfigError("--in", "the matrix is empty");
    const bool nv = o.kind == Fp4Kind::nvfp4;
    if (!nv && o.two_d) throw ConfigError("--2d", "MXFP4 scales blocks of 1x32 only; 16x16 tiles are NVFP4's");
    if (!nv && o.rht) throw ConfigError("--rht", "the Hadamard transform is part of the NVFP4 recipe only");
    if (!nv && o.four_over_six) throw ConfigError("--4over6", "4over6 chooses between NVFP4 block scales; MXFP4's are powers of two");
    Fp4Cast c;
    c.kind = o.kind;
    c.two_d = o.two_d;
    c.mx_rule = o.mx_rule;
    c.four_over_six = o.four_over_six;
    c.metric = o.metric;
    if (o.sr_seed) c.sr_key = core::round_key(*o.sr_seed, 0, 0);
    const int tile_rows = nv && o.two_d ? core::k_nvfp4_block : 1;
    FloatMatrix p = padded(o.rht ? rht_rows(x) : x, round_up(x.rows, tile_rows), round_up(x.cols, c.block()));

    Fp4Matrix out;
    out.rows = x.rows;
    out.cols = x.cols;
    out.scale_rows = p.rows / tile_rows;
    out.scale_cols = p.cols / c.block();
    out.scales.assign(static_cast<std::size_t>(out.scale_rows) * out.scale_cols, 0.0f);
    std::vector<std::uint8_t> codes(p.values.size());
    const Fp4Tally t = fp4_cast_in_place(p.values.data(), p.rows, p.cols, MxAxis::rows, c, {codes.data(), out.scales.data()});
    if (nv) {
        out.amax = t.amax;
        out.s_dec = t.s_dec;
    }
    // Cut back to the input's shape.
    out.codes.resize(static_cast<std::size_t>(x.rows) * x.cols);
    out.values.resize(out.codes.size());
    for (int r = 0; r < x.rows; ++r)
        for (int col = 0; col < x.cols; ++col) {
            const std::size_t from = static_cast<std::size_t>(r) * p.cols + col, to = static_cast<std::size_t>(r) * x.cols + col;
            out.codes[to] = codes[from];
            out.values[to] = p.values[from];
        }
    return out;
}

}  // namespace mpx
