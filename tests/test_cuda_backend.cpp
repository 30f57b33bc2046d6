// The CUDA backend against its CPU twin. Host part (runs on every machine): the device number
// formats (cuda/format_device.cuh) equal engine/format bit for bit, and the kernels' arithmetic
// (cuda/kernel_math.cuh), driven on the CPU in the kernels' decomposition, equals the CPU backend.
// GPU part (skips with the reason where no device is usable): the comparisons of
// cuda/compare/backend_compare.hpp (also run by mpx-cuda-check where Qt is absent), per op and
// precision policy, whole training runs, and out-of-memory handling. Tolerances and why:
// cuda/compare/tolerance.hpp.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cuda/compare/tolerance.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/format_device.cuh"
#include "cuda/kernel_math.cuh"
#include "engine/backend.hpp"
#include "engine/error.hpp"
#include "engine/format.hpp"
#include "engine/rng.hpp"
#include "engine/session.hpp"
#ifdef MPX_HAVE_CUDA
#include "cuda/compare/backend_compare.hpp"
#include "cuda/device.hpp"
#endif

using namespace mpx;
using namespace mpx::compare;

Q_DECLARE_METATYPE(mpx::Format)

namespace {

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

[[maybe_unused]] std::string gpu_unavailable() {
#ifdef MPX_HAVE_CUDA
    const cuda::DeviceProbe p = cuda::probe_device();
    return p.usable ? std::string() : "no CUDA device: " + p.reason;
#else
    return "built without the CUDA backend (no nvcc, or tests not linked with mpx_cuda)";
#endif
}

#define REQUIRE_GPU()                               \
    do {                                            \
        const std::string why_ = gpu_unavailable(); \
        if (!why_.empty()) QSKIP(why_.c_str());     \
    } while (0)

// The comparisons (cuda/compare/backend_compare.cpp) are built with the CUDA backend.
#ifdef MPX_HAVE_CUDA
#define NEED_COMPARISONS() (void)0
#else
#define NEED_COMPARISONS() QSKIP("built without the CUDA backend, which holds the comparisons")
#endif

#define CHECK_CLOSE(what, ref, got, bound)                                                     \
    do {                                                                                       \
        const Diff d_ = compare_values((ref), (got), (bound));                                 \
        QVERIFY2(d_.outside == 0, qPrintable(QString("%1: %2 of %3 outside the tolerance; %4") \
                                                 .arg(what)                                    \
                                                 .arg(d_.outside)                              \
                                                 .arg((ref).size())                            \
                                                 .arg(QString::fromStdString(d_.first))));     \
        last_differing = d_.differing;                                                         \
    } while (0)

#define CHECK_COUNTS(what, ref, got, allowed)                              \
    QVERIFY2(counts_close((ref), (got), (allowed)),                        \
             qPrintable(QString("%1: RoundStats {%2} vs {%3}, allowed %4") \
                            .arg(what)                                     \
                            .arg(counts_text(ref).c_str())                 \
                            .arg(counts_text(got).c_str())                 \
                            .arg(allowed)))

RoundStats to_stats(const dev::Counts& c) {
    RoundStats s;
    s.overflow = c.overflow;
    s.underflow = c.underflow;
    s.subnormal = c.subnormal;
    s.nonzero = c.nonzero;
    return s;
}

// Values every format must encode the same way: each value of the format, the midpoint to its
// upper neighbour (a tie) and the floats just either side of that midpoint; FP32 patterns strided
// over all 2^32; random bit patterns; the specials.
std::vector<float> encode_probes() {
    std::vector<float> v;
    const auto add_format = [&](Format f, std::uint32_t patterns, std::uint32_t step, int shift) {
        for (std::uint32_t p = 0; p < patterns; p += step) {
            const std::uint32_t bits = p << shift;
            const float a = decode(f, bits);
            v.push_back(a);
            const float b = decode(f, next_up(f, bits));
            if (std::isfinite(a) && std::isfinite(b) && a != b) {
                const float mid = a + (b - a) / 2.0f;  // exact: one bit more than the format has
                v.push_back(mid);
                v.push_back(std::nextafter(mid, std::numeric_limits<float>::infinity()));
                v.push_back(std::nextafter(mid, -std::numeric_limits<float>::infinity()));
            }
        }
    };
    add_format(Format::fp16, 1u << 16, 1, 0);
    add_format(Format::bf16, 1u << 16, 1, 0);
    add_format(Format::e4m3, 1u << 8, 1, 0);
    add_format(Format::e5m2, 1u << 8, 1, 0);
    add_format(Format::tf32, 1u << 19, 7, 13);
    for (std::uint64_t b = 0; b < (1ull << 32); b += 65521)
        v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
    Rng r(7);
    for (int i = 0; i < 200000; ++i)
        v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(r.next_u64())));
    const float inf = std::numeric_limits<float>::infinity();
    for (float x : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                    std::bit_cast<float>(0x7f800001u), std::bit_cast<float>(0xff800001u),
                    std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                    65504.0f, 65519.996f, 65520.0f, 448.0f, 464.0f, 464.0001f, 57344.0f, 61440.0f,
                    0x1p-25f, 3 * 0x1p-25f})
        v.push_back(x);
    return v;
}

// Container bits of every pattern of a format (TF32: every 19-bit code; FP32: strided).
std::vector<std::uint32_t> all_patterns(Format f) {
    std::vector<std::uint32_t> p;
    switch (f) {
        case Format::fp16:
        case Format::bf16:
            for (std::uint32_t i = 0; i < (1u << 16); ++i) p.push_back(i);
            break;
        case Format::e4m3:
        case Format::e5m2:
            for (std::uint32_t i = 0; i < 256; ++i) p.push_back(i);
            break;
        case Format::tf32:
            for (std::uint32_t i = 0; i < (1u << 19); ++i) p.push_back(i << 13);
            break;
        case Format::fp32:
            for (std::uint64_t b = 0; b < (1ull << 32); b += 4099)
                p.push_back(static_cast<std::uint32_t>(b));
            break;
    }
    return p;
}

// ---- the host twin: a CPU backend plus buffers the kernel functions write into ------------------

struct Host {
    std::unique_ptr<Backend> be = make_cpu_backend();
    Tensor make(Format f, int r, int c, const std::vector<float>& v) {
        Tensor t = be->alloc(f, r, c, MemCategory::activations);
        be->upload(v, t);
        return t;
    }
    Tensor zeros(Format f, int r, int c) {
        return make(f, r, c, std::vector<float>(static_cast<std::size_t>(r) * c, 0.0f));
    }
    std::vector<float> values(const Tensor& t) {
        std::vector<float> v(t.size());
        be->download(t, v);
        return v;
    }
};

#ifdef MPX_HAVE_CUDA
// The CPU backend with one fault injected, to prove the comparisons can fail (a harness that
// passes everything would pass a broken GPU backend too).
enum class Fault { gemm_scaled, gelu_as_relu, dropout_seed, adam_step, stats_off };

class Faulty final : public Backend {
public:
    explicit Faulty(Fault f) : m_fault(f) {}
    std::string name() const override { return "CPU with a fault"; }
    bool is_gpu() const override { return false; }
    RoundStats upload(std::span<const float> s, Tensor& d) override { return m_cpu->upload(s, d); }
    void download(const Tensor& s, std::span<float> d) override { m_cpu->download(s, d); }
    void copy(const Tensor& s, Tensor& d) override { m_cpu->copy(s, d); }
    void fill(Tensor& d, float v) override { m_cpu->fill(d, v); }
    RoundStats linear_forward(const Tensor& x, const Tensor& w, const Tensor* b, Format c,
                              Tensor& y) override {
        const RoundStats s = m_cpu->linear_forward(x, w, b, c, y);
        if (m_fault == Fault::gemm_scaled) m_cpu->scale(y, 1.0f + 1e-3f);
        return s;
    }
    RoundStats linear_backward_input(const Tensor& dy, const Tensor& w, Format c,
                                     Tensor& dx) override {
        return m_cpu->linear_backward_input(dy, w, c, dx);
    }
    RoundStats linear_backward_weight(const Tensor& dy, const Tensor& x, Format c, Format t,
                                      Tensor& dw, Tensor* db, Accumulate acc) override {
        RoundStats s = m_cpu->linear_backward_weight(dy, x, c, t, dw, db, acc);
        if (m_fault == Fault::stats_off) s.nonzero += 1;
        return s;
    }
    RoundStats activation_forward(Activation a, const Tensor& z, Tensor& h) override {
        return m_cpu->activation_forward(
            m_fault == Fault::gelu_as_relu && a == Activation::gelu ? Activation::relu : a, z, h);
    }
    RoundStats activation_backward(Activation a, const Tensor& z, const Tensor& dh,
                                   Tensor& dz) override {
        return m_cpu->activation_backward(a, z, dh, dz);
    }
    RoundStats layernorm_forward(const Tensor& x, const Tensor& g, const Tensor& b, Tensor& y,
                                 Tensor& m, Tensor& r) override {
        return m_cpu->layernorm_forward(x, g, b, y, m, r);
    }
    RoundStats layernorm_backward(const Tensor& x, const Tensor& g, const Tensor& m,
                                  const Tensor& r, const Tensor& dy, Tensor& dx, Tensor& dg,
                                  Tensor& db, Accumulate acc) override {
        return m_cpu->layernorm_backward(x, g, m, r, dy, dx, dg, db, acc);
    }
    RoundStats dropout(Tensor& h, float p, std::uint64_t seed) override {
        return m_cpu->dropout(h, p, seed + (m_fault == Fault::dropout_seed ? 1 : 0));
    }
    LossResult softmax_cross_entropy(const Tensor& l, std::span<const int> y, float s,
                                     Tensor& d) override {
        return m_cpu->softmax_cross_entropy(l, y, s, d);
    }
    LossResult mse(const Tensor& p, const Tensor& t, float s, Tensor& d) override {
        return m_cpu->mse(p, t, s, d);
    }
    double accuracy(const Tensor& l, std::span<const int> y) override {
        return m_cpu->accuracy(l, y);
    }
    GradCheck unscale_and_check(const Tensor& g, float inv, Tensor& m) override {
        return m_cpu->unscale_and_check(g, inv, m);
    }
    void scale(Tensor& t, float f) override { m_cpu->scale(t, f); }
    UpdateStats optimizer_update(const OptimizerStep& s, const Tensor& g, Tensor* m, Tensor& w,
                                 Tensor& s1, Tensor* s2) override {
        OptimizerStep st = s;
        if (m_fault == Fault::adam_step) st.t += 1;  // the wrong bias correction
        return m_cpu->optimizer_update(st, g, m, w, s1, s2);
    }

protected:
    void* raw_alloc(std::size_t bytes) override {
        return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    }
    void raw_free(void* p) noexcept override { std::free(p); }

private:
    Fault m_fault;
    std::unique_ptr<Backend> m_cpu = make_cpu_backend();  // computes on our tensors' host memory
};
#endif

}  // namespace

class TestCudaBackend : public QObject {
    Q_OBJECT
    std::size_t last_differing = 0;

private slots:
    // ---- host: number formats ------------------------------------------------------------------

    void device_format_table_matches_engine() {
        for (Format f : all_formats) {
            const dev::DevFormat d = dev::dev_format(f);
            const FormatInfo& fi = info(f);
            QCOMPARE(d.exponent_bits, fi.exponent_bits);
            QCOMPARE(d.mantissa_bits, fi.mantissa_bits);
            QCOMPARE(d.bias, fi.bias);
            QCOMPARE(d.storage_bytes, fi.storage_bytes);
            QCOMPARE(d.has_inf, fi.has_inf);
            QVERIFY(d.default_overflow == fi.default_overflow);
        }
    }

    void device_decode_equals_engine_data() {
        QTest::addColumn<Format>("format");
        for (Format f : all_formats) QTest::newRow(std::string(to_string(f)).c_str()) << f;
    }
    // Every FP16/BF16/FP8/TF32 pattern (FP32 strided) decodes to the engine's bits: against
    // decode_buffer (the backends' contract) always, against decode() except TF32 NaN containers
    // (decode() quiets them; the buffer path, like the device, keeps the container).
    void device_decode_equals_engine() {
        QFETCH(Format, format);
        std::size_t bad = 0;
        std::string first;
        for (std::uint32_t bits : all_patterns(format)) {
            const float got = dev::decode_bits(format, bits);
            float buf = 0.0f;
            const std::uint32_t stored = bits;
            std::uint8_t raw[4];
            std::memcpy(raw, &stored, 4);  // little-endian: the low bytes are the pattern
            decode_buffer(format, raw, {&buf, 1});
            const float eng = decode(format, bits);
            const bool ok_buf = bits_of(got) == bits_of(buf);
            const bool ok_eng =
                bits_of(got) == bits_of(eng) || (format == Format::tf32 && std::isnan(eng));
            if (!(ok_buf && ok_eng) && bad++ == 0)
                first = "pattern " + std::to_string(bits) + " → " + std::to_string(got);
        }
        QVERIFY2(bad == 0,
                 qPrintable(QString("%1 mismatches, first %2").arg(bad).arg(first.c_str())));
    }

    void device_encode_equals_engine_data() { device_decode_equals_engine_data(); }
    // Every value of every format, every tie between neighbours and the floats beside it, strided
    // and random FP32 patterns: the device encoder gives the engine's bits, in both overflow modes.
    void device_encode_equals_engine() {
        QFETCH(Format, format);
        static const std::vector<float> probes = encode_probes();
        for (Overflow mode : {Overflow::infinity, Overflow::saturate}) {
            std::size_t bad = 0;
            std::string first;
            for (float x : probes) {
                const std::uint32_t ref = encode(format, x, mode);
                const std::uint32_t got = dev::encode_bits(format, x, mode);
                if (ref != got && bad++ == 0)
                    first = "x = " + std::to_string(x) + " bits " + std::to_string(bits_of(x)) +
                            ": engine " + std::to_string(ref) + ", device " + std::to_string(got);
            }
            QVERIFY2(bad == 0, qPrintable(QString("%1 of %2 mismatches (mode %3), first %4")
                                              .arg(bad)
                                              .arg(probes.size())
                                              .arg(int(mode))
                                              .arg(first.c_str())));
        }
        QVERIFY(probes.size() > 500000);
    }

    void device_tally_equals_engine_round_stats_data() { device_decode_equals_engine_data(); }
    // The kernels' store + tally gives encode_buffer's bytes and RoundStats.
    void device_tally_equals_engine_round_stats() {
        QFETCH(Format, format);
        std::vector<float> v = encode_probes();
        const std::vector<float> w = wide(100000, 3, 40.0, 20.0);
        v.insert(v.end(), w.begin(), w.end());
        const std::size_t bytes = v.size() * info(format).storage_bytes;
        std::vector<std::uint8_t> ref(bytes), got(bytes);
        const RoundStats rs = encode_buffer(format, v, ref.data());
        dev::Counts c;
        const dev::TallyEdges edges = dev::tally_edges(format);
        for (std::size_t i = 0; i < v.size(); ++i)
            dev::tally(edges, v[i], dev::store_value(format, got.data(), i, v[i]), c);
        QVERIFY(ref == got);
        CHECK_COUNTS("tally", rs, to_stats(c), std::size_t{0});
        QVERIFY(rs.nonzero > 0);
    }

    // ---- host: the kernels' arithmetic against the CPU backend ---------------------------------

    void twin_activations_match_cpu() {
        Host h;
        for (Activation a :
             {Activation::relu, Activation::gelu, Activation::tanh, Activation::none}) {
            for (Format f : {Format::fp32, Format::fp16, Format::bf16}) {
                const int B = 37, D = 29;
                Tensor z = h.make(f, B, D, normal(B * D, 11, 3.0));
                Tensor dh = h.make(f, B, D, normal(B * D, 12, 1.0));
                Tensor y = h.zeros(f, B, D), dz = h.zeros(f, B, D), ty = h.zeros(f, B, D),
                       tdz = h.zeros(f, B, D);
                const RoundStats sf = h.be->activation_forward(a, z, y);
                const RoundStats sb = h.be->activation_backward(a, z, dh, dz);
                dev::Counts cf, cb;
                const dev::TallyEdges e = dev::tally_edges(f);
                for (std::size_t i = 0; i < z.size(); ++i) {
                    const float zi = dev::load_value(f, z.data(), i);
                    const float v = dev::act_forward(cuda::to_dev(a), zi);
                    dev::tally(e, v, dev::store_value(f, ty.data(), i, v), cf);
                    const float g =
                        dev::act_backward(cuda::to_dev(a), zi, dev::load_value(f, dh.data(), i));
                    dev::tally(e, g, dev::store_value(f, tdz.data(), i, g), cb);
                }
                const QString what = QString("%1 %2")
                                         .arg(std::string(to_string(a)).c_str())
                                         .arg(std::string(to_string(f)).c_str());
                const auto ry = h.values(y), rdz = h.values(dz);
                CHECK_CLOSE(what + " forward", ry, h.values(ty),
                            elementwise_bounds(ry, f, 3.0 * max_abs(ry)));
                CHECK_COUNTS(what + " forward", sf, to_stats(cf), last_differing);
                CHECK_CLOSE(what + " backward", rdz, h.values(tdz),
                            elementwise_bounds(rdz, f, 4.0 * max_abs(rdz)));
                CHECK_COUNTS(what + " backward", sb, to_stats(cb), last_differing);
            }
        }
    }

    void twin_layernorm_matches_cpu() {
        Host h;
        for (Format f : {Format::fp32, Format::fp16, Format::bf16}) {
            const int B = 33, D = 40;
            Tensor x = h.make(f, B, D, normal(B * D, 21, 2.0));
            Tensor g = h.make(Format::fp32, 1, D, normal(D, 22, 1.0)),
                   b = h.make(Format::fp32, 1, D, normal(D, 23, 1.0));
            Tensor y = h.zeros(f, B, D), mean = h.zeros(Format::fp32, B, 1),
                   rstd = h.zeros(Format::fp32, B, 1);
            const RoundStats sf = h.be->layernorm_forward(x, g, b, y, mean, rstd);
            Tensor ty = h.zeros(f, B, D);
            std::vector<float> tmean(B), trstd(B);
            dev::Counts cf;
            const dev::TallyEdges e = dev::tally_edges(f);
            for (int r = 0; r < B; ++r)
                dev::layernorm_row_stats(f, x.data(), r, D, tmean[r], trstd[r]);
            for (std::size_t i = 0; i < x.size(); ++i) {
                const std::size_t r = i / D, c = i % D;
                const float v =
                    dev::layernorm_value(dev::load_value(f, x.data(), i), tmean[r], trstd[r],
                                         dev::load_value(Format::fp32, g.data(), c),
                                         dev::load_value(Format::fp32, b.data(), c));
                dev::tally(e, v, dev::store_value(f, ty.data(), i, v), cf);
            }
            const auto rmean = h.values(mean), rrstd = h.values(rstd), ry = h.values(y);
            CHECK_CLOSE("mean", rmean, tmean, elementwise_bounds(rmean, Format::fp32, 4.0));
            CHECK_CLOSE("rstd", rrstd, trstd,
                        elementwise_bounds(rrstd, Format::fp32, max_abs(rrstd)));
            CHECK_CLOSE("layernorm y", ry, h.values(ty), elementwise_bounds(ry, f, max_abs(ry)));
            CHECK_COUNTS("layernorm forward", sf, to_stats(cf), last_differing);

            // Backward, accumulating into non-zero dγ, dβ.
            Tensor dy = h.make(f, B, D, normal(B * D, 24, 1.0)), dx = h.zeros(f, B, D),
                   tdx = h.zeros(f, B, D);
            const auto dg0 = normal(D, 25, 0.1), db0 = normal(D, 26, 0.1);
            Tensor dg = h.make(Format::fp32, 1, D, dg0), dbt = h.make(Format::fp32, 1, D, db0);
            Tensor tdg = h.make(Format::fp32, 1, D, dg0), tdbt = h.make(Format::fp32, 1, D, db0);
            const RoundStats sb =
                h.be->layernorm_backward(x, g, mean, rstd, dy, dx, dg, dbt, Accumulate::add);
            dev::Counts cb;
            std::vector<float> sums(2 * B);
            const auto* mu = static_cast<const float*>(mean.data());
            const auto* rs = static_cast<const float*>(rstd.data());
            for (int r = 0; r < B; ++r)
                dev::layernorm_row_sums(f, x.data(), Format::fp32, g.data(), f, dy.data(), r, D,
                                        mu[r], rs[r], sums[r], sums[B + r]);
            for (std::size_t i = 0; i < x.size(); ++i) {
                const std::size_t r = i / D, c = i % D;
                const float v = dev::layernorm_dx(
                    dev::load_value(f, x.data(), i), dev::load_value(f, dy.data(), i),
                    dev::load_value(Format::fp32, g.data(), c), mu[r], rs[r],
                    1.0f / static_cast<float>(D), sums[r], sums[B + r]);
                dev::tally(e, v, dev::store_value(f, tdx.data(), i, v), cb);
            }
            for (int c = 0; c < D; ++c) {
                float sg = 0.0f, sbt = 0.0f;
                dev::layernorm_column_sums(f, x.data(), f, dy.data(), mu, rs, B, D, c, sg, sbt);
                dev::accumulate_element(sg, Format::fp32, true, Format::fp32, tdg.data(), c, cb);
                dev::accumulate_element(sbt, Format::fp32, true, Format::fp32, tdbt.data(), c, cb);
            }
            const auto rdx = h.values(dx), rdg = h.values(dg), rdb = h.values(dbt);
            CHECK_CLOSE("layernorm dx", rdx, h.values(tdx),
                        elementwise_bounds(rdx, f, 4.0 * max_abs(rdx)));
            std::size_t diff = last_differing;
            CHECK_CLOSE("layernorm dgamma", rdg, h.values(tdg),
                        elementwise_bounds(rdg, Format::fp32, B * max_abs(rdg)));
            diff += last_differing;
            CHECK_CLOSE("layernorm dbeta", rdb, h.values(tdbt),
                        elementwise_bounds(rdb, Format::fp32, max_abs(rdb)));
            diff += last_differing;
            CHECK_COUNTS("layernorm backward", sb, to_stats(cb), diff);
        }
    }

    // The mask is a pure function of (seed, index): the twin drops exactly the CPU's elements.
    void twin_dropout_matches_cpu() {
        Host h;
        for (Format f : {Format::fp32, Format::fp16}) {
            const int B = 64, D = 48;
            const auto v = normal(B * D, 31, 1.0);
            Tensor a = h.make(f, B, D, v), t = h.make(f, B, D, v);
            const RoundStats s = h.be->dropout(a, 0.3f, 1234);
            dev::Counts c;
            const float keep = 1.0f / (1.0f - 0.3f);
            const dev::TallyEdges e = dev::tally_edges(f);
            for (std::size_t i = 0; i < t.size(); ++i) {
                const float x =
                    dev::dropout_value(dev::load_value(f, t.data(), i), 0.3f, keep, 1234, i);
                dev::tally(e, x, dev::store_value(f, t.data(), i, x), c);
            }
            QVERIFY(same_bits(h.values(a), h.values(t)));  // one multiply: nothing to contract
            CHECK_COUNTS("dropout", s, to_stats(c), std::size_t{0});
        }
    }

    void twin_losses_match_cpu() {
        Host h;
        for (Format f : {Format::fp32, Format::fp16, Format::bf16}) {
            const int B = 50, C = 7;
            Tensor logits = h.make(f, B, C, normal(B * C, 41, 4.0));
            std::vector<int> labels(B);
            Rng r(42);
            for (int& l : labels) l = static_cast<int>(r.below(C));
            Tensor dl = h.zeros(f, B, C), tdl = h.zeros(f, B, C);
            const float scale = 1024.0f;
            const LossResult ref = h.be->softmax_cross_entropy(logits, labels, scale, dl);
            dev::Counts c;
            const dev::TallyEdges e = dev::tally_edges(f);
            double total = 0.0;
            for (int row = 0; row < B; ++row)
                total += dev::softmax_xent_row(f, logits.data(), C, row, labels[row], 1.0f / B,
                                               scale, f, tdl.data(), e, c);
            const float loss = static_cast<float>(total / B);
            QVERIFY2(std::fabs(loss - ref.loss) <= 16 * k_eps32 * (1.0 + ref.loss),
                     qPrintable(QString("CE loss %1 vs %2").arg(loss).arg(ref.loss)));
            const auto rdl = h.values(dl);
            CHECK_CLOSE("CE dlogits", rdl, h.values(tdl),
                        elementwise_bounds(rdl, f, 4.0 * max_abs(rdl)));
            CHECK_COUNTS("CE dlogits", ref.rounding, to_stats(c), last_differing);

            // MSE against an FP32 target.
            Tensor pred = h.make(f, B, 3, normal(B * 3, 43, 1.0)),
                   target = h.make(Format::fp32, B, 3, normal(B * 3, 44, 1.0));
            Tensor dp = h.zeros(f, B, 3), tdp = h.zeros(f, B, 3);
            const LossResult mref = h.be->mse(pred, target, 8.0f, dp);
            dev::Counts mc;
            double sq_total = 0.0;
            for (std::size_t i = 0; i < pred.size(); ++i) {
                float sq = 0.0f;
                const float g = dev::mse_grad(dev::load_value(f, pred.data(), i),
                                              dev::load_value(Format::fp32, target.data(), i),
                                              static_cast<float>(pred.size()), 8.0f, sq);
                sq_total += static_cast<double>(sq);
                dev::tally(e, g, dev::store_value(f, tdp.data(), i, g), mc);
            }
            QCOMPARE(static_cast<float>(sq_total / static_cast<float>(pred.size())),
                     static_cast<float>(mref.loss));
            QVERIFY(same_bits(h.values(dp), h.values(tdp)));
            CHECK_COUNTS("MSE", mref.rounding, to_stats(mc), std::size_t{0});

            // Accuracy: first maximum wins, as Eigen's maxCoeff.
            int hits = 0;
            for (int row = 0; row < B; ++row)
                hits += dev::argmax_row(f, logits.data(), C, row) == labels[row];
            QCOMPARE(static_cast<double>(hits) / B, h.be->accuracy(logits, labels));
        }
    }

    // linear_backward_weight with x = identity makes the CPU's GEMM exact (dw = dyᵀ), so the
    // write-back (round-through, accumulate, store, counts) and the bias column sums are held
    // against the CPU bit for bit: no multiplications are left to contract.
    void twin_weight_gradient_write_back_matches_cpu() {
        Host h;
        const Format fmts[] = {Format::fp32, Format::fp16, Format::bf16};
        for (Format through : fmts)
            for (Format dst : fmts)
                for (Accumulate acc : {Accumulate::overwrite, Accumulate::add})
                    for (int rows : {1, 2, 5, 19, 64})
                        for (int cols : {1, 7, 8, 9, 17, 33}) {
                            const int B = rows, out = cols, in = rows;
                            Tensor dy =
                                h.make(Format::fp32, B, out, wide(B * out, 51 + rows, 30.0, 20.0));
                            std::vector<float> eye(static_cast<std::size_t>(B) * in, 0.0f);
                            for (int i = 0; i < B; ++i)
                                eye[static_cast<std::size_t>(i) * in + i] = 1.0f;
                            Tensor x = h.make(Format::fp32, B, in, eye);
                            const auto w0 = wide(out * in, 52, 20.0, 5.0),
                                       b0 = wide(out, 53, 20.0, 5.0);
                            Tensor dw = h.make(dst, out, in, w0), db = h.make(dst, 1, out, b0);
                            Tensor tdw = h.make(dst, out, in, w0), tdb = h.make(dst, 1, out, b0);
                            const RoundStats s = h.be->linear_backward_weight(
                                dy, x, Format::fp32, through, dw, &db, acc);
                            dev::Counts c;
                            const bool add = acc == Accumulate::add;
                            const auto dyv = h.values(dy);
                            for (int o = 0; o < out; ++o)
                                for (int i = 0; i < in; ++i)
                                    dev::accumulate_element(
                                        dyv[static_cast<std::size_t>(i) * out + o], through, add,
                                        dst, tdw.data(), static_cast<std::size_t>(o) * in + i, c);
                            for (int o = 0; o < out; ++o) {
                                const float sum =
                                    dev::column_sum(Format::fp32, dy.data(), B, out, o,
                                                    cuda::eigen_pairwise_columns(out));
                                dev::accumulate_element(sum, through, add, dst, tdb.data(), o, c);
                            }
                            const QString what = QString("through %1 into %2, %3x%4")
                                                     .arg(int(through))
                                                     .arg(int(dst))
                                                     .arg(rows)
                                                     .arg(cols);
                            QVERIFY2(same_bits(h.values(dw), h.values(tdw)),
                                     qPrintable(what + " dw"));
                            QVERIFY2(same_bits(h.values(db), h.values(tdb)),
                                     qPrintable(what + " db"));
                            CHECK_COUNTS(what, s, to_stats(c), std::size_t{0});
                        }
    }

    void twin_unscale_and_optimizer_match_cpu() {
        Host h;
        const int n = 1000;
        // Unscale: one multiply per element, the double sum of squares in order.
        {
            auto g = wide(n, 61, 20.0, 10.0);
            g[17] = std::numeric_limits<float>::infinity();
            Tensor grad = h.make(Format::fp16, 1, n, g), out = h.zeros(Format::fp32, 1, n);
            const GradCheck ref = h.be->unscale_and_check(grad, 1.0f / 1024.0f, out);
            std::vector<float> mine(n);
            double ss = 0.0;
            bool bad = false;
            for (int i = 0; i < n; ++i) {
                mine[i] = dev::load_value(Format::fp16, grad.data(), i) * (1.0f / 1024.0f);
                bad = bad || !dev::is_finite(mine[i]);
                ss += static_cast<double>(mine[i]) * mine[i];
            }
            QCOMPARE(bad, ref.found_inf);
            QVERIFY(same_bits(h.values(out), mine));
            QVERIFY(std::isinf(ref.sum_squares) && std::isinf(ss));
        }
        struct Case {
            const char* name;
            Format working;
            bool master;
        };
        for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam, OptimizerKind::adamw})
            for (Case cs :
                 {Case{"master+fp16", Format::fp16, true}, Case{"fp32", Format::fp32, false},
                  Case{"pure-bf16", Format::bf16, false}}) {
                const auto w0 = normal(n, 62, 0.5);
                auto s10 = normal(n, 63, 0.01), s20 = normal(n, 64, 0.001);
                for (float& v : s20) v = v * v;
                Tensor wa = h.make(cs.working, 1, n, w0), wt = h.make(cs.working, 1, n, w0);
                Tensor ma = h.make(Format::fp32, 1, n, w0), mt = h.make(Format::fp32, 1, n, w0);
                Tensor s1a = h.make(Format::fp32, 1, n, s10), s1t = h.make(Format::fp32, 1, n, s10);
                Tensor s2a = h.make(Format::fp32, 1, n, s20), s2t = h.make(Format::fp32, 1, n, s20);
                for (int t = 1; t <= 3; ++t) {
                    auto g = normal(n, 70 + t, 1e-2);
                    for (int i = 0; i < n; i += 10)
                        g[i] *= 1e-6f;  // updates a low working copy loses
                    Tensor grad = h.make(Format::fp32, 1, n, g);
                    OptimizerStep st;
                    st.kind = kind;
                    st.lr = 1e-3f;
                    st.weight_decay = 0.01f;
                    st.t = t;
                    const UpdateStats ref =
                        h.be->optimizer_update(st, grad, cs.master ? &ma : nullptr, wa, s1a, &s2a);
                    const dev::OptConsts k = cuda::optimizer_consts(st);
                    const dev::TallyEdges e = dev::tally_edges(cs.working);
                    dev::Counts c;
                    auto* m1 = static_cast<float*>(s1t.data());
                    auto* m2 = static_cast<float*>(s2t.data());
                    auto* master = cs.master ? static_cast<float*>(mt.data()) : nullptr;
                    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
                        float w = master ? master[i] : dev::load_value(cs.working, wt.data(), i);
                        const bool moved = dev::optimizer_element(k, g[i], w, m1[i], m2[i]);
                        dev::optimizer_write_back(moved, w, master, cs.working, wt.data(), i, e, c);
                    }
                    const QString what = QString("%1 %2 t=%3").arg(int(kind)).arg(cs.name).arg(t);
                    const auto rw = h.values(wa);
                    CHECK_CLOSE(what + " working", rw, h.values(wt),
                                elementwise_bounds(rw, cs.working, 1.0));
                    const std::size_t diff = last_differing;
                    if (cs.master) {
                        const auto rm = h.values(ma);
                        CHECK_CLOSE(what + " master", rm, h.values(mt),
                                    elementwise_bounds(rm, Format::fp32, 1.0));
                    }
                    const auto r1 = h.values(s1a);
                    CHECK_CLOSE(what + " state1", r1, h.values(s1t),
                                elementwise_bounds(r1, Format::fp32, max_abs(r1)));
                    if (kind != OptimizerKind::sgd) {
                        const auto r2 = h.values(s2a);
                        CHECK_CLOSE(what + " state2", r2, h.values(s2t),
                                    elementwise_bounds(r2, Format::fp32, max_abs(r2)));
                    }
                    CHECK_COUNTS(what, ref.rounding, to_stats(c), diff);
                    if (bit_exact_required()) {
                        QCOMPARE(static_cast<std::size_t>(c.changed), ref.changed);
                        QCOMPARE(static_cast<std::size_t>(c.lost), ref.lost);
                    } else {  // a contracted update can land the other side of a rounding boundary
                        QVERIFY(std::llabs(static_cast<long long>(c.lost) -
                                           static_cast<long long>(ref.lost)) <= n / 100 + 1);
                    }
                    if (cs.working == Format::bf16)
                        QVERIFY2(ref.lost > 0, "the case should lose updates");
                }
            }
    }

    // ---- GPU: construction and errors ----------------------------------------------------------

    void make_cuda_backend_without_a_device_throws_device_error() {
#ifndef MPX_HAVE_CUDA
        QSKIP("built without the CUDA backend (no nvcc, or tests not linked with mpx_cuda)");
#else
        // No usable GPU here: device 0 must fail; with one, a device number that cannot exist.
        const int device = cuda::probe_device().usable ? 4096 : 0;
        try {
            auto be = cuda::make_cuda_backend(device);
            QFAIL("expected DeviceError");
        } catch (const DeviceError& e) {
            const QString msg = e.what();
            QVERIFY2(msg.contains("cannot use the GPU") && msg.contains("CPU backend"), e.what());
        }
#endif
    }

    // The comparisons themselves, CPU against CPU: every check must pass with equal bits. This runs
    // without a GPU and catches a broken harness before a GPU session spends time on it.
    void comparisons_pass_cpu_against_cpu() {
        NEED_COMPARISONS();
#ifdef MPX_HAVE_CUDA
        for (const Policy& p : policies()) {
            auto a = make_cpu_backend(), b = make_cpu_backend();
            for (auto op : {linear_ops, elementwise_ops, losses, unscale_and_optimizer}) {
                const Report r = op(*a, *b, p);
                QVERIFY2(r.ok(), qPrintable(QString::fromStdString(p.name + ":\n" + r.text())));
            }
        }
        const Factory cpu = [] { return make_cpu_backend(); };
        const Report t = training_tracks(cpu, 10);
        QVERIFY2(t.ok(), t.text().c_str());
        const Report o = overflow_storm(cpu);
        QVERIFY2(o.ok(), o.text().c_str());
#endif
    }

    // ... and each injected fault makes its comparison fail.
    void comparisons_catch_injected_faults() {
        NEED_COMPARISONS();
#ifdef MPX_HAVE_CUDA
        const Policy& fp32 = policies()[0];
        const Policy& amp = policies()[2];
        struct Case {
            Fault fault;
            Report (*op)(Backend&, Backend&, const Policy&);
            const Policy* policy;
        };
        for (const Case& c : {Case{Fault::gemm_scaled, linear_ops, &fp32},
                              Case{Fault::gelu_as_relu, elementwise_ops, &fp32},
                              Case{Fault::dropout_seed, elementwise_ops, &amp},
                              Case{Fault::adam_step, unscale_and_optimizer, &amp}, Case {
                                  Fault::stats_off,
                                  linear_ops,
                                  &amp
                              }}) {
            auto ref = make_cpu_backend();
            Faulty dut(c.fault);
            const Report r = c.op(*ref, dut, *c.policy);
            QVERIFY2(!r.ok(), qPrintable(QString("fault %1 went unnoticed").arg(int(c.fault))));
            qInfo("fault %d caught: %s", int(c.fault), r.failures().front().c_str());
        }
#endif
    }

    void gpu_out_of_memory_is_a_clear_error_and_recoverable() {
        REQUIRE_GPU();
#ifdef MPX_HAVE_CUDA
        auto gpu = cuda::make_cuda_backend();
        const Report r = out_of_memory(*gpu);
        QVERIFY2(r.ok(), r.text().c_str());
#endif
    }

    void gpu_ops_match_cpu_data() {
        QTest::addColumn<int>("policy");
#ifdef MPX_HAVE_CUDA
        for (std::size_t i = 0; i < policies().size(); ++i)
            QTest::newRow(policies()[i].name.c_str()) << static_cast<int>(i);
#else
        QTest::newRow("all") << 0;
#endif
    }
    // Every op, each precision policy: linear (forward, both backwards), element-wise (activations,
    // dropout, layernorm, transfers), losses, unscale and the three optimizers.
    void gpu_ops_match_cpu() {
        REQUIRE_GPU();
#ifdef MPX_HAVE_CUDA
        QFETCH(int, policy);
        const Policy& p = policies()[static_cast<std::size_t>(policy)];
        auto cpu = make_cpu_backend();
        auto gpu = cuda::make_cuda_backend();
        for (auto op : {linear_ops, elementwise_ops, losses, unscale_and_optimizer}) {
            const Report r = op(*cpu, *gpu, p);
            QVERIFY2(r.ok(), r.text().c_str());
        }
#endif
    }

    // 100 steps of the default preset (fp32, amp-fp16+pytorch, amp-bf16) track the CPU run.
    void gpu_training_tracks_cpu() {
        REQUIRE_GPU();
#ifdef MPX_HAVE_CUDA
        const Report r = training_tracks([] { return cuda::make_cuda_backend(); }, 100);
        for (const auto& n : r.notes()) qInfo("%s", n.c_str());
        QVERIFY2(r.ok(), r.text().c_str());
#endif
    }

    // overflow-storm: FP16 from 2^24 skips and halves until the scale fits; the GPU must skip the
    // same steps and carry the same scales (decided near 65504 vs inf, far from the last bits).
    void gpu_overflow_storm_skips_like_cpu() {
        REQUIRE_GPU();
#ifdef MPX_HAVE_CUDA
        const Report r = overflow_storm([] { return cuda::make_cuda_backend(); });
        QVERIFY2(r.ok(), r.text().c_str());
#endif
    }
};

QTEST_APPLESS_MAIN(TestCudaBackend)
#include "test_cuda_backend.moc"
