// Every FP32 bit pattern (all 2^32) through mpx's FP16 and BF16 encoders, against independent
// implementations (REFERENCE.md): the CPU's F16C VCVTPS2PH with round-to-nearest, and Eigen's
// software Eigen::half / Eigen::bfloat16; and against mpx's own generic encoder and buffer path.
// Rule: Eigen::half must use its software conversion, never the F16C instructions it is checked
// against; one sweep per format computes every comparison, the tests read its counts.

// The engine target may be built with -march=native, which turns on F16C for everything that links
// it; hide F16C from Eigen (before any header can include it) so Eigen::half converts in software.
// Nothing else here depends on the macro: the F16C reference below asks for the ISA explicitly.
#undef __F16C__
#include <Eigen/Core>
#if defined(EIGEN_HAS_FP16_C)
#error "Eigen::half would use F16C here; it must be the independent software conversion"
#endif

#include "engine/precision/format.hpp"

#include <QtTest>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MPX_TEST_X86 1
#endif

using namespace mpx;

namespace {

constexpr std::uint64_t k_all = std::uint64_t{1} << 32;
constexpr std::size_t k_block = 4096;

// What each sweep holds mpx's scalar encode() against.
enum Check : std::size_t {
    against_reference,
    against_buffer,
    against_eigen,
    against_f16c,
    k_checks
};
const char* const k_check_names[k_checks] = {"encode_reference", "encode_buffer", "Eigen", "F16C"};

struct Mismatches {
    std::uint64_t count = 0;
    std::uint64_t first_input = 0;  // lowest mismatching pattern, when count > 0
    std::uint16_t ours = 0, theirs = 0;
    void add(std::uint64_t input, std::uint16_t o, std::uint16_t t) {
        if (count++ == 0) {
            first_input = input;
            ours = o;
            theirs = t;
        }
    }
    void merge_later(const Mismatches& m) {  // m covers higher patterns than *this
        if (count == 0 && m.count > 0) {
            first_input = m.first_input;
            ours = m.ours;
            theirs = m.theirs;
        }
        count += m.count;
    }
};

struct SweepResult {
    std::array<Mismatches, k_checks> checks;
    bool f16c_ran = false;
};

bool fp16_is_nan(std::uint16_t h) { return (h & 0x7FFFu) > 0x7C00u; }
bool bf16_is_nan(std::uint16_t h) { return (h & 0x7FFFu) > 0x7F80u; }

#ifdef MPX_TEST_X86
// _MM_FROUND_TO_NEAREST_INT: round to nearest even whatever MXCSR says.
__attribute__((target("avx,f16c"))) void f16c_block(const float* in, std::uint16_t* out,
                                                    std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
    }
    for (; i < n; ++i)
        out[i] = static_cast<std::uint16_t>(
            _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(in[i]), _MM_FROUND_TO_NEAREST_INT), 0));
}
#endif

// Patterns [begin, end) in blocks: mpx's encode() once per value, then every other implementation.
// Eigen and F16C may give a NaN another payload (a match if both are NaN); mpx's own paths must
// agree bit for bit.
SweepResult sweep_range(Format f, bool use_f16c, std::uint64_t begin, std::uint64_t end) {
    SweepResult r;
    r.f16c_ran = use_f16c;
    std::vector<float> in(k_block);
    std::vector<std::uint16_t> ours(k_block), theirs(k_block);
    const auto is_nan = f == Format::fp16 ? fp16_is_nan : bf16_is_nan;
    const auto compare = [&](Check c, std::uint64_t base, std::size_t n, bool nan_matches_nan) {
        for (std::size_t i = 0; i < n; ++i) {
            if (ours[i] == theirs[i]) continue;
            if (nan_matches_nan && is_nan(ours[i]) && is_nan(theirs[i])) continue;
            r.checks[c].add(base + i, ours[i], theirs[i]);
        }
    };
    for (std::uint64_t base = begin; base < end; base += k_block) {
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(k_block, end - base));
        for (std::size_t i = 0; i < n; ++i)
            in[i] = std::bit_cast<float>(static_cast<std::uint32_t>(base + i));
        for (std::size_t i = 0; i < n; ++i)
            ours[i] = static_cast<std::uint16_t>(encode(f, in[i], Overflow::infinity));

        for (std::size_t i = 0; i < n; ++i)
            theirs[i] = static_cast<std::uint16_t>(encode_reference(f, in[i], Overflow::infinity));
        compare(against_reference, base, n, false);

        encode_buffer(f, std::span<const float>(in.data(), n), theirs.data(), Overflow::infinity);
        compare(against_buffer, base, n, false);

        if (f == Format::fp16)
            for (std::size_t i = 0; i < n; ++i)
                theirs[i] = Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(in[i]));
        else
            for (std::size_t i = 0; i < n; ++i)
                theirs[i] = Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(in[i]));
        compare(against_eigen, base, n, true);

#ifdef MPX_TEST_X86
        if (use_f16c) {
            f16c_block(in.data(), theirs.data(), n);
            compare(against_f16c, base, n, true);
        }
#endif
    }
    return r;
}

// All 2^32 patterns, one contiguous range per hardware thread; run once per format and kept, so
// each test below reads its own comparison. Prints the sweep's elapsed time.
const SweepResult& sweep(Format f) {
    static std::array<std::optional<SweepResult>, 2> done;
    auto& slot = done[f == Format::fp16 ? 0 : 1];
    if (slot) return *slot;

    const bool use_f16c = f == Format::fp16 && cpu_has_f16c();
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<SweepResult> parts(threads);
    std::vector<std::thread> pool;
    QElapsedTimer timer;
    timer.start();
    const std::clock_t cpu_start = std::clock();  // all threads: the cost on a busy machine too
    const std::uint64_t step = (k_all + threads - 1) / threads;
    for (unsigned t = 0; t < threads; ++t) {
        const std::uint64_t begin = std::min(k_all, t * step), end = std::min(k_all, begin + step);
        pool.emplace_back([&parts, f, use_f16c, t, begin, end] {
            parts[t] = sweep_range(f, use_f16c, begin, end);
        });
    }
    for (auto& th : pool) th.join();
    SweepResult total;
    total.f16c_ran = use_f16c;
    for (const SweepResult& p : parts)  // in pattern order
        for (std::size_t c = 0; c < k_checks; ++c) total.checks[c].merge_later(p.checks[c]);
    const double cpu_s = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    qInfo(
        "%s sweep (encode vs encode_reference, encode_buffer, %s%s): 2^32 patterns in %.1f s "
        "wall, %.1f s CPU, %u threads",
        to_string(f).data(), f == Format::fp16 ? "Eigen::half" : "Eigen::bfloat16",
        use_f16c ? ", F16C" : "", timer.elapsed() / 1000.0, cpu_s, threads);
    slot = total;
    return *slot;
}

QByteArray describe(const Mismatches& m, Check c) {
    char buf[256];
    std::snprintf(
        buf, sizeof buf, "%llu mismatches; first: FP32 0x%08llX, encode 0x%04X, %s 0x%04X",
        static_cast<unsigned long long>(m.count), static_cast<unsigned long long>(m.first_input),
        m.ours, k_check_names[c], m.theirs);
    return buf;
}

}  // namespace

class TestExhaustiveFormat : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void fp16_matches_f16c_for_every_float();
    void fp16_matches_eigen_half_for_every_float();
    void fp16_encode_matches_reference_for_every_float();
    void fp16_encode_buffer_matches_encode_for_every_float();
    void bf16_matches_eigen_bfloat16_for_every_float();
    void bf16_encode_matches_reference_for_every_float();
    void bf16_encode_buffer_matches_encode_for_every_float();
};

void TestExhaustiveFormat::initTestCase() {
#ifdef MPX_TEST_X86
    // Eigen's software FP16 path rounds subnormal results with a float addition: it is a reference
    // only under the default MXCSR (round to nearest, no flush-to-zero, no denormals-are-zero).
    QCOMPARE(_mm_getcsr() & 0xE040u, 0u);
#endif
    // The independent side must get the easy cases right, or its agreement means nothing.
    QCOMPARE(Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(65520.0f)), std::uint16_t{0x7C00});
    QCOMPARE(Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(65519.996f)),
             std::uint16_t{0x7BFF});
    QCOMPARE(Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(0x1p-24f)), std::uint16_t{0x0001});
    QCOMPARE(Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(0x1p-25f)), std::uint16_t{0x0000});
    QCOMPARE(Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(1.0f + 0x1.8p-7f)),
             std::uint16_t{0x3F82});
}

void TestExhaustiveFormat::fp16_matches_f16c_for_every_float() {
#ifdef MPX_TEST_X86
    if (!cpu_has_f16c()) QSKIP("this CPU has no F16C instructions to compare with");
    const SweepResult& s = sweep(Format::fp16);
    QVERIFY(s.f16c_ran);
    QVERIFY2(s.checks[against_f16c].count == 0,
             describe(s.checks[against_f16c], against_f16c).constData());
#else
    QSKIP("F16C is an x86 instruction set; not available on this architecture");
#endif
}

void TestExhaustiveFormat::fp16_matches_eigen_half_for_every_float() {
    const Mismatches& m = sweep(Format::fp16).checks[against_eigen];
    QVERIFY2(m.count == 0, describe(m, against_eigen).constData());
}

void TestExhaustiveFormat::fp16_encode_matches_reference_for_every_float() {
    const Mismatches& m = sweep(Format::fp16).checks[against_reference];
    QVERIFY2(m.count == 0, describe(m, against_reference).constData());
}

void TestExhaustiveFormat::fp16_encode_buffer_matches_encode_for_every_float() {
    const Mismatches& m = sweep(Format::fp16).checks[against_buffer];
    QVERIFY2(m.count == 0, describe(m, against_buffer).constData());
}

void TestExhaustiveFormat::bf16_matches_eigen_bfloat16_for_every_float() {
    const Mismatches& m = sweep(Format::bf16).checks[against_eigen];
    QVERIFY2(m.count == 0, describe(m, against_eigen).constData());
}

void TestExhaustiveFormat::bf16_encode_matches_reference_for_every_float() {
    const Mismatches& m = sweep(Format::bf16).checks[against_reference];
    QVERIFY2(m.count == 0, describe(m, against_reference).constData());
}

void TestExhaustiveFormat::bf16_encode_buffer_matches_encode_for_every_float() {
    const Mismatches& m = sweep(Format::bf16).checks[against_buffer];
    QVERIFY2(m.count == 0, describe(m, against_buffer).constData());
}

QTEST_APPLESS_MAIN(TestExhaustiveFormat)
#include "test_exhaustive_format.moc"
