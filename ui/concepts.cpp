// The texts of the concept tooltips.
#include "ui/concepts.hpp"

#include <QObject>

#include "app/gui/config_bridge.hpp"

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
                       "is 65504). One overflow in the gradients makes the step skip.");
}
QString lostUpdates() {
    return QObject::tr("Lost updates: the share of weights whose update was too small to change the stored "
                       "weight (under half the gap to its format's next value). Without an FP32 master copy "
                       "(pure-…) those updates are gone and training stalls; with one (half-…) the master "
                       "keeps adding them up; amp stores FP32 weights, whose finer steps lose far fewer.");
}
QString hysteresis() {
    return QObject::tr("Hysteresis: how many overflows the scaler absorbs (skipping the step but "
                       "keeping the scale) before it backs off. 1 means back off at every overflow.");
}
QString hysteresisReset() {
    return QObject::tr("When a spent hysteresis counter is refilled: after every clean step, or only "
                       "when the scale grows (DeepSpeed's and Megatron's default).");
}
QString growthInterval() {
    return QObject::tr("After this many clean steps in a row the scale grows by the growth factor.");
}
QString growthFactor() { return QObject::tr("The scale is multiplied by this when it grows (> 1)."); }
QString backoffFactor() {
    return QObject::tr("The scale is multiplied by this after an overflow (between 0 and 1).");
}
QString initScale() { return QObject::tr("The loss scale the run starts with."); }
QString minScale() { return QObject::tr("The scale never backs off below this (0: no minimum)."); }
QString maxScale() { return QObject::tr("The scale never grows above this (empty or inf: no maximum)."); }
QString growthCount() {
    return QObject::tr("How clean steps are counted towards growth: consecutively since the last "
                       "growth or overflow; DeepSpeed up to 0.17.0's steps since the last overflow "
                       "(the same scale); or DeepSpeed 0.17.1 and later's stable interval, whose "
                       "first growth after an overflow waits one clean step more.");
}
QString atMin() {
    return QObject::tr("Backing off at the minimum scale: stay there (clamp), or stop the run with an "
                       "error as DeepSpeed does.");
}
QString scaleStorage() {
    return QObject::tr("Whether the scale is a float32 tensor (PyTorch, Keras, Megatron) or a Python "
                       "float (Apex, DeepSpeed).");
}
QString nonFiniteGrowth() {
    return QObject::tr("A growth whose result would be infinite: applied, or refused (the scale stays).");
}
QString hysteresisDecrement() {
    return QObject::tr("How an overflow spends the hysteresis counter: stop at one (DeepSpeed) or keep "
                       "counting down (Megatron, NeMo). The scale is the same either way.");
}
QString scalerKind() {
    return QObject::tr("dynamic: the scale adapts to overflows; static: a fixed scale; none: no "
                       "scaling (FP32, TF32 and BF16 runs use none).");
}
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
    return QObject::tr("Steps per second each run would reach alone, from its own step time. "
                       "Low-precision formats are emulated on the CPU, so they are slower there.");
}
QString memory() {
    return QObject::tr("Bytes each run holds, by category: weights, FP32 master copy, gradients, "
                       "optimizer state, activations kept for backward and workspace.");
}
QString smoothing() {
    return QObject::tr("Exponential moving average of the loss (like TensorBoard's slider); the raw "
                       "loss stays visible as a faint line.");
}
QString clipping() {
    return QObject::tr("Gradient-norm clipping, always applied after unscaling. 0 turns it off.");
}
QString learningRate() { return QObject::tr("The optimizer's step size; changes apply at the next step."); }
QString schedule() {
    return QObject::tr("How the learning rate changes over the run: constant, multiplied by gamma "
                       "every step size steps, or linear warm-up then cosine decay.");
}
QString needsReset() {
    return QObject::tr("These settings shape the model, data or runs: a change applies when you reset "
                       "(Ctrl+R).");
}
QString live() {
    return QObject::tr("These settings apply at the next step, while the session runs.");
}
QString run(const QString& label) {
    const QString base = label.section(QLatin1Char('+'), 0, 0);
    QString text;
    if (base == QLatin1String("fp32")) text = QObject::tr("Everything in FP32: the reference.");
    else if (base == QLatin1String("tf32")) text = QObject::tr("FP32, but matrix products round their inputs to TF32 (10-bit mantissa), as tensor cores do.");
    else if (base.startsWith(QLatin1String("amp-"))) text = QObject::tr("Autocast: matrix products and activations in low precision, FP32 weights, softmax, loss and norms.");
    else if (base.startsWith(QLatin1String("half-"))) text = QObject::tr("The whole model in low precision with an FP32 master copy of the weights (Apex O2).");
    else if (base.startsWith(QLatin1String("pure-"))) text = QObject::tr("Everything in low precision, no master copy (Apex O3): small updates get lost.");
    else if (base.startsWith(QLatin1String("selective-"))) text = QObject::tr("Low precision only for the chosen layers.");
    else if (base.startsWith(QLatin1String("adaptive-"))) text = QObject::tr("Autocast while memory is over the threshold, FP32 otherwise.");
    else if (base.startsWith(QLatin1String("scaling-only"))) text = QObject::tr("FP32 with a loss scaler: shows that scaling alone is harmless but useless.");
    if (base.endsWith(QLatin1String("bf16"))) text += QLatin1Char(' ') + bf16NoScaler();
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
