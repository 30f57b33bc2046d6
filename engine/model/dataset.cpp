// Generators for the seeded toy data sets, the batch sampler and row gathering. Rule: geometry is
// computed in double and stored as float once; input_scale is applied last, in float, so a scaled set
// is exactly the unscaled one times float(input_scale), element by element.
#include "engine/model/dataset.hpp"

#include "engine/base/error.hpp"
#include "engine/core/rng.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace mpx {

namespace {

constexpr double pi = std::numbers::pi;
constexpr int digit_side = k_digit_side;
constexpr int digit_pixels = digit_side * digit_side;

// Stream ids for Rng::derive: one per split and purpose, so adding draws to one never shifts another.
constexpr std::uint64_t stream_train = 1;
constexpr std::uint64_t stream_test = 2;
constexpr std::uint64_t stream_pixel_noise = 16;       // added to the split's stream id
constexpr std::uint64_t sampler_salt = 0x53414d504c4552ull;  // "SAMPLER": apart from data streams

// ---- 2-D classification sets: one point for a given label, in double ----

struct Point {
    double x, y;
};

constexpr double spiral_turns = 1.25;

Point spiral_point(const DatasetConfig& c, int label, Rng& rng) {
    const int k = c.classes;
    // sqrt spreads points evenly along the arm (arc length grows with radius); starting at 0.1
    // keeps the arms from meeting in one unlearnable point at the centre.
    const double t = 0.1 + 0.9 * std::sqrt(rng.uniform());
    const double gap = 1.0 / (k * spiral_turns);  // radial distance between neighbouring arms
    const double sd = 0.5 * c.noise * gap;
    const double r = t + sd * rng.normal();
    const double angle = 2.0 * pi * (static_cast<double>(label) / k + spiral_turns * t) +
                         sd * rng.normal() / t;  // arc-length jitter of the same size
    return {r * std::cos(angle), r * std::sin(angle)};
}

// sklearn's make_moons, centred on the origin (sklearn's shapes shifted by (-0.5, -0.25)).
Point moon_point(const DatasetConfig& c, int label, Rng& rng) {
    const double a = pi * rng.uniform();
    Point p = label == 0 ? Point{std::cos(a) - 0.5, std::sin(a) - 0.25}
                         : Point{0.5 - std::cos(a), 0.25 - std::sin(a)};
    p.x += c.noise * rng.normal();
    p.y += c.noise * rng.normal();
    return p;
}

// sklearn's make_circles with factor 0.5: label 0 on the outer ring (radius 1), 1 on the inner.
Point circle_point(const DatasetConfig& c, int label, Rng& rng) {
    const double a = 2.0 * pi * rng.uniform();
    const double r = label == 0 ? 1.0 : 0.5;
    return {r * std::cos(a) + c.noise * rng.normal(), r * std::sin(a) + c.noise * rng.normal()};
}

// Label 0 in quadrants I and III (x·y > 0), 1 in II and IV. Drawing |x|, |y| and signs for the label
// is the same distribution as uniform on [-1, 1]² while keeping the classes balanced.
Point xor_point(const DatasetConfig& c, int label, Rng& rng) {
    const double ax = rng.uniform(), ay = rng.uniform();
    const double sx = rng.below(2) == 0 ? 1.0 : -1.0;
    const double sy = label == 0 ? sx : -sx;
    return {sx * ax + c.noise * rng.normal(), sy * ay + c.noise * rng.normal()};
}

// Centres evenly spaced on the unit circle, class k at angle 2πk/K.
Point blob_point(const DatasetConfig& c, int label, Rng& rng) {
    const double a = 2.0 * pi * label / c.classes;
    return {std::cos(a) + c.noise * rng.normal(), std::sin(a) + c.noise * rng.normal()};
}

void make_points(const DatasetConfig& c, int n, Rng& rng, RowMatrix& x, std::vector<int>& y) {
    const int k = class_count(c);
    x.resize(n, 2);
    y.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        const int label = i % k;
        Point p{};
        switch (c.kind) {
        case DatasetKind::spirals: p = spiral_point(c, label, rng); break;
        case DatasetKind::moons: p = moon_point(c, label, rng); break;
        case DatasetKind::circles: p = circle_point(c, label, rng); break;
        case DatasetKind::xor_: p = xor_point(c, label, rng); break;
        case DatasetKind::blobs: p = blob_point(c, label, rng); break;
        default: break;
        }
        x(i, 0) = static_cast<float>(p.x);
        x(i, 1) = static_cast<float>(p.y);
        y[static_cast<std::size_t>(i)] = label;
    }
}

void make_sine(const DatasetConfig& c, int n, Rng& rng, RowMatrix& x, RowMatrix& t) {
    x.resize(n, 1);
    t.resize(n, 1);
    const float ts = static_cast<float>(c.target_scale);
    for (int i = 0; i < n; ++i) {
        const double xi = rng.uniform(-pi, pi);
        x(i, 0) = static_cast<float>(xi);
        t(i, 0) = static_cast<float>(std::sin(xi) + c.noise * rng.normal()) * ts;
    }
}

// ---- digits: polyline glyphs in a unit box (x right, y down), rendered anti-aliased ----

struct Segment {
    double x0, y0, x1, y1;
};
using Glyph = std::vector<Segment>;

void add_polyline(Glyph& g, std::initializer_list<Point> pts) {
    for (auto it = pts.begin(); it + 1 != pts.end(); ++it)
        g.push_back({it->x, it->y, (it + 1)->x, (it + 1)->y});
}

// Elliptical arc from deg0 to deg1 (maths orientation: 90 is the top), in `steps` chords.
void add_arc(Glyph& g, double cx, double cy, double rx, double ry, double deg0, double deg1,
             int steps = 16) {
    auto at = [&](int s) {
        const double a = (deg0 + (deg1 - deg0) * s / steps) * pi / 180.0;
        return Point{cx + rx * std::cos(a), cy - ry * std::sin(a)};
    };
    for (int s = 0; s < steps; ++s) {
        const Point p = at(s), q = at(s + 1);
        g.push_back({p.x, p.y, q.x, q.y});
    }
}

// Shapes chosen so that no digit is another plus or minus a small stroke (unlike seven segments,
// where 8 is 0 plus one bar), which keeps the classes apart after jitter.
const std::array<Glyph, 10>& glyphs() {
    static const std::array<Glyph, 10> table = [] {
        std::array<Glyph, 10> g;
        add_arc(g[0], 0.5, 0.5, 0.25, 0.38, 0, 360, 32);
        add_polyline(g[1], {{0.36, 0.26}, {0.52, 0.12}, {0.52, 0.88}});
        add_arc(g[2], 0.5, 0.33, 0.23, 0.2, 160, -30);
        add_polyline(g[2], {{0.70, 0.43}, {0.27, 0.88}, {0.77, 0.88}});
        add_arc(g[3], 0.5, 0.3, 0.2, 0.18, 150, -90);
        add_arc(g[3], 0.5, 0.68, 0.22, 0.2, 90, -150);
        add_polyline(g[4], {{0.62, 0.88}, {0.62, 0.12}, {0.24, 0.64}, {0.78, 0.64}});
        add_polyline(g[5], {{0.73, 0.12}, {0.33, 0.12}, {0.31, 0.46}, {0.39, 0.46}});
        add_arc(g[5], 0.5, 0.65, 0.22, 0.22, 120, -140);
        add_polyline(g[6], {{0.66, 0.12}, {0.30, 0.62}});
        add_arc(g[6], 0.5, 0.67, 0.21, 0.21, 0, 360, 24);
        add_polyline(g[7], {{0.25, 0.12}, {0.76, 0.12}, {0.42, 0.88}});
        add_arc(g[8], 0.5, 0.3, 0.17, 0.17, 0, 360, 24);
        add_arc(g[8], 0.5, 0.68, 0.21, 0.21, 0, 360, 24);
        add_arc(g[9], 0.5, 0.34, 0.21, 0.21, 0, 360, 24);
        add_polyline(g[9], {{0.71, 0.34}, {0.62, 0.88}});
        return g;
    }();
    return table;
}

double segment_distance(double px, double py, const Segment& s) {
    const double dx = s.x1 - s.x0, dy = s.y1 - s.y0;
    const double len2 = dx * dx + dy * dy;
    double u = len2 > 0.0 ? ((px - s.x0) * dx + (py - s.y0) * dy) / len2 : 0.0;
    u = std::clamp(u, 0.0, 1.0);
    const double ex = px - (s.x0 + u * dx), ey = py - (s.y0 + u * dy);
    return std::sqrt(ex * ex + ey * ey);
}

// One 28×28 image into `out` (784 floats, row-major), MNIST-like: the glyph box spans 20 px,
// centred, then jittered by a random affine map and stroke width.
void render_digit(int digit, Rng& rng, float* out) {
    const double rot = rng.uniform(-0.2, 0.2);  // radians, about ±11°
    const double scale = rng.uniform(0.85, 1.1);
    const double aspect = rng.uniform(0.9, 1.1);
    const double shear = rng.uniform(-0.2, 0.2);
    const double tx = rng.uniform(-2.0, 2.0), ty = rng.uniform(-2.0, 2.0);  // pixels
    const double half_width = rng.uniform(0.9, 1.6);                        // pixels
    const float ink = static_cast<float>(rng.uniform(0.8, 1.0));

    const double sx = 20.0 * scale * aspect, sy = 20.0 * scale / aspect;
    const double cr = std::cos(rot), sr = std::sin(rot);
    auto to_px = [&](double gx, double gy) {
        const double u = (gx - 0.5 + shear * (gy - 0.5)) * sx, v = (gy - 0.5) * sy;
        return Point{14.0 + tx + cr * u - sr * v, 14.0 + ty + sr * u + cr * v};
    };

    std::fill(out, out + digit_pixels, 0.0f);
    const double reach = half_width + 0.5;  // coverage falls from 1 to 0 over the last pixel
    for (const Segment& g : glyphs()[static_cast<std::size_t>(digit)]) {
        const Point a = to_px(g.x0, g.y0), b = to_px(g.x1, g.y1);
        const Segment s{a.x, a.y, b.x, b.y};
        // Only pixels whose centre (col + 0.5, row + 0.5) can lie within `reach` of the segment.
        const int c0 = std::max(0, static_cast<int>(std::floor(std::min(a.x, b.x) - reach)));
        const int c1 = std::min(digit_side - 1, static_cast<int>(std::ceil(std::max(a.x, b.x) + reach)));
        const int r0 = std::max(0, static_cast<int>(std::floor(std::min(a.y, b.y) - reach)));
        const int r1 = std::min(digit_side - 1, static_cast<int>(std::ceil(std::max(a.y, b.y) + reach)));
        for (int r = r0; r <= r1; ++r)
            for (int col = c0; col <= c1; ++col) {
                const double d = segment_distance(col + 0.5, r + 0.5, s);
                const float cov = static_cast<float>(std::clamp(reach - d, 0.0, 1.0)) * ink;
                float& px = out[r * digit_side + col];
                px = std::max(px, cov);
            }
    }
}

void make_digits(const DatasetConfig& c, int n, Rng& rng, Rng& noise_rng, RowMatrix& x,
                 std::vector<int>& y) {
    x.resize(n, digit_pixels);
    y.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        const int digit = i % 10;
        float* row = x.row(i).data();
        render_digit(digit, rng, row);
        if (c.noise > 0.0)
            for (int p = 0; p < digit_pixels; ++p)
                row[p] = std::clamp(row[p] + static_cast<float>(c.noise * noise_rng.normal()), 0.0f, 1.0f);
        y[static_cast<std::size_t>(i)] = digit;
    }
}

void make_split(const DatasetConfig& c, int n, std::uint64_t stream, RowMatrix& x,
                std::vector<int>& y, RowMatrix& t) {
    Rng rng = Rng::derive(c.seed, stream);
    switch (c.kind) {
    case DatasetKind::sine: make_sine(c, n, rng, x, t); break;
    case DatasetKind::digits: {
        Rng noise_rng = Rng::derive(c.seed, stream + stream_pixel_noise);
        make_digits(c, n, rng, noise_rng, x, y);
        break;
    }
    default: make_points(c, n, rng, x, y); break;
    }
    x *= static_cast<float>(c.input_scale);
}

}  // namespace

Dataset make_dataset(const DatasetConfig& c) {
    validate(c);
    if (c.kind == DatasetKind::text)
        throw ConfigError("data.kind", "a text is read, not generated: the session reads it (text_corpus.hpp) for a GPT");
    Dataset d;
    d.config = c;
    const DatasetShape shape = dataset_shape(c);
    d.loss = shape.loss;
    d.features = shape.features;
    d.outputs = shape.outputs;
    make_split(c, c.n_train, stream_train, d.x_train, d.y_train, d.t_train);
    make_split(c, c.n_test, stream_test, d.x_test, d.y_test, d.t_test);
    return d;
}

// ---- BatchSampler ----

BatchSampler::BatchSampler(std::size_t n, std::size_t batch, std::uint64_t seed)
    : m_batch(batch), m_seed(seed) {
    if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        throw ConfigError("data.n_train", "too many samples for int indices");
    if (batch == 0 || batch > n)
        throw ConfigError("train.batch", "must be between 1 and the number of training samples (" +
                                                  std::to_string(n) + "), got " + std::to_string(batch));
    m_perm.resize(n);
    shuffle_epoch();
}

void BatchSampler::shuffle_epoch() {
    // Restart from the identity so the order depends only on (seed, epoch): that is what makes
    // restore() exact without storing the permutation.
    for (std::size_t i = 0; i < m_perm.size(); ++i) m_perm[i] = static_cast<int>(i);
    Rng rng = Rng::derive(m_seed ^ sampler_salt, m_epoch);
    for (std::size_t i = m_perm.size() - 1; i > 0; --i) {
        const auto j = static_cast<std::size_t>(rng.below(i + 1));
        std::swap(m_perm[i], m_perm[j]);
    }
}

std::span<const int> BatchSampler::next() {
    if (m_position + m_batch > m_perm.size()) {
        ++m_epoch;
        m_position = 0;
        shuffle_epoch();
    }
    std::span<const int> out(m_perm.data() + m_position, m_batch);
    m_position += m_batch;
    return out;
}

void BatchSampler::restore(const State& s) {
    if (s.position > m_perm.size())
        throw ConfigError("train.batch", "saved sampler position " + std::to_string(s.position) +
                                                  " is past the data set's " + std::to_string(m_perm.size()) +
                                                  " samples; was the data set changed?");
    m_epoch = s.epoch;
    m_position = s.position;
    shuffle_epoch();
}

// ---- gathering ----

std::size_t sampler_examples(const Dataset& d, int block_size) {
    return d.text ? d.text->train_size - static_cast<std::size_t>(block_size) : static_cast<std::size_t>(d.x_train.rows());
}

void gather_rows(const RowMatrix& src, std::span<const int> idx, RowMatrix& dst) {
    const auto rows = static_cast<Eigen::Index>(idx.size());
    if (dst.rows() != rows || dst.cols() != src.cols()) dst.resize(rows, src.cols());
    const auto cols = static_cast<std::size_t>(src.cols());
    for (Eigen::Index i = 0; i < rows; ++i) {
        const int r = idx[static_cast<std::size_t>(i)];
        if (r < 0 || r >= src.rows()) throw std::out_of_range("gather_rows: index " + std::to_string(r));
        if (cols > 0) std::memcpy(dst.row(i).data(), src.row(r).data(), cols * sizeof(float));
    }
}

void gather_labels(std::span<const int> src, std::span<const int> idx, std::vector<int>& dst) {
    dst.resize(idx.size());  // no allocation when the capacity already fits
    for (std::size_t i = 0; i < idx.size(); ++i) {
        const int r = idx[i];
        if (r < 0 || static_cast<std::size_t>(r) >= src.size())
            throw std::out_of_range("gather_labels: index " + std::to_string(r));
        dst[i] = src[static_cast<std::size_t>(r)];
    }
}

void gather_windows(const TextCorpus& text, std::span<const std::size_t> starts, int T, RowMatrix& x,
                    std::vector<int>& labels) {
    const auto rows = static_cast<Eigen::Index>(starts.size());
    if (x.rows() != rows || x.cols() != T) x.resize(rows, T);
    labels.resize(starts.size() * static_cast<std::size_t>(T));
    for (std::size_t r = 0; r < starts.size(); ++r) {
        if (starts[r] + static_cast<std::size_t>(T) >= text.ids.size()) throw std::out_of_range("gather_windows: past the text");
        for (int t = 0; t < T; ++t) {
            const std::size_t at = starts[r] + static_cast<std::size_t>(t);
            x(static_cast<Eigen::Index>(r), t) = static_cast<float>(text.ids[at]);
            labels[r * static_cast<std::size_t>(T) + static_cast<std::size_t>(t)] = text.ids[at + 1];
        }
    }
}

}  // namespace mpx
