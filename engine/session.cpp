// Lockstep session: one sampler, one gathered batch per micro-step, every run stepped in order.
#include "engine/session.hpp"

#include <set>

#include "engine/error.hpp"

namespace mpx {

Session::Session(SessionConfig cfg, BackendFactory factory)
    : m_cfg(std::move(cfg)), m_factory(std::move(factory)) {
    validate(m_cfg);
    if (!m_factory) m_factory = [] { return make_cpu_backend(); };
    m_data = make_dataset(m_cfg.data);
    if (m_cfg.model.sizes.front() != m_data.features)
        throw ConfigError("model.sizes", "the input size is " + std::to_string(m_cfg.model.sizes.front()) +
                                             " but data set '" + std::string(to_string(m_cfg.data.kind)) +
                                             "' has " + std::to_string(m_data.features) + " features");
    if (m_cfg.model.sizes.back() != m_data.outputs)
        throw ConfigError("model.sizes", "the output size is " + std::to_string(m_cfg.model.sizes.back()) +
                                             " but data set '" + std::string(to_string(m_cfg.data.kind)) +
                                             "' needs " + std::to_string(m_data.outputs));
    std::set<std::string> labels;
    for (const auto& r : m_cfg.runs) {
        ScalerConfig s;
        const RunInfo info = resolve_run(r, m_cfg, s);
        if (!labels.insert(info.label).second)
            throw ConfigError("runs", "run '" + info.label + "' appears twice");
    }
    build();
}

void Session::build() {
    m_init = init_weights(m_cfg.model, m_cfg.seed);
    m_sampler = std::make_unique<BatchSampler>(static_cast<std::size_t>(m_data.x_train.rows()),
                                               static_cast<std::size_t>(m_cfg.train.batch),
                                               m_cfg.seed);
    m_runs.clear();
    for (std::size_t i = 0; i < m_cfg.runs.size(); ++i)
        m_runs.push_back(std::make_unique<Run>(static_cast<int>(i), m_cfg.runs[i], m_cfg, m_init, m_factory()));
    m_micro.assign(static_cast<std::size_t>(m_cfg.train.accumulation), Batch{});
    m_step = 0;
    m_start = std::chrono::steady_clock::now();
}

void Session::reset() { build(); }

std::vector<StepRecord> Session::step() {
    for (Batch& b : m_micro) {
        const auto idx = m_sampler->next();
        gather_rows(m_data.x_train, idx, b.x);
        if (m_data.classification) {
            b.labels.resize(idx.size());
            for (std::size_t k = 0; k < idx.size(); ++k) b.labels[k] = m_data.y_train[static_cast<std::size_t>(idx[k])];
        } else {
            gather_rows(m_data.t_train, idx, b.targets);
        }
    }
    std::vector<StepRecord> out;
    out.reserve(m_runs.size());
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    for (auto& r : m_runs) {
        StepRecord rec = r->step(m_step, m_micro, m_data.classification);
        rec.wall_time_s = wall;
        out.push_back(rec);
    }
    ++m_step;
    return out;
}

void Session::set_scaler(const ScalerConfig& s) {
    validate(s);
    m_cfg.scaler = s;
    for (auto& r : m_runs) r->set_scaler(s);
}

void Session::set_train(const TrainConfig& t) {
    validate(t);
    TrainConfig live = m_cfg.train;  // structure-changing fields (batch, optimizer) stay
    live.lr = t.lr;
    live.clip_norm = t.clip_norm;
    live.schedule = t.schedule;
    live.step_size = t.step_size;
    live.gamma = t.gamma;
    live.warmup_steps = t.warmup_steps;
    live.total_steps = t.total_steps;
    live.min_lr = std::min(t.min_lr, t.lr);
    live.advance_on_skip = t.advance_on_skip;
    live.momentum = t.momentum;
    live.weight_decay = t.weight_decay;
    m_cfg.train = live;
    for (auto& r : m_runs) r->set_train(live);
}

void Session::set_lr(double lr) {
    TrainConfig t = m_cfg.train;
    t.lr = lr;
    t.min_lr = std::min(t.min_lr, lr);
    set_train(t);
}

void Session::set_clip_norm(double clip) {
    TrainConfig t = m_cfg.train;
    t.clip_norm = clip;
    set_train(t);
}

nlohmann::json Session::save_state() const {
    nlohmann::json j;
    j["format"] = "mpx-session-state";
    j["version"] = 1;
    j["config"] = to_json(m_cfg);
    j["step"] = m_step;
    const auto st = m_sampler->state();
    j["sampler"] = {{"epoch", st.epoch}, {"position", st.position}};
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& r : m_runs) runs.push_back(r->save_state());
    j["runs"] = runs;
    return j;
}

std::unique_ptr<Session> Session::load_state(const nlohmann::json& j, BackendFactory factory) {
    if (!j.contains("format") || j["format"] != "mpx-session-state")
        throw ConfigError("", "not an mpx session state file");
    auto s = std::make_unique<Session>(session_config_from_json(j.at("config")), std::move(factory));
    s->m_step = j.at("step").get<long long>();
    BatchSampler::State st;
    st.epoch = j.at("sampler").at("epoch").get<std::uint64_t>();
    st.position = j.at("sampler").at("position").get<std::size_t>();
    s->m_sampler->restore(st);
    const auto& runs = j.at("runs");
    if (runs.size() != s->m_runs.size()) throw ConfigError("", "saved state has a different number of runs");
    for (std::size_t i = 0; i < runs.size(); ++i) s->m_runs[i]->load_state(runs[i]);
    return s;
}

}  // namespace mpx
