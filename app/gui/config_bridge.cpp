// config_bridge: engine configuration calls wrapped so that every failure becomes a message.
#include "app/gui/config_bridge.hpp"

#include <QDir>
#include <QFile>
#include <QTextStream>
#include <set>

#include "engine/error.hpp"
#include "engine/export.hpp"
#ifdef MPX_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#include "cuda/device.hpp"
#endif

namespace mpx::gui {
namespace {

QString q(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

template <class F>
ConfigResult guarded(F&& f) {
    ConfigResult r;
    try {
        r.config = f();
    } catch (const std::exception& e) {
        r.error = QString::fromStdString(e.what());
    }
    return r;
}

template <class E, std::size_t N>
E fromText(const QString& s, const E (&values)[N], E fallback) {
    for (E v : values)
        if (toText(v) == s) return v;
    return fallback;
}

constexpr mpx::Activation k_activations[] = {mpx::Activation::relu, mpx::Activation::gelu,
                                             mpx::Activation::tanh};
constexpr mpx::OptimizerKind k_optimizers[] = {mpx::OptimizerKind::sgd, mpx::OptimizerKind::adam,
                                               mpx::OptimizerKind::adamw};
constexpr mpx::Schedule k_schedules[] = {mpx::Schedule::constant, mpx::Schedule::step,
                                         mpx::Schedule::warmup_cosine};
constexpr mpx::ScalerKind k_scaler_kinds[] = {mpx::ScalerKind::dynamic, mpx::ScalerKind::fixed,
                                              mpx::ScalerKind::none};

#ifndef MPX_HAVE_CUDA
// A GPU the NVIDIA driver reports, for saying so when this build cannot use it.
QString driverGpuName() {
    const QDir dir(QStringLiteral("/proc/driver/nvidia/gpus"));
    for (const QString& entry : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        QFile f(dir.filePath(entry) + QStringLiteral("/information"));
        if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) continue;
        QTextStream in(&f);
        for (QString line = in.readLine(); !line.isNull(); line = in.readLine())
            if (line.startsWith(QStringLiteral("Model:"))) return line.mid(6).trimmed();
    }
    return {};
}
#endif

}  // namespace

QStringList presetNames() {
    QStringList out;
    for (const auto& n : mpx::preset_names()) out << QString::fromStdString(n);
    return out;
}

ConfigResult loadConfig(const QString& nameOrPath) {
    return guarded([&] { return mpx::load_config(nameOrPath.toStdString()); });
}

ConfigResult configFromSidecar(const QString& path) {
    return guarded([&] { return mpx::config_from_sidecar(path.toStdString()); });
}

QStringList sidecarLiveChanges(const QString& path) {
    QStringList out;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return out;
    try {
        const auto j = nlohmann::json::parse(f.readAll().toStdString());
        if (j.contains("live_changes") && j["live_changes"].is_array())
            for (const auto& c : j["live_changes"])
                out << QStringLiteral("step %1: %2")
                           .arg(c.value("step", 0LL))
                           .arg(QString::fromStdString(c.value("change", std::string())));
    } catch (const std::exception&) {
    }
    return out;
}

ConfigResult parseConfigText(const QString& text, const QString& origin) {
    return guarded([&] { return mpx::parse_config_text(text.toStdString(), origin.toStdString()); });
}

ConfigResult applyOverrides(mpx::SessionConfig cfg, const QStringList& assignments) {
    return guarded([&] {
        std::vector<std::string> list;
        for (const QString& a : assignments) list.push_back(a.toStdString());
        mpx::apply_overrides(cfg, list);  // all at once: their order does not matter
        return cfg;
    });
}

QString configToJson(const mpx::SessionConfig& cfg) {
    return QString::fromStdString(mpx::to_json(cfg).dump(2) + "\n");
}

QString saveConfig(const mpx::SessionConfig& cfg, const QString& path) {
    try {
        mpx::write_file_atomic(path.toStdString(), mpx::to_json(cfg).dump(2) + "\n");
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

std::pair<int, int> datasetShape(const mpx::DatasetConfig& data) {
    mpx::DatasetConfig small = data;
    small.n_train = 1;
    small.n_test = 0;
    try {
        const mpx::Dataset d = mpx::make_dataset(small);
        return {d.features, d.outputs};
    } catch (const std::exception&) {
        return {0, 0};
    }
}

QString checkConfig(const mpx::SessionConfig& cfg) {
    try {
        mpx::validate(cfg);
        const auto [features, outputs] = datasetShape(cfg.data);
        const QString kind = toText(cfg.data.kind);
        if (cfg.model.sizes.front() != features)
            return QStringLiteral("model.sizes: the input size is %1 but data set '%2' has %3 features; "
                                  "start the layer sizes with %3")
                .arg(cfg.model.sizes.front()).arg(kind).arg(features);
        if (cfg.model.sizes.back() != outputs)
            return QStringLiteral("model.sizes: the output size is %1 but data set '%2' needs %3; "
                                  "end the layer sizes with %3")
                .arg(cfg.model.sizes.back()).arg(kind).arg(outputs);
        std::set<std::string> labels;
        for (const auto& r : cfg.runs) {
            mpx::ScalerConfig s;
            const mpx::RunInfo info = mpx::resolve_run(r, cfg, s);
            if (!labels.insert(info.label).second)
                return QStringLiteral("runs: run '%1' appears twice").arg(QString::fromStdString(info.label));
        }
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QStringList standardRuns() {
    return {QStringLiteral("fp32"),         QStringLiteral("amp-fp16"),      QStringLiteral("amp-bf16"),
            QStringLiteral("tf32"),         QStringLiteral("half-fp16"),     QStringLiteral("half-bf16"),
            QStringLiteral("pure-fp16"),    QStringLiteral("pure-bf16"),     QStringLiteral("scaling-only"),
            QStringLiteral("selective-fp16"), QStringLiteral("adaptive-fp16")};
}

QString checkRunLabel(const QString& label) {
    try {
        const mpx::RunSpec spec = mpx::parse_run_spec(label.toStdString(), "runs");
        if (spec.scaler_preset) mpx::scaler_preset(*spec.scaler_preset);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QStringList scalerPresetNames() {
    QStringList out;
    for (const auto& n : mpx::scaler_preset_names()) out << QString::fromStdString(n);
    return out;
}

mpx::ScalerConfig scalerPreset(const QString& name) {
    try {
        return mpx::scaler_preset(name.toStdString());
    } catch (const std::exception&) {
        return mpx::scaler_preset("pytorch");
    }
}

PresetSource scalerPresetSource(const QString& name) {
    try {
        const mpx::ScalerPresetSource s = mpx::scaler_preset_source(name.toStdString());
        return {q(s.framework), q(s.source)};
    } catch (const std::exception&) {
        return {};
    }
}

QString checkScaler(const mpx::ScalerConfig& s) {
    try {
        mpx::validate(s);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QStringList scalerEnumFields() {
    return {QStringLiteral("hysteresis_reset"), QStringLiteral("growth_count"), QStringLiteral("at_min"),
            QStringLiteral("scale_storage"), QStringLiteral("non_finite_growth"),
            QStringLiteral("hysteresis_decrement")};
}

QStringList scalerEnumChoices(const QString& field) {
    using namespace mpx;
    if (field == QLatin1String("hysteresis_reset"))
        return {q(to_string(HysteresisReset::on_growth)), q(to_string(HysteresisReset::on_clean_step))};
    if (field == QLatin1String("growth_count"))
        return {q(to_string(GrowthCount::consecutive)), q(to_string(GrowthCount::since_last_overflow)),
                q(to_string(GrowthCount::stable_interval))};
    if (field == QLatin1String("at_min")) return {q(to_string(AtMin::clamp)), q(to_string(AtMin::error))};
    if (field == QLatin1String("scale_storage"))
        return {q(to_string(ScaleStorage::fp32)), q(to_string(ScaleStorage::fp64))};
    if (field == QLatin1String("non_finite_growth"))
        return {q(to_string(NonFiniteGrowth::refuse)), q(to_string(NonFiniteGrowth::apply))};
    if (field == QLatin1String("hysteresis_decrement"))
        return {q(to_string(HysteresisDecrement::stop_at_one)), q(to_string(HysteresisDecrement::always))};
    return {};
}

QString scalerEnumValue(const mpx::ScalerConfig& s, const QString& field) {
    using namespace mpx;
    if (field == QLatin1String("hysteresis_reset")) return q(to_string(s.hysteresis_reset));
    if (field == QLatin1String("growth_count")) return q(to_string(s.growth_count));
    if (field == QLatin1String("at_min")) return q(to_string(s.at_min));
    if (field == QLatin1String("scale_storage")) return q(to_string(s.scale_storage));
    if (field == QLatin1String("non_finite_growth")) return q(to_string(s.non_finite_growth));
    if (field == QLatin1String("hysteresis_decrement")) return q(to_string(s.hysteresis_decrement));
    return {};
}

void setScalerEnumValue(mpx::ScalerConfig& s, const QString& field, const QString& value) {
    using namespace mpx;
    const std::string v = value.toStdString();
    if (field == QLatin1String("hysteresis_reset")) s.hysteresis_reset = parse_hysteresis_reset(v).value_or(s.hysteresis_reset);
    if (field == QLatin1String("growth_count")) s.growth_count = parse_growth_count(v).value_or(s.growth_count);
    if (field == QLatin1String("at_min")) s.at_min = parse_at_min(v).value_or(s.at_min);
    if (field == QLatin1String("scale_storage")) s.scale_storage = parse_scale_storage(v).value_or(s.scale_storage);
    if (field == QLatin1String("non_finite_growth")) s.non_finite_growth = parse_non_finite_growth(v).value_or(s.non_finite_growth);
    if (field == QLatin1String("hysteresis_decrement"))
        s.hysteresis_decrement = parse_hysteresis_decrement(v).value_or(s.hysteresis_decrement);
}

QStringList frameworkNames() {
    return {QStringLiteral("PyTorch"), QStringLiteral("Apex"), QStringLiteral("DeepSpeed"),
            QStringLiteral("Keras"), QStringLiteral("Megatron-LM")};
}

QString frameworkSnippet(const mpx::ScalerConfig& s, int frameworkIndex) {
    constexpr mpx::Framework k_fw[] = {mpx::Framework::pytorch, mpx::Framework::apex,
                                       mpx::Framework::deepspeed, mpx::Framework::keras,
                                       mpx::Framework::megatron};
    if (frameworkIndex < 0 || frameworkIndex >= 5) return {};
    try {
        return QString::fromStdString(mpx::framework_snippet(s, k_fw[frameworkIndex]));
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
}

QStringList activationNames() {
    QStringList out;
    for (auto v : k_activations) out << toText(v);
    return out;
}
QStringList datasetNames() {
    QStringList out;
    for (auto v : mpx::all_dataset_kinds) out << toText(v);
    return out;
}
QStringList optimizerNames() {
    QStringList out;
    for (auto v : k_optimizers) out << toText(v);
    return out;
}
QStringList scheduleNames() {
    QStringList out;
    for (auto v : k_schedules) out << toText(v);
    return out;
}
QStringList scalerKindNames() {
    QStringList out;
    for (auto v : k_scaler_kinds) out << toText(v);
    return out;
}
QString toText(mpx::Activation v) { return q(mpx::to_string(v)); }
QString toText(mpx::DatasetKind v) { return q(mpx::to_string(v)); }
QString toText(mpx::OptimizerKind v) { return q(mpx::to_string(v)); }
QString toText(mpx::Schedule v) { return q(mpx::to_string(v)); }
QString toText(mpx::ScalerKind v) { return q(mpx::to_string(v)); }
mpx::Activation activationFrom(const QString& s) { return fromText(s, k_activations, mpx::Activation::relu); }
mpx::DatasetKind datasetFrom(const QString& s) {
    return mpx::parse_dataset_kind(s.toStdString()).value_or(mpx::DatasetKind::spirals);
}
mpx::OptimizerKind optimizerFrom(const QString& s) { return fromText(s, k_optimizers, mpx::OptimizerKind::adam); }
mpx::Schedule scheduleFrom(const QString& s) { return fromText(s, k_schedules, mpx::Schedule::constant); }
mpx::ScalerKind scalerKindFrom(const QString& s) { return fromText(s, k_scaler_kinds, mpx::ScalerKind::dynamic); }

QString modelSizesText(const std::vector<int>& sizes) {
    return QString::fromStdString(mpx::model_sizes_text(sizes));
}

std::optional<std::vector<int>> parseModelSizes(const QString& text, QString* error) {
    try {
        mpx::ModelConfig m;
        m.sizes = mpx::parse_model_sizes(text.toStdString(), "model.sizes");
        mpx::validate(m);
        return m.sizes;
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return std::nullopt;
    }
}

QString scaleEventText(int event) { return q(mpx::to_string(static_cast<mpx::ScaleEvent>(event))); }

QString memoryCategoryName(int category) {
    return q(mpx::to_string(static_cast<mpx::MemCategory>(category)));
}

mpx::BackendFactory backendFor(const std::string& device, QString& name, QString& note) {
    name = QStringLiteral("CPU (Eigen)");
    note.clear();
    mpx::BackendFactory cpu = [] { return mpx::make_cpu_backend(); };
    // Mirrors mpx-cli's backend_for; in addition, "cpu" on a machine with a GPU says so.
#ifdef MPX_HAVE_CUDA
    const mpx::cuda::DeviceProbe p = mpx::cuda::probe_device();
    if (device == "cpu") {
        if (p.usable) note = QStringLiteral("GPU %1 available (set Device to cuda or auto to use it)")
                                 .arg(QString::fromStdString(p.name));
        return cpu;
    }
    if (p.usable) {
        name = QString::fromStdString(p.name);
        return [] { return mpx::cuda::make_cuda_backend(); };
    }
    const QString why = QString::fromStdString(p.reason);
#else
    const QString gpu = driverGpuName();
    const QString why = gpu.isEmpty()
        ? QStringLiteral("this build has no CUDA backend (built without nvcc)")
        : QStringLiteral("GPU %1 found, but this build has no CUDA backend (built without nvcc)").arg(gpu);
    if (device == "cpu") {
        if (!gpu.isEmpty()) note = why;
        return cpu;
    }
#endif
    if (device == "cuda")
        throw mpx::DeviceError("cannot train on the GPU: " + why.toStdString() + "; set Device to cpu");
    note = QStringLiteral("training on the CPU: ") + why;
    return cpu;
}

QString describeBackend(const QString& name, const QString& note) {
    return note.isEmpty() ? name : QStringLiteral("%1 — %2").arg(name, note);
}

}  // namespace mpx::gui
