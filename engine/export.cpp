// CSV rows, atomic files and sidecars.
#include "engine/export.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "engine/error.hpp"
#include "engine/text.hpp"

namespace mpx {

const char* const k_csv_columns[26] = {
    "run", "precision", "mode", "step", "loss", "loss_scale", "found_inf", "skipped",
    "scale_event", "grad_norm", "underflow_frac", "overflow_count", "lost_update_frac", "lr",
    "mem_weights", "mem_master", "mem_grads", "mem_optimizer", "mem_activations",
    "mem_workspace", "mem_total", "step_time_us", "wall_time_s", "eval_loss", "eval_accuracy", "first_nonfinite"};

std::string csv_header() {
    std::string s;
    for (std::size_t i = 0; i < std::size(k_csv_columns); ++i) s += (i ? "," : "") + std::string(k_csv_columns[i]);
    return s + "\r\n";
}

std::string csv_row(const StepRecord& r, const RunInfo& run) {
    std::string s;
    s.reserve(256);
    auto add = [&s](const std::string& v) {
        if (!s.empty()) s += ',';
        s += v;
    };
    add(csv_field(run.label));
    add(csv_field(run.precision));
    add(csv_field(run.mode));
    add(std::to_string(r.step));
    add(format_number(r.loss));
    add(format_number(r.loss_scale));
    add(r.found_inf ? "1" : "0");
    add(r.skipped ? "1" : "0");
    add(std::string(to_string(static_cast<ScaleEvent>(r.scale_event))));
    add(format_number(r.grad_norm));
    add(format_number(r.underflow_frac));
    add(std::to_string(r.overflow_count));
    add(format_number(r.lost_update_frac));
    add(format_number(r.lr));
    for (int c = 0; c < k_mem_categories; ++c) add(std::to_string(r.mem.bytes[static_cast<std::size_t>(c)]));
    add(std::to_string(r.mem.total()));
    add(format_number(r.step_time_us));
    add(format_number(r.wall_time_s));
    add(r.eval_loss ? format_number(*r.eval_loss) : "");  // a cell without a value is empty
    add(r.eval_accuracy ? format_number(*r.eval_accuracy) : "");
    add(r.first_nonfinite < 0 ? std::string() : site_name(r.first_nonfinite));
    return s + "\r\n";
}

namespace {
std::filesystem::path temp_beside(const std::filesystem::path& path) {
    std::filesystem::path tmp = path;
    tmp += ".tmp-" + std::to_string(::getpid());
    return tmp;
}
}  // namespace

void write_file_atomic(const std::filesystem::path& path, const std::string& text) {
    const auto tmp = temp_beside(path);
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw IoError("cannot write '" + path.string() + "': " + std::strerror(errno));
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 &&
                    ::fsync(::fileno(f)) == 0;
    const int err = errno;
    std::fclose(f);
    if (!ok) {
        std::filesystem::remove(tmp);
        throw IoError("cannot write '" + path.string() + "': " + std::strerror(err));
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::filesystem::remove(tmp);
        throw IoError("cannot replace '" + path.string() + "': " + ec.message());
    }
}

CsvWriter::CsvWriter(std::filesystem::path path) : m_path(std::move(path)), m_tmp(temp_beside(m_path)) {
    m_file = std::fopen(m_tmp.c_str(), "wb");
    if (!m_file) throw IoError("cannot write '" + m_path.string() + "': " + std::strerror(errno));
    const std::string h = csv_header();
    if (std::fwrite(h.data(), 1, h.size(), m_file) != h.size()) m_failed = true;
}

CsvWriter::~CsvWriter() {
    if (m_file) {
        std::fclose(m_file);
        std::error_code ec;
        std::filesystem::remove(m_tmp, ec);
    }
}

void CsvWriter::write(const StepRecord& r, const RunInfo& run) {
    const std::string row = csv_row(r, run);
    if (m_file && std::fwrite(row.data(), 1, row.size(), m_file) != row.size()) m_failed = true;
}

void CsvWriter::commit() {
    if (!m_file) throw IoError("export of '" + m_path.string() + "' was already finished");
    const bool ok = !m_failed && std::fflush(m_file) == 0 && ::fsync(::fileno(m_file)) == 0;
    const int err = errno;
    std::fclose(m_file);
    m_file = nullptr;
    std::error_code ec;
    if (!ok) {
        std::filesystem::remove(m_tmp, ec);
        throw IoError("cannot write '" + m_path.string() + "': " + std::strerror(err));
    }
    std::filesystem::rename(m_tmp, m_path, ec);
    if (ec) {
        std::filesystem::remove(m_tmp, ec);
        throw IoError("cannot replace '" + m_path.string() + "': " + ec.message());
    }
}

nlohmann::json sidecar_json(const SessionConfig& cfg, const std::vector<RunInfo>& runs,
                            const std::string& device, long long steps_recorded) {
    nlohmann::json j;
    j["format"] = "mpx-export";
    j["program"] = "mpx";
    j["version"] = MPX_VERSION;
    j["device"] = device;
    j["seed"] = cfg.seed;
    j["steps_recorded"] = steps_recorded;
    j["columns"] = std::vector<std::string>(std::begin(k_csv_columns), std::end(k_csv_columns));
    nlohmann::json rl = nlohmann::json::array();
    for (const auto& r : runs) rl.push_back({{"label", r.label}, {"precision", r.precision}, {"mode", r.mode}});
    j["runs"] = rl;
    j["config"] = to_json(cfg);
    return j;
}

std::filesystem::path sidecar_path(const std::filesystem::path& csv) {
    std::filesystem::path p = csv;
    p.replace_extension(".json");
    if (p == csv) p += ".json";
    return p;
}

SessionConfig config_from_sidecar(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw IoError("cannot read the sidecar '" + path.string() + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(ss.str());
    } catch (const nlohmann::json::parse_error& e) {
        throw ConfigError("", path.filename().string() + " is not valid JSON: " + e.what());
    }
    if (!j.contains("config")) throw ConfigError("", path.filename().string() + " is not an mpx export sidecar");
    return session_config_from_json(j.at("config"));
}

}  // namespace mpx
