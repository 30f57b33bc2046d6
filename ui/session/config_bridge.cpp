// config_bridge: engine configuration calls wrapped so that every failure becomes a message.
#include "ui/session/config_bridge.hpp"

#include <QCoreApplication>
#include <QFile>
#include <cmath>
#include <limits>

#include "cuda/backend_choice.hpp"
#include "engine/base/error.hpp"
#include "engine/base/field_table.hpp"
#include "engine/base/input_file.hpp"
#include "engine/compute/site_names.hpp"
#include "engine/io/torch_export.hpp"
#include "engine/io/export.hpp"

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

// The choices of an enum, in its table's order.
template <class E>
QStringList namesOf() {
    QStringList out;
    for (const auto& e : names_of(E{})) out << q(e.name);
    return out;
}

template <class E>
E fromText(const QString& s, E fallback) {
    return mpx::enum_parse<E>(s.toStdString()).value_or(fallback);
}


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
    try {  // the one reader of named files: a FIFO or a device is refused, not waited on
        const auto j = nlohmann::json::parse(mpx::read_input_file(path.toStdString(), "the sidecar"));
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

QString exportTorch(const mpx::SessionConfig& cfg, const QString& folder) {
    if (folder.isEmpty()) return QObject::tr("Name a folder to export into");
    try {
        mpx::export_torch(cfg, folder.toStdString());
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

std::pair<int, int> datasetShape(const mpx::DatasetConfig& data) {
    const mpx::DatasetShape shape = mpx::dataset_shape(data);
    return {shape.features, shape.outputs};
}

QString checkConfig(const mpx::SessionConfig& cfg) {
    try {
        mpx::validate(cfg);  // the checks a Session makes before it trains
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
        mpx::resolve_run(label.toStdString(), mpx::scaler_preset("pytorch"), nlohmann::json::object());
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QString runModeHelp(const QString& label, bool* bf16) {
    try {
        const mpx::RunSpec spec = mpx::parse_run_spec(label.toStdString(), "runs");
        if (bf16) *bf16 = mpx::uses_low_precision(spec.mode) && spec.low == mpx::Format::bf16;
        QString text = QCoreApplication::translate("mpx", std::string(mpx::mode_help(spec.mode)).c_str());
        if (mpx::is_fp4(spec.mode) && !spec.fp4.empty()) {  // the label's recipe switches, in words
            const mpx::Fp4Overrides& o = spec.fp4;
            QStringList parts;
            if (o.rht) parts << (*o.rht ? QCoreApplication::translate("mpx", "with the Hadamard transform")
                                        : QCoreApplication::translate("mpx", "without the Hadamard transform"));
            if (o.sr) parts << (*o.sr ? QCoreApplication::translate("mpx", "gradients rounded at random")
                                      : QCoreApplication::translate("mpx", "gradients rounded to nearest"));
            if (o.weights_2d)
                parts << (*o.weights_2d ? QCoreApplication::translate("mpx", "weights in 16x16 tiles")
                                        : QCoreApplication::translate("mpx", "weights in 1x16 blocks, so the forward "
                                                                             "and backward copies of a weight can differ"));
            if (o.four_over_six && *o.four_over_six)
                parts << QCoreApplication::translate("mpx", "4over6: a block may aim its largest value at 4 instead of 6");
            if (o.mx_scale_rule) {
                const std::string_view r = mpx::enum_name(*o.mx_scale_rule);
                parts << QCoreApplication::translate("mpx", "block scale rule %1").arg(QString::fromLatin1(r.data(), static_cast<qsizetype>(r.size())));
            }
            if (o.bf16_first && *o.bf16_first)
                parts << QCoreApplication::translate("mpx", "the first %1 layer(s) in BF16").arg(*o.bf16_first);
            if (o.bf16_last && *o.bf16_last)
                parts << QCoreApplication::translate("mpx", "the last %1 layer(s) in BF16").arg(*o.bf16_last);
            if (!parts.isEmpty()) text += QLatin1Char(' ') + QCoreApplication::translate("mpx", "This run: %1.").arg(parts.join(QStringLiteral("; ")));
        }
        if (spec.accumulate)  // a what-if of the GEMMs' additions (engine/config/accumulate_config.hpp)
            text += QLatin1Char(' ') + QCoreApplication::translate(
                                           "mpx", std::string(mpx::accumulate_plan_help(*spec.accumulate)).c_str()) +
                    QLatin1Char(' ') + QCoreApplication::translate("mpx", "A model of the hardware, not a measurement.");
        return text;
    } catch (const std::exception&) {
        if (bf16) *bf16 = false;
        return {};
    }
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

namespace {
template <class S>
QList<FieldSpec> specs(std::span<const mpx::Field<S>> fields) {
    QList<FieldSpec> out;
    for (const auto& f : fields) {
        FieldSpec r;
        r.name = q(f.name);
        r.label = QCoreApplication::translate("mpx", std::string(f.label).c_str());
        r.help = QCoreApplication::translate("mpx", std::string(f.help).c_str());
        r.kind = f.kind;
        // Controls check closed ranges: an open bound moves to the next double inward, and a number
        // that must be finite gets the largest finite maximum.
        r.min = f.min_open ? std::nextafter(f.min, HUGE_VAL) : f.min;
        r.max = f.max_open ? std::nextafter(f.max, -HUGE_VAL) : f.max;
        if (std::isinf(r.max) && !(f.nullable && std::isinf(f.none))) r.max = std::numeric_limits<double>::max();
        r.nullable = f.nullable;
        r.none = f.none;
        if (f.choices)
            for (auto c : f.choices()) r.choices << q(c);
        r.live = f.apply == mpx::Apply::live;
        out << r;
    }
    return out;
}

template <class S>
const mpx::Field<S>* fieldNamed(std::span<const mpx::Field<S>> fields, const QString& name) {
    return mpx::find_field(fields, name.toStdString());
}
template <class S>
double numberOf(std::span<const mpx::Field<S>> fields, const S& s, const QString& name) {
    const auto* f = fieldNamed(fields, name);
    return f && f->number ? f->number(s) : 0.0;
}
template <class S>
void setNumberOf(std::span<const mpx::Field<S>> fields, S& s, const QString& name, double v) {
    if (const auto* f = fieldNamed(fields, name); f && f->set_number) f->set_number(s, v);
}
template <class S>
QString choiceOf(std::span<const mpx::Field<S>> fields, const S& s, const QString& name) {
    const auto* f = fieldNamed(fields, name);
    return f && f->name_of ? q(f->name_of(s)) : QString();
}
template <class S>
void setChoiceOf(std::span<const mpx::Field<S>> fields, S& s, const QString& name, const QString& v) {
    if (const auto* f = fieldNamed(fields, name); f && f->set_name) f->set_name(s, v.toStdString());
}
}  // namespace

QList<FieldSpec> scalerFields() { return specs(mpx::scaler_fields()); }
QList<FieldSpec> trainFields() { return specs(mpx::train_fields()); }
QString scalerFieldHelp(const QString& name) {
    for (const FieldSpec& f : scalerFields())
        if (f.name == name) return f.help;
    return {};
}
double fieldNumber(const mpx::ScalerConfig& s, const QString& n) { return numberOf(mpx::scaler_fields(), s, n); }
double fieldNumber(const mpx::TrainConfig& t, const QString& n) { return numberOf(mpx::train_fields(), t, n); }
void setFieldNumber(mpx::ScalerConfig& s, const QString& n, double v) { setNumberOf(mpx::scaler_fields(), s, n, v); }
void setFieldNumber(mpx::TrainConfig& t, const QString& n, double v) { setNumberOf(mpx::train_fields(), t, n, v); }
QString fieldChoice(const mpx::ScalerConfig& s, const QString& n) { return choiceOf(mpx::scaler_fields(), s, n); }
QString fieldChoice(const mpx::TrainConfig& t, const QString& n) { return choiceOf(mpx::train_fields(), t, n); }
void setFieldChoice(mpx::ScalerConfig& s, const QString& n, const QString& v) { setChoiceOf(mpx::scaler_fields(), s, n, v); }
void setFieldChoice(mpx::TrainConfig& t, const QString& n, const QString& v) { setChoiceOf(mpx::train_fields(), t, n, v); }
long long maxSteps() { return mpx::k_max_steps; }

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

QStringList activationNames() { return namesOf<mpx::Activation>(); }
QStringList datasetNames() { return namesOf<mpx::DatasetKind>(); }
QStringList deviceNames() { return namesOf<mpx::DeviceSetting>(); }
bool datasetHasClasses(mpx::DatasetKind k) { return mpx::uses_classes(k); }
int datasetClassCount(const mpx::DatasetConfig& d) { return mpx::class_count(d); }
int maxClasses() { return mpx::k_max_classes; }
int maxSamples() { return mpx::k_max_samples; }
QStringList optimizerNames() { return namesOf<mpx::OptimizerKind>(); }
QStringList scheduleNames() { return namesOf<mpx::Schedule>(); }
QStringList scalerKindNames() { return namesOf<mpx::ScalerKind>(); }
QString toText(mpx::Activation v) { return q(mpx::to_string(v)); }
QString toText(mpx::DatasetKind v) { return q(mpx::to_string(v)); }
QString toText(mpx::OptimizerKind v) { return q(mpx::to_string(v)); }
QString toText(mpx::Schedule v) { return q(mpx::to_string(v)); }
QString toText(mpx::ScalerKind v) { return q(mpx::to_string(v)); }
QStringList attentionScaleNames() { return namesOf<mpx::AttentionScale>(); }
QStringList softmaxFormatNames() { return namesOf<mpx::SoftmaxFormat>(); }
QStringList autocastPolicyNames() { return namesOf<mpx::AutocastPolicy>(); }
QStringList normStatsNames() { return namesOf<mpx::NormStats>(); }
QString toText(mpx::NormStats v) { return q(mpx::to_string(v)); }
mpx::NormStats normStatsFrom(const QString& s) { return fromText(s, mpx::NormStats::fp32); }
QString toText(mpx::AttentionScale v) { return q(mpx::to_string(v)); }
QString toText(mpx::SoftmaxFormat v) { return q(mpx::to_string(v)); }
QString toText(mpx::AutocastPolicy v) { return q(mpx::to_string(v)); }
mpx::AttentionScale attentionScaleFrom(const QString& s) { return fromText(s, mpx::AttentionScale::after); }
mpx::SoftmaxFormat softmaxFormatFrom(const QString& s) { return fromText(s, mpx::SoftmaxFormat::fp32); }
mpx::AutocastPolicy autocastPolicyFrom(const QString& s) { return fromText(s, mpx::AutocastPolicy::cuda); }
QString checkGptShape(int n_layer, int n_head, int n_embd, int block_size) {
    mpx::ModelConfig m;
    m.kind = mpx::ModelKind::gpt;
    m.gpt.n_layer = n_layer;
    m.gpt.n_head = n_head;
    m.gpt.n_embd = n_embd;
    m.gpt.block_size = block_size;
    try {
        mpx::validate(m);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}
mpx::Activation activationFrom(const QString& s) { return fromText(s, mpx::Activation::relu); }
mpx::DatasetKind datasetFrom(const QString& s) { return fromText(s, mpx::DatasetKind::spirals); }
mpx::OptimizerKind optimizerFrom(const QString& s) { return fromText(s, mpx::OptimizerKind::adam); }
mpx::Schedule scheduleFrom(const QString& s) { return fromText(s, mpx::Schedule::constant); }
mpx::ScalerKind scalerKindFrom(const QString& s) { return fromText(s, mpx::ScalerKind::dynamic); }

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

QString siteName(int site) { return site < 0 ? QString() : q(mpx::site_name(site)); }
QString firstNonfiniteText(int site, std::optional<double> magnitude) {
    return q(mpx::first_nonfinite_text(site, magnitude));
}
QString firstNonfiniteText(int site, std::optional<double> magnitude, const mpx::ModelConfig& model) {
    return q(mpx::first_nonfinite_label(site, magnitude, model));
}

QString memoryCategoryName(int category) {
    return q(mpx::to_string(static_cast<mpx::MemCategory>(category)));
}

mpx::BackendFactory backendFor(const std::string& device, QString& name, QString& note) {
    mpx::BackendChoice c = mpx::choose_backend(device, "Device");
    name = QString::fromStdString(c.device.name);
    note = QString::fromStdString(c.device.fallback.empty() ? c.device.unused_gpu : c.device.fallback);
    return std::move(c.factory);
}

QString describeBackend(const QString& name, const QString& note) {
    return note.isEmpty() ? name : QStringLiteral("%1 — %2").arg(name, note);
}

}  // namespace mpx::gui
