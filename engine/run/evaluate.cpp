// Evaluation on the held-out split: the run's own forward pass (its precisions, no dropout) over
// batch-sized chunks, loss and accuracy from the backend's own loss ops.
// Rule: evaluation never changes training. It writes only buffers the next step overwrites before
// reading them (input, activations, the logits' gradient, the target), counts into no step's
// statistics, and frees what it allocates before returning, so the memory totals stay the training
// footprint.
#include <cmath>
#include <vector>

#include "engine/run/run.hpp"

namespace mpx {

Evaluation Run::evaluate(std::span<const EvalChunk> split, LossKind loss) {
    require_idle("evaluate");
    Evaluation ev;
    if (failed() || split.empty()) return ev;
    Backend& be = *m_backend;
    Model& model = *m_model;
    // The roundings of an evaluation belong to no training step: the record is cleared per chunk
    // and at the end, and the forward pass and loss ops count nowhere.
    double loss_sum = 0.0;  // Σ chunk mean × chunk rows
    long long correct = 0, rows = 0, labelled = 0;  // labelled: the GPT's labels are its windows' positions
    for (const EvalChunk& chunk : split) {
        model.set_input(chunk.data.x);
        const Tensor* logits = &model.forward(0, false, Pass::uncounted);  // (batch, outputs)
        Tensor* target = &model.target();
        Tensor* grad = &model.dlogits();  // the loss op writes a gradient; nothing reads this one
        // A last chunk shorter than the batch: its rows alone, copied exactly into FP32, so the
        // loss op averages over real examples only.
        Tensor part, part_target, part_grad;
        if (chunk.rows < model.batch()) {
            std::vector<float> all(logits->size());
            be.download(*logits, all);
            const int cols = logits->cols();
            part = be.alloc(Format::fp32, chunk.rows, cols, MemCategory::workspace);
            part_grad = be.alloc(Format::fp32, chunk.rows, cols, MemCategory::workspace);
            be.upload({all.data(), part.size()}, part);
            logits = &part;
            grad = &part_grad;
            if (loss == LossKind::mse) {
                part_target = be.alloc(Format::fp32, chunk.rows, cols, MemCategory::workspace);
                target = &part_target;
            }
        }
        const auto n = static_cast<double>(chunk.rows);
        // The loss op adds the chunk's mean loss to the backend's record: read it per chunk.
        be.begin_step();
        be.set_uncounted();
        if (loss == LossKind::cross_entropy) {
            be.softmax_cross_entropy(*logits, chunk.data.labels, 1.0f, *grad);
            const auto cells = static_cast<long long>(chunk.data.labels.size());
            correct += std::llround(be.accuracy(*logits, chunk.data.labels) * static_cast<double>(cells));
            labelled += cells;
        } else {
            const RowMatrix& t = chunk.data.targets;
            be.upload({t.data(), static_cast<std::size_t>(t.size())}, *target);
            be.mse(*logits, *target, 1.0f, *grad);
        }
        loss_sum += be.read_stats().loss_sum * n;
        rows += chunk.rows;
    }
    be.begin_step();
    ev.loss = loss_sum / static_cast<double>(rows) * m_train.loss_weight;
    if (loss == LossKind::cross_entropy) ev.accuracy = static_cast<double>(correct) / static_cast<double>(labelled);
    return ev;
}

}  // namespace mpx
