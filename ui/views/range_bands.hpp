// The bands the Range view shades: a format's flushed / subnormal / normal / overflow spans on the
// log2|value| axis, and for an FP8 GEMM operand the FP8 format's spans where the cast puts them in the
// tensor's own values (the cast rounds v · scale, so each edge 2^k of the format sits at 2^k ÷ scale).
// Rule: every edge comes from format_info() and every scale from the engine's Fp8ScaleRow (through
// RecordStore::fp8); nothing here recomputes a scale or copies a format's number.
#pragma once

#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

#include "engine/compute/histograms.hpp"
#include "engine/core/fp8_math.hpp"
#include "ui/session/record_store.hpp"

class QFontMetrics;
class QPainter;
class QRectF;

namespace mpx::ui {

struct Log2Axis;

// [lo, hi) on the log2|value| axis, ±infinity at the open ends. A value below half the smallest
// subnormal rounds to 0 (flushed), below the smallest normal it keeps fewer significant bits
// (subnormal), above the largest finite value it overflows (±inf, or saturates where the cast does).
enum class Band { flushed, subnormal, normal, overflow };
struct BandSpan {
    Band band;
    double lo, hi;
};
// Format f's bands with every finite edge moved by `shift` (log2 of the factor the values are
// multiplied by before rounding, negated: −log2(scale)).
std::vector<BandSpan> formatBands(mpx::Format f, double shift = 0);
QColor bandColour(Band b);

// The FP8 GEMM operand a Range view tensor is: input → x, weight → w, grad_output → dy.
std::optional<mpx::Fp8Tensor> fp8OperandOf(mpx::HistTensor t);

// How an FP8 run's matrix product cast the tensor shown, at the step shown.
struct Fp8Cast {
    bool fp8Run = false;  // the run casts GEMM operands to FP8
    bool fp4Run = false;  // the run casts GEMM operands to FP4 (nvfp4, mxfp4: always block scaled)
    bool active = false;  // and this tensor is one of them, with an engine row to place its bands
    bool block = false;   // MXFP8 (and FP4): a scale per block, none that fits the whole tensor
    mpx::Fp8Recipe recipe = mpx::Fp8Recipe::delayed;
    mpx::Format format = mpx::Format::e4m3;
    mpx::Overflow overflow = mpx::Overflow::saturate;  // what the cast does above the format's max
    long long rowStep = -1;  // the engine row used: the panel's step unless the store thinned it
    double scale = 0;        // the row's scale (block: 0)
    double amax = 0;         // the row's amax, before scaling
    unsigned long long saturated = 0, count = 0;  // the row's: values cast, and those that overflowed
    double flushedShare = 0;                      // of the non-zero values cast, the share that became 0
    // Per tensor: −log2(scale). Block: the shared exponent of the block that holds the amax
    // (core::mx_shared_exponent), i.e. that block's elements are x ÷ 2^shift. FP4: log2 of what
    // the amax's block is divided by (NVFP4: its E4M3 scale ÷ S_enc; MXFP4: its power of two).
    // The edges come from core/fp4.hpp's rules applied to the row's amax: the FP4 branch does not
    // recompute a recorded scale, it places the one block the amax belongs to.
    double shift = 0;
    std::vector<BandSpan> bands;  // formatBands(format, shift): per tensor, or the amax block's window
    QString title;  // "cast to E4M3 ×312.7"
    QString note;   // the caption: what the bands are, in words
    QString blockHelp;  // block: the tooltip's paragraph on the strip (HTML)
};
Fp8Cast fp8Cast(const gui::RecordStore& store, int run, int layer, mpx::HistTensor t, long long step);

// A band's label above the plot; `cast` null: the storage format's. bandLabels: the same, then
// shorter forms of it ("subnormal (fewer digits)", "subnormal", "sub.") for a narrow band.
QString bandLabel(const BandSpan& b, mpx::Format f, const Fp8Cast* cast);
QStringList bandLabels(const BandSpan& b, mpx::Format f, const Fp8Cast* cast);
// Where the labels above the plot go: each band's longest form that fits it, whole, none overlapping
// (a label that finds no room is left out rather than cut); x is the text's left edge.
struct BandLabel {
    Band band;
    QString text;
    double x;
};
std::vector<BandLabel> placeBandLabels(const Log2Axis& ax, const QRectF& plot, const std::vector<BandSpan>& bands,
                                       mpx::Format f, const Fp8Cast* cast, const QFontMetrics& fm);
// One bin's fate in words for the tooltip ("%1": the format's name), per band; `cast` null: the
// storage format f's (which saturates instead of overflowing where it has no inf, or no NaN either).
QString bandFate(Band b, mpx::Format f, const Fp8Cast* cast);

// The bands as shaded rectangles over `plot` between the axis' ends, labelled above at `labelY`
// (small font; NaN: unlabelled) where placeBandLabels puts them.
void drawBands(QPainter& p, const Log2Axis& ax, const QRectF& plot, const std::vector<BandSpan>& bands,
               mpx::Format f, const Fp8Cast* cast, double labelY);
// MXFP8: the amax block's window as a strip of band colours at [top, top + height), labelled.
void drawBlockWindow(QPainter& p, const Log2Axis& ax, const QRectF& strip, const Fp8Cast& cast);

}  // namespace mpx::ui
