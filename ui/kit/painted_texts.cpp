// Every text a widget paints, read back as painted (see painted_texts.hpp).
#include "ui/kit/painted_texts.hpp"

#include <QPaintDevice>
#include <QPaintEngine>
#include <QPainter>
#include <QPainterPath>
#include <QWidget>

namespace mpx::ui {
namespace {

// A paint engine that keeps what text went where and draws nothing. It takes every feature, so that
// QPainter hands it the transform and the clip instead of working them into the shapes it gets.
class TextRecorder : public QPaintEngine {
public:
    explicit TextRecorder(QRectF whole) : QPaintEngine(QPaintEngine::AllFeatures), m_whole(whole), m_clip(whole) {}
    bool begin(QPaintDevice*) override { return true; }
    bool end() override { return true; }
    Type type() const override { return QPaintEngine::User; }
    void updateState(const QPaintEngineState& s) override {
        if (s.state() & QPaintEngine::DirtyTransform) m_transform = s.transform();
        if (s.state() & (QPaintEngine::DirtyClipEnabled | QPaintEngine::DirtyClipRegion | QPaintEngine::DirtyClipPath)) {
            // The clip in device pixels: QPainter's own, which already holds every clip set so far.
            const QPainter* p = painter();
            m_clip = p && p->hasClipping() ? p->transform().map(p->clipPath()).boundingRect().intersected(m_whole) : m_whole;
        }
    }
    void drawPixmap(const QRectF&, const QPixmap&, const QRectF&) override {}
    void drawPolygon(const QPointF*, int, PolygonDrawMode) override {}
    void drawTextItem(const QPointF& at, const QTextItem& item) override {
        const QString t = item.text();
        if (t.trimmed().isEmpty()) return;
        const QRectF box(at.x(), at.y() - item.ascent(), item.width(), item.ascent() + item.descent());
        texts << PaintedText{t, m_transform.mapRect(box), m_clip};
    }
    QList<PaintedText> texts;

private:
    QRectF m_whole, m_clip;
    QTransform m_transform;
};

class RecordingDevice : public QPaintDevice {
public:
    explicit RecordingDevice(QSize size) : m_size(size), m_engine(QRectF(QPointF(0, 0), size)) {}
    QPaintEngine* paintEngine() const override { return &m_engine; }
    QList<PaintedText> texts() const { return m_engine.texts; }

protected:
    int metric(PaintDeviceMetric m) const override {
        switch (m) {
        case PdmWidth: return m_size.width();
        case PdmHeight: return m_size.height();
        case PdmWidthMM: return m_size.width() * 254 / 960;
        case PdmHeightMM: return m_size.height() * 254 / 960;
        case PdmNumColors: return INT_MAX;
        case PdmDepth: return 32;
        case PdmDpiX:
        case PdmDpiY:
        case PdmPhysicalDpiX:
        case PdmPhysicalDpiY: return 96;
        case PdmDevicePixelRatio: return 1;
        case PdmDevicePixelRatioScaled: return static_cast<int>(QPaintDevice::devicePixelRatioFScale());
        default: return 0;
        }
    }

private:
    QSize m_size;
    mutable TextRecorder m_engine;
};

}  // namespace

QList<PaintedText> paintedTexts(QWidget* w, bool children) {
    if (!w || !w->isVisible() || w->size().isEmpty()) return {};
    RecordingDevice device(w->size());
    w->render(&device, QPoint(), QRegion(), children ? QWidget::DrawChildren : QWidget::RenderFlags());
    return device.texts();
}

}  // namespace mpx::ui
