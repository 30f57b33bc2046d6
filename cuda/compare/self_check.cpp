// The startup self-check and its cache (self_check.hpp). The cache key names the GPU (name, compute
// capability, memory, driver) and the build (this executable's size and modification time), so a new
// driver, another GPU or a rebuilt program checks again.
#include "cuda/compare/self_check.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cuda/compare/backend_compare.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/device.hpp"

namespace mpx::compare {

SelfCheck self_check(Backend& dut) {
    const auto t0 = std::chrono::steady_clock::now();
    SelfCheck s;
    s.passed = true;
    for (const Policy& p : policies())
        for (auto op : {linear_ops, elementwise_ops, losses, unscale_and_optimizer}) {
            auto ref = make_cpu_backend();
            const Report r = op(*ref, dut, p);
            if (!r.ok()) {
                s.passed = false;
                for (const auto& f : r.failures()) s.report += p.name + ": " + f + "\n";
            }
        }
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return s;
}

}  // namespace mpx::compare

namespace mpx::cuda {
namespace {

std::string cache_key(const DeviceProbe& p) {
    int driver = 0;
    cudaDriverGetVersion(&driver);
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const auto size = ec ? 0 : std::filesystem::file_size(exe, ec);
    const auto mtime = ec ? 0 : std::filesystem::last_write_time(exe, ec).time_since_epoch().count();
    return p.name + " cc" + std::to_string(p.major) + "." + std::to_string(p.minor) + " " +
           std::to_string(p.total_bytes) + "B driver " + std::to_string(driver) + " build " +
           std::to_string(size) + ":" + std::to_string(mtime);
}

std::filesystem::path cache_file() {
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
        return std::filesystem::path(x) / "mpx" / "gpu-self-check.json";
    if (const char* h = std::getenv("HOME"); h && *h)
        return std::filesystem::path(h) / ".cache" / "mpx" / "gpu-self-check.json";
    return {};
}

// The cache file's entries; a missing or unreadable file is an empty cache.
nlohmann::json read_cache(const std::filesystem::path& f) {
    std::ifstream in(f);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    return j.is_object() ? j : nlohmann::json::object();
}

// Best effort, atomic: a cache that cannot be written only means checking again next time.
void write_cache(const std::filesystem::path& f, const nlohmann::json& j) {
    std::error_code ec;
    std::filesystem::create_directories(f.parent_path(), ec);
    const auto tmp = f.string() + ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream out(tmp);
        out << j.dump(1);
        if (!out) {
            std::filesystem::remove(tmp, ec);
            return;
        }
    }
    std::filesystem::rename(tmp, f, ec);
    if (ec) std::filesystem::remove(tmp, ec);
}

compare::SelfCheck run_check() {
    try {
        auto gpu = make_cuda_backend();
        return compare::self_check(*gpu);
    } catch (const std::exception& e) {
        compare::SelfCheck s;
        s.report = e.what();
        return s;
    }
}

}  // namespace

GpuProbe checked_gpu() {
    static std::mutex mutex;
    static std::map<std::string, compare::SelfCheck> done;  // this process's results
    const DeviceProbe p = probe_device();
    GpuProbe g{p.usable, p.name, p.reason};
    if (!p.usable) return g;
    const std::string key = cache_key(p);
    std::lock_guard lock(mutex);
    auto it = done.find(key);
    if (it == done.end()) {
        const auto file = cache_file();
        nlohmann::json cache = file.empty() ? nlohmann::json::object() : read_cache(file);
        compare::SelfCheck s;
        if (cache.contains(key) && cache[key].is_object() && cache[key]["passed"].is_boolean()) {
            s.passed = cache[key]["passed"].get<bool>();
            s.report = cache[key].value("report", std::string());
        } else {
            s = run_check();
            cache[key] = {{"passed", s.passed}, {"report", s.report}, {"seconds", s.seconds}};
            if (!file.empty()) write_cache(file, cache);
        }
        it = done.emplace(key, s).first;
    }
    if (!it->second.passed) {
        g.usable = false;
        const std::string& r = it->second.report;
        g.reason = "the startup self-check of " + p.name + " against the CPU failed (" +
                   r.substr(0, r.find('\n')) + "); mpx-cuda-check prints the whole report";
    }
    return g;
}

}  // namespace mpx::cuda
