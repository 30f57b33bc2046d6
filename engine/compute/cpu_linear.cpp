// The CPU backend's linear layers: Eigen GEMMs in FP32 on operands cast to the compute format, or
// to FP8 with their recipe's scales (per tensor, or MXFP8 blocks along the reduction dimension);
// where the layer's accumulation names a model for a GEMM kind, that GEMM runs under the model
// (product_under_model) on the same operands, before any descaling.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/base/error.hpp"
#include "engine/compute/cpu_backend.hpp"
#include "engine/precision/mxfp8_cast.hpp"

namespace mpx::cpu {

void CpuBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor* b, Format compute,
                    Tensor& y) {
    if (fp8()) {
        const float sx = fp8_operand(x, m_a, Fp8Tensor::x, MxAxis::rows, sink(TensorKind::operand), true);
        const float sw = fp8_operand(w, m_b, Fp8Tensor::w, MxAxis::rows, sink(TensorKind::operand), true);
        Map out = m_c.shape(x.rows(), w.rows());
        product(out, m_a.map(), m_b.map().transpose(), m_panels, model(&GemmAccumulation::fprop));
        if (fp8()->recipe != Fp8Recipe::block) out *= core::descale_factor(sx, sw);
        if (b) {
            CMap bv = view(*b, m_d);  // (1, out)
            out.rowwise() += bv.row(0);
        }
        store(out.data(), y);
        return;
    }
    CMap xv = operand(x, m_a, compute, sink(TensorKind::operand));  // (B, in)
    CMap wv = operand(w, m_b, compute, sink(TensorKind::operand));  // (out, in)
    Map out = m_c.shape(x.rows(), w.rows());
    product(out, xv, wv.transpose(), m_panels, model(&GemmAccumulation::fprop));
    if (b) {
        CMap bv = operand(*b, m_d, core::bias_format(compute), Sink{});  // (1, out), as autocast casts it
        out.rowwise() += bv.row(0);
    }
    store(out.data(), y);
}

void CpuBackend::linear_backward_weight(const Tensor& dy, const Tensor& x, Format compute,
                            Format round_through, Tensor& dw, Tensor* db,
                            Accumulate acc) {
    if (fp8()) return fp8_backward(dy, &x, nullptr, round_through, &dw, db, acc, nullptr);
    backward_weight(operand(dy, m_a, compute, sink(TensorKind::grad_operand)), dy, x, compute,
                    round_through, dw, db, acc);
}

void CpuBackend::linear_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Format compute,
                     Format round_through, Tensor& dw, Tensor* db, Accumulate acc,
                     Tensor* dx) {
    if (fp8()) return fp8_backward(dy, &x, &w, round_through, &dw, db, acc, dx);
    CMap dyv = operand(dy, m_a, compute, sink(TensorKind::grad_operand));  // (B, out), once
    backward_weight(dyv, dy, x, compute, round_through, dw, db, acc);
    if (dx) backward_input(dyv, w, compute, *dx);
}

void CpuBackend::accumulate_into(float* values, std::size_t n, Format through, Tensor& dst, Accumulate acc,
                     Sink to) {
    core::Counts& c = *to.counts;
    bin_values(to.bins, values, n);  // the GEMM's FP32 results, before their first rounding
    const bool through_first = through != Format::fp32 && through != dst.format();
    if (through_first) c += round_pieces(through, values, n);
    if (acc == Accumulate::add) {
        const float* old = view(dst, m_e2).data();
        pieces(n, [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) values[i] = values[i] + old[i];
        });
    }
    RoundStats stored = encode_pieces(dst.format(), values, n, dst.data());
    if (through_first) stored.nonzero = 0;  // the same values, already counted once
    c += stored;
}

float CpuBackend::fp8_operand(const Tensor& t, Scratch& scratch, Fp8Tensor which, MxAxis axis, Sink sink,
                  bool record) {
    const Fp8Gemm& g = *fp8();
    if (g.fp4) return fp4_operand(t, scratch, which, axis, sink, record);
    const std::size_t n = t.size();
    float* v = scratch.shape(t.rows(), t.cols()).data();
    decode_pieces(t.format(), t.data(), v, n);
    bin_values(sink.bins, v, n);
    // The amax is for the record and for current scaling: a recast for backward under a
    // delayed recipe skips it; the block cast finds it on the way.
    float amax = 0.0f;
    core::Counts c;
    float scale = 1.0f;
    if (g.recipe == Fp8Recipe::block) {
        amax = mx_cast_in_place(v, t.rows(), t.cols(), axis, c);
    } else {
        if (record || g.recipe == Fp8Recipe::current) amax = core::amax_of(v, n);
        const Format f = g.format(which);
        scale = g.recipe == Fp8Recipe::current ? core::current_scale(amax, format_info(f).max_finite)
                                               : delayed_scale(g.layer, which);
        // core::scaled_cast over the buffer: x · scale in FP32, then the vectorised rounding
        // (equal to the scalar encoder bit for bit, with the same tally).
        pieces(n, [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) v[i] *= scale;
        });
        c += round_pieces(f, v, n, g.overflow(which));
    }
    if (sink.counts) *sink.counts += c;
    if (record && site() >= 0) {
        core::Fp8Record r;
        r.amax = amax;
        r.scale = g.recipe == Fp8Recipe::block ? 0.0f : scale;
        r.saturated = c.overflow;
        r.underflow = c.underflow;
        r.nonzero = c.nonzero;
        r.count = n;
        stats().fp8[fp8_index(layer(), which)].add(r);
    }
    return scale;
}

float CpuBackend::fp4_operand(const Tensor& t, Scratch& scratch, Fp8Tensor which, MxAxis axis, Sink sink,
                              bool record) {
    const Fp4Gemm& g = *fp8()->fp4;
    const bool columnwise = axis == MxAxis::cols;
    const bool rht = g.rht(which, columnwise);
    const int rows = t.rows(), cols = t.cols();
    const int padded = rht ? (rows + core::k_nvfp4_block - 1) / core::k_nvfp4_block * core::k_nvfp4_block : rows;
    float* v = scratch.shape(padded, cols).data();
    decode_pieces(t.format(), t.data(), v, t.size());
    bin_values(sink.bins, v, t.size());
    std::fill(v + t.size(), v + static_cast<std::size_t>(padded) * static_cast<std::size_t>(cols), 0.0f);
    if (rht) rht_in_place(v, padded, cols, MxAxis::cols, &m_fp4_ws);
    const Fp4Tally tally = fp4_cast_in_place(v, padded, cols, axis, g.cast(which, columnwise), {}, &m_fp4_ws);
    if (sink.counts) *sink.counts += tally.counts;
    if (record && site() >= 0) {
        core::Fp8Record r;
        r.amax = tally.amax;
        r.scale = tally.s_enc;
        r.saturated = tally.counts.overflow;
        r.underflow = tally.counts.underflow;
        r.nonzero = tally.counts.nonzero;
        r.count = t.size();
        stats().fp8[fp8_index(layer(), which)].add(r);
        stats().fp4[fp8_index(layer(), which)].add(tally.record);
    }
    return 1.0f;
}

void CpuBackend::fp8_backward(const Tensor& dy, const Tensor* x, const Tensor* w, Format round_through,
                  Tensor* dw, Tensor* db, Accumulate acc, Tensor* dx) {
    const bool block = fp8()->recipe == Fp8Recipe::block;
    bool dy_recorded = false;
    float sdy = 1.0f;
    if (dx) {
        sdy = fp8_operand(dy, m_f, Fp8Tensor::dy, MxAxis::rows, sink(TensorKind::grad_operand), true);
        dy_recorded = true;
        const float sw = fp8_operand(*w, m_b, Fp8Tensor::w, MxAxis::cols, Sink{}, false);
        if (fp8()->fp4 && m_collecting && site() >= 0) {
            // The forward's (row-wise) cast of w again, beside this column-wise one: how many elements
            // the two quantizations of the same weight disagree on.
            fp4_operand(*w, m_e, Fp8Tensor::w, MxAxis::rows, Sink{}, false);
            unsigned long long differ = 0;
            const float* a = m_b.data();
            const float* b = m_e.data();
            for (std::size_t i = 0; i < w->size(); ++i) differ += core::bits_of(a[i]) != core::bits_of(b[i]);
            core::Fp4Record& r = stats().fp4[fp8_index(layer(), Fp8Tensor::w)];
            r.mismatched += differ;
            r.compared += w->size();
        }
        Map out = m_c.shape(dy.rows(), w->cols());
        product(out, m_f.map(), m_b.map(), m_panels, model(&GemmAccumulation::dgrad));  // (B, out) · (out, in)
        if (!block) out *= core::descale_factor(sdy, sw);
        store(out.data(), *dx, sink(TensorKind::grad_input));
    }
    if (!dw) return;
    if (block || !dy_recorded)
        sdy = fp8_operand(dy, m_f, Fp8Tensor::dy, block ? MxAxis::cols : MxAxis::rows,
                          dy_recorded ? Sink{} : sink(TensorKind::grad_operand), !dy_recorded);
    const float sx = fp8_operand(*x, m_b, Fp8Tensor::x, MxAxis::cols, Sink{}, false);
    Map out = m_c.shape(dy.cols(), x->cols());
    product(out, m_f.map().transpose(), m_b.map(), m_panels, model(&GemmAccumulation::wgrad));  // (out, B) · (B, in)
    if (!block) out *= core::descale_factor(sdy, sx);
    accumulate_into(out.data(), dw->size(), round_through, *dw, acc, sink(TensorKind::grad_weight));
    if (db) bias_backward(view(dy, m_d), *db, round_through, acc, sink(TensorKind::grad_weight));
}

void CpuBackend::backward_weight(CMap dyv, const Tensor& dy, const Tensor& x, Format compute,
                     Format round_through, Tensor& dw, Tensor* db, Accumulate acc) {
    CMap xv = operand(x, m_b, compute, Sink{});  // (B, in); cast counted by the forward pass
    Map out = m_c.shape(dy.cols(), x.cols());
    product(out, dyv.transpose(), xv, m_panels, model(&GemmAccumulation::wgrad));
    accumulate_into(out.data(), dw.size(), round_through, dw, acc, sink(TensorKind::grad_weight));
    if (!db) return;
    // Bias gradient: FP32 column sums of dy as stored (not cast to the compute format).
    bias_backward(narrower(compute, dy.format()) ? view(dy, m_d) : dyv, *db, round_through, acc,
                  sink(TensorKind::grad_weight));
}

void CpuBackend::bias_backward(CMap dys, Tensor& db, Format round_through, Accumulate acc, Sink to) {
    const int B = static_cast<int>(dys.rows()), out = static_cast<int>(dys.cols());
    // core::column_sum for all columns at once, row by row: each column adds in the same order.
    float* sum = m_c.shape(1, out).data();
    std::fill(sum, sum + out, 0.0f);
    for (int r = 0; r < B; ++r) {
        const float* row = dys.data() + static_cast<std::size_t>(r) * out;
        for (int c = 0; c < out; ++c) sum[c] += row[c];
    }
    accumulate_into(sum, static_cast<std::size_t>(out), round_through, db, acc, to);
}

}  // namespace mpx::cpu
