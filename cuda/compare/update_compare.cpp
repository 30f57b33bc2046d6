// The comparisons of the update pass (unscale, clipping, the optimizer, all parameters at once) and
// of running out of memory (backend_compare.hpp).
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

// ---- unscale and the optimizer -----------------------------------------------------------------

namespace {

// The ops over all parameters at once (what a run calls: one launch each on the GPU) on the device
// under test against the single-tensor ops one after another on the reference: every tensor's
// values and every site's counts equal, the sum of squares bit-equal. Three parameters as a model
// has them: a weight spanning many chunks, its bias (in place, FP32), a second layer's weight of
// less than one chunk; clipped, then Adam with the policy's master copy.
void params_at_once(Rig& rig, Report& rep, const Policy& p) {
    Backend& ref = rig.ref();
    Backend& dut = rig.dut();
    const bool master = p.weight != Format::fp32 || p.act != Format::fp32;
    struct Param {
        int layer, rows, cols;
        bool in_place;
        Twin g, u, ms, wk, s1, s2;
    };
    std::vector<Param> ps;
    std::uint64_t seed = 60;
    for (const auto& [layer, rows, cols, in_place] :
         {std::tuple{0, 300, 301, false}, std::tuple{0, 1, 300, true}, std::tuple{1, 7, 300, false}}) {
        const std::size_t n = static_cast<std::size_t>(rows) * cols;
        const Format gf = in_place ? Format::fp32 : p.act;
        const auto w0 = normal(n, seed++, 0.5);
        ps.push_back({layer, rows, cols, in_place, rig.make(gf, rows, cols, normal(n, seed++, 30.0)),
                      rig.zeros(Format::fp32, rows, cols), rig.make(Format::fp32, rows, cols, w0),
                      rig.make(p.weight, rows, cols, w0), rig.zeros(Format::fp32, rows, cols),
                      rig.zeros(Format::fp32, rows, cols)});
    }
    std::vector<ParamRef> refs, duts;
    for (Param& q : ps) {
        refs.push_back({q.layer, &q.g.ref, q.in_place ? &q.g.ref : &q.u.ref, master ? &q.ms.ref : nullptr,
                        &q.wk.ref, &q.s1.ref, &q.s2.ref});
        duts.push_back({q.layer, &q.g.dut, q.in_place ? &q.g.dut : &q.u.dut, master ? &q.ms.dut : nullptr,
                        &q.wk.dut, &q.s1.dut, &q.s2.dut});
    }
    OptimizerStep st;
    st.kind = OptimizerKind::adam;
    st.weight_decay = 0.01f;
    const ScaleBy inv(1.0f / 1024.0f);
    ref.begin_step();
    for (const ParamRef& r : refs) {
        ref.set_site(r.layer, TensorKind::unscaled);
        ref.unscale_and_check(*r.grad, inv, *r.unscaled);
    }
    for (const ParamRef& r : refs) ref.clip_to_norm(*r.unscaled, 1.0);
    for (const ParamRef& r : refs) {
        ref.set_site(r.layer, TensorKind::optimizer);
        ref.optimizer_update(st, *r.unscaled, r.master, *r.working, *r.state1, r.state2, OnInf::skip);
    }
    const StepStats sr = ref.read_stats();
    dut.begin_step();
    dut.unscale_all(duts, inv);
    dut.clip_all(duts, 1.0);
    dut.optimizer_all(st, duts, OnInf::skip);
    const StepStats sd = dut.read_stats();
    ref.begin_step();
    dut.begin_step();
    rep.expect(sr.sum_squares == sd.sum_squares,
               "all parameters at once: sum of squares " + std::to_string(sd.sum_squares) + " vs " +
                   std::to_string(sr.sum_squares));
    rep.expect(sr.found_bad == sd.found_bad, "all parameters at once: inf/NaN count differs");
    std::size_t differing = 0;
    for (Param& q : ps) {
        const std::string what = "all parameters at once: fc" + std::to_string(q.layer + 1) + " " +
                                 std::to_string(q.rows) + "x" + std::to_string(q.cols);
        for (const auto& [name, t] : {std::pair{"unscaled", q.in_place ? &q.g : &q.u},
                                      std::pair{"working copy", &q.wk}, std::pair{"master", &q.ms},
                                      std::pair{"state1", &q.s1}, std::pair{"state2", &q.s2}}) {
            const auto r = rig.ref_values(*t);
            differing += rep.close(what + " " + name, r, rig.dut_values(*t), exact_bounds(r));
        }
    }
    for (int i = 0; i < k_sites; ++i)
        rep.counts("all parameters at once: counts at " + site_name(i), sr.site[i], sd.site[i], differing);
}

}  // namespace

Report unscale_and_optimizer(Backend& ref, Backend& dut, const Policy& p) {
    Report rep;
    Rig rig(ref, dut);
    const int rows = 300, cols = 301;  // several blocks of partial sums on a GPU
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    {
        const Twin g = rig.make(p.act, rows, cols, wide(n, 31, 20.0, 10.0));
        Twin o = rig.zeros(Format::fp32, rows, cols);
        const StepStats cr = stats_of(ref, [&] { ref.unscale_and_check(g.ref, 1.0f / 4096.0f, o.ref); });
        const StepStats cd = stats_of(dut, [&] { dut.unscale_and_check(g.dut, 1.0f / 4096.0f, o.dut); });
        rep.expect(cr.found_inf() == cd.found_inf(), "unscale: found_inf differs");
        rep.expect(same_bits(rig.ref_values(o), rig.dut_values(o)),
                   "unscale: values differ in bits");
        // The sum of squares runs in core::k_sum_chunk order on both: equal bits.
        rep.expect(cd.sum_squares == cr.sum_squares,
                   "unscale: sum of squares " + std::to_string(cd.sum_squares) + " vs " +
                       std::to_string(cr.sum_squares));
        auto v = normal(n, 32, 1.0);
        v[n / 2] = std::numeric_limits<float>::infinity();
        Twin f = rig.make(Format::fp32, rows, cols, v);  // in place, as FP32 gradients are
        rep.expect(stats_of(ref, [&] { ref.unscale_and_check(f.ref, 0.5f, f.ref); }).found_inf() &&
                       stats_of(dut, [&] { dut.unscale_and_check(f.dut, 0.5f, f.dut); }).found_inf(),
                   "unscale in place: the inf was not found");
    }
    const bool master = p.weight != Format::fp32 || p.act != Format::fp32;
    for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam, OptimizerKind::adamw}) {
        const std::string what = std::string(kind == OptimizerKind::sgd    ? "sgd"
                                             : kind == OptimizerKind::adam ? "adam"
                                                                           : "adamw");
        const auto w0 = normal(n, 33, 0.5);
        Twin wk = rig.make(p.weight, rows, cols, w0), ms = rig.make(Format::fp32, rows, cols, w0);
        Twin s1 = rig.zeros(Format::fp32, rows, cols), s2 = rig.zeros(Format::fp32, rows, cols);
        for (int t = 1; t <= 3; ++t) {
            auto gv = normal(n, 40 + t, 1e-2);
            for (std::size_t i = 0; i < n; i += 10)
                gv[i] *= 1e-6f;  // updates a low working copy loses
            const Twin g = rig.make(Format::fp32, rows, cols, gv);
            OptimizerStep st;
            st.kind = kind;
            st.weight_decay = 0.01f;
            st.t = t;
            const RoundStats ur = counted(ref, [&] {
                ref.optimizer_update(st, g.ref, master ? &ms.ref : nullptr, wk.ref, s1.ref, &s2.ref,
                                     OnInf::skip);
            });
            const RoundStats ud = counted(dut, [&] {
                dut.optimizer_update(st, g.dut, master ? &ms.dut : nullptr, wk.dut, s1.dut, &s2.dut,
                                     OnInf::skip);
            });
            const std::string step = what + " t=" + std::to_string(t);
            const auto rw = rig.ref_values(wk);
            const std::size_t diff = rep.close(step + " working copy", rw, rig.dut_values(wk),
                                               exact_bounds(rw));
            if (master) {
                const auto rm = rig.ref_values(ms);
                rep.close(step + " master", rm, rig.dut_values(ms),
                          exact_bounds(rm));
            }
            const auto r1 = rig.ref_values(s1);
            rep.close(step + " state1", r1, rig.dut_values(s1),
                      exact_bounds(r1));
            const auto r2 = rig.ref_values(s2);
            rep.close(step + " state2", r2, rig.dut_values(s2),
                      exact_bounds(r2));
            rep.counts(step + " write-back", ur, ud, diff);
            rep.expect(ur.changed == ud.changed, step + ": changed " + std::to_string(ud.changed) +
                                                     " vs " + std::to_string(ur.changed));
            // Equal arithmetic, equal bits: a lost count can differ only where values do.
            const std::size_t lost_allowed = diff;
            rep.expect(
                (ur.lost > ud.lost ? ur.lost - ud.lost : ud.lost - ur.lost) <= lost_allowed,
                step + ": lost " + std::to_string(ud.lost) + " vs " + std::to_string(ur.lost));
        }
    }
    {  // Adam's t and the learning rate from the backend's own counts (applied steps, schedule
       // steps) and the host's tables (bias corrections, learning rates).
        const std::vector<float> lrs = {1e-3f, 5e-4f, 2.5e-4f};
        std::vector<core::BiasCorrection> table;
        for (long long t = 1; t <= 4; ++t) table.push_back(bias_correction(0.9, 0.999, t));
        const auto w0 = normal(n, 34, 0.5);
        Twin wk = rig.make(Format::fp32, rows, cols, w0);
        Twin s1 = rig.zeros(Format::fp32, rows, cols), s2 = rig.zeros(Format::fp32, rows, cols);
        const Twin g = rig.make(Format::fp32, rows, cols, normal(n, 45, 1e-2));
        OptimizerStep st;
        st.count = StepCount::backend;
        st.lr = 1.0f;  // not used: the table's
        for (Backend* be : {&ref, &dut}) {
            be->set_bias_corrections(table);
            be->set_applied_steps(2);  // t = 3
            be->set_lr_schedule(lrs);
            be->set_schedule_steps(1);  // lr 5e-4
        }
        const StepStats cr = stats_of(ref, [&] {
            ref.optimizer_update(st, g.ref, nullptr, wk.ref, s1.ref, &s2.ref, OnInf::skip);
            ref.count_applied_step(OnInf::skip);
            ref.count_schedule_step(OnInf::skip, false);
        });
        const StepStats cd = stats_of(dut, [&] {
            dut.optimizer_update(st, g.dut, nullptr, wk.dut, s1.dut, &s2.dut, OnInf::skip);
            dut.count_applied_step(OnInf::skip);
            dut.count_schedule_step(OnInf::skip, false);
        });
        const auto rw = rig.ref_values(wk);
        rep.close("adam t from the backend's count: working copy", rw, rig.dut_values(wk), exact_bounds(rw));
        rep.expect(cr.applied_steps == 3 && cd.applied_steps == 3,
                   "adam: the applied-step count after the step is " + std::to_string(cd.applied_steps) +
                       " (reference " + std::to_string(cr.applied_steps) + "), expected 3");
        rep.expect(cr.schedule_steps == 2 && cd.schedule_steps == 2,
                   "the schedule count after the step is " + std::to_string(cd.schedule_steps) +
                       " (reference " + std::to_string(cr.schedule_steps) + "), expected 2");
    }
    params_at_once(rig, rep, p);
    return rep;
}

// ---- out of memory -----------------------------------------------------------------------------

Report out_of_memory(Backend& dut) {
    Report rep;
    const std::int64_t before = dut.memory().total();
    try {
        Tensor huge = dut.alloc(Format::fp32, 1 << 20, 1 << 20, MemCategory::activations);  // 4 TiB
        rep.fail("allocating 4 TiB did not throw");
    } catch (const DeviceError& e) {
        const std::string msg = e.what();
        rep.expect(msg.find("out of GPU memory") != std::string::npos &&
                       msg.find("batch size") != std::string::npos &&
                       msg.find("free") != std::string::npos,
                   "the message does not say what happened and what to do: " + msg);
        rep.note("out-of-memory message: " + msg);
    }
    rep.expect(dut.memory().total() == before, "a failed allocation changed the memory totals");
    const std::vector<float> v{1.0f, -2.5f, 3.0f};
    Tensor t = dut.alloc(Format::fp16, 1, 3, MemCategory::weights);
    dut.upload(v, t);
    std::vector<float> back(3);
    dut.download(t, back);
    rep.expect(back == v, "the backend is not usable after an out-of-memory error");
    return rep;
}

}  // namespace mpx::compare
