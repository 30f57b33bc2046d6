// What the window knows about the session the worker owns: its runs, length and device, plus the
// engine's state. Rule: a SessionInfo is immutable once published; a new session (configure or
// reset) publishes a new one with a higher generation, and records always travel with theirs.
#pragma once

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

#include "engine/config/session_config.hpp"
#include "ui/session/run_colours.hpp"

namespace mpx::gui {

struct RunDescription {
    QString label;      // unique: "amp-fp16+pytorch"
    mpx::RunSpec spec;  // mode, formats, named scaler, FP8 recipe: the label, typed
    bool followsLiveScaler = false;  // the session's scaler applies (live changes reach it)
    bool hasScaler = false;          // a dynamic or static scaler is in use
    QString scalerPreset;            // the preset its label names ("deepspeed"); empty when it names none
    mpx::WriteBack writeBack = mpx::WriteBack::nearest;  // RunInfo::write_back: how pure-* runs store updates
    RunStyle style;  // its colour and dash in every view (run_colours.hpp), set once per session
};

// Every run's scaler settings in force, and the session scaler's (runs without "+preset" follow it):
// what the Scaler tab shows for the run it edits. Published with the session and with each live change.
struct LiveScalers {
    std::vector<mpx::ScalerConfig> runs;
    mpx::ScalerConfig session;
};
using LiveScalersPtr = std::shared_ptr<const LiveScalers>;

struct SessionInfo {
    quint64 generation = 0;
    std::vector<RunDescription> runs;
    long long totalSteps = 0;
    QString device;                  // "CPU (Eigen)" or the GPU's name
    QString deviceNote;              // why not the GPU, where one was asked for or found
    mpx::SessionConfig config;       // as the session was built (the live changes it lists included)
    LiveScalersPtr scalers;          // as the session starts (changes at step 0 applied)
    // The layers' names where they are not the model's fc1..fcN (a trace's modules).
    QStringList layerNames;
};

// The session's layers: its layerNames, or the model's (mpx::layer_name: fc1..fcN, the GPT's embed, block0.attn.qkv, ...).
int layerCount(const SessionInfo& s);
QString layerName(const SessionInfo& s, int layer);
// The layers whose parameters the optimizer updates (mpx::updated_layers), ascending.
std::vector<int> updatedLayers(const SessionInfo& s);
using SessionInfoPtr = std::shared_ptr<const SessionInfo>;

enum class EngineState { empty, ready, running, paused, finished };
QString toText(EngineState s);

// A line of the event log that is not a step's scale event: live training settings changed, a scaler
// was edited live (one run's, or the session scaler: run -1), a run stopped, a replayed trace's
// verdict (ui/session/trace_session.hpp).
enum class NoteKind : quint8 { settingChanged, scalerEdited, runStopped, verdict };
struct Note {
    long long step = 0;
    int run = -1;  // -1: every run (settingChanged), the session scaler (scalerEdited)
    NoteKind kind = NoteKind::settingChanged;
    QString text;
    std::vector<int> runs;   // scalerEdited: the runs whose scaler it set
    LiveScalersPtr scalers;  // scalerEdited: every scaler after the change
};

}  // namespace mpx::gui

Q_DECLARE_METATYPE(mpx::gui::EngineState)
Q_DECLARE_METATYPE(mpx::SessionConfig)
Q_DECLARE_METATYPE(mpx::ScalerConfig)
Q_DECLARE_METATYPE(mpx::TrainConfig)
