// `mpx-cli quantize` against an independent reference: tests/fp4/ref_quantize.py, a numpy float32
// rendering of NVIDIA Transformer Engine's pure-PyTorch NVFP4 reference (custom_recipes/
// quantization_ref_nvfp4.py) and of the MXFP4 scale rules, written without mpx's code. Both run
// on the same matrices in every mode (NVFP4 1x16, 16x16 tiles, RHT, both; MXFP4 under each scale
// rule and the default) and must agree bit for bit on every decoded value, every block scale and
// the global decode scale (any NaN equals any NaN; the sign of zero counts).
//
// The matrices come from a fixed seed, printed (MPX_FP4_SEED=<n> replays another): uniform,
// normal, Cauchy, values spread over 2^-40..2^40 and over the whole float32 range, a huge value per
// row, values near FLT_MAX, zero blocks and tiles, E4M3-subnormal and zero block scales, float32
// subnormals, inputs built to land exactly on E2M1 and E4M3 rounding ties after scaling (some where
// the E4M3 tie holds only for mult = S_enc * (1/6)f, not for S_enc / 6), MXFP4 rule edges, negative
// zeros, sizes off the block multiples, inf and NaN, an all-zero matrix. On a mismatch the folder
// with the inputs and both outputs is kept and named, beside the first differing value of each mode
// (MPX_FP4_KEEP=1 keeps every case's folder).
//
// Skips when /usr/bin/python3 or its numpy is missing (Debian: python3-numpy), or when the CLI has
// no quantize command.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <vector>

namespace {

constexpr std::uint64_t k_default_seed = 20250611;
const QString k_python = QStringLiteral("/usr/bin/python3");
const QString k_script = QStringLiteral(MPX_SOURCE_DIR "/tests/fp4/ref_quantize.py");
constexpr int k_timeout_ms = 120000;

constexpr float k_inf = std::numeric_limits<float>::infinity();
constexpr float k_nan = std::numeric_limits<float>::quiet_NaN();
constexpr float k_max = std::numeric_limits<float>::max();

float pow2(int k) { return std::ldexp(1.0f, k); }
float next_up(float x) { return std::nextafter(x, k_inf); }
float next_down(float x) { return std::nextafter(x, -k_inf); }

struct Matrix {
    QString name;
    int rows = 0, cols = 0;
    std::vector<float> v;
    Matrix(QString n, int r, int c) : name(std::move(n)), rows(r), cols(c), v(std::size_t(r) * c, 0.0f) {}
    float& at(int r, int c) { return v[std::size_t(r) * cols + c]; }
    float at(int r, int c) const { return v[std::size_t(r) * cols + c]; }
};

// Values as C's %a of the float promoted to double: exact, and what both readers parse like strtof.
QByteArray c_hex(float f) {
    if (std::isnan(f)) return std::signbit(f) ? "-nan" : "nan";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", static_cast<double>(f));
    return buf;
}

QString describe(float f) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%a (%.9g, bits 0x%08X)", static_cast<double>(f), static_cast<double>(f),
                  std::bit_cast<std::uint32_t>(f));
    return QString::fromLatin1(buf);
}

class Rng {
public:
    explicit Rng(std::uint64_t seed) : m_gen(seed) {}
    double uniform() { return double(m_gen() >> 11) * 0x1p-53; }           // [0, 1)
    double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
    int integer(int lo, int hi) { return lo + int(m_gen() % std::uint64_t(hi - lo + 1)); }  // [lo, hi]
    bool coin(double p = 0.5) { return uniform() < p; }
    double normal() {  // Box-Muller
        double u1 = uniform();
        while (u1 <= 0.0) u1 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * uniform());
    }
    double cauchy() { return std::tan(3.141592653589793 * (uniform() - 0.5)); }
    float sign() { return coin() ? 1.0f : -1.0f; }

private:
    std::mt19937_64 m_gen;
};

float finite(double d) {  // a float32, saturated to the finite range
    if (!(std::fabs(d) < double(k_max))) return d > 0 ? k_max : -k_max;
    return static_cast<float>(d);
}

constexpr float k_e2m1_ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};

// A value on (or, by chance, one ulp beside) a tie of E2M1 once multiplied by enc in float32.
float near_tie(Rng& rng, float unit, float enc, float limit) {
    const float tau = k_e2m1_ties[rng.integer(0, 6)];
    float x = tau * unit;
    // Search a few ulps around tau * unit for an x with float32(x * enc) == tau exactly.
    float best = x;
    float lo = x;
    for (int i = 0; i < 4; ++i) lo = next_down(lo);
    float c = lo;
    for (int i = 0; i < 9; ++i, c = next_up(c))
        if (c * enc == tau) {
            best = c;
            break;
        }
    const int variant = rng.integer(0, 9);
    if (variant == 0) best = next_up(best);
    if (variant == 1) best = next_down(best);
    if (std::fabs(best) > limit) best = limit;
    return rng.sign() * best;
}

std::vector<Matrix> make_cases(std::uint64_t seed) {
    Rng rng(seed);
    std::vector<Matrix> out;
    auto fill = [&](Matrix m, auto&& gen) {
        for (int r = 0; r < m.rows; ++r)
            for (int c = 0; c < m.cols; ++c) m.at(r, c) = gen(r, c);
        out.push_back(std::move(m));
        return &out.back();
    };
    auto normal = [&](int, int) { return finite(rng.normal()); };

    fill(Matrix("uniform 37x53", 37, 53), [&](int, int) { return finite(rng.uniform(-1.0, 1.0)); });
    fill(Matrix("normal 48x64", 48, 64), [&](int, int) { return finite(3.0 * rng.normal()); });
    fill(Matrix("cauchy 20x70", 20, 70), [&](int, int) { return finite(rng.cauchy()); });
    fill(Matrix("normal times 2^[-40,40] 33x40", 33, 40),
         [&](int, int) { return finite(std::ldexp(rng.normal(), rng.integer(-40, 40))); });
    {
        std::vector<int> k(32);
        for (int& e : k) e = rng.integer(-40, 40);
        fill(Matrix("rows of magnitudes 2^[-40,40] 32x48", 32, 48),
             [&](int r, int) { return finite(std::ldexp(rng.normal(), k[r])); });
    }
    {
        Matrix* m = fill(Matrix("one huge value per row 17x33", 17, 33), normal);
        for (int r = 0; r < m->rows; ++r)
            m->at(r, rng.integer(0, m->cols - 1)) =
                rng.sign() * finite(std::ldexp(1.0 + rng.uniform(), rng.integer(30, 100)));
    }
    {
        Matrix* m = fill(Matrix("near FLT_MAX 9x40", 9, 40), [&](int, int) { return finite(1e37 * rng.normal()); });
        m->at(0, 0) = k_max;
        m->at(8, 39) = -k_max;
        m->at(4, 20) = next_down(k_max);
    }
    {
        Matrix* m = fill(Matrix("zero blocks and tiles 20x64", 20, 64), normal);
        for (int r = 0; r < m->rows; ++r)
            for (int b = 0; b < 4; ++b)
                if (rng.coin(0.4))
                    for (int c = 16 * b; c < 16 * b + 16; ++c) m->at(r, c) = 0.0f;
        for (int r = 0; r < 16; ++r)
            for (int c = 16; c < 32; ++c) m->at(r, c) = 0.0f;  // a whole 16x16 tile
        for (int c = 0; c < m->cols; ++c) m->at(19, c) = 0.0f;
    }
    {
        // amax 2688: S_enc = 1, so block scales are vmax/6: E4M3 subnormal (below 2^-6) and zero
        // (below 2^-10) for small blocks.
        std::vector<int> k(16 * 3);
        for (int& e : k) e = rng.integer(-16, -3);
        Matrix* m = fill(Matrix("E4M3-subnormal and zero block scales 16x48", 16, 48),
                         [&](int r, int c) { return finite(std::ldexp(rng.normal(), k[r * 3 + c / 16])); });
        m->at(0, 0) = 2688.0f;
    }
    {
        Matrix* m = fill(Matrix("float32 subnormals 12x40", 12, 40),
                         [&](int, int) { return finite(std::ldexp(rng.normal(), rng.integer(-149, -118))); });
        m->at(0, 0) = pow2(-149);
        m->at(5, 7) = -pow2(-149);
        m->at(11, 39) = pow2(-126);
    }
    fill(Matrix("normal times 2^[-130,120] 8x64", 8, 64),
         [&](int, int) { return finite(std::ldexp(rng.normal(), rng.integer(-130, 120))); });
    {
        // NVFP4 E2M1 ties: amax 2688 makes S_enc = S_dec = 1 and mult = (1/6)f, and a block whose
        // largest value is 6 * 2^j gets the scale 2^j exactly (6 * (1/6)f = 1 + 2^-25 rounds to 1),
        // so tau * 2^j lands on the tie tau.
        Matrix* m = fill(Matrix("NVFP4 E2M1 ties 18x48", 18, 48), [](int, int) { return 0.0f; });
        m->at(0, 0) = 2688.0f;
        for (int r = 0; r < m->rows; ++r)
            for (int b = (r == 0 ? 1 : 0); b < 3; ++b) {
                const int j = rng.integer(-9, 8);
                const float unit = pow2(j);
                for (int c = 16 * b; c < 16 * b + 16; ++c) m->at(r, c) = near_tie(rng, unit, 1.0f / unit, 6.0f * unit);
                m->at(r, 16 * b + rng.integer(0, 15)) = rng.sign() * 6.0f * unit;
            }
    }
    {
        // E4M3 ties: with S_enc = 1 a block whose largest value is 6t has d = t exactly (t has 5
        // significant bits); t is a midpoint between two E4M3 neighbours, normal or subnormal.
        // The other elements sit on E2M1 ties for the scale that round-to-nearest-even gives.
        Matrix* m = fill(Matrix("E4M3 ties 8x64", 8, 64), [](int, int) { return 0.0f; });
        m->at(0, 0) = 2688.0f;
        for (int r = 0; r < m->rows; ++r)
            for (int b = (r == 0 ? 1 : 0); b < 4; ++b) {
                float t, s;
                if (rng.coin(0.7)) {
                    const int k = rng.integer(-6, 7), n = rng.integer(8, 15);
                    t = float(2 * n + 1) * pow2(k - 4);
                    s = float(n % 2 == 0 ? n : n + 1) * pow2(k - 3);
                } else {
                    const int mm = rng.integer(0, 7);
                    t = float(2 * mm + 1) * pow2(-10);
                    s = float(mm % 2 == 0 ? mm : mm + 1) * pow2(-9);
                }
                const float vmax = 6.0f * t;
                const float enc = s == 0.0f ? k_max : std::fmin(1.0f / s, k_max);
                for (int c = 16 * b; c < 16 * b + 16; ++c)
                    m->at(r, c) = s == 0.0f ? rng.sign() * float(rng.uniform()) * vmax
                                            : near_tie(rng, s, enc, vmax);
                m->at(r, 16 * b + rng.integer(0, 15)) = rng.sign() * vmax;
            }
    }
    {
        // Block maxima where the order of step 5 matters: S_enc * (1/6)f and S_enc / 6 round to
        // different floats for this amax, and vmax * mult lands exactly on an E4M3 tie while
        // vmax * (S_enc / 6) falls beside it, so a scale from the other formula rounds the other way.
        Matrix* m = fill(Matrix("E4M3 ties that need mult = S_enc * (1/6)f 6x64", 6, 64), [](int, int) { return 0.0f; });
        const float sixth = 1.0f / 6.0f;
        float amax = 0, mult = 0, alt = 0;
        for (int tries = 0; tries < 1000 && mult == alt; ++tries) {
            amax = finite(std::ldexp(1.0 + rng.uniform(), rng.integer(-3, 10)));
            const float s_enc = 2688.0f / amax;
            mult = s_enc * sixth;
            alt = s_enc / 6.0f;
        }
        for (float& v : m->v) v = finite(rng.normal() * amax / 64);
        m->at(0, 0) = amax;
        for (int r = 0; r < m->rows; ++r)
            for (int b = (r == 0 ? 1 : 0); b < 4; ++b) {
                for (int tries = 0; tries < 50; ++tries) {
                    const int k = rng.integer(-5, 7), n = rng.integer(8, 15);
                    const float t = float(2 * n + 1) * pow2(k - 4);  // an E4M3 midpoint
                    float v = t / mult;
                    for (int i = 0; i < 4; ++i) v = next_down(v);
                    bool placed = false;
                    for (int i = 0; i < 9 && !placed; ++i, v = next_up(v))
                        // t rounds to its even neighbour, below when n is even: the other
                        // product must fall on the other side of t to round the other way.
                        if (v * mult == t && (n % 2 == 0 ? v * alt > t : v * alt < t) && v < amax) {
                            m->at(r, 16 * b + rng.integer(0, 15)) = rng.sign() * v;
                            placed = true;
                        }
                    if (placed) break;
                }
            }
    }
    {
        // MXFP4 ties: a block whose largest value is 4 * 2^j gets e = j under every rule (floor,
        // ceil, even: log2 = j + 2 exactly; rceil: 2/3 * 2^j needs 2^j), so tau * 2^j is a tie.
        Matrix* m = fill(Matrix("MXFP4 E2M1 ties 10x64", 10, 64), [](int, int) { return 0.0f; });
        for (int r = 0; r < m->rows; ++r)
            for (int b = 0; b < 2; ++b) {
                const int j = rng.coin(0.8) ? rng.integer(-20, 20) : rng.integer(-140, 100);
                const float unit = pow2(j);
                for (int c = 32 * b; c < 32 * b + 32; ++c) m->at(r, c) = near_tie(rng, unit, pow2(-j), 4.0f * unit);
                m->at(r, 32 * b + rng.integer(0, 31)) = rng.sign() * 4.0f * unit;
            }
    }
    {
        // Block maxima on and one ulp beside the values where the MXFP4 rules change exponent.
        Matrix* m = fill(Matrix("MXFP4 scale-rule edges 8x64", 8, 64), [](int, int) { return 0.0f; });
        const float bases[] = {6.0f, 4.0f, 7.0f, 5.0f, 3.5f, 1.0f, 1.25f, 1.75f, 6.5f, 3.0f};
        for (int r = 0; r < m->rows; ++r)
            for (int b = 0; b < 2; ++b) {
                float vmax = bases[rng.integer(0, 9)] * pow2(rng.integer(-30, 30));
                const int variant = rng.integer(0, 2);
                if (variant == 1) vmax = next_up(vmax);
                if (variant == 2) vmax = next_down(vmax);
                for (int c = 32 * b; c < 32 * b + 32; ++c) m->at(r, c) = rng.sign() * float(rng.uniform()) * vmax;
                m->at(r, 32 * b + rng.integer(0, 31)) = rng.sign() * vmax;
            }
    }
    {
        Matrix* m = fill(Matrix("negative zeros 6x40", 6, 40), [&](int, int) {
            switch (rng.integer(0, 4)) {
            case 0: return -0.0f;
            case 1: return 0.0f;
            case 2: return -finite(std::fabs(rng.normal()) * 1e-30);
            default: return finite(rng.normal());
            }
        });
        for (int c = 0; c < m->cols; ++c) m->at(3, c) = -0.0f;
        for (int c = 0; c < m->cols; ++c) m->at(4, c) = -0.0f;
        m->at(4, 17) = 1.0f;
    }
    fill(Matrix("all negative zeros 2x20", 2, 20), [](int, int) { return -0.0f; });
    fill(Matrix("1x1", 1, 1), [](int, int) { return -3.7f; });
    fill(Matrix("1x17", 1, 17), normal);
    fill(Matrix("3x31", 3, 31), normal);
    fill(Matrix("17x1", 17, 1), normal);
    fill(Matrix("15x33", 15, 33), normal);
    fill(Matrix("16x32", 16, 32), normal);
    {
        std::vector<float> row(16);
        for (float& x : row) x = finite(rng.normal());
        fill(Matrix("constant rows 16x32", 16, 32), [&](int r, int) { return row[r]; });
    }
    fill(Matrix("+inf 8x40", 8, 40), normal)->at(3, 21) = k_inf;
    fill(Matrix("-inf 8x40", 8, 40), normal)->at(7, 0) = -k_inf;
    fill(Matrix("NaN 8x40", 8, 40), normal)->at(2, 33) = k_nan;
    {
        Matrix* m = fill(Matrix("inf and NaN in other blocks 5x70", 5, 70), normal);
        m->at(1, 3) = k_inf;
        m->at(3, 50) = k_nan;
        m->at(4, 69) = -k_inf;
    }
    fill(Matrix("all zero 4x20", 4, 20), [](int, int) { return 0.0f; });
    return out;
}

struct Mode {
    QString name;
    QStringList args;
};

const QList<Mode> k_modes = {
    {"nvfp4", {"--format", "nvfp4"}},
    {"nvfp4 --2d", {"--format", "nvfp4", "--2d"}},
    {"nvfp4 --rht", {"--format", "nvfp4", "--rht"}},
    {"nvfp4 --2d --rht", {"--format", "nvfp4", "--2d", "--rht"}},
    {"mxfp4 floor", {"--format", "mxfp4", "--mx-scale-rule", "floor"}},
    {"mxfp4 ceil", {"--format", "mxfp4", "--mx-scale-rule", "ceil"}},
    {"mxfp4 rceil", {"--format", "mxfp4", "--mx-scale-rule", "rceil"}},
    {"mxfp4 even", {"--format", "mxfp4", "--mx-scale-rule", "even"}},
    {"mxfp4 (default rule)", {"--format", "mxfp4"}},
};

bool write_matrix(const QString& path, const Matrix& m) {
    QByteArray text;
    for (int r = 0; r < m.rows; ++r) {
        for (int c = 0; c < m.cols; ++c) {
            if (c) text += ',';
            text += c_hex(m.at(r, c));
        }
        text += '\n';
    }
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text) == text.size();
}

std::vector<QList<QByteArray>> read_cells(const QString& path, QString* error) {
    std::vector<QList<QByteArray>> rows;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("cannot read ") + path;
        return rows;
    }
    for (const QByteArray& line : f.readAll().split('\n')) {
        const QByteArray t = line.trimmed();
        if (t.isEmpty()) continue;
        QList<QByteArray> cells = t.split(',');
        for (QByteArray& c : cells) c = c.trimmed();
        rows.push_back(cells);
    }
    return rows;
}

bool parse_f32(const QByteArray& text, float* out) {
    if (text.isEmpty()) return false;
    const std::string s = text.toStdString();
    char* end = nullptr;
    *out = std::strtof(s.c_str(), &end);
    return end == s.c_str() + s.size();
}

bool same_bits(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

// The first difference between the CLI's file and the reference's, or an empty string.
// what: "Y" (values, M x N, cell (r, c) is input (r, c)) or "S" (header line, then block scales).
// A difference in the sign of a zero alone is counted apart and named only when nothing else differs.
QString compare_files(const QString& cli_path, const QString& ref_path, const char* what, const Matrix& x,
                      const Mode& mode) {
    int mismatches = 0, zero_sign_only = 0;
    QString error;
    const auto cli = read_cells(cli_path, &error);
    if (!error.isEmpty()) return error;
    const auto ref = read_cells(ref_path, &error);
    if (!error.isEmpty()) return error;
    const bool scales = what[0] == 'S';
    if (cli.size() != ref.size())
        return QStringLiteral("%1 has %2 lines from the CLI, %3 from the reference").arg(what).arg(cli.size()).arg(ref.size());
    QString first, first_zero_sign;
    for (std::size_t i = 0; i < cli.size(); ++i) {
        const auto& a = cli[i];
        const auto& b = ref[i];
        qsizetype start = 0;
        if (scales && i == 0) {  // s_dec,<value>
            if (a.size() != 2 || a[0] != "s_dec")
                return QStringLiteral("S line 1 from the CLI is not 's_dec,<value>': ") + QString::fromLatin1(a.join(','));
            start = 1;
        }
        if (a.size() != b.size())
            return QStringLiteral("%1 line %2 has %3 values from the CLI, %4 from the reference")
                .arg(what).arg(i + 1).arg(a.size()).arg(b.size());
        for (qsizetype j = start; j < a.size(); ++j) {
            float fa = 0, fb = 0;
            if (!parse_f32(a[j], &fa))
                return QStringLiteral("%1 line %2 value %3 from the CLI does not parse: '%4'").arg(what).arg(i + 1).arg(j + 1).arg(QString::fromLatin1(a[j]));
            if (!parse_f32(b[j], &fb))
                return QStringLiteral("%1 line %2 value %3 from the reference does not parse: '%4'").arg(what).arg(i + 1).arg(j + 1).arg(QString::fromLatin1(b[j]));
            if (same_bits(fa, fb)) continue;
            const bool zero_sign = fa == 0.0f && fb == 0.0f;
            ++(zero_sign ? zero_sign_only : mismatches);
            if (!(zero_sign ? first_zero_sign : first).isEmpty()) continue;
            QString where, input;
            if (!scales) {
                where = QStringLiteral("Y row %1 column %2 (0-based)").arg(i).arg(j);
                if (int(i) < x.rows && j < x.cols) input = QStringLiteral("; input x[%1][%2] = %3").arg(i).arg(j).arg(describe(x.at(int(i), int(j))));
            } else if (i == 0) {
                where = QStringLiteral("s_dec");
            } else {
                const bool two_d = mode.args.contains(QStringLiteral("--2d"));
                const bool mx = mode.args.contains(QStringLiteral("mxfp4"));
                const int b = mx ? 32 : 16;
                const int r0 = two_d ? int(i - 1) * 16 : int(i - 1);
                where = QStringLiteral("S block row %1 column %2 (0-based; inputs rows %3..%4, columns %5..%6)")
                            .arg(i - 1).arg(j).arg(r0).arg(two_d ? r0 + 15 : r0).arg(j * b).arg(j * b + b - 1);
            }
            (zero_sign ? first_zero_sign : first) =
                QStringLiteral("%1: CLI %2 = %3, reference %4 = %5%6")
                    .arg(where, QString::fromLatin1(a[j]), describe(fa), QString::fromLatin1(b[j]), describe(fb), input);
        }
    }
    const QString zeros = zero_sign_only == 0 ? QString()
        : QStringLiteral(" (%1 %2 values differ only in the sign of a zero)").arg(zero_sign_only).arg(what);
    if (!first.isEmpty())
        return first + QStringLiteral(" (%1 %2 values differ)").arg(mismatches).arg(what) + zeros;
    if (!first_zero_sign.isEmpty())
        return QStringLiteral("only the sign of zero differs: ") + first_zero_sign + zeros;
    return {};
}

struct Proc {
    std::unique_ptr<QProcess> p = std::make_unique<QProcess>();
    QString label;
};

QString finish(Proc& pr) {
    if (!pr.p->waitForFinished(k_timeout_ms)) {
        pr.p->kill();
        pr.p->waitForFinished(5000);
        return pr.label + QStringLiteral(": timed out");
    }
    if (pr.p->exitStatus() != QProcess::NormalExit || pr.p->exitCode() != 0)
        return QStringLiteral("%1: exit %2: %3").arg(pr.label).arg(pr.p->exitCode())
            .arg(QString::fromUtf8(pr.p->readAllStandardError()).trimmed());
    return {};
}

}  // namespace

class TestFp4Reference : public QObject {
    Q_OBJECT

    std::uint64_t m_seed = k_default_seed;
    std::vector<Matrix> m_cases;

private slots:
    void initTestCase() {
        if (!QFile::exists(k_python)) QSKIP("no /usr/bin/python3: the reference tests/fp4/ref_quantize.py cannot run");
        QProcess py;
        py.start(k_python, {QStringLiteral("-c"), QStringLiteral("import numpy")});
        if (!py.waitForFinished(60000) || py.exitStatus() != QProcess::NormalExit)
            QSKIP("/usr/bin/python3 did not run");
        if (py.exitCode() != 0)
            QSKIP("numpy is missing for /usr/bin/python3 (Debian: python3-numpy): the reference cannot run");

        QProcess cli;
        cli.start(QStringLiteral(MPX_CLI_PATH), {QStringLiteral("quantize"), QStringLiteral("--help")});
        QVERIFY2(cli.waitForFinished(60000), "mpx-cli quantize --help did not finish");
        const QString help = QString::fromUtf8(cli.readAllStandardOutput() + cli.readAllStandardError());
        if (help.contains(QStringLiteral("unknown command")))
            QSKIP("mpx-cli has no quantize command");
        QVERIFY2(cli.exitCode() == 0, qPrintable(help));

        if (const char* s = std::getenv("MPX_FP4_SEED")) m_seed = std::strtoull(s, nullptr, 0);
        qInfo("fp4 reference: matrices from seed %llu (MPX_FP4_SEED=<n> replays another)",
              static_cast<unsigned long long>(m_seed));
        m_cases = make_cases(m_seed);
    }

    void agree_data() {
        QTest::addColumn<int>("index");
        // initTestCase has not run when QTest collects the rows: the list only depends on the seed.
        const auto cases = make_cases(k_default_seed);
        for (int i = 0; i < int(cases.size()); ++i) QTest::newRow(qPrintable(cases[std::size_t(i)].name)) << i;
    }

    void agree() {
        QFETCH(int, index);
        QVERIFY(index < int(m_cases.size()));
        const Matrix& x = m_cases[std::size_t(index)];
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString in = dir.filePath(QStringLiteral("x.csv"));
        QVERIFY(write_matrix(in, x));

        // One Python run for every mode (numpy imports once), the CLI runs beside it.
        QByteArray list;
        std::vector<Proc> procs;
        for (int k = 0; k < int(k_modes.size()); ++k) {
            const QString tag = QString::number(k);
            const QStringList files = {QStringLiteral("--in"), in,
                                       QStringLiteral("--out"), dir.filePath(QStringLiteral("ref_y%1.csv").arg(tag)),
                                       QStringLiteral("--scales"), dir.filePath(QStringLiteral("ref_s%1.csv").arg(tag))};
            list += (k_modes[k].args + files).join(QLatin1Char('\t')).toUtf8() + '\n';
            Proc pr;
            pr.label = QStringLiteral("mpx-cli quantize (") + k_modes[k].name + QLatin1Char(')');
            pr.p->start(QStringLiteral(MPX_CLI_PATH),
                        QStringList{QStringLiteral("quantize")} + k_modes[k].args +
                            QStringList{QStringLiteral("--in"), in,
                                        QStringLiteral("--out"), dir.filePath(QStringLiteral("cli_y%1.csv").arg(tag)),
                                        QStringLiteral("--scales"), dir.filePath(QStringLiteral("cli_s%1.csv").arg(tag))});
            procs.push_back(std::move(pr));
        }
        const QString list_path = dir.filePath(QStringLiteral("ref_runs.tsv"));
        {
            QFile f(list_path);
            QVERIFY(f.open(QIODevice::WriteOnly) && f.write(list) == list.size());
        }
        Proc ref;
        ref.label = QStringLiteral("python3 ref_quantize.py");
        ref.p->start(k_python, {k_script, QStringLiteral("--batch"), list_path});

        QStringList failures;
        if (const QString e = finish(ref); !e.isEmpty()) failures << e;
        for (auto& pr : procs)
            if (const QString e = finish(pr); !e.isEmpty()) failures << e;

        if (failures.isEmpty()) {
            for (int k = 0; k < int(k_modes.size()); ++k) {
                const QString tag = QString::number(k);
                for (const char* what : {"Y", "S"}) {
                    const QString file = what[0] == 'Y' ? QStringLiteral("y") : QStringLiteral("s");
                    const QString first = compare_files(dir.filePath(QStringLiteral("cli_%1%2.csv").arg(file, tag)),
                                                        dir.filePath(QStringLiteral("ref_%1%2.csv").arg(file, tag)), what,
                                                        x, k_modes[k]);
                    if (!first.isEmpty()) failures << QStringLiteral("[%1] %2").arg(k_modes[k].name, first);
                }
            }
        }
        if (std::getenv("MPX_FP4_KEEP") && failures.isEmpty()) {  // MPX_FP4_KEEP=1: keep every case's files
            dir.setAutoRemove(false);
            qInfo("'%s': files kept in %s", qPrintable(x.name), qPrintable(dir.path()));
        }
        if (!failures.isEmpty()) {
            dir.setAutoRemove(false);
            QFAIL(qPrintable(QStringLiteral("'%1' (seed %2): the CLI and the reference disagree; inputs and outputs "
                                            "kept in %3 (x.csv, cli_y<k>.csv / ref_y<k>.csv for mode k):\n  %4")
                                 .arg(x.name).arg(m_seed).arg(dir.path(), failures.join(QStringLiteral("\n  ")))));
        }
    }
};

// QProcess needs an event dispatcher, hence a QCoreApplication (not QTEST_APPLESS_MAIN).
QTEST_GUILESS_MAIN(TestFp4Reference)
#include "test_fp4_reference.moc"
