// Toy data sets generated from a seed (no download) and the deterministic batch order over them.
// Rule: every number comes from mpx::Rng streams derived from the seed, so one configuration gives
// bit-identical arrays on every machine; train and test come from separate streams of one generator,
// so changing n_train never changes the test set.
#pragma once

#include <Eigen/Core>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/compute/row_matrix.hpp"
#include "engine/config/data_config.hpp"
#include "engine/model/text_corpus.hpp"

namespace mpx {

struct Dataset {
    DatasetConfig config;
    int features = 0;  // 2 for the 2-D sets, 1 for sine, 784 (28×28 row-major) for digits
    int outputs = 0;   // classes for classification, 1 for sine
    LossKind loss = LossKind::cross_entropy;
    RowMatrix x_train, x_test;         // (n, features)
    std::vector<int> y_train, y_test;  // (n) class labels in [0, outputs); empty for sine
    RowMatrix t_train, t_test;         // (n, outputs) regression targets (sine); empty otherwise
    // text: the characters (the splits are its ids; x_ and y_ stay empty: batches are windows of it).
    std::shared_ptr<const TextCorpus> text;
};

// Validates, then generates. Classification labels cycle 0, 1, …, K-1 so every split is balanced
// (class counts differ by at most one).
Dataset make_dataset(const DatasetConfig& c);

// Batch order for training: each epoch is a fresh Fisher–Yates permutation of 0..n-1 that depends only
// on (seed, epoch), handed out as consecutive batches of `batch` indices. The last partial batch of an
// epoch is dropped so every batch has the same size. State is (epoch, position): restoring it
// re-derives the epoch's permutation and continues identically.
class BatchSampler {
public:
    // ConfigError("train.batch_size") if batch == 0 or batch > n.
    BatchSampler(std::size_t n, std::size_t batch, std::uint64_t seed);

    // Valid until the next call to next() or restore(). (batch)
    std::span<const int> next();

    struct State {
        std::uint64_t epoch = 0;
        std::size_t position = 0;  // index into the epoch's permutation of the next batch
        bool operator==(const State&) const = default;
    };
    State state() const { return {m_epoch, m_position}; }
    void restore(const State& s);

    std::size_t batches_per_epoch() const { return m_perm.size() / m_batch; }

private:
    void shuffle_epoch();

    std::size_t m_batch;
    std::uint64_t m_seed;
    std::uint64_t m_epoch = 0;
    std::size_t m_position = 0;
    std::vector<int> m_perm;  // (n) this epoch's order
};

// What the session's BatchSampler draws from: the training rows, or (a text) the training windows'
// starts, every start with a next character for each of the window's block_size inputs.
std::size_t sampler_examples(const Dataset& d, int block_size);

// dst(i, :) = src(idx[i], :). Resizes dst only when its shape differs, so a reused buffer never
// allocates. Throws std::out_of_range for an index outside src. dst: (idx.size(), src.cols())
void gather_rows(const RowMatrix& src, std::span<const int> idx, RowMatrix& dst);
// Text windows (the GPT's batches): row r of x (starts.size(), T) = ids[starts[r], starts[r] + T) as
// exact floats, labels[r·T + t] = the character after each, ids[starts[r] + t + 1]. Resized only
// when the shape differs. std::out_of_range for a window past the text's end.
void gather_windows(const TextCorpus& text, std::span<const std::size_t> starts, int T, RowMatrix& x,
                    std::vector<int>& labels);
// dst[i] = src[idx[i]], same contract as gather_rows.
void gather_labels(std::span<const int> src, std::span<const int> idx, std::vector<int>& dst);

}  // namespace mpx
