// One or two plain sentences per concept, shown as tooltips wherever the concept appears (settings,
// chart hover, event log). Rule: say what it is and why it matters, no jargon beyond the term itself.
#pragma once

#include <QString>

namespace mpx::ui::concepts {

QString loss();
QString evalLoss();
QString evalAccuracy();
QString lossScale();
QString skippedStep();
QString bf16NoScaler();
QString underflow();
QString overflow();
QString lostUpdates();
// What a subnormal number is, in one sentence (the format explorer, the Range view's orange band).
QString subnormal();
// A setting's own text lives with its field in the engine (gui::scalerFields()); these two are
// also shown beside the events they cause.
QString hysteresis();
QString growthInterval();
QString scalerPreset();
// scalerPreset() plus which framework release the named preset reproduces, from the engine's table.
QString scalerPreset(const QString& name);
QString throughput();
QString memory();
QString smoothing();
QString needsReset();
QString live();
QString run(const QString& label);  // what a run label such as "amp-fp16" means
QString recompute();
QString layernorm();
QString dropout();
QString seed();

}  // namespace mpx::ui::concepts
