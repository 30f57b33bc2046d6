// Exponent histograms: the binning function against a brute-force count, flush-to-zero placement,
// the update-to-ulp ratio, what a run collects and keeps, and the three teaching scenarios the
// histograms exist to explain (underflow, overflow-storm, lost-updates).
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/compute/backend.hpp"
#include "engine/compute/histograms.hpp"
#include "engine/compute/site_names.hpp"
#include "engine/model/dataset.hpp"
#include "engine/precision/format.hpp"
#include "engine/run/session.hpp"

using namespace mpx;

namespace {

// floor(log2|x|) by a different road than the engine's bit arithmetic: frexp gives x = m·2^e with
// 0.5 ≤ |m| < 1, so floor(log2|x|) = e − 1.
int brute_floor_log2(float x) {
    int e = 0;
    std::frexp(static_cast<double>(x), &e);
    return e - 1;
}

int brute_slot(float x) {
    if (std::isnan(x)) return core::k_slot_nan;
    if (std::isinf(x)) return core::k_slot_inf;
    if (x == 0.0f) return core::k_slot_zero;
    return std::clamp(brute_floor_log2(x), core::k_bin_min, core::k_bin_max) - core::k_bin_min;
}

float from_bits(std::uint32_t b) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

// Mass of a histogram below log2 bin `below` (exclusive) over its non-zero finite values.
double share_below(const HistogramSnapshot& s, const Histogram& h, int below) {
    unsigned long long under = 0, all = 0;
    for (int b = core::k_bin_min; b <= core::k_bin_max; ++b) {
        const auto c = s.count(h, b);
        all += c;
        if (b < below) under += c;
    }
    return all ? static_cast<double>(under) / static_cast<double>(all) : 0.0;
}

// Count-weighted mean bin of a histogram's finite non-zero values.
double mean_bin(const HistogramSnapshot& s, const Histogram& h) {
    double sum = 0.0, n = 0.0;
    for (int b = core::k_bin_min; b <= core::k_bin_max; ++b) {
        const double c = static_cast<double>(s.count(h, b));
        sum += c * b;
        n += c;
    }
    return n > 0 ? sum / n : std::nan("");
}

std::unique_ptr<Session> trained(SessionConfig c, long long steps) {
    c.steps = steps;
    auto s = std::make_unique<Session>(std::move(c));
    while (!s->finished()) s->step();
    return s;
}

// The run whose label is `label` or starts with it ("amp-fp16" finds "amp-fp16+pytorch").
std::size_t run_index(const Session& s, const std::string& label) {
    for (std::size_t i = 0; i < s.run_count(); ++i)
        if (s.run(i).info().label == label) return i;
    for (std::size_t i = 0; i < s.run_count(); ++i)
        if (s.run(i).info().label.rfind(label + "+", 0) == 0) return i;
    throw std::runtime_error("no run " + label);
}

struct Cli {
    int code = -1;
    QString err;
};
Cli cli(const QStringList& args) {
    QProcess p;
    p.start(QStringLiteral(MPX_CLI_PATH), args);
    Cli r;
    if (!p.waitForFinished(120000)) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

}  // namespace

class TestHistograms : public QObject {
    Q_OBJECT
private slots:
    void the_bin_of_every_exponent_and_special_value_is_floor_log2() {
        // Every FP32 exponent field, with mantissas at both ends and in between, both signs.
        for (std::uint32_t e = 0; e < 256; ++e)
            for (std::uint32_t m : {0u, 1u, 0x400000u, 0x7fffffu})
                for (std::uint32_t sign : {0u, 0x80000000u}) {
                    const float x = from_bits(sign | (e << 23) | m);
                    QCOMPARE(core::bin_slot(x), brute_slot(x));
                }
        std::mt19937 rng(7);
        for (int i = 0; i < 200000; ++i) {
            const float x = from_bits(static_cast<std::uint32_t>(rng()));
            QCOMPARE(core::bin_slot(x), brute_slot(x));
        }
        // The edges: 2^-64 is the lowest bin's own value; everything smaller is held there too.
        QCOMPARE(core::bin_slot(0x1p-64f), 0);
        QCOMPARE(core::bin_slot(0x1p-149f), 0);
        QCOMPARE(core::bin_slot(0x1p63f), core::k_log2_bins - 1);
        QCOMPARE(core::bin_slot(0x1p127f), core::k_log2_bins - 1);
        QCOMPARE(core::bin_slot(1.0f), -core::k_bin_min);
        QCOMPARE(core::bin_slot(0x1.fffffep-1f), -core::k_bin_min - 1);
        QCOMPARE(core::bin_slot(-0.0f), core::k_slot_zero);
        QCOMPARE(core::bin_slot(-std::numeric_limits<float>::infinity()), core::k_slot_inf);
        QCOMPARE(core::bin_slot(std::numeric_limits<float>::quiet_NaN()), core::k_slot_nan);
    }

    void ulp_log2_is_the_spacing_to_the_next_stored_value() {
        // For every positive finite code of the narrow formats (and samples of FP32), the ulp is
        // the next code's value minus this one's: a power of two whose log2 ulp_log2 gives.
        for (Format f : {Format::fp16, Format::bf16, Format::e4m3, Format::e5m2, Format::tf32}) {
            const FormatInfo d = format_info(f);
            const std::uint32_t max_code = core::max_finite_code(d);
            for (std::uint32_t code = 0; code < max_code; ++code) {
                const float w = core::decode_code(d, code), next = core::decode_code(d, code + 1);
                const double ulp = static_cast<double>(next) - static_cast<double>(w);
                QCOMPARE(std::ldexp(1.0, core::ulp_log2(f, w)), ulp);
            }
        }
        QCOMPARE(core::ulp_log2(Format::fp32, 1.0f), -23);
        QCOMPARE(core::ulp_log2(Format::fp32, 0.0f), -149);
        QCOMPARE(core::ulp_log2(Format::fp16, 0.0f), -24);
        QCOMPARE(core::ulp_log2(Format::fp16, 1000.0f), 9 - 10);
    }

    void update_to_ulp_puts_a_lost_update_below_minus_one() {
        // FP16 weight 1.0 (ulp 2^-10): an update of 2^-12 is a quarter ulp, bin −2, and is lost;
        // 2^-10 is one ulp, bin 0; in FP32 (ulp 2^-23) the same 2^-12 is 2^11 ulps.
        const auto bin = [](Format f, float w, float u) {
            return core::update_ulp_slot(f, w, u) + core::k_bin_min;
        };
        QCOMPARE(bin(Format::fp16, 1.0f, 0x1p-12f), -2);
        QCOMPARE(core::round_value(Format::fp16, 1.0f + 0x1p-12f), 1.0f);  // what "lost" means
        QCOMPARE(bin(Format::fp16, 1.0f, 0x1p-10f), 0);
        QCOMPARE(bin(Format::fp16, 1.0f, -0x1.8p-11f), -1);  // 0.75 ulp: kept, bin −1
        QCOMPARE(bin(Format::fp32, 1.0f, 0x1p-12f), 11);
        QCOMPARE(core::update_ulp_slot(Format::fp16, 0.5f, 0.0f), core::k_slot_zero);
        QCOMPARE(core::update_ulp_slot(Format::fp16, 0.0f, 0x1p-26f) + core::k_bin_min, -2);  // ulp(0) = 2^-24
        QCOMPARE(core::update_ulp_slot(Format::fp16, 0.5f, -std::numeric_limits<float>::infinity()),
                 core::k_slot_inf);
    }

    void a_store_bins_the_values_before_rounding_so_a_flushed_value_counts_where_it_was() {
        auto be = make_cpu_backend();
        Tensor t = be->alloc(Format::fp16, 1, 6, MemCategory::activations);
        const std::vector<float> v = {0x1p-30f, -0x1p-26f, 3.0f, 0.0f, 1e6f,
                                      std::numeric_limits<float>::quiet_NaN()};
        be->begin_step();
        be->collect_histograms(3);
        be->set_site(2, TensorKind::input);
        be->upload(v, t);
        const StepStats& st = be->read_stats();
        const StepHistograms* h = be->read_histograms();
        QVERIFY(h);
        const core::Bins& b = h->site[site_index(2, TensorKind::input)];
        QCOMPARE(b.n[-30 - core::k_bin_min], 1ull);  // stored as 0 in FP16, binned at 2^-30
        QCOMPARE(b.n[-26 - core::k_bin_min], 1ull);
        QCOMPARE(b.n[1 - core::k_bin_min], 1ull);    // 3 = 1.5·2^1
        QCOMPARE(b.n[19 - core::k_bin_min], 1ull);   // 1e6 ≈ 1.9·2^19, overflows FP16 to inf
        QCOMPARE(b.n[core::k_slot_zero], 1ull);
        QCOMPARE(b.n[core::k_slot_nan], 1ull);
        QCOMPARE(b.n[core::k_slot_inf], 0ull);
        unsigned long long total = 0;
        for (auto c : b.n) total += c;
        QCOMPARE(total, 6ull);
        // The counts of the same store agree: two flushed, one overflowed.
        QCOMPARE(st.site[site_index(2, TensorKind::input)].underflow, 2ull);
        QCOMPARE(st.site[site_index(2, TensorKind::input)].overflow, 1ull);
        // A step that does not collect gives no histograms.
        be->begin_step();
        be->upload(v, t);
        be->read_stats();
        QVERIFY(!be->read_histograms());
    }

    void an_op_histogram_equals_a_brute_force_count_of_its_fp32_results() {
        auto be = make_cpu_backend();
        const int B = 16, D = 24;
        Tensor z = be->alloc(Format::bf16, B, D, MemCategory::activations);
        Tensor h = be->alloc(Format::fp16, B, D, MemCategory::activations);
        std::mt19937 rng(3);
        std::vector<float> v(static_cast<std::size_t>(B * D));
        for (float& x : v) x = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng),
                                          std::uniform_int_distribution<int>(-40, 20)(rng));
        be->upload(v, z);
        std::vector<float> zs(v.size());
        be->download(z, zs);
        be->begin_step();
        be->collect_histograms(1);
        be->set_site(0, TensorKind::activation);
        be->activation_forward(Activation::gelu, z, h);
        be->read_stats();
        const core::Bins& got = be->read_histograms()->site[site_index(0, TensorKind::activation)];
        core::Bins want;
        for (float x : zs) ++want.n[brute_slot(core::act_forward<Activation::gelu>(x))];
        for (int i = 0; i < core::k_slots; ++i) QCOMPARE(got.n[i], want.n[i]);
    }

    void a_run_collects_every_nth_step_with_one_histogram_per_tensor_and_layer() {
        SessionConfig c = load_config("default");
        c.runs = {"fp32", "amp-fp16"};
        c.instruments.every = 7;
        auto s = trained(c, 30);
        const int B = c.train.batch;
        for (std::size_t r = 0; r < s->run_count(); ++r) {
            const auto& snaps = s->run(r).histograms().snapshots();
            QCOMPARE(snaps.size(), std::size_t{5});  // steps 0, 7, 14, 21, 28
            QCOMPARE(snaps.back().step, 28LL);
            const HistogramSnapshot& snap = snaps[1];
            // Per layer: input, preact, output, grad_output, grad_weight, grad_weight_unscaled,
            // weight, update_ulp (no LayerNorm: no normalized).
            QCOMPARE(snap.tensors.size(), static_cast<std::size_t>(c.model.layers() * 8));
            for (int l = 0; l < c.model.layers(); ++l) {
                const int out = c.model.sizes[static_cast<std::size_t>(l) + 1];
                const int in = c.model.sizes[static_cast<std::size_t>(l)];
                const auto total = [&](HistTensor t) { return snap.total(*snap.find(l, t)); };
                QCOMPARE(total(HistTensor::preact), static_cast<unsigned long long>(B * out));
                QCOMPARE(total(HistTensor::output), static_cast<unsigned long long>(B * out));
                QCOMPARE(total(HistTensor::input), static_cast<unsigned long long>(B * in));
                QCOMPARE(total(HistTensor::grad_output), static_cast<unsigned long long>(B * out));
                // weight and bias gradients; their unscaled copies; weights and biases written
                // back; one update ratio per weight and bias.
                const auto params = static_cast<unsigned long long>(out * in + out);
                QCOMPARE(total(HistTensor::grad_weight), params);
                QCOMPARE(total(HistTensor::grad_weight_unscaled), params);
                QCOMPARE(total(HistTensor::weight), params);
                QCOMPARE(total(HistTensor::update_ulp), params);
                QVERIFY(!snap.find(l, HistTensor::normalized));
            }
            // Formats are the run's storage: AMP stores activations in FP16, updates land on the
            // FP32 master.
            const bool amp = r == run_index(*s, "amp-fp16");
            QCOMPARE(snap.find(0, HistTensor::preact)->format, amp ? Format::fp16 : Format::fp32);
            QCOMPARE(snap.find(0, HistTensor::update_ulp)->format, Format::fp32);
        }
        // Off: nothing collected.
        c.instruments.every = 0;
        auto off = trained(c, 5);
        QVERIFY(off->run(0).histograms().snapshots().empty());
    }

    void collecting_does_not_change_training() {
        SessionConfig c = load_config("default");
        c.instruments.every = 1;
        SessionConfig without = c;
        without.instruments.every = 0;
        Session a(c), b(without);
        for (int i = 0; i < 20; ++i) {
            const auto ra = a.step(), rb = b.step();
            for (std::size_t r = 0; r < ra.size(); ++r) {
                QCOMPARE(ra[r].loss, rb[r].loss);
                QCOMPARE(ra[r].grad_norm, rb[r].grad_norm);
                QCOMPARE(ra[r].underflow_frac, rb[r].underflow_frac);
            }
        }
    }

    void the_log_stays_bounded_and_evenly_spaced_over_the_whole_run() {
        HistogramLog log(64 * 1024);
        const int every = 10;
        long long added = 0;
        for (long long step = 0; step < 200000; ++step) {
            if (!log.wants(step, every)) continue;
            HistogramSnapshot s;
            s.step = step;
            core::Bins b;
            for (int i = 40; i < 80; ++i) b.n[i] = 1;
            s.add(0, HistTensor::preact, Format::fp16, b);
            log.add(std::move(s), every);
            ++added;
            QVERIFY(log.bytes() <= 64 * 1024);
        }
        const auto& snaps = log.snapshots();
        QVERIFY(snaps.size() >= 50);
        QCOMPARE(snaps.front().step, 0LL);
        QVERIFY(snaps.back().step >= 200000 - every * log.stride());
        const long long spacing = snaps[1].step - snaps[0].step;
        QCOMPARE(spacing, every * log.stride());
        for (std::size_t i = 1; i < snaps.size(); ++i) QCOMPARE(snaps[i].step - snaps[i - 1].step, spacing);
        QVERIFY(added > static_cast<long long>(snaps.size()));
    }

    // underflow: without a scaler, FP16's gradients sit below its smallest subnormal (2^-24) and
    // flush: the logits' gradient almost entirely, and fc2's weight gradient is mostly flushed
    // values or zeros from gradients flushed upstream. The scaled run's sit log2(scale) higher,
    // inside FP16's range. (Measured at step 190: 1.00 below 2^-24; 0.92; shift 16, flushed
    // ≤ 0.02, below 2^-14 in fc1/fc3 ≤ 0.15.)
    void underflow_scaled_gradients_move_into_range_by_log2_of_the_scale() {
        auto s = trained(load_config("underflow"), 200);
        const auto& none = s->run(run_index(*s, "amp-fp16+none")).histograms().snapshots().back();
        const auto& scaled = s->run(run_index(*s, "amp-fp16+pytorch")).histograms().snapshots().back();
        QCOMPARE(none.step, 190LL);
        const Histogram& logits = *none.find(2, HistTensor::grad_output);
        QCOMPARE(logits.format, Format::fp16);
        QVERIFY2(share_below(none, logits, -24) > 0.9, qPrintable(QString::number(share_below(none, logits, -24))));
        const Histogram& gn = *none.find(1, HistTensor::grad_weight);
        QCOMPARE(gn.format, Format::fp16);
        unsigned long long below = gn.zero;
        for (int b = core::k_bin_min; b < -24; ++b) below += none.count(gn, b);
        const double flushed = static_cast<double>(below) / static_cast<double>(none.total(gn));
        QVERIFY2(flushed > 0.8, qPrintable(QString::number(flushed)));
        // The scaled run's mass sits where its unscaled copy's is, shifted by log2(scale), and
        // mostly at or above FP16's smallest normal (2^-14).
        const double shift = std::log2(scaled.loss_scale);
        QVERIFY(shift >= 8);
        for (int l = 0; l < 3; ++l) {
            const Histogram& gs = *scaled.find(l, HistTensor::grad_weight);
            const Histogram& gu = *scaled.find(l, HistTensor::grad_weight_unscaled);
            QVERIFY2(std::fabs(mean_bin(scaled, gs) - mean_bin(scaled, gu) - shift) < 1.0,
                     qPrintable(QString("fc%1: %2 %3 %4").arg(l + 1).arg(mean_bin(scaled, gs)).arg(mean_bin(scaled, gu)).arg(shift)));
            QVERIFY2(share_below(scaled, gs, -24) < 0.05,
                     qPrintable(QString("fc%1: %2").arg(l + 1).arg(share_below(scaled, gs, -24))));
            if (l != 1)  // fc1 and fc3 mostly normal; fc2's smaller gradients half subnormal (0.50)
                QVERIFY2(share_below(scaled, gs, -14) < 0.25,
                         qPrintable(QString("fc%1: %2").arg(l + 1).arg(share_below(scaled, gs, -14))));
        }
    }

    // overflow-storm: every skipped step names the first layer and tensor that held inf/NaN.
    void overflow_storm_names_a_first_nonfinite_site_for_every_skipped_step() {
        SessionConfig c = load_config("overflow-storm");
        c.steps = 60;
        Session s(c);
        int skipped = 0;
        while (!s.finished())
            for (const StepRecord& r : s.step()) {
                if (!r.skipped) continue;
                ++skipped;
                QVERIFY(r.first_nonfinite >= 0);
                QVERIFY(!site_name(r.first_nonfinite).empty());
                // Every inf there came from a finite FP32 value too large for FP16 (nothing is
                // inf before the step), so the magnitude is known and past FP16's rounding edge.
                QVERIFY2(r.first_nonfinite_magnitude, site_name(r.first_nonfinite).c_str());
                QVERIFY(*r.first_nonfinite_magnitude >= 65520.0);
                QVERIFY(*r.first_nonfinite_magnitude <= std::numeric_limits<float>::max());
            }
        QVERIFY(skipped >= 3);
    }

    // The magnitude before overflow: the largest finite |x| that rounding made inf/NaN (or
    // saturated), per site, combined by max; an inf that arrives as an inf is not an overflow.
    void a_site_keeps_the_largest_value_that_overflowed_before_rounding() {
        auto be = make_cpu_backend();
        const float inf = std::numeric_limits<float>::infinity();
        Tensor h = be->alloc(Format::fp16, 1, 6, MemCategory::activations);
        const std::vector<float> v = {1.0f, 70000.0f, -90000.5f, inf, 65519.0f, 3.0f};
        core::Counts c = counted(*be, [&] { be->upload(v, h); });
        QCOMPARE(c.overflow, 2ull);  // 65519 rounds down to 65504; inf was inf already
        QCOMPARE(core::float_of(static_cast<std::uint32_t>(c.overflow_max)), 90000.5f);
        // E4M3 saturates at 448: 500 and −1e4 saturate, the larger is kept; 300 is stored.
        Tensor e = be->alloc(Format::e4m3, 1, 3, MemCategory::activations);
        c = counted(*be, [&] { be->upload(std::vector<float>{500.0f, -1e4f, 300.0f}, e); });
        QCOMPARE(c.overflow, 2ull);
        QCOMPARE(core::float_of(static_cast<std::uint32_t>(c.overflow_max)), 1e4f);
        // Nothing overflowed: 0.
        c = counted(*be, [&] { be->upload(std::vector<float>{1.0f, inf, 2.0f}, e); });
        QCOMPARE(c.overflow_max, 0ull);
        // A GEMM's FP32 result overflowing its FP16 output: 300 · 300 = 90000 exactly.
        Tensor x = be->alloc(Format::fp32, 1, 1, MemCategory::activations);
        Tensor w = be->alloc(Format::fp32, 1, 1, MemCategory::weights);
        Tensor y = be->alloc(Format::fp16, 1, 1, MemCategory::activations);
        be->upload(std::vector<float>{300.0f}, x);
        be->upload(std::vector<float>{300.0f}, w);
        c = counted(*be, [&] { be->linear_forward(x, w, nullptr, Format::fp32, y); });
        QCOMPARE(core::float_of(static_cast<std::uint32_t>(c.overflow_max)), 90000.0f);
        // Sums add, the maximum stays a maximum.
        core::Counts a, b;
        a.overflow = 1, a.overflow_max = core::bits_of(7e4f);
        b.overflow = 2, b.overflow_max = core::bits_of(1e5f);
        a += b;
        QCOMPARE(a.overflow, 3ull);
        QCOMPARE(a.overflow_max, static_cast<unsigned long long>(core::bits_of(1e5f)));
    }

    // A step's record carries the magnitude of its first inf/NaN: inputs ×1e5 overflow autocast's
    // FP16 cast of fc1's operands, and the value named is one of the (scaled) inputs, exactly.
    void a_step_names_the_magnitude_that_overflowed_first() {
        SessionConfig c = load_config("default");
        c.runs = {"amp-fp16"};
        c.steps = 1;
        c.data.input_scale = 1e5;
        Session s(c);
        const StepRecord r = s.step().front();
        QCOMPARE(QString::fromStdString(site_name(r.first_nonfinite)), QString("fc1.operand"));
        QVERIFY(r.first_nonfinite_magnitude);
        QVERIFY(*r.first_nonfinite_magnitude >= 65520.0);  // past FP16's rounding edge
        const Dataset d = make_dataset(c.data);
        bool an_input = false;
        for (Eigen::Index i = 0; i < d.x_train.size(); ++i)
            an_input |= std::fabs(d.x_train.data()[i]) == static_cast<float>(*r.first_nonfinite_magnitude);
        QVERIFY(an_input);
        QCOMPARE(first_nonfinite_text(r.first_nonfinite, r.first_nonfinite_magnitude),
                 "fc1.operand, where " + [&] {
                     char b[32];
                     std::snprintf(b, sizeof b, "%.6g", *r.first_nonfinite_magnitude);
                     return std::string(b);
                 }() + " overflowed");
        QCOMPARE(first_nonfinite_text(-1, std::nullopt), std::string());
        QCOMPARE(first_nonfinite_text(site_index(1, TensorKind::grad_input), std::nullopt),
                 std::string("fc2.grad_input"));
    }

    // lost-updates: pure FP16 adds its updates to FP16 weights, and most are below half an ulp;
    // AMP adds the same updates to its FP32 master, which holds nearly all of them. (Measured at
    // step 1500, all layers: pure 0.94 below −1, AMP 0.09; at step 0: 0.50 and 0.00.)
    void lost_updates_pure_fp16_updates_sit_below_half_an_ulp() {
        SessionConfig c = load_config("lost-updates");
        c.instruments.every = 500;
        auto s = trained(c, 1501);
        const auto& pure = s->run(run_index(*s, "pure-fp16")).histograms().snapshots().back();
        const auto& amp = s->run(run_index(*s, "amp-fp16")).histograms().snapshots().back();
        QCOMPARE(pure.step, 1500LL);
        const auto share = [](const HistogramSnapshot& snap) {
            double below = 0, all = 0;
            for (int l = 0; l < 3; ++l) {
                const Histogram& h = *snap.find(l, HistTensor::update_ulp);
                for (int b = core::k_bin_min; b <= core::k_bin_max; ++b) {
                    all += static_cast<double>(snap.count(h, b));
                    if (b < -1) below += static_cast<double>(snap.count(h, b));
                }
            }
            return below / all;
        };
        QCOMPARE(pure.find(0, HistTensor::update_ulp)->format, Format::fp16);
        QCOMPARE(amp.find(0, HistTensor::update_ulp)->format, Format::fp32);
        QVERIFY2(share(pure) > 0.8, qPrintable(QString::number(share(pure))));
        QVERIFY2(share(amp) < 0.2, qPrintable(QString::number(share(amp))));
    }

    // mpx-cli run --histograms: the long form, every bin of the engine's snapshots, atomically.
    void the_cli_writes_the_histograms_in_long_form() {
        QTemporaryDir dir;
        const QString out = dir.filePath("h.csv");
        const Cli r = cli({"run", "--config", "default", "--steps", "12", "--set", "instruments.every=5",
                           "--precision", "fp32,amp-fp16", "--histograms", out, "--quiet"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(f.readAll()).split("\r\n", Qt::SkipEmptyParts);
        QCOMPARE(lines.front(), QString("run,step,layer,tensor,bin_log2,count"));
        // Compare with the engine's own snapshots of the same configuration.
        SessionConfig c = load_config("default");
        c.runs = {"fp32", "amp-fp16"};
        c.instruments.every = 5;
        auto s = trained(c, 12);
        std::map<QString, unsigned long long> want;
        for (std::size_t i = 0; i < s->run_count(); ++i)
            for (const HistogramSnapshot& snap : s->run(i).histograms().snapshots())
                for (const Histogram& h : snap.tensors) {
                    const QString key = QString("%1,%2,fc%3,%4,")
                                            .arg(QString::fromStdString(s->run(i).info().label))
                                            .arg(snap.step)
                                            .arg(h.layer + 1)
                                            .arg(QString::fromUtf8(to_string(h.tensor).data(),
                                                                   static_cast<int>(to_string(h.tensor).size())));
                    for (int b = core::k_bin_min; b <= core::k_bin_max; ++b)
                        if (snap.count(h, b)) want[key + QString::number(b)] = snap.count(h, b);
                    if (h.zero) want[key + "zero"] = h.zero;
                    if (h.nan) want[key + "nan"] = h.nan;
                    if (h.inf) want[key + "inf"] = h.inf;
                }
        std::map<QString, unsigned long long> got;
        for (int i = 1; i < lines.size(); ++i) {
            const int comma = static_cast<int>(lines[i].lastIndexOf(','));
            got[lines[i].left(comma)] = lines[i].mid(comma + 1).toULongLong();
        }
        QCOMPARE(got.size(), want.size());
        QVERIFY(got == want);
        // Each tensor's rows add up to its element count: fc1's pre-activations, batch × width.
        unsigned long long preact = 0;
        for (const auto& [key, count] : got)
            if (key.startsWith("amp-fp16+pytorch,10,fc1,preact,")) preact += count;
        QCOMPARE(preact, static_cast<unsigned long long>(c.train.batch * c.model.sizes[1]));

        // Nothing to write: refused before training, and no file appears.
        const QString none = dir.filePath("none.csv");
        const Cli off = cli({"run", "--config", "default", "--steps", "3", "--set", "instruments.every=0",
                             "--histograms", none, "--quiet"});
        QCOMPARE(off.code, 2);
        QVERIFY2(off.err.contains("--histograms") && off.err.contains("instruments.every"), qPrintable(off.err));
        QVERIFY(!QFile::exists(none));
        // A directory as the target: refused by name, nothing written.
        const Cli isdir = cli({"run", "--config", "default", "--steps", "3", "--histograms", dir.path(), "--quiet"});
        QCOMPARE(isdir.code, 1);  // as --csv: an output that cannot be written
        QVERIFY2(isdir.err.contains("--histograms"), qPrintable(isdir.err));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1);  // h.csv only
    }
};

QTEST_APPLESS_MAIN(TestHistograms)
#include "test_histograms.moc"
