// FP8 training end to end on the CPU backend: a sudden activation spike saturates delayed scaling
// for exactly the steps its amax history needs to catch up and never current scaling; every FP8
// label trains on the default data; the FP8 CSV columns are filled for FP8 runs only.
#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"
#include "engine/compute/backend.hpp"
#include "engine/core/rng.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/io/export.hpp"
#include "engine/run/run.hpp"
#include "engine/run/session.hpp"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>

using namespace mpx;

namespace {

// 2-16-2 on one fixed batch: fc1's input amax is the same every step until the spike multiplies
// the batch by 1000, so every saturation of fc1.x comes from the spike.
struct SpikeResult {
    QString saturated;  // per step: 'X' where fc1.x saturated values, '.' where not
    std::vector<float> scale;  // fc1.x's scale used on each step
    std::vector<StepRecord> recs;
};

SpikeResult train_with_spike(const std::string& label, AmaxAlgo algo, int history, int steps,
                             int spike_at, int spike_len) {
    SessionConfig c;
    c.model.sizes = {2, 16, 2};
    c.train.batch = 32;
    c.fp8.amax_history_len = history;
    c.fp8.amax_compute_algo = algo;
    c.runs = {label};
    const InitialWeights init = init_weights(c.model, 3);
    Run run(0, resolve_run(label, c.scaler, c.scaler_overrides), c, init, make_cpu_backend());
    Rng rng(5);
    RowMatrix x(32, 2);
    std::vector<int> labels(32);
    for (int r = 0; r < 32; ++r) {
        x(r, 0) = static_cast<float>(rng.uniform(-1.0, 1.0));
        x(r, 1) = static_cast<float>(rng.uniform(-1.0, 1.0));
        labels[static_cast<std::size_t>(r)] = x(r, 0) > 0.0f ? 1 : 0;
    }
    SpikeResult out;
    for (int s = 0; s < steps; ++s) {
        Batch b;
        const bool spiking = s >= spike_at && s < spike_at + spike_len;
        b.x = spiking ? RowMatrix(x * 1000.0f) : x;
        b.labels = labels;
        out.recs.push_back(run.step(s, {b}, LossKind::cross_entropy));
        bool sat = false;
        for (const Fp8ScaleRow& row : run.fp8_scales())
            if (row.step == s && row.layer == 0 && row.tensor == Fp8Tensor::x) {
                sat = row.saturated > 0;
                out.scale.push_back(row.scale);
            }
        out.saturated += sat ? QLatin1Char('X') : QLatin1Char('.');
    }
    return out;
}

}  // namespace

class TestFp8Training : public QObject {
    Q_OBJECT
private slots:
    // The table is the specification: fc1.x saturates on the spike's first step only when the
    // scale comes from earlier steps (delayed); current scaling measures the spike it casts.
    void spike_saturates_delayed_scaling_until_history_catches_up_data() {
        QTest::addColumn<QString>("label");
        QTest::addColumn<int>("algo");
        QTest::addColumn<int>("spike_len");
        QTest::addColumn<QString>("pattern");
        QTest::newRow("delayed max, sustained") << "fp8-hybrid+delayed" << int(AmaxAlgo::max) << 100
                                                << ".....X......";
        QTest::newRow("delayed most_recent, sustained")
            << "fp8-hybrid+delayed" << int(AmaxAlgo::most_recent) << 100 << ".....X......";
        QTest::newRow("delayed max, one step") << "fp8-hybrid+delayed" << int(AmaxAlgo::max) << 1
                                               << ".....X......";
        QTest::newRow("current, sustained") << "fp8-hybrid+current" << int(AmaxAlgo::max) << 100
                                            << "............";
        QTest::newRow("current e4m3, one step") << "fp8-e4m3+current" << int(AmaxAlgo::max) << 1
                                                << "............";
    }
    void spike_saturates_delayed_scaling_until_history_catches_up() {
        QFETCH(QString, label);
        QFETCH(int, algo);
        QFETCH(int, spike_len);
        QFETCH(QString, pattern);
        const SpikeResult r = train_with_spike(label.toStdString(), static_cast<AmaxAlgo>(algo), 4,
                                               12, 5, spike_len);
        QCOMPARE(r.saturated, pattern);
        QCOMPARE(r.scale.size(), std::size_t(12));
        QVERIFY(r.recs[5].fp8_saturated_frac.has_value());
        if (label.endsWith("delayed")) {
            QCOMPARE(r.scale[0], 1.0f);                 // TE's initial scale
            QCOMPARE(r.scale[5], r.scale[4]);           // the spike is cast with the old scale
            QVERIFY(r.scale[6] < r.scale[5] / 500.0f);  // and is in the history one step later
            QVERIFY(*r.recs[5].fp8_saturated_frac > 0.0);
            // most_recent also saturates wherever a tensor's amax grows from one step to the next
            if (algo == int(AmaxAlgo::max)) QCOMPARE(*r.recs[4].fp8_saturated_frac, 0.0);
            if (spike_len == 1 && algo == int(AmaxAlgo::max)) {
                // max keeps the spike's scale for the whole window (steps 6..9), then recovers
                QCOMPARE(r.scale[9], r.scale[6]);  // history of steps 5..8 still holds it
                QVERIFY(r.scale[10] > r.scale[9] * 500.0f);
            }
        } else {
            QCOMPARE(*r.recs[5].fp8_saturated_frac, 0.0);
        }
    }

    // One product per output (in = 1), so the GEMM is exact and the expected value is the rule
    // itself: round_bf16(q_x · q_w · (1/s_x)(1/s_w)) per tensor, round_bf16(mx(x) · mx(w)) for
    // MXFP8; the step record holds each operand's amax and scale.
    void linear_forward_descales_before_rounding_data() {
        QTest::addColumn<int>("recipe");
        QTest::newRow("delayed") << int(Fp8Recipe::delayed);
        QTest::newRow("current") << int(Fp8Recipe::current);
        QTest::newRow("block") << int(Fp8Recipe::block);
    }
    void linear_forward_descales_before_rounding() {
        QFETCH(int, recipe);
        auto be = make_cpu_backend();
        const std::vector<float> xs{0.3f, -2.5f, 1e-3f, 7.0f}, ws{0.7f, -0.01f, 3.0f, 1e-5f, 900.0f};
        Tensor x = be->alloc(Format::fp32, 4, 1, MemCategory::activations);
        Tensor w = be->alloc(Format::fp32, 5, 1, MemCategory::weights);
        Tensor y = be->alloc(Format::bf16, 4, 5, MemCategory::activations);
        be->upload(xs, x);
        be->upload(ws, w);
        Fp8Gemm g;
        g.recipe = static_cast<Fp8Recipe>(recipe);
        // Delayed: the scales the backend's histories hold for layer 0 (x: 7 · 64 = 448; w: 900 ·
        // 0.25 = 225; dy: 1).
        std::vector<core::AmaxHistoryState> states(k_fp8_tensors);
        for (int t = 0; t < k_fp8_tensors; ++t) states[static_cast<std::size_t>(t)].offset = t;
        states[0].scale = 64.0f;
        states[1].scale = 0.25f;
        be->set_amax_histories(states, std::vector<float>(k_fp8_tensors, 0.0f));
        be->begin_step();
        be->set_site(0, TensorKind::output);
        be->set_fp8(&g);
        be->linear_forward(x, w, nullptr, Format::e4m3, y);
        be->set_fp8(nullptr);
        const StepStats& st = be->read_stats();
        const core::Fp8Record rx = st.fp8[fp8_index(0, Fp8Tensor::x)], rw = st.fp8[fp8_index(0, Fp8Tensor::w)];
        QCOMPARE(rx.amax, 7.0f);
        QCOMPARE(rw.amax, 900.0f);
        float sx = 0.0f, sw = 0.0f;
        switch (g.recipe) {
            case Fp8Recipe::delayed: sx = 64.0f, sw = 0.25f; break;
            case Fp8Recipe::current: sx = 448.0f / 7.0f, sw = 448.0f / 900.0f; break;
            case Fp8Recipe::block: break;
        }
        QCOMPARE(rx.scale, sx);
        QCOMPARE(rw.scale, sw);
        QCOMPARE(rx.count, 4ull);
        std::vector<float> out(20);
        be->download(y, out);
        for (int r = 0; r < 4; ++r)
            for (int o = 0; o < 5; ++o) {
                float want, scaled, q;
                if (g.recipe == Fp8Recipe::block) {
                    const float a = core::mx_element(xs[r], core::mx_shared_exponent(std::fabs(xs[r])), scaled, q);
                    const float b = core::mx_element(ws[o], core::mx_shared_exponent(std::fabs(ws[o])), scaled, q);
                    want = core::round_value(Format::bf16, a * b);
                } else {
                    const float qx = core::scaled_cast(Format::e4m3, xs[r], sx, Overflow::saturate, scaled);
                    const float qw = core::scaled_cast(Format::e4m3, ws[o], sw, Overflow::saturate, scaled);
                    want = core::round_value(Format::bf16, (qx * qw) * core::descale_factor(sx, sw));
                }
                QCOMPARE(core::bits_of(out[static_cast<std::size_t>(r * 5 + o)]), core::bits_of(want));
            }
    }

    void e4m3_overflow_nan_setting_turns_saturation_into_nan() {
        SessionConfig c;
        c.fp8.e4m3_overflow = E4m3Overflow::nan;
        c.model.sizes = {2, 8, 2};
        c.runs = {"fp8-e4m3+delayed"};
        validate(c);
        const std::string label = "fp8-e4m3+delayed";
        Run run(0, resolve_run(label, c.scaler, c.scaler_overrides), c, init_weights(c.model, 1),
                make_cpu_backend());
        Batch b;
        b.x = RowMatrix::Constant(c.train.batch, 2, 1.0f);
        b.labels.assign(static_cast<std::size_t>(c.train.batch), 0);
        run.step(0, {b}, LossKind::cross_entropy);  // scale 1: nothing overflows
        b.x *= 1e4f;                                 // 1e4 · (448 / 1) overflows E4M3 → NaN
        const StepRecord r = run.step(1, {b}, LossKind::cross_entropy);
        QVERIFY(*r.fp8_saturated_frac > 0.0);
        QVERIFY(r.first_nonfinite >= 0);  // the NaN shows where it was stored
    }

    // Every FP8 label learns the spirals (loss falls by a third or more in 150 steps), beside
    // amp-bf16; the FP8 columns are filled for FP8 runs and empty for amp-bf16.
    void fp8_runs_train_on_the_default_spirals() {
        SessionConfig c = load_config("default");
        c.runs = {"amp-bf16", "fp8-hybrid+delayed", "fp8-hybrid+current", "fp8-e4m3+current", "mxfp8"};
        c.steps = 150;
        c.eval_every = 0;
        c.instruments.every = 0;
        Session s(c);
        std::vector<std::vector<double>> loss(c.runs.size());
        for (int i = 0; i < 150; ++i) {
            const auto recs = s.step();
            for (std::size_t k = 0; k < recs.size(); ++k) {
                loss[k].push_back(recs[k].loss);
                QCOMPARE(recs[k].fp8_saturated_frac.has_value(), k > 0);
                QCOMPARE(recs[k].fp8_underflow_frac.has_value(), k > 0);
                const std::string row = csv_row(recs[k], s.run(k).info());
                // The FP8 shares (columns 27 and 28) are empty for the amp-bf16 run only.
                const std::string fp8_cells = row.substr(0, row.size() - 2);
                std::size_t at = 0;
                for (int col = 0; col < 26; ++col) at = fp8_cells.find(',', at) + 1;
                QCOMPARE(fp8_cells.compare(at, 2, ",,") == 0, k == 0);
            }
        }
        const auto mean = [](const std::vector<double>& v, std::size_t a, std::size_t b) {
            return std::accumulate(v.begin() + a, v.begin() + b, 0.0) / double(b - a);
        };
        const double bf16_tail = mean(loss[0], 140, 150);
        for (std::size_t k = 0; k < c.runs.size(); ++k) {
            const double first = mean(loss[k], 0, 10), tail = mean(loss[k], 140, 150);
            qInfo("%s: loss %.4f -> %.4f (amp-bf16 %.4f, difference %+.4f)", c.runs[k].c_str(), first,
                  tail, bf16_tail, tail - bf16_tail);
            QVERIFY2(tail < 0.67 * first, c.runs[k].c_str());
        }
    }

    // The fp8 teaching preset (784-128-10 on digits, 400 steps). Measured on the CPU backend: the
    // mean loss of the last 40 steps is 2.8 % (fp8-hybrid+delayed), 2.4 % (+current) and 3.2 %
    // (mxfp8) above amp-bf16's, and held-out accuracy equals or beats it. The bounds below (10 %,
    // one point of accuracy) sit well outside those figures: a change of rounding order does not
    // trip them, a recipe that stops training does.
    void fp8_preset_trains_within_ten_percent_of_amp_bf16() {
        SessionConfig c = load_config("fp8");
        QCOMPARE(c.runs, (std::vector<std::string>{"fp32", "amp-bf16", "fp8-hybrid+delayed",
                                                   "fp8-hybrid+current", "mxfp8"}));
        Session s(c);
        std::vector<double> tail(c.runs.size(), 0.0), accuracy(c.runs.size(), 0.0);
        while (!s.finished()) {
            const auto recs = s.step();
            for (std::size_t k = 0; k < recs.size(); ++k) {
                if (recs[k].step >= c.steps - 40) tail[k] += recs[k].loss / 40.0;
                if (recs[k].eval_accuracy) accuracy[k] = *recs[k].eval_accuracy;
            }
        }
        for (std::size_t k = 2; k < c.runs.size(); ++k) {
            qInfo("%s: tail loss %.5f vs amp-bf16 %.5f (%+.1f %%), accuracy %.4f vs %.4f", c.runs[k].c_str(),
                  tail[k], tail[1], 100.0 * (tail[k] / tail[1] - 1.0), accuracy[k], accuracy[1]);
            QVERIFY2(tail[k] < 1.10 * tail[1], c.runs[k].c_str());
            QVERIFY2(accuracy[k] > accuracy[1] - 0.01, c.runs[k].c_str());
        }
    }

    // Saving after 6 steps and resuming gives the uninterrupted run's losses bit for bit: the amax
    // histories travel with the state.
    void save_and_resume_keeps_delayed_scaling_bit_identical() {
        SessionConfig c = load_config("default");
        c.runs = {"fp8-hybrid+delayed", "mxfp8"};
        c.fp8.amax_history_len = 4;
        c.steps = 12;
        c.eval_every = 0;
        Session whole(c);
        std::vector<double> want;
        while (!whole.finished())
            for (const StepRecord& r : whole.step()) want.push_back(r.loss);
        Session first(c);
        for (int i = 0; i < 6; ++i) first.step();
        const auto resumed = load_session_state(nlohmann::json::parse(save_state(first).dump()));
        std::vector<double> got(want.begin(), want.begin() + 12);
        while (!resumed->finished())
            for (const StepRecord& r : resumed->step()) got.push_back(r.loss);
        QCOMPARE(got.size(), want.size());
        for (std::size_t i = 0; i < got.size(); ++i)
            QVERIFY2(std::memcmp(&got[i], &want[i], sizeof(double)) == 0, qPrintable(QString::number(i)));
        // and a state without its histories is refused, naming the key
        nlohmann::json j = save_state(first);
        for (auto& run : j.at("runs")) run.erase("fp8_amax");
        QVERIFY_THROWS_EXCEPTION(ConfigError, load_session_state(j));
    }

    // FP4 runs train on the default spirals next to amp-bf16 and record every cast: the E2M1 codes
    // of a cast add up to its count; on collecting steps a weight's row- and column-wise
    // quantizations agree everywhere with 16x16 tiles and not with 1x16 blocks.
    void fp4_runs_train_and_record_their_casts() {
        SessionConfig c = load_config("default");
        c.runs = {"amp-bf16", "nvfp4", "nvfp4+1d", "mxfp4"};
        c.steps = 150;
        c.eval_every = 0;
        c.instruments.every = 5;
        Session s(c);
        std::vector<std::vector<double>> loss(c.runs.size());
        MemoryTotals mem[4];
        while (!s.finished()) {
            const auto recs = s.step();
            for (std::size_t k = 0; k < recs.size(); ++k) {
                loss[k].push_back(recs[k].loss);
                QCOMPARE(recs[k].fp8_saturated_frac.has_value(), k > 0);
                mem[k] = recs[k].mem;
            }
        }
        for (std::size_t k = 0; k < c.runs.size(); ++k) {
            const double first = std::accumulate(loss[k].begin(), loss[k].begin() + 10, 0.0) / 10.0;
            const double tail = std::accumulate(loss[k].end() - 10, loss[k].end(), 0.0) / 10.0;
            qInfo("%s: loss %.4f -> %.4f", c.runs[k].c_str(), first, tail);
            QVERIFY2(tail < 0.67 * first, c.runs[k].c_str());
        }
        unsigned long long compared[4] = {}, mismatched[4] = {};
        for (std::size_t k = 1; k < c.runs.size(); ++k) {
            QVERIFY(!s.run(k).fp8_scales().empty());
            for (const Fp8ScaleRow& row : s.run(k).fp8_scales()) {
                QCOMPARE(row.format, Format::e2m1);
                QVERIFY(row.block);
                unsigned long long codes = 0;
                for (unsigned long long n : row.fp4.codes) codes += n;
                QCOMPARE(codes, row.count);
                QVERIFY(row.fp4.blocks > 0);
                QVERIFY(row.fp4.top6 + row.fp4.top4 <= row.fp4.blocks);
                QCOMPARE(row.scale != 0.0f, k != 3);  // NVFP4's S_enc; MXFP4 has none
                if (row.tensor == Fp8Tensor::w) {
                    // fc1 has no input gradient, so no column-wise copy of its weight
                    QCOMPARE(row.fp4.compared > 0, row.step % 5 == 0 && row.layer > 0);
                    compared[k] += row.fp4.compared;
                    mismatched[k] += row.fp4.mismatched;
                }
            }
        }
        QVERIFY(compared[1] > 0 && compared[2] > 0);
        QCOMPARE(mismatched[1], 0ull);  // 16x16 tiles: the transpose's quantization is the same
        QVERIFY(mismatched[2] > compared[2] / 100);  // 1x16 blocks: not
        // Memory: amp-bf16's plus the packed copies (0.5 byte an element, a scale per block, an FP32
        // tensor scale for NVFP4): every weight twice, every layer's input once.
        const auto packed = [](std::int64_t n, int block, int global) { return (n + 1) / 2 + (n + block - 1) / block + global; };
        const std::int64_t B = c.train.batch;
        const std::int64_t nv = 2 * (packed(2 * 64, 16, 4) + packed(64 * 64, 16, 4) + packed(64 * 2, 16, 4)) +
                                packed(B * 2, 16, 4) + packed(B * 64, 16, 4) + packed(B * 64, 16, 4);
        QCOMPARE(mem[1].total() - mem[0].total(), nv);
        QCOMPARE(mem[1][MemCategory::weights] - mem[0][MemCategory::weights],
                 2 * (packed(2 * 64, 16, 4) + packed(64 * 64, 16, 4) + packed(64 * 2, 16, 4)));
    }

    // FP4 runs give the same bits on 1, 2 and 3 threads: the casts are cut by rows alone and the
    // stochastic words depend on the element's index, not on which thread draws them.
    void fp4_runs_are_the_same_bits_on_any_thread_count() {
        SessionConfig c = load_config("default");
        c.runs = {"nvfp4", "mxfp4", "nvfp4+4over6"};
        c.steps = 15;
        c.eval_every = 0;
        std::vector<std::vector<double>> got;
        std::vector<std::vector<float>> amax;
        for (unsigned threads : {1u, 2u, 3u}) {
            set_thread_count(threads);
            Session s(c);
            std::vector<double> loss;
            while (!s.finished())
                for (const StepRecord& r : s.step()) loss.push_back(r.loss);
            std::vector<float> a;
            for (std::size_t k = 0; k < s.run_count(); ++k)
                for (const Fp8ScaleRow& row : s.run(k).fp8_scales()) a.push_back(row.amax);
            got.push_back(loss);
            amax.push_back(a);
        }
        set_thread_count(0);
        for (std::size_t t = 1; t < got.size(); ++t) {
            QCOMPARE(got[t].size(), got[0].size());
            QVERIFY(std::memcmp(got[t].data(), got[0].data(), got[0].size() * sizeof(double)) == 0);
            QVERIFY(amax[t] == amax[0]);
        }
    }

    // FP4 labels, switches and the fp4 section: each mistake refused with a line naming the field.
    void fp4_labels_and_settings_are_checked() {
        const auto err = [](auto f) -> QString {
            try {
                f();
            } catch (const ConfigError& e) {
                return QString::fromStdString(e.field() + ": " + e.message());
            }
            return {};
        };
        QVERIFY(err([] { parse_run_spec("mxfp4+no-rht"); }).contains("NVFP4 recipe"));
        QVERIFY(err([] { parse_run_spec("nvfp4+floor"); }).contains("mxfp4+floor"));
        QVERIFY(err([] { parse_run_spec("nvfp4+acc-fast"); }).contains("FP32"));
        QVERIFY(err([] { parse_run_spec("nvfp4+no-sr+no-sr"); }).contains("twice"));
        QVERIFY(err([] { parse_run_spec("nvfp4+bf16-last-"); }).contains("count"));
        QCOMPARE(resolve_run("nvfp4+no-sr+1d", scaler_preset("pytorch"), {}).label, std::string("nvfp4+no-sr+1d"));
        QCOMPARE(resolve_run("nvfp4", scaler_preset("pytorch"), {}).scaler.kind, ScalerKind::none);
        SessionConfig c = load_config("default");
        c.runs = {"nvfp4+bf16-last-3"};
        QVERIFY(err([&] { validate(c); }).contains("no layer would train in FP4"));
        c.runs = {"nvfp4"};
        QVERIFY(err([&] { apply_override(c, "fp4.bf16_first=-1"); }).startsWith("fp4.bf16_first: "));
        QVERIFY(err([&] { apply_override(c, "fp4.mx_scale_rule=round"); }).startsWith("fp4.mx_scale_rule: "));
        QVERIFY(err([&] { apply_override(c, "fp4.bf16_last=3"); }).startsWith("fp4.bf16_last: "));
        apply_override(c, "fp4.sr=false");
        QVERIFY(!c.fp4.sr);
        QVERIFY(!resolve_run("nvfp4", c).fp4.sr);
        QVERIFY(resolve_run("nvfp4+sr", c).fp4.sr);
        // the section round-trips through the configuration's JSON
        const SessionConfig back = session_config_from_json(to_json(c));
        QCOMPARE(back.fp4, c.fp4);
    }

    void fp8_labels_and_settings_are_checked() {
        const auto err = [](auto f) -> QString {
            try {
                f();
            } catch (const ConfigError& e) {
                return QString::fromStdString(e.field() + ": " + e.message());
            }
            return {};
        };
        QVERIFY(err([] { parse_run_spec("mxfp8+delayed"); }).startsWith("runs: "));
        QVERIFY(err([] { parse_run_spec("fp8-hybrid+block"); }).contains("mxfp8"));
        QCOMPARE(resolve_run("fp8-hybrid+current", scaler_preset("pytorch"), {}).label,
                 std::string("fp8-hybrid+current"));
        QCOMPARE(resolve_run("fp8-hybrid", scaler_preset("pytorch"), {}).scaler.kind, ScalerKind::none);
        QCOMPARE(resolve_run("fp8-hybrid+pytorch", scaler_preset("pytorch"), {}).scaler.kind,
                 ScalerKind::dynamic);
        SessionConfig c;
        QVERIFY(err([&] { apply_override(c, "fp8.amax_history_len=0"); }).startsWith("fp8.amax_history_len: "));
        QVERIFY(err([&] { apply_override(c, "fp8.margin=-1"); }).startsWith("fp8.margin: "));
        QVERIFY(err([&] { apply_override(c, "fp8.recipe=block"); }).startsWith("fp8.recipe: "));
        QVERIFY(err([&] { apply_override(c, "fp8.e4m3_overflow=inf"); }).startsWith("fp8.e4m3_overflow: "));
        QVERIFY(err([&] { apply_override(c, "fp8.amax_compute_algo=mean"); }).startsWith("fp8.amax_compute_algo: "));
        apply_override(c, "fp8.margin=2");
        QCOMPARE(c.fp8.margin, 2);
    }
};

QTEST_APPLESS_MAIN(TestFp8Training)
#include "test_fp8_training.moc"
