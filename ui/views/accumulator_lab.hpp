// The accumulator lab: the largest relative error of C = A·B under the accumulation models
// (REFERENCE.md, "Accumulation models") against FP64, for random A and B and K from 64 to 16384: one
// line per (operand format, model) on a log–log chart and every number in a table beside it.
// Rule: every number is RandomGemm's (engine/precision/accumulation.hpp), the experiment
// `mpx-cli gemm-error` runs; this file only lays them out, and says they are models, not a GPU.
// The points are computed on a std::thread that appends them under a short lock; a timer on the UI
// thread drains them (as ui/session/sweep_job does). Closing the window cancels; destroying it joins.
#pragma once

#include <QList>
#include <QTimer>
#include <QWidget>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/precision/accumulation.hpp"
#include "engine/precision/format.hpp"

class QCheckBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace mpx::ui {

class LineKey;
class MessageBar;
class PlotWidget;

// One measured point: the model's error for operands in `format` at inner dimension k.
struct LabPoint {
    mpx::Format format = mpx::Format::e4m3;
    mpx::AccumulateParams params;
    int k = 0;
    mpx::RelativeError error;
};

class AccumulatorLab : public QWidget {
    Q_OBJECT
public:
    // The table's columns. Each cell's Qt::UserRole holds its exact value (the format and the model
    // as their enum's integer, K as int, the errors as double); the text is for people.
    enum Column { formatColumn, modelColumn, kColumn, maxColumn, meanColumn, columnCount };

    // What the controls say: the experiment a Run computes.
    struct Settings {
        QList<mpx::Format> formats;
        QList<mpx::AccumulateModel> models;
        int bits = 14;
        int promoteEvery = 128;
        int seed = 1;
        int size = 64;     // m = n: rows of A and columns of B
        QList<int> ks;     // inner dimensions, ascending
    };

    explicit AccumulatorLab(QWidget* parent = nullptr);
    ~AccumulatorLab() override;  // stops the computation and waits for its thread

    Settings settings() const;
    void setOperandFormats(const QList<mpx::Format>& formats);  // ticks exactly these
    void setModels(const QList<mpx::AccumulateModel>& models);
    void setBits(int bits);
    void setPromoteEvery(int n);
    void setSeed(int seed);
    void setMatrixSize(int size);
    // K = 64, 128, …, 16384 unless a test asks for fewer (powers of two from lo to hi).
    void setKRange(int lo, int hi);
    // The K the note quotes first (a lesson's, {lab:e4m3@4096}) besides the largest; 0: the largest only.
    void setQuotedK(int k);

    // The model's parameters as the controls give them (the CLI's --bits and --promote-every).
    static mpx::AccumulateParams paramsFor(mpx::AccumulateModel m, int bits, int promoteEvery);
    // "E4M3 · fp8-fast (14 bits)": a chart line's name.
    static QString seriesName(mpx::Format f, const mpx::AccumulateParams& p);

    // Starts computing the controls' experiment; false (and a message shown) when nothing is
    // ticked, the parameters are refused or a run is still going.
    bool run();
    void cancel();  // the current point finishes, then runFinished(true)
    bool isRunning() const { return m_thread.joinable(); }
    // The points of the last run, in the order computed (K, then format, then model).
    const std::vector<LabPoint>& points() const { return m_points; }

    QTableWidget* table() const { return m_table; }
    PlotWidget* plot() const { return m_plot; }
    QPushButton* runButton() const { return m_run; }
    QPushButton* cancelButton() const { return m_cancel; }
    QProgressBar* progress() const { return m_progress; }
    // Chart text × s (the classroom view; its window text comes with the font it is given).
    void setPresentationScale(double s);
    QString note() const;  // the line under the chart (what is not drawn, the largest K's numbers)
    QStringList keyTexts() const;  // the chart's key, entry by entry, as shown

signals:
    void runFinished(bool cancelled);
    void runFailed(const QString& message);

protected:
    void closeEvent(QCloseEvent* e) override;
    void changeEvent(QEvent* e) override;  // a new font (the classroom's): the controls' column and the table follow

private:
    void drain();
    void addToTable(const LabPoint& p, int series);
    void redraw();
    void fillKey();
    void updateControls();
    void fitToFont();

    struct Series {
        mpx::Format format;
        mpx::AccumulateParams params;
    };
    QWidget* m_controls = nullptr;
    QList<QCheckBox*> m_formatBoxes;  // in k_labFormats' order (all_formats but E2M1)
    QList<QCheckBox*> m_modelBoxes;   // in AccumulateModel's order
    QSpinBox* m_bits = nullptr;
    QSpinBox* m_promoteEvery = nullptr;
    QSpinBox* m_seed = nullptr;
    QSpinBox* m_size = nullptr;
    QLabel* m_kText = nullptr;
    int m_quotedK = 0;
    QPushButton* m_run = nullptr;
    QPushButton* m_cancel = nullptr;
    QProgressBar* m_progress = nullptr;
    PlotWidget* m_plot = nullptr;
    LineKey* m_key = nullptr;
    QLabel* m_note = nullptr;
    QTableWidget* m_table = nullptr;
    MessageBar* m_messages = nullptr;
    QList<int> m_ks;

    QList<Series> m_series;  // the last run's chart lines, in the plot's series order
    std::vector<LabPoint> m_points;
    std::size_t m_planned = 0;

    std::thread m_thread;
    std::atomic<bool> m_stop{false};
    std::atomic<bool> m_done{false};
    std::mutex m_lock;  // guards m_incoming and m_error
    std::vector<LabPoint> m_incoming;
    QString m_error;
    QTimer m_timer;
};

}  // namespace mpx::ui
