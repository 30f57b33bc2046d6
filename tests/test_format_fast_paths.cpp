// engine/format's fast paths (vectorised blocks, F16C, the FP16 table) against its scalar path,
// bit for bit, on every format and overflow mode, whole buffers and every tail length.
// Rule: the scalar path is the definition (engine/core/format_core.hpp); a fast path only ever equals it.
#include "format_test_support.hpp"

#include <QtTest>

#include <algorithm>
#include <span>

using namespace mpx;
using namespace format_test;

class TestFormatFastPaths : public QObject {
    Q_OBJECT

private slots:
    void encode_matches_reference_data();
    void encode_matches_reference();
    void buffer_paths_match_scalar_path_data();
    void buffer_paths_match_scalar_path();
    void buffer_tails_match_scalar_path_data();
    void buffer_tails_match_scalar_path();
    void cpu_has_f16c_matches_cpuid();
};

// ---------------------------------------------------------------------------------------------
// Fast paths against the scalar path

void TestFormatFastPaths::encode_matches_reference_data() {
    QTest::addColumn<Format>("format");
    QTest::addColumn<Overflow>("mode");
    for (Format f : all_formats)
        for (Overflow m : {Overflow::infinity, Overflow::saturate})
            QTest::addRow("%s_%s", to_string(f).data(), mode_name(m)) << f << m;
}

void TestFormatFastPaths::encode_matches_reference() {
    QFETCH(Format, format);
    QFETCH(Overflow, mode);
    Failures fail;
    const auto check = [&](float x) {
        const std::uint32_t a = encode(format, x, mode), b = encode_reference(format, x, mode);
        if (a != b) fail.add(hex(bits_of(x)) + ": encode " + hex(a) + ", reference " + hex(b));
    };
    for (float x : sample_inputs()) check(x);
    Rng rng(77 + static_cast<std::uint64_t>(format));
    for (int i = 0; i < 500000; ++i)
        check(float_of(static_cast<std::uint32_t>(rng.next_u64() >> 32)));
    QVERIFY2(fail.ok(), fail.report().constData());
}

void TestFormatFastPaths::buffer_paths_match_scalar_path_data() { encode_matches_reference_data(); }

void TestFormatFastPaths::buffer_paths_match_scalar_path() {
    QFETCH(Format, format);
    QFETCH(Overflow, mode);
    const std::vector<float>& in = sample_inputs();
    const std::size_t n = in.size();
    const int bytes = storage_bytes(format);
    QCOMPARE(info(format).storage_bytes, bytes);

    // One value at a time: the scalar path, and the statistics from their definitions (overflow:
    // a finite value that IEEE rounding would carry past max finite; underflow: non-zero to zero;
    // subnormal: a non-zero subnormal result).
    std::vector<std::uint32_t> want_bits(n);
    RoundStats want;
    Failures fail;
    for (std::size_t i = 0; i < n; ++i) {
        const float x = in[i];
        want_bits[i] = encode(format, x, mode);
        const float r = decode(format, want_bits[i]);
        // E2M1 has no inf or NaN to overflow to: there, from the table's threshold up (it saturates).
        const bool overflow =
            std::isfinite(x) && (format == Format::e2m1
                                     ? std::fabs(static_cast<double>(x)) >= overflow_threshold(format)
                                     : !std::isfinite(decode(format, encode(format, x, Overflow::infinity))));
        const bool underflow = x != 0.0f && !std::isnan(x) && r == 0.0f;
        want.overflow += overflow;
        // the largest finite |x| that overflowed, as bits (Counts::overflow_max)
        if (overflow) want.overflow_max = std::max<unsigned long long>(want.overflow_max, bits_of(std::fabs(x)));
        want.underflow += underflow;
        want.subnormal += classify(format, want_bits[i]) == FpClass::subnormal;
        if (rounding_overflows(format, x) != overflow)
            fail.add(hex(bits_of(x)) + ": rounding_overflows says " + (overflow ? "no" : "yes"));
        if (rounding_underflows(format, x, mode) != underflow)
            fail.add(hex(bits_of(x)) + ": rounding_underflows says " + (underflow ? "no" : "yes"));
    }
    QVERIFY2(fail.ok(), fail.report().constData());
    if (format != Format::fp32) {
        QVERIFY(want.overflow > 0);
        QVERIFY(want.underflow > 0);
    }
    QVERIFY(want.subnormal > 0);

    // encode_buffer packs exactly the scalar bits.
    std::vector<unsigned char> packed(n * static_cast<std::size_t>(bytes));
    const RoundStats enc_stats = encode_buffer(format, in, packed.data(), mode);
    const auto packed_at = [&](std::size_t i) -> std::uint32_t {
        std::uint32_t v = 0;
        std::memcpy(&v, packed.data() + i * static_cast<std::size_t>(bytes),
                    static_cast<std::size_t>(bytes));
        return v;  // little-endian host: the low bytes are the element
    };
    for (std::size_t i = 0; i < n; ++i)
        if (packed_at(i) != want_bits[i])
            fail.add(hex(bits_of(in[i])) + ": encode_buffer " + hex(packed_at(i)) + ", scalar " +
                     hex(want_bits[i]));
    QVERIFY2(fail.ok(), fail.report().constData());
    QCOMPARE(enc_stats.overflow, want.overflow);
    QCOMPARE(enc_stats.underflow, want.underflow);
    QCOMPARE(enc_stats.subnormal, want.subnormal);
    QCOMPARE(enc_stats.overflow_max, want.overflow_max);

    // decode_buffer unpacks to exactly the scalar decode (NaN payloads included).
    std::vector<float> unpacked(n);
    decode_buffer(format, packed.data(), unpacked);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t want_f = bits_of(decode(format, want_bits[i]));
        if (bits_of(unpacked[i]) != want_f)
            fail.add(hex(want_bits[i]) + ": decode_buffer " + hex(bits_of(unpacked[i])) +
                     ", decode " + hex(want_f));
    }
    QVERIFY2(fail.ok(), fail.report().constData());

    // round_in_place equals decode(encode(x)) bit for bit.
    std::vector<float> rounded = in;
    const RoundStats rip_stats = round_in_place(format, rounded, mode);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t want_f = bits_of(decode(format, want_bits[i]));
        if (bits_of(rounded[i]) != want_f)
            fail.add(hex(bits_of(in[i])) + ": round_in_place " + hex(bits_of(rounded[i])) +
                     ", scalar " + hex(want_f));
    }
    QVERIFY2(fail.ok(), fail.report().constData());
    QCOMPARE(rip_stats.overflow, want.overflow);
    QCOMPARE(rip_stats.underflow, want.underflow);
    QCOMPARE(rip_stats.subnormal, want.subnormal);
    QCOMPARE(rip_stats.overflow_max, want.overflow_max);
}

// Short buffers at odd offsets, so every length of a vector path's tail meets NaN payloads, ties
// and overflows (the sample starts with the FP32 specials).
void TestFormatFastPaths::buffer_tails_match_scalar_path_data() { encode_matches_reference_data(); }

void TestFormatFastPaths::buffer_tails_match_scalar_path() {
    QFETCH(Format, format);
    QFETCH(Overflow, mode);
    const std::vector<float>& all = sample_inputs();
    const std::size_t bytes = static_cast<std::size_t>(storage_bytes(format));
    Failures fail;
    for (std::size_t offset = 0; offset < 4; ++offset)
        for (std::size_t len = 0; len <= 40; ++len) {
            const std::span<const float> in(all.data() + offset, len);
            std::vector<unsigned char> packed(len * bytes + 1);
            encode_buffer(format, in, packed.data(), mode);
            std::vector<float> unpacked(len), rounded(in.begin(), in.end());
            decode_buffer(format, packed.data(), unpacked);
            round_in_place(format, rounded, mode);
            for (std::size_t i = 0; i < len; ++i) {
                const std::uint32_t b = encode(format, in[i], mode);
                std::uint32_t got = 0;
                std::memcpy(&got, packed.data() + i * bytes, bytes);
                const std::uint32_t want_f = bits_of(decode(format, b));
                if (got != b || bits_of(unpacked[i]) != want_f || bits_of(rounded[i]) != want_f)
                    fail.add("offset " + std::to_string(offset) + " length " + std::to_string(len) +
                             " index " + std::to_string(i) + ": input " + hex(bits_of(in[i])));
            }
        }
    QVERIFY2(fail.ok(), fail.report().constData());
}

void TestFormatFastPaths::cpu_has_f16c_matches_cpuid() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    const bool expected = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
    QCOMPARE(cpu_has_f16c(), expected);
#else
    QCOMPARE(cpu_has_f16c(), false);
#endif
}

QTEST_APPLESS_MAIN(TestFormatFastPaths)
#include "test_format_fast_paths.moc"
