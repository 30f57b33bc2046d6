// The comparisons of backend_compare.hpp. Every input is uploaded to both backends from the same
// floats, so both start from identical stored values; every output is downloaded from both and
// compared with the bounds of tolerance.hpp.
#include "cuda/compare/backend_compare.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/compare/rig.hpp"
#include "cuda/compare/tolerance.hpp"
#include "engine/base/error.hpp"
#include "engine/compute/site_names.hpp"
#include "engine/run/session.hpp"

namespace mpx::compare {

std::size_t Report::close(const std::string& what, const std::vector<float>& ref,
                          const std::vector<float>& got, const std::vector<double>& bound) {
    if (ref.size() != got.size()) {
        fail(what + ": sizes differ");
        return ref.size();
    }
    const Diff d = compare_values(ref, got, bound);
    if (d.outside)
        fail(what + ": " + std::to_string(d.outside) + " of " + std::to_string(ref.size()) +
             " outside the tolerance; first " + d.first);
    return d.differing;
}

void Report::counts(const std::string& what, const RoundStats& ref, const RoundStats& got,
                    std::size_t allowed) {
    if (!counts_close(ref, got, allowed))
        fail(what + ": RoundStats {" + counts_text(ref) + "} vs {" + counts_text(got) +
             "}, allowed " + std::to_string(allowed));
}

std::string Report::text() const {
    std::string t;
    for (const auto& f : m_failures) t += "FAIL " + f + "\n";
    if (m_failed > m_failures.size())
        t += "FAIL ... and " + std::to_string(m_failed - m_failures.size()) + " more\n";
    for (const auto& n : m_notes) t += "note " + n + "\n";
    return t;
}

const std::vector<Policy>& policies() {
    static const std::vector<Policy> p{
        {"fp32", Format::fp32, Format::fp32, Format::fp32},
        {"tf32", Format::fp32, Format::tf32, Format::fp32},
        {"amp-fp16", Format::fp16, Format::fp16, Format::fp32},
        {"amp-bf16", Format::bf16, Format::bf16, Format::fp32},
        {"half-fp16", Format::fp16, Format::fp16, Format::fp16},
        {"pure-bf16", Format::bf16, Format::bf16, Format::bf16},
        {"fp8-e4m3", Format::fp16, Format::e4m3, Format::fp32},
    };
    return p;
}

// ---- linear layers -----------------------------------------------------------------------------

Report linear_ops(Backend& ref, Backend& dut, const Policy& p) {
    Report rep;
    Rig rig(ref, dut);
    const Format act = p.act, compute = p.compute, weight = p.weight;
    const int B = 96, in = 80, out = 48;
    const Twin x = rig.make(act, B, in, normal(B * in, 1, 1.0));
    const Twin w = rig.make(weight, out, in, normal(out * in, 2, 0.1));
    const Twin b = rig.make(weight, 1, out, normal(out, 3, 0.1));
    const auto xr = rounded(rig.ref_values(x), compute), wr = rounded(rig.ref_values(w), compute);
    const auto br = rig.ref_values(b);
    const auto at = [](int r, int c, int cols) { return static_cast<std::size_t>(r) * cols + c; };
    {  // y (B, out) = x · wᵀ + b
        std::vector<double> abs_sum(static_cast<std::size_t>(B) * out);
        for (int r = 0; r < B; ++r)
            for (int o = 0; o < out; ++o) {
                double s = std::fabs(br[o]);
                for (int k = 0; k < in; ++k)
                    s += std::fabs(xr[at(r, k, in)]) * std::fabs(wr[at(o, k, in)]);
                abs_sum[at(r, o, out)] = s;
            }
        Twin y = rig.zeros(act, B, out);
        const RoundStats sr = counted(ref, [&] { ref.linear_forward(x.ref, w.ref, &b.ref, compute, y.ref); });
        const RoundStats sd = counted(dut, [&] { dut.linear_forward(x.dut, w.dut, &b.dut, compute, y.dut); });
        const auto ry = rig.ref_values(y);
        const std::size_t diff =
            rep.close("linear_forward", ry, rig.dut_values(y), gemm_bounds(ry, abs_sum, in, act));
        rep.counts("linear_forward", sr, sd, diff);
    }
    const Twin dy = rig.make(act, B, out, normal(B * out, 4, 1e-2));
    const auto dyr = rounded(rig.ref_values(dy), compute);
    {  // dx (B, in) = dy · w
        std::vector<double> abs_sum(static_cast<std::size_t>(B) * in, 0.0);
        for (int r = 0; r < B; ++r)
            for (int k = 0; k < in; ++k)
                for (int o = 0; o < out; ++o)
                    abs_sum[at(r, k, in)] +=
                        std::fabs(dyr[at(r, o, out)]) * std::fabs(wr[at(o, k, in)]);
        Twin dx = rig.zeros(act, B, in);
        const RoundStats sr =
            counted(ref, [&] { ref.linear_backward_input(dy.ref, w.ref, compute, dx.ref); });
        const RoundStats sd =
            counted(dut, [&] { dut.linear_backward_input(dy.dut, w.dut, compute, dx.dut); });
        const auto rdx = rig.ref_values(dx);
        const std::size_t diff = rep.close("linear_backward_input", rdx, rig.dut_values(dx),
                                           gemm_bounds(rdx, abs_sum, out, act));
        rep.counts("linear_backward_input", sr, sd, diff);
    }
    for (Accumulate acc : {Accumulate::overwrite, Accumulate::add}) {
        // dw (out, in) (+)= round_through(dyᵀ · x), db (+)= column sums; the GEMM writes `act`
        // first (autocast), then the gradient's own format (the weights' here).
        const std::string what =
            acc == Accumulate::add ? "linear_backward_weight (add)" : "linear_backward_weight";
        const bool add = acc == Accumulate::add;
        Twin dw = rig.make(weight, out, in, normal(out * in, 5, 1e-3));
        Twin db = rig.make(weight, 1, out, normal(out, 6, 1e-3));
        const auto dw0 = rig.ref_values(dw);
        const RoundStats sr = counted(ref, [&] {
            ref.linear_backward_weight(dy.ref, x.ref, compute, act, dw.ref, &db.ref, acc);
        });
        const RoundStats sd = counted(dut, [&] {
            dut.linear_backward_weight(dy.dut, x.dut, compute, act, dw.dut, &db.dut, acc);
        });
        const auto rdw = rig.ref_values(dw);
        std::vector<double> abs_sum(static_cast<std::size_t>(out) * in, 0.0);
        for (int o = 0; o < out; ++o)
            for (int k = 0; k < in; ++k)
                for (int r = 0; r < B; ++r)
                    abs_sum[at(o, k, in)] +=
                        std::fabs(dyr[at(r, o, out)]) * std::fabs(xr[at(r, k, in)]);
        std::vector<double> bound = gemm_bounds(rdw, abs_sum, B, weight);
        for (std::size_t i = 0; i < bound.size(); ++i)  // the round-through can flip one ulp of act
            bound[i] +=
                eps(act) * (std::fabs(rdw[i]) + (add ? std::fabs(dw0[i]) : 0.0)) + min_sub(act);
        const std::size_t diff = rep.close(what + " dw", rdw, rig.dut_values(dw), bound);
        // The bias column sums are core::column_sum on both: equal bits.
        rep.expect(same_bits(rig.ref_values(db), rig.dut_values(db)),
                   what + ": db differs in bits");
        rep.counts(what, sr, sd, 2 * diff);  // each differing dw element: two roundings
    }
    if (compute == Format::e4m3) {
        // Delayed scaling from the backend's amax histories: the casts take each tensor's scale
        // from its history, the step's amaxes go into the histories, which give the next scales.
        // Amaxes and scales come from the inputs alone (a maximum, a quotient): equal bits.
        std::vector<core::AmaxHistoryState> states(k_fp8_tensors);
        const float scales[k_fp8_tensors] = {64.0f, 0.25f, 2.0f};
        for (int t = 0; t < k_fp8_tensors; ++t) {
            core::AmaxHistoryState& s = states[static_cast<std::size_t>(t)];
            s.offset = 4LL * t;
            s.len = 4;
            s.next = t;
            s.active = true;
            s.scaled_max = t == 2 ? 57344.0f : 448.0f;
            s.scale = scales[t];
        }
        std::vector<float> hist(4 * k_fp8_tensors);
        for (std::size_t i = 0; i < hist.size(); ++i) hist[i] = 0.5f * static_cast<float>(i % 5);
        Fp8Gemm g;  // delayed, E4M3 forward, E5M2 backward
        StepStats st[2];
        std::vector<core::AmaxHistoryState> got_states[2];
        std::vector<float> got_hist[2];
        Backend* bes[2] = {&ref, &dut};
        for (int k = 0; k < 2; ++k) {
            Backend& be = *bes[k];
            const Tensor& xt = k ? x.dut : x.ref;
            const Tensor& wt = k ? w.dut : w.ref;
            const Tensor& dyt = k ? dy.dut : dy.ref;
            Tensor y = be.alloc(act, B, out, MemCategory::activations);
            Tensor dx = be.alloc(act, B, in, MemCategory::activations);
            Tensor dw = be.alloc(weight, out, in, MemCategory::grads);
            be.set_amax_histories(states, hist);
            be.begin_step();
            be.set_fp8(&g);
            be.set_site(0, TensorKind::output);
            be.linear_forward(xt, wt, nullptr, compute, y);
            be.set_site(0, TensorKind::grad_input);
            be.linear_backward(dyt, xt, wt, compute, act, dw, nullptr, Accumulate::overwrite, &dx);
            be.set_fp8(nullptr);
            be.update_amax_histories();
            st[k] = be.read_stats();
            be.begin_step();
            be.read_amax_histories(got_states[k], got_hist[k]);
            be.set_amax_histories({}, {});
        }
        for (int t = 0; t < k_fp8_tensors; ++t) {
            const core::Fp8Record& r = st[0].fp8[fp8_index(0, static_cast<Fp8Tensor>(t))];
            const core::Fp8Record& d = st[1].fp8[fp8_index(0, static_cast<Fp8Tensor>(t))];
            rep.expect(r.amax == d.amax && r.scale == d.scale && r.scale == scales[t],
                       "fp8 delayed, tensor " + std::to_string(t) + ": amax " + std::to_string(d.amax) +
                           " scale " + std::to_string(d.scale) + " vs " + std::to_string(r.amax) + " " +
                           std::to_string(r.scale));
        }
        rep.expect(same_bits(got_hist[0], got_hist[1]), "fp8 delayed: the amax histories differ after the step");
        bool same_states = got_states[0].size() == got_states[1].size();
        for (std::size_t i = 0; same_states && i < got_states[0].size(); ++i)
            same_states = got_states[0][i].next == got_states[1][i].next &&
                          same_bits({got_states[0][i].scale}, {got_states[1][i].scale});
        rep.expect(same_states, "fp8 delayed: the next scales or history slots differ");
        rep.expect(!got_states[0].empty() && got_states[0][0].scale != scales[0],
                   "fp8 delayed: the history's scale did not move after the step");
    }
    return rep;
}

// ---- element-wise and per-row ops --------------------------------------------------------------

Report elementwise_ops(Backend& ref, Backend& dut, const Policy& p) {
    Report rep;
    Rig rig(ref, dut);
    const Format act = p.act;
    const int B = 130, D = 70;  // a multiple of nothing: the tail of every loop runs
    const Twin z = rig.make(act, B, D, normal(B * D, 11, 3.0));
    const Twin dh = rig.make(act, B, D, normal(B * D, 12, 1.0));
    const double zs = max_abs(rig.ref_values(z)), gs = max_abs(rig.ref_values(dh));
    for (Activation a : {Activation::relu, Activation::gelu, Activation::tanh, Activation::none}) {
        const std::string what = std::string(to_string(a));
        const bool transcendental = a == Activation::gelu || a == Activation::tanh;
        Twin h = rig.zeros(act, B, D), dz = rig.zeros(act, B, D);
        const RoundStats fr = counted(ref, [&] { ref.activation_forward(a, z.ref, h.ref); }),
                         fd = counted(dut, [&] { dut.activation_forward(a, z.dut, h.dut); });
        const RoundStats br =
            counted(ref, [&] { ref.activation_backward(a, z.ref, dh.ref, dz.ref); });
        const RoundStats bd =
            counted(dut, [&] { dut.activation_backward(a, z.dut, dh.dut, dz.dut); });
        const auto rh = rig.ref_values(h), rdz = rig.ref_values(dz);
        std::size_t diff = rep.close(
            what + " forward", rh, rig.dut_values(h),
            transcendental ? transcendental_bounds(rh, act, zs) : exact_bounds(rh));
        rep.counts(what + " forward", fr, fd, diff);
        diff = rep.close(what + " backward", rdz, rig.dut_values(dz),
                         transcendental ? transcendental_bounds(rdz, act, 2 * zs * gs)
                                        : exact_bounds(rdz));
        rep.counts(what + " backward", br, bd, diff);
    }
    {  // dropout: the same mask (a hash of seed and index), one multiply
        Twin h = rig.make(act, B, D, normal(B * D, 13, 1.0));
        const RoundStats sr = counted(ref, [&] { ref.dropout(h.ref, 0.25f, 99); }),
                         sd = counted(dut, [&] { dut.dropout(h.dut, 0.25f, 99); });
        rep.expect(same_bits(rig.ref_values(h), rig.dut_values(h)),
                   "dropout: values differ in bits");
        rep.counts("dropout", sr, sd, 0);
    }
    {  // layernorm, FP32 γ and β as the model keeps them
        const Twin g = rig.make(Format::fp32, 1, D, normal(D, 14, 1.0)),
                   be = rig.make(Format::fp32, 1, D, normal(D, 15, 1.0));
        Twin y = rig.zeros(act, B, D), mean = rig.zeros(Format::fp32, B, 1),
             rstd = rig.zeros(Format::fp32, B, 1);
        const RoundStats fr = counted(
            ref, [&] { ref.layernorm_forward(z.ref, g.ref, be.ref, y.ref, mean.ref, rstd.ref); });
        const RoundStats fd = counted(
            dut, [&] { dut.layernorm_forward(z.dut, g.dut, be.dut, y.dut, mean.dut, rstd.dut); });
        const auto rm = rig.ref_values(mean), rr = rig.ref_values(rstd), ry = rig.ref_values(y);
        rep.close("layernorm mean", rm, rig.dut_values(mean),
                  exact_bounds(rm));
        rep.close("layernorm rstd", rr, rig.dut_values(rstd),
                  exact_bounds(rr));
        const std::size_t diff = rep.close("layernorm y", ry, rig.dut_values(y),
                                           exact_bounds(ry));
        rep.counts("layernorm forward", fr, fd, diff);

        Twin dx = rig.zeros(act, B, D);
        Twin dg = rig.make(Format::fp32, 1, D, normal(D, 16, 0.1)),
             db = rig.make(Format::fp32, 1, D, normal(D, 17, 0.1));
        const RoundStats br = counted(ref, [&] {
            ref.layernorm_backward(z.ref, g.ref, mean.ref, rstd.ref, dh.ref, dx.ref, dg.ref, db.ref,
                                   Accumulate::add);
        });
        const RoundStats bd = counted(dut, [&] {
            dut.layernorm_backward(z.dut, g.dut, mean.dut, rstd.dut, dh.dut, dx.dut, dg.dut, db.dut,
                                   Accumulate::add);
        });
        const auto rdx = rig.ref_values(dx), rdg = rig.ref_values(dg), rdb = rig.ref_values(db);
        std::size_t d2 = rep.close("layernorm dx", rdx, rig.dut_values(dx),
                                   exact_bounds(rdx));
        d2 += rep.close("layernorm dgamma", rdg, rig.dut_values(dg),
                        exact_bounds(rdg));
        d2 += rep.close("layernorm dbeta", rdb, rig.dut_values(db),
                        exact_bounds(rdb));
        rep.counts("layernorm backward", br, bd, d2);
    }
    {  // layernorm backward in place (dx = dy) equals out of place; zero rows give dγ = dβ = 0
        const int R = 7;
        const Twin x = rig.make(act, R, D, normal(R * D, 19, 2.0)),
                   g = rig.make(Format::fp32, 1, D, normal(D, 20, 1.0)),
                   bt = rig.make(Format::fp32, 1, D, normal(D, 25, 1.0));
        Twin y = rig.zeros(act, R, D), mean = rig.zeros(Format::fp32, R, 1),
             rstd = rig.zeros(Format::fp32, R, 1);
        dut.layernorm_forward(x.dut, g.dut, bt.dut, y.dut, mean.dut, rstd.dut);
        const auto dyv = normal(R * D, 26, 1.0);
        Twin dy = rig.make(act, R, D, dyv), dy2 = rig.make(act, R, D, dyv), dx = rig.zeros(act, R, D);
        Twin dg = rig.zeros(Format::fp32, 1, D), db = rig.zeros(Format::fp32, 1, D);
        Twin dg2 = rig.zeros(Format::fp32, 1, D), db2 = rig.zeros(Format::fp32, 1, D);
        dut.layernorm_backward(x.dut, g.dut, mean.dut, rstd.dut, dy.dut, dx.dut, dg.dut, db.dut,
                               Accumulate::overwrite);
        dut.layernorm_backward(x.dut, g.dut, mean.dut, rstd.dut, dy2.dut, dy2.dut, dg2.dut,
                               db2.dut, Accumulate::overwrite);
        rep.expect(same_bits(rig.dut_values(dx), rig.dut_values(dy2)) &&
                       same_bits(rig.dut_values(dg), rig.dut_values(dg2)) &&
                       same_bits(rig.dut_values(db), rig.dut_values(db2)),
                   "layernorm backward in place (dx = dy) differs from out of place");
        Twin x0 = rig.zeros(act, 0, D), dy0 = rig.zeros(act, 0, D), dx0 = rig.zeros(act, 0, D);
        Twin m0 = rig.zeros(Format::fp32, 0, 1), r0 = rig.zeros(Format::fp32, 0, 1);
        Twin dg0 = rig.make(Format::fp32, 1, D, std::vector<float>(D, 5.0f)),
             db0 = rig.make(Format::fp32, 1, D, std::vector<float>(D, 5.0f));
        dut.layernorm_backward(x0.dut, g.dut, m0.dut, r0.dut, dy0.dut, dx0.dut, dg0.dut, db0.dut,
                               Accumulate::overwrite);
        const auto z = std::vector<float>(D, 0.0f);
        rep.expect(rig.dut_values(dg0) == z && rig.dut_values(db0) == z,
                   "layernorm backward over zero rows must give zero dgamma and dbeta");
    }
    {  // transfers: upload's counts, copy into every format, scale, fill
        const auto v = wide(static_cast<std::size_t>(B) * D, 18, 30.0, 20.0);
        Tensor tr = ref.alloc(act, B, D, MemCategory::activations),
               td = dut.alloc(act, B, D, MemCategory::activations);
        const RoundStats ur = counted(ref, [&] { ref.upload(v, tr); }),
                         ud = counted(dut, [&] { dut.upload(v, td); });
        rep.counts("upload", ur, ud, 0);
        std::vector<float> vr(tr.size()), vd(td.size());
        ref.download(tr, vr);
        dut.download(td, vd);
        rep.expect(same_bits(vr, vd), "upload/download: values differ in bits");
        for (Format f : all_formats) {
            Tensor cr = ref.alloc(f, B, D, MemCategory::workspace),
                   cd = dut.alloc(f, B, D, MemCategory::workspace);
            ref.copy(tr, cr);
            dut.copy(td, cd);
            ref.scale(cr, 3.0f);
            dut.scale(cd, 3.0f);
            ref.download(cr, vr);
            dut.download(cd, vd);
            rep.expect(same_bits(vr, vd),
                       "copy into " + name(f) + " and scale: values differ in bits");
            ref.fill(cr, 0.1f);
            dut.fill(cd, 0.1f);
            ref.download(cr, vr);
            dut.download(cd, vd);
            rep.expect(same_bits(vr, vd), "fill " + name(f) + ": values differ in bits");
        }
        rep.expect(ref.memory().bytes == dut.memory().bytes, "memory accounting differs");
    }
    return rep;
}

// ---- losses ------------------------------------------------------------------------------------

Report losses(Backend& ref, Backend& dut, const Policy& p) {
    Report rep;
    Rig rig(ref, dut);
    const Format act = p.act;
    const int B = 256, C = 10;
    const Twin logits = rig.make(act, B, C, normal(B * C, 21, 4.0));
    std::vector<int> labels(B);
    Rng r(22);
    for (int& l : labels) l = static_cast<int>(r.below(C));
    const double lmax = max_abs(rig.ref_values(logits));
    Twin dl = rig.zeros(act, B, C);
    for (float scale : {1.0f, 65536.0f, 1e30f}) {  // the last overflows FP16 and BF16 gradients
        const std::string what = "cross-entropy, scale " + std::to_string(scale);
        const LossRun lr = loss_of(ref, [&] { ref.softmax_cross_entropy(logits.ref, labels, scale, dl.ref); });
        const LossRun ld = loss_of(dut, [&] { dut.softmax_cross_entropy(logits.dut, labels, scale, dl.dut); });
        rep.expect(std::fabs(lr.loss - ld.loss) <= 16 * k_eps32 * (lr.loss + lmax),
                   what + ": loss " + std::to_string(ld.loss) + " vs " + std::to_string(lr.loss));
        const auto rdl = rig.ref_values(dl);
        const std::size_t diff =
            rep.close(what + " dlogits", rdl, rig.dut_values(dl),
                      transcendental_bounds(rdl, act, max_abs(rdl) * (1.0 + lmax)));
        rep.counts(what, lr.rounding, ld.rounding, diff);
    }
    rep.expect(ref.accuracy(logits.ref, labels) == dut.accuracy(logits.dut, labels),
               "accuracy differs");
    {  // in place (dlogits = logits): each side must give what it gives out of place
        Twin in_place = rig.make(act, B, C, rig.ref_values(logits));
        const LossRun a = loss_of(dut, [&] { dut.softmax_cross_entropy(logits.dut, labels, 8.0f, dl.dut); });
        const LossRun b = loss_of(dut, [&] { dut.softmax_cross_entropy(in_place.dut, labels, 8.0f, in_place.dut); });
        rep.expect(a.loss == b.loss, "cross-entropy in place: loss " + std::to_string(b.loss) +
                                         " vs " + std::to_string(a.loss));
        rep.expect(same_bits(rig.dut_values(dl), rig.dut_values(in_place)),
                   "cross-entropy in place: gradients differ from out of place");
    }

    const Twin pred = rig.make(act, B, 3, normal(B * 3, 23, 1.0)),
               target = rig.make(Format::fp32, B, 3, normal(B * 3, 24, 1.0));
    Twin dp = rig.zeros(act, B, 3);
    const LossRun mr = loss_of(ref, [&] { ref.mse(pred.ref, target.ref, 1024.0f, dp.ref); }),
                  md = loss_of(dut, [&] { dut.mse(pred.dut, target.dut, 1024.0f, dp.dut); });
    rep.expect(mr.loss == md.loss,
               "MSE loss " + std::to_string(md.loss) + " vs " + std::to_string(mr.loss));
    rep.expect(same_bits(rig.ref_values(dp), rig.dut_values(dp)), "MSE gradient differs in bits");
    rep.counts("MSE", mr.rounding, md.rounding, 0);
    return rep;
}

}  // namespace mpx::compare
