// Sweep points on worker threads, the sweep CSV and sidecar, --explain and --merge.
#include "engine/sweep/sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/base/error.hpp"
#include "engine/base/parallel.hpp"
#include "engine/base/text.hpp"
#include "engine/io/export.hpp"

namespace mpx {

OutcomeTally::OutcomeTally(const RunInfo& run, long long steps) {
    m_out.run = run.label;
    if (run.scaler.kind == ScalerKind::dynamic) m_min_scale = run.scaler.min_scale;
    m_tail_from = steps - std::max<long long>(1, steps / 10);  // as `mpx-cli run`'s tail_mean
}

void OutcomeTally::add(const StepRecord& r) {
    if (m_n++ == 0) m_out.first_loss = r.loss;
    m_out.final_loss = r.loss;
    m_out.skipped += r.skipped;
    const auto event = static_cast<ScaleEvent>(r.scale_event);
    if (event == ScaleEvent::backoff) {
        ++m_out.backoffs;
        m_out.settled_step = r.step + 1;
    }
    m_out.growths += event == ScaleEvent::grow;
    if (m_min_scale > 0 && r.loss_scale <= m_min_scale) ++m_out.steps_at_min_scale;
    m_out.final_scale = r.new_scale;
    if (r.eval_loss) m_out.eval_loss = r.eval_loss, m_out.eval_accuracy = r.eval_accuracy;
    if (r.step >= m_tail_from) {
        m_tail_sum += r.loss;
        ++m_tail_n;
    }
    m_time_sum += r.step_time_us;
}

SweepOutcome OutcomeTally::finish(bool run_failed) const {
    SweepOutcome o = m_out;
    o.tail_loss = m_tail_n ? m_tail_sum / static_cast<double>(m_tail_n) : o.final_loss;
    o.step_time_us = m_n ? m_time_sum / static_cast<double>(m_n) : 0.0;
    o.diverged = run_failed || !std::isfinite(o.final_loss) || o.final_loss > 10.0 * o.first_loss;
    return o;
}

std::optional<SweepPoint> run_sweep_point(const SessionConfig& cfg, std::size_t index, const std::atomic<bool>* stop,
                                          const BackendFactory& factory) {
    Session session(cfg, factory);
    std::vector<OutcomeTally> tally;
    for (std::size_t i = 0; i < session.run_count(); ++i) tally.emplace_back(session.run(i).info(), cfg.steps);
    while (!session.finished()) {
        if (stop && stop->load(std::memory_order_relaxed)) return std::nullopt;
        for (const auto& recs : session.step_ahead())  // records one step late (on a GPU: N+1 runs meanwhile)
            for (std::size_t i = 0; i < recs.size(); ++i) tally[i].add(recs[i]);
    }
    const auto last = session.finish_pending();  // none: the last step is never left pending
    for (std::size_t i = 0; i < last.size(); ++i) tally[i].add(last[i]);
    SweepPoint p;
    p.index = index;
    for (std::size_t i = 0; i < tally.size(); ++i) p.runs.push_back(tally[i].finish(session.run(i).failed()));
    return p;
}

std::vector<std::size_t> shard_points(std::size_t grid_size, std::size_t index, std::size_t count) {
    if (count == 0 || index >= count)
        throw ConfigError("--shard", "I/N needs 0 <= I < N (got " + std::to_string(index) + "/" + std::to_string(count) + ")");
    std::vector<std::size_t> out;
    for (std::size_t p = index; p < grid_size; p += count) out.push_back(p);
    return out;
}

SweepResult run_sweep(const SweepGrid& grid, const SessionConfig& base, const SweepOptions& o) {
    const auto points = shard_points(grid.size(), o.shard_index, o.shard_count);
    std::vector<SessionConfig> configs;
    configs.reserve(points.size());
    for (std::size_t p : points) configs.push_back(grid.point_config(base, p));

    SweepResult result;
    result.planned = points.size();
    const unsigned cores = core_count();
    result.threads = static_cast<unsigned>(
        std::clamp<std::size_t>(o.threads ? o.threads : cores, 1, std::max<std::size_t>(1, points.size())));
    const auto t0 = std::chrono::steady_clock::now();

    // Workers take the next point from a shared counter; a finished point is stored under a short
    // lock, and the callback runs under it too, so the caller sees one point at a time.
    std::atomic<std::size_t> next{0};
    std::mutex lock;
    std::vector<std::optional<SweepPoint>> done(points.size());
    std::size_t done_count = 0;
    std::exception_ptr error;
    // Workers start their points only once every thread has started: where the system refuses one,
    // none has begun a point, and each leaves at once (points begun under the memory limit that
    // refused the thread failed in turn, one of them inside nlohmann::json's destructor: terminate).
    enum : int { k_wait, k_go, k_leave };
    std::atomic<int> start{k_wait};
    const auto work = [&] {
        start.wait(k_wait);
        if (start.load() == k_leave) return;
        const SerialHere one_thread_a_point;
        if (o.on_worker_start) o.on_worker_start();
        for (;;) {
            const std::size_t k = next.fetch_add(1);
            if (k >= points.size() || (o.stop && o.stop->load())) return;
            try {
                auto p = run_sweep_point(configs[k], points[k], o.stop, o.factory);
                if (!p) return;
                std::lock_guard g(lock);
                done[k] = std::move(p);
                ++done_count;
                if (o.on_point) o.on_point(*done[k], done_count, points.size());
            } catch (...) {  // a device failure: stop every worker, rethrow on the caller's thread
                std::lock_guard g(lock);
                if (!error) error = std::current_exception();
                next = points.size();
                return;
            }
        }
    };
    std::vector<std::thread> workers;
    for (unsigned t = 1; t < result.threads; ++t) try {
            workers.emplace_back(work);
        } catch (const std::exception& e) {  // system_error, or bad_alloc under a memory limit
            // The system refused a thread: the started workers leave before any point and are
            // joined (a std::thread destroyed unjoined would end the program), then the caller hears why.
            start = k_leave;
            start.notify_all();
            for (auto& w : workers) w.join();
            throw_thread_refused(t + 1, result.threads, e);
        }
    start = k_go;
    start.notify_all();
    work();
    for (auto& w : workers) w.join();
    if (error) std::rethrow_exception(error);

    for (auto& p : done)
        if (p) result.points.push_back(std::move(*p));
    result.cancelled = result.points.size() < points.size();
    result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
}

const std::vector<std::string>& sweep_outcome_columns() {
    static const std::vector<std::string> c = {
        "first_loss", "final_loss", "tail_loss", "eval_loss", "eval_accuracy", "skipped", "backoffs",
        "growths", "settled_step", "steps_at_min_scale", "final_scale", "diverged", "step_time_us"};
    return c;
}

std::optional<double> outcome_value(const SweepOutcome& o, std::string_view c) {
    const auto n = [](long long v) { return static_cast<double>(v); };
    if (c == "first_loss") return o.first_loss;
    if (c == "final_loss") return o.final_loss;
    if (c == "tail_loss") return o.tail_loss;
    if (c == "eval_loss") return o.eval_loss;
    if (c == "eval_accuracy") return o.eval_accuracy;
    if (c == "skipped") return n(o.skipped);
    if (c == "backoffs") return n(o.backoffs);
    if (c == "growths") return n(o.growths);
    if (c == "settled_step") return n(o.settled_step);
    if (c == "steps_at_min_scale") return n(o.steps_at_min_scale);
    if (c == "final_scale") return o.final_scale;
    if (c == "diverged") return o.diverged ? 1.0 : 0.0;
    if (c == "step_time_us") return o.step_time_us;
    return std::nullopt;
}

std::string sweep_csv_header(const SweepGrid& grid) {
    std::string h = "point";
    for (const auto& a : grid.axes()) h += "," + csv_field(a.field);
    h += ",run";
    for (const auto& c : sweep_outcome_columns()) h += "," + c;
    return h + "\r\n";
}

std::string sweep_csv(const SweepGrid& grid, const SweepResult& result) {
    std::string s = sweep_csv_header(grid);
    const auto opt = [](const std::optional<double>& v) { return v ? format_number(*v) : std::string(); };
    for (const auto& p : result.points) {
        std::string lead = std::to_string(p.index);
        const auto c = grid.coordinates(p.index);
        for (std::size_t i = 0; i < c.size(); ++i) lead += "," + csv_field(grid.axes()[i].values[c[i]]);
        for (const auto& o : p.runs) {
            s += lead + "," + csv_field(o.run) + "," + format_number(o.first_loss) + "," + format_number(o.final_loss) +
                 "," + format_number(o.tail_loss) + "," + opt(o.eval_loss) + "," + opt(o.eval_accuracy) + "," +
                 std::to_string(o.skipped) + "," + std::to_string(o.backoffs) + "," + std::to_string(o.growths) + "," +
                 std::to_string(o.settled_step) + "," + std::to_string(o.steps_at_min_scale) + "," +
                 format_number(o.final_scale) + "," + (o.diverged ? "1" : "0") + "," + format_number(o.step_time_us) +
                 "\r\n";
        }
    }
    return s;
}

nlohmann::json sweep_sidecar(const SweepGrid& grid, const SessionConfig& base, const std::string& config_source,
                             std::size_t shard_index, std::size_t shard_count) {
    nlohmann::json j;
    j["format"] = "mpx-sweep";
    j["program"] = "mpx";
    j["version"] = MPX_VERSION;
    j["config_source"] = config_source;
    nlohmann::json axes = nlohmann::json::array();
    for (const auto& a : grid.axes())
        axes.push_back({{"field", a.field},
                        {"spec", a.spec},
                        {"kind", a.kind == AxisKind::numeric ? "numeric" : "categorical"},
                        {"values", a.values}});
    j["grid"] = axes;
    j["points"] = grid.size();
    j["outcomes"] = sweep_outcome_columns();
    if (shard_count > 1) j["shard"] = {{"index", shard_index}, {"count", shard_count}};
    j["config"] = to_json(base);
    return j;
}

void write_sweep(const std::filesystem::path& csv, const SweepGrid& grid, const SweepResult& result,
                 nlohmann::json sidecar) {
    sidecar["points_done"] = result.points.size();
    const std::string text = sweep_csv(grid, result);
    // All or nothing: a CSV never appears without the configuration that reproduces it, nor a new
    // sidecar beside an old CSV.
    write_files_together(csv, text, sidecar_path(csv), sidecar.dump(2) + "\n");
}

namespace {
std::string read_text(const std::filesystem::path& p, const char* what) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw IoError(std::string("cannot read the ") + what + " '" + p.string() + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

nlohmann::json read_sidecar_json(const std::filesystem::path& csv) {
    const auto path = sidecar_path(csv);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(read_text(path, "sweep sidecar"));
    } catch (const nlohmann::json::parse_error& e) {
        throw ConfigError("", path.filename().string() + " is not valid JSON: " + e.what());
    }
    if (j.value("format", "") != "mpx-sweep") throw ConfigError("", path.filename().string() + " is not an mpx sweep sidecar");
    return j;
}

std::string shell_quote(const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+=/:^,") ==
                          std::string::npos)
        return s;
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}
}  // namespace

SweepSpec read_sweep_sidecar(const std::filesystem::path& csv) {
    SweepSpec s;
    s.sidecar = read_sidecar_json(csv);
    s.base = session_config_from_json(s.sidecar.at("config"));
    std::vector<GridAxis> axes;
    for (const auto& a : s.sidecar.at("grid")) axes.push_back(parse_grid_values(a.at("field"), a.at("spec")));
    s.grid = SweepGrid(std::move(axes), s.base);
    return s;
}

std::string explain_point(const SweepSpec& spec, std::size_t point) {
    if (point >= spec.grid.size())
        throw ConfigError("--explain", "the sweep has points 0 to " + std::to_string(spec.grid.size() - 1) + " (got " +
                                           std::to_string(point) + ")");
    const std::string source = spec.sidecar.value("config_source", "default");
    // The base as `--config SOURCE` plus one --set per top-level setting that differs from SOURCE
    // (a whole section as JSON: simpler than a diff per field, and exact).
    SessionConfig from;
    std::string config_arg = source;
    try {
        from = load_config(source);
    } catch (const std::exception&) {
        config_arg = "default";  // the file is gone: the sets below carry the whole base
        from = load_config(config_arg);
    }
    // One --set per setting that differs, as dotted keys; a different scaler preset goes first and
    // the scaler's fields are compared with that preset's. Should that not rebuild the base exactly,
    // whole top-level sections as JSON do.
    const nlohmann::json want = to_json(spec.base);
    std::vector<std::string> sets;
    SessionConfig start = from;
    if (want.at("scaler").value("preset", "") != to_json(from).at("scaler").value("preset", "")) {
        sets.push_back("scaler.preset=" + want.at("scaler").value("preset", ""));
        apply_overrides(start, sets);
    }
    const auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    const std::function<void(const nlohmann::json&, const nlohmann::json&, const std::string&)> diff =
        [&](const nlohmann::json& w, const nlohmann::json& h, const std::string& key) {
            if (w.is_object() && h.is_object() && !w.empty()) {
                for (auto it = w.begin(); it != w.end(); ++it)
                    diff(it.value(), h.contains(it.key()) ? h.at(it.key()) : nlohmann::json(),
                         key.empty() ? it.key() : key + "." + it.key());
            } else if (w != h) {
                sets.push_back(key + "=" + text(w));
            }
        };
    diff(want, to_json(start), "");
    SessionConfig rebuilt = from;
    bool exact = false;
    try {
        apply_overrides(rebuilt, sets);
        exact = to_json(rebuilt) == want;
    } catch (const ConfigError&) {
    }
    if (!exact) {
        sets.clear();
        const nlohmann::json have = to_json(from);
        for (auto it = want.begin(); it != want.end(); ++it)
            if (!have.contains(it.key()) || have.at(it.key()) != it.value()) sets.push_back(it.key() + "=" + text(it.value()));
    }
    for (const auto& a : spec.grid.assignments(point)) sets.push_back(a);
    // The line must rebuild the point exactly; say so plainly if it does not.
    SessionConfig check = from;
    apply_overrides(check, sets);
    if (to_json(check) != to_json(spec.grid.point_config(spec.base, point)))
        throw ConfigError("--explain", "cannot express point " + std::to_string(point) + " as --set flags over " + config_arg);
    std::string line = "mpx-cli run --config " + shell_quote(config_arg);
    for (const auto& s : sets) line += " --set " + shell_quote(s);
    return line;
}

std::size_t merge_sweeps(const std::filesystem::path& out, const std::vector<std::filesystem::path>& parts,
                         std::size_t& missing) {
    if (parts.empty()) throw ConfigError("--merge", "give the part CSVs to merge after the output file");
    nlohmann::json shared;
    std::string header;
    std::map<std::size_t, std::string> rows;  // point → its rows (one per run), in point order
    for (const auto& part : parts) {
        nlohmann::json side = read_sidecar_json(part);
        side.erase("shard");
        side.erase("points_done");
        if (shared.is_null()) shared = side;
        else if (side != shared)
            throw ConfigError("--merge", part.string() + " comes from a different sweep (its sidecar differs from " +
                                             parts.front().string() + "'s)");
        std::istringstream in(read_text(part, "sweep CSV"));
        std::string line, h;
        std::getline(in, h);
        if (header.empty()) header = h;
        else if (h != header) throw ConfigError("--merge", part.string() + " has a different header");
        std::map<std::size_t, std::string> mine;
        while (std::getline(in, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.empty()) continue;
            const std::size_t p = std::stoull(line.substr(0, line.find(',')));
            mine[p] += line + "\r\n";
        }
        for (auto& [p, text] : mine)
            if (!rows.emplace(p, std::move(text)).second)
                throw ConfigError("--merge", "point " + std::to_string(p) + " comes twice (" + part.string() +
                                                 " and an earlier part): give each shard once");
    }
    const std::size_t total = shared.at("points").get<std::size_t>();
    missing = total - std::min(total, rows.size());
    shared["points_done"] = rows.size();
    std::string text = header + "\n";
    if (!header.empty() && header.back() == '\r') text = header + "\n";
    else text = header + "\r\n";
    for (const auto& [p, r] : rows) text += r;
    write_files_together(out, text, sidecar_path(out), shared.dump(2) + "\n");
    return rows.size();
}

}  // namespace mpx
