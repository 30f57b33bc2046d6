// Decision-boundary grids: cell centres through Run::predict, logits turned into a class and its
// probability with the loss op's own arithmetic (engine/core/op_math.hpp), and the pacer that keeps
// their cost within a share of the engine's time.
#include "engine/run/boundary.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>

#include "engine/base/error.hpp"
#include "engine/core/op_math.hpp"
#include "engine/run/session.hpp"

namespace mpx {

// ---- the run's forward pass on any inputs ----------------------------------------------------------

// Same rule as Run::evaluate (engine/run/evaluate.cpp): only buffers the next step overwrites before
// reading them are written (input, activations), nothing is counted into a step, nothing allocated
// on the backend.
RowMatrix Run::predict(const RowMatrix& x) {
    require_idle("predict");
    const auto& sizes = m_cfg->model.sizes;
    if (x.cols() != sizes.front())
        throw ConfigError("model.sizes", "the inputs have " + std::to_string(x.cols()) +
                                             " features but the model takes " + std::to_string(sizes.front()));
    Backend& be = *m_backend;
    Model& model = *m_model;
    const int batch = model.batch(), outputs = sizes.back();
    const auto n = x.rows();
    RowMatrix out(n, outputs);
    RowMatrix chunk = RowMatrix::Zero(batch, x.cols());  // (batch, features)
    std::vector<float> y(static_cast<std::size_t>(batch) * static_cast<std::size_t>(outputs));  // (batch, outputs)
    for (Eigen::Index first = 0; first < n; first += batch) {
        const Eigen::Index rows = std::min<Eigen::Index>(batch, n - first);
        chunk.topRows(rows) = x.middleRows(first, rows);
        if (rows < batch) chunk.bottomRows(batch - rows).setZero();
        model.set_input(chunk);
        be.download(model.forward(0, false, Pass::uncounted), y);
        out.middleRows(first, rows) = Eigen::Map<const RowMatrix>(y.data(), batch, outputs).topRows(rows);
    }
    be.begin_step();  // set_input counted its rounding: that belongs to no step
    return out;
}

// ---- the plane -----------------------------------------------------------------------------------

std::string boundary_refusal(const DatasetConfig& c) {
    const DatasetShape shape = dataset_shape(c);
    if (shape.features == 2) return {};
    return "Decision boundaries need a data set with two input features, a plane to draw "
           "(spirals, moons, circles, xor or blobs); " +
           std::string(to_string(c.kind)) + " has " + std::to_string(shape.features) + " input feature" +
           (shape.features == 1 ? "" : "s") + ".";
}

namespace {
void require_plane(const DatasetConfig& c) {
    if (const std::string why = boundary_refusal(c); !why.empty()) throw ConfigError("data.kind", why);
}
}  // namespace

PlaneExtent plane_extent(const Dataset& d, double margin) {
    require_plane(d.config);
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (const RowMatrix* m : {&d.x_train, &d.x_test})
        for (Eigen::Index r = 0; r < m->rows(); ++r)
            for (int k = 0; k < 2; ++k) {
                const double v = (*m)(r, k);
                lo[k] = std::min(lo[k], v);
                hi[k] = std::max(hi[k], v);
            }
    if (!(lo[0] <= hi[0])) return {};  // no points: the unit square around 0
    double span = std::max(hi[0] - lo[0], hi[1] - lo[1]);
    if (!(span > 0)) span = 1.0;  // every point in one place
    const double half = span * (0.5 + margin);
    const double cx = (lo[0] + hi[0]) / 2, cy = (lo[1] + hi[1]) / 2;
    return {cx - half, cx + half, cy - half, cy + half};
}

RowMatrix grid_points(const PlaneExtent& e, int resolution) {
    RowMatrix p(static_cast<Eigen::Index>(resolution) * resolution, 2);
    const double dx = (e.x1 - e.x0) / resolution, dy = (e.y1 - e.y0) / resolution;
    for (int r = 0; r < resolution; ++r)
        for (int c = 0; c < resolution; ++c) {
            const Eigen::Index i = static_cast<Eigen::Index>(r) * resolution + c;
            p(i, 0) = static_cast<float>(e.x0 + (c + 0.5) * dx);
            p(i, 1) = static_cast<float>(e.y0 + (r + 0.5) * dy);
        }
    return p;
}

// ---- grids ---------------------------------------------------------------------------------------

BoundaryGrid evaluate_boundary(Run& run, const DatasetConfig& data, const PlaneExtent& plane, int resolution) {
    require_plane(data);
    if (resolution < k_min_boundary_resolution || resolution > k_max_boundary_resolution)
        throw ConfigError("boundary.resolution", "must be between " + std::to_string(k_min_boundary_resolution) +
                                                     " and " + std::to_string(k_max_boundary_resolution) +
                                                     " cells per side (got " + std::to_string(resolution) + ")");
    const RowMatrix out = run.predict(grid_points(plane, resolution));  // (cells, outputs)
    const auto cells = static_cast<std::size_t>(out.rows());
    const int C = static_cast<int>(out.cols());
    BoundaryGrid g;
    g.label.resize(cells);
    g.confidence.resize(cells);
    for (std::size_t i = 0; i < cells; ++i) {
        const auto row = [&](int c) { return out(static_cast<Eigen::Index>(i), c); };
        bool finite = true;
        for (int c = 0; c < C; ++c) finite = finite && std::isfinite(row(c));
        if (!finite) {
            g.label[i] = -1;
            g.confidence[i] = NAN;
            continue;
        }
        const int label = core::argmax_row(row, C);
        // The probability the loss op gives that class: exp(logit − lse) = exp(−loss).
        const float loss = core::softmax_xent_row(row, C, label, 1.0f, 1.0f, [](int, float) {});
        g.label[i] = static_cast<std::int8_t>(label);
        g.confidence[i] = std::exp(-loss);
    }
    return g;
}

namespace {
double agreement(const BoundaryGrid& a, const BoundaryGrid& ref) {
    std::size_t same = 0;
    for (std::size_t i = 0; i < a.label.size(); ++i) same += a.label[i] == ref.label[i];
    return static_cast<double>(same) / static_cast<double>(a.label.size());
}
}  // namespace

Boundaries evaluate_boundaries(Session& s, int resolution) {
    const auto t0 = std::chrono::steady_clock::now();
    const Dataset& d = s.dataset();
    Boundaries b;
    b.step = s.steps_done();
    b.plane = plane_extent(d);
    b.resolution = resolution;
    b.classes = d.outputs;
    for (std::size_t i = 0; i < s.run_count(); ++i) {
        b.runs.push_back(evaluate_boundary(s.run(i), d.config, b.plane, resolution));
        if (b.reference < 0 && s.run(i).info().spec.mode == Mode::fp32) b.reference = static_cast<int>(i);
    }
    for (const BoundaryGrid& g : b.runs)
        b.agreement.push_back(b.reference < 0 ? std::nullopt
                                                 : std::optional(agreement(g, b.runs[static_cast<std::size_t>(b.reference)])));
    const bool test = d.x_test.rows() > 0;
    const RowMatrix& x = test ? d.x_test : d.x_train;
    const auto n = std::min<Eigen::Index>(x.rows(), k_max_boundary_points);
    b.points.assign(x.data(), x.data() + n * x.cols());  // row-major: the first n rows
    const std::vector<int>& y = test ? d.y_test : d.y_train;
    b.point_labels.assign(y.begin(), y.begin() + n);
    b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return b;
}

// ---- pacing --------------------------------------------------------------------------------------

int BoundaryPacer::next_resolution(int resolution, double seconds, double budget_seconds) {
    const auto rungs = std::size(k_boundary_resolutions);
    std::size_t at = 0;  // the largest rung not above `resolution`
    while (at + 1 < rungs && k_boundary_resolutions[at + 1] <= resolution) ++at;
    const double per_cell = std::max(0.0, seconds) / (static_cast<double>(resolution) * resolution);
    std::size_t fits = 0;
    for (std::size_t i = 0; i < rungs; ++i) {
        const double r = k_boundary_resolutions[i];
        if (per_cell * r * r <= budget_seconds) fits = i;
    }
    return k_boundary_resolutions[std::min(fits, at + 1)];
}

void BoundaryPacer::record(double start, double seconds, BoundaryTrigger why) {
    m_resolution = next_resolution(m_resolution, seconds, budget());
    if (why == BoundaryTrigger::on_request) return;
    // The last period, from the previous start to this one, is complete: its share is the previous
    // grid's cost over it (at most `share`, since the wait after a grid grows with its cost).
    if (m_last && start > *m_last) m_measured = m_last_seconds / (start - *m_last);
    m_last = start;
    m_last_seconds = seconds;
    // Even the smallest grid may cost more than the budget (a wide model): then wait longer, so the
    // share holds whatever the resolution.
    m_wait = std::max(m_min_interval, seconds / m_share);
}

}  // namespace mpx
