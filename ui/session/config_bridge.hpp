// What the widgets need from the engine's configuration, in Qt terms: preset and choice lists,
// loading and saving with the error as text, the framework snippet, the backend and its name.
// Rule: the ui/ layer goes through this header, never to engine/ directly; nothing here throws.
#pragma once

#include <QString>
#include <QStringList>
#include <optional>

#include "engine/compute/backend_factory.hpp"
#include "engine/config/session_config.hpp"
#include "ui/session/session_info.hpp"

namespace mpx::gui {

struct ConfigResult {
    std::optional<mpx::SessionConfig> config;
    QString error;  // what went wrong and how to fix it, when config is empty
};

QStringList presetNames();
ConfigResult loadConfig(const QString& nameOrPath);
ConfigResult configFromSidecar(const QString& path);
// The live changes an export's sidecar lists ("step 120: scaler: growth_interval 2000 → 50"): loading
// the sidecar reproduces the start of those runs, not these changes.
QStringList sidecarLiveChanges(const QString& path);
ConfigResult parseConfigText(const QString& text, const QString& origin);
// Applies key=value overrides in order; stops at the first bad one.
ConfigResult applyOverrides(mpx::SessionConfig cfg, const QStringList& assignments);
QString configToJson(const mpx::SessionConfig& cfg);
// Writes the configuration as JSON atomically; returns an error message or an empty string.
QString saveConfig(const mpx::SessionConfig& cfg, const QString& path);
// Writes the session as a folder PyTorch trains (engine/io/torch_export.hpp: train.py and its data),
// whole or not at all; returns an error message or an empty string.
QString exportTorch(const mpx::SessionConfig& cfg, const QString& folder);
// validate() plus the checks a Session makes (model sizes against the data set, unique runs).
QString checkConfig(const mpx::SessionConfig& cfg);
// Input features and outputs of a data set ("spirals" with 3 classes: 2 and 3).
std::pair<int, int> datasetShape(const mpx::DatasetConfig& data);

// Run labels offered as check boxes; any valid label ("half-fp16+deepspeed") can be added.
QStringList standardRuns();
QString checkRunLabel(const QString& label);  // empty when valid
// What a run label's mode does (empty for an invalid label); `bf16` says whether it trains in BF16.
QString runModeHelp(const QString& label, bool* bf16 = nullptr);

QStringList scalerPresetNames();
mpx::ScalerConfig scalerPreset(const QString& name);
// The framework release a preset reproduces and the source it follows (the engine's table); both
// empty for "custom" or an unknown name.
struct PresetSource {
    QString framework;
    QString source;
};
PresetSource scalerPresetSource(const QString& name);
QString checkScaler(const mpx::ScalerConfig& s);

// One setting as a form row, from the engine's field lists: what the control shows and accepts.
struct FieldSpec {
    QString name;   // the JSON key, "growth_interval"
    QString label;  // "Growth interval"
    QString help;   // the tooltip
    mpx::FieldKind kind = mpx::FieldKind::number;
    double min = 0, max = 0;  // the closed range a control accepts (number, integer)
    bool nullable = false;    // an empty field means `none` (e.g. no maximum)
    double none = 0;
    QStringList choices;      // choice fields
    bool live = false;        // applies at the next step (else on reset)
};
QList<FieldSpec> scalerFields();
QList<FieldSpec> trainFields();
QString scalerFieldHelp(const QString& name);  // the tooltip of one scaler setting
// A field's value by name: numbers (integer and flag fields too) and choices.
double fieldNumber(const mpx::ScalerConfig& s, const QString& name);
double fieldNumber(const mpx::TrainConfig& t, const QString& name);
void setFieldNumber(mpx::ScalerConfig& s, const QString& name, double v);
void setFieldNumber(mpx::TrainConfig& t, const QString& name, double v);
QString fieldChoice(const mpx::ScalerConfig& s, const QString& name);
QString fieldChoice(const mpx::TrainConfig& t, const QString& name);
void setFieldChoice(mpx::ScalerConfig& s, const QString& name, const QString& v);
void setFieldChoice(mpx::TrainConfig& t, const QString& name, const QString& v);
// Limits of the reset settings, for the controls' ranges.
long long maxSteps();
int maxSamples();
int maxClasses();
bool datasetHasClasses(mpx::DatasetKind k);  // spirals and blobs: the others fix their classes
int datasetClassCount(const mpx::DatasetConfig& d);  // the classes it has (digits 10); 0 for regression
QStringList frameworkNames();  // "PyTorch", "Apex", "DeepSpeed", "Keras", "Megatron-LM"
QString frameworkSnippet(const mpx::ScalerConfig& s, int frameworkIndex);

// Choice lists for the enum settings, in the engine's spelling, and the conversions.
QStringList activationNames();
QStringList datasetNames();
QStringList optimizerNames();
QStringList scheduleNames();
QStringList scalerKindNames();
QStringList deviceNames();  // "cpu", "auto", "cuda"
QStringList attentionScaleNames();
QStringList softmaxFormatNames();
QStringList autocastPolicyNames();
QStringList normStatsNames();
QString toText(mpx::Activation v);
QString toText(mpx::DatasetKind v);
QString toText(mpx::OptimizerKind v);
QString toText(mpx::Schedule v);
QString toText(mpx::ScalerKind v);
QString toText(mpx::AttentionScale v);
QString toText(mpx::SoftmaxFormat v);
QString toText(mpx::AutocastPolicy v);
QString toText(mpx::NormStats v);
mpx::NormStats normStatsFrom(const QString& s);
mpx::AttentionScale attentionScaleFrom(const QString& s);
mpx::SoftmaxFormat softmaxFormatFrom(const QString& s);
mpx::AutocastPolicy autocastPolicyFrom(const QString& s);
// The engine's line for a GPT shape it refuses (n_embd not divisible by n_head, …), or "".
QString checkGptShape(int n_layer, int n_head, int n_embd, int block_size);
mpx::Activation activationFrom(const QString& s);
mpx::DatasetKind datasetFrom(const QString& s);
mpx::OptimizerKind optimizerFrom(const QString& s);
mpx::Schedule scheduleFrom(const QString& s);
mpx::ScalerKind scalerKindFrom(const QString& s);
QString modelSizesText(const std::vector<int>& sizes);
std::optional<std::vector<int>> parseModelSizes(const QString& text, QString* error = nullptr);
// "backoff", "grow", "hysteresis", "none" for StepRecord::scale_event.
QString scaleEventText(int event);
QString memoryCategoryName(int category);  // "weights", "master", ...
// "fc3.grad_weight" for a StepRecord::first_nonfinite site (engine/core/step_stats.hpp); empty for -1.
QString siteName(int site);
// "fc3.output, where 83456 overflowed" (mpx::first_nonfinite_text); empty for -1.
QString firstNonfiniteText(int site, std::optional<double> magnitude);
// The same as a student reads it: the GPT's "block 0 · attention scores (block0.attn.output), …".
QString firstNonfiniteText(int site, std::optional<double> magnitude, const mpx::ModelConfig& model);

// The backend for a device setting ("cpu", "cuda", "auto") and its name; throws DeviceError when
// "cuda" cannot be used. `note` says why the CPU was chosen where a GPU was asked for or exists.
mpx::BackendFactory backendFor(const std::string& device, QString& name, QString& note);
// One line for the status bar: the backend in use and what was found ("CPU (Eigen) — GPU NVIDIA
// H100 found, but this build has no CUDA backend").
QString describeBackend(const QString& name, const QString& note);

}  // namespace mpx::gui
