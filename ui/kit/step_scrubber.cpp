// StepScrubber: a QSlider over snapshot indices, kept on its step while the log grows and thins.
#include "ui/kit/step_scrubber.hpp"

#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>

#include <algorithm>

namespace mpx::ui {

namespace {
auto firstAtOrAfter(const std::vector<mpx::HistogramSnapshot>& s, long long step) {
    return std::lower_bound(s.begin(), s.end(), step,
                            [](const mpx::HistogramSnapshot& h, long long x) { return h.step < x; });
}
}  // namespace

const mpx::HistogramSnapshot* nearestSnapshot(const std::vector<mpx::HistogramSnapshot>* s, long long step) {
    if (!s || s->empty() || step < 0) return nullptr;
    auto it = firstAtOrAfter(*s, step);
    if (it == s->end()) return &s->back();
    if (it != s->begin() && step - std::prev(it)->step < it->step - step) --it;
    return &*it;
}

StepScrubber::StepScrubber(QWidget* parent) : QWidget(parent) {
    auto* bar = new QHBoxLayout(this);
    bar->setContentsMargins(0, 0, 0, 0);
    bar->addWidget(new QLabel(tr("Step")));
    m_slider = new QSlider(Qt::Horizontal);
    m_slider->setRange(0, 0);
    m_slider->setMinimumWidth(100);
    m_slider->setToolTip(tr("Scrub through the steps at which histograms were collected. At the right end the "
                            "view follows training; move it to stay at one step."));
    bar->addWidget(m_slider, 1);
    m_label = new QLabel;
    m_label->setMinimumWidth(120);
    bar->addWidget(m_label);
    connect(m_slider, &QSlider::valueChanged, this, [this](int v) {
        if (!m_setting) m_follow = v == m_slider->maximum();
        showLabel();
        emit stepChanged();
    });
    showLabel();
}

void StepScrubber::setSnapshots(const std::vector<mpx::HistogramSnapshot>* snaps, long long every) {
    const long long shown = step();
    m_snaps = snaps;
    m_every = every;
    const int n = snaps ? static_cast<int>(snaps->size()) : 0;
    m_setting = true;
    m_slider->setRange(0, std::max(0, n - 1));
    if (m_follow) m_slider->setValue(std::max(0, n - 1));
    else if (n > 0)  // thinning moves indices: stay at the step, not at the index
        m_slider->setValue(static_cast<int>(std::min<std::ptrdiff_t>(firstAtOrAfter(*snaps, shown) - snaps->begin(), n - 1)));
    m_setting = false;
    showLabel();
}

long long StepScrubber::step() const {
    if (!m_snaps || m_snaps->empty()) return -1;
    const int i = std::clamp(m_slider->value(), 0, static_cast<int>(m_snaps->size()) - 1);
    return (*m_snaps)[static_cast<std::size_t>(i)].step;
}

void StepScrubber::setStep(long long step) {
    const mpx::HistogramSnapshot* h = nearestSnapshot(m_snaps, step);
    if (!h) return;
    m_follow = false;
    m_setting = true;
    m_slider->setRange(0, static_cast<int>(m_snaps->size()) - 1);
    m_slider->setValue(static_cast<int>(h - m_snaps->data()));
    m_setting = false;
    showLabel();
    emit stepChanged();
}

void StepScrubber::follow() {
    m_follow = true;
    m_snaps = nullptr;  // a new session's log replaces the old one: never read the old pointer
    showLabel();
}

void StepScrubber::showLabel() {
    if (!m_snaps || m_snaps->empty()) {
        m_label->setText(tr("no histogram yet"));
        return;
    }
    m_label->setText(tr("step %1%2").arg(step()).arg(m_follow ? tr(" · following") : QString()));
    m_label->setToolTip(tr("Histograms are collected every %1 steps.").arg(m_every));
}

}  // namespace mpx::ui
