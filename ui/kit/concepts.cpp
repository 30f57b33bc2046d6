// The texts of the concept tooltips.
#include "ui/kit/concepts.hpp"

#include <QObject>

#include "ui/session/config_bridge.hpp"

namespace mpx::ui::concepts {

QString loss() {
    return QObject::tr("Training loss: how wrong the model is on the batch of training examples it "
                       "learns from at this step (cross-entropy for classes, squared error for the sine "
                       "curve). Lower is better.");
}
QString evalLoss() {
    return QObject::tr("Held-out loss: the same loss on test examples the model never trains on, measured "
                       "every few steps (a dot each time) with each run's own precision and no dropout. It "
                       "shows what the run really learned, not what it memorised.");
}
QString evalAccuracy() {
    return QObject::tr("Held-out accuracy: the share of the test examples whose highest-scoring class is the "
                       "right one, measured with the held-out loss. Regression data (sine) has none.");
}
QString lossScale() {
    return QObject::tr("The loss is multiplied by this number before backward so that small FP16 "
                       "gradients do not round to zero; the gradients are divided by it again before "
                       "the optimizer step.");
}
QString skippedStep() {
    return QObject::tr("A skipped step: some gradient became inf or NaN (the scale was too large for "
                       "FP16), so the optimizer step was not applied and the scaler backed off.");
}
QString bf16NoScaler() {
    return QObject::tr("BF16 has the same exponent range as FP32, so gradients neither underflow nor "
                       "overflow much sooner than in FP32: it needs no loss scaler.");
}
QString underflow() {
    return QObject::tr("Underflow: gradient values that were not zero but became zero when rounded to "
                       "the low-precision format. That part of the signal is lost.");
}
QString overflow() {
    return QObject::tr("Overflow: finite values that became ±inf when rounded (FP16's largest value "
                       "is 65504). One overflow in the gradients makes the step skip. FP8 and FP4 casts that "
                       "saturate (E4M3 clamps to ±448, FP4 to ±6 times its block's scale) count here too, and do "
                       "not skip a step.");
}
QString lostUpdates() {
    return QObject::tr("Lost updates: the share of weights whose update was too small to change the stored "
                       "weight (under half the gap to its format's next value). Without an FP32 master copy "
                       "(pure-…) those updates are gone and training stalls; with one (half-…) the master "
                       "keeps adding them up; amp stores FP32 weights, whose finer steps lose far fewer. "
                       "The cures for pure runs: +kahan keeps what rounding drops in a compensation buffer "
                       "and adds it back later (a carried update is not lost); +sr rounds up with "
                       "probability equal to the update's share of the gap, so on average nothing is lost.");
}
QString subnormal() {
    return QObject::tr("Subnormal: a value below the format's smallest normal number, which the format still "
                       "stores, but with fewer significant bits the closer it is to 0, down to a single bit at "
                       "its smallest subnormal.");
}
QString hysteresis() { return gui::scalerFieldHelp(QStringLiteral("hysteresis")); }
QString growthInterval() { return gui::scalerFieldHelp(QStringLiteral("growth_interval")); }
QString scalerPreset() {
    return QObject::tr("Start from the exact rules of a framework's loss scaler; every field below can "
                       "then be changed. The settings apply live to the runs that follow the "
                       "session's scaler.");
}
QString scalerPreset(const QString& name) {
    const gui::PresetSource src = gui::scalerPresetSource(name);
    if (src.framework.isEmpty()) return scalerPreset();
    return scalerPreset() + QStringLiteral("\n\n") +
           QObject::tr("'%1' reproduces %2, as in %3.").arg(name, src.framework, src.source);
}
QString throughput() {
    return QObject::tr("Steps per second of each run, from the time its own step took. On several "
                       "threads the runs step side by side, so the comparison as a whole goes at the "
                       "rate in the status bar, not the sum of these. Low-precision formats are "
                       "emulated on the CPU, so they are slower there. A step that settles lower "
                       "part-way through is not training getting harder: as the loss falls, values "
                       "become subnormal, which the CPU computes slowly (8 % on the default preset's "
                       "FP32 run from step 700); mpx keeps them, since flushing them to zero would "
                       "erase the underflow it exists to show.");
}
QString memory() {
    return QObject::tr("Bytes each run holds, by category: weights, FP32 master copy, gradients, "
                       "optimizer state, activations kept for backward and workspace.");
}
QString smoothing() {
    return QObject::tr("Exponential moving average of the loss (like TensorBoard's slider); the raw "
                       "loss stays visible as a faint line.");
}
QString needsReset() {
    return QObject::tr("These settings shape the model, data or runs: a change applies when you reset "
                       "(Ctrl+R).");
}
QString live() {
    return QObject::tr("These settings apply at the next step, while the session runs.");
}
QString run(const QString& label) {
    bool bf16 = false;
    QString text = gui::runModeHelp(label, &bf16);
    if (bf16) text += QLatin1Char(' ') + bf16NoScaler();
    return text;
}
QString recompute() {
    return QObject::tr("Activation recomputation: keep fewer activations and rebuild them in backward, "
                       "trading compute for memory.");
}
QString layernorm() { return QObject::tr("LayerNorm after each hidden layer (statistics in FP32)."); }
QString dropout() { return QObject::tr("Fraction of hidden activations zeroed during training."); }
QString seed() {
    return QObject::tr("Fixes the data, the initial weights and the batch order: every run of a "
                       "comparison sees the same ones.");
}

}  // namespace mpx::ui::concepts
