// The CPU backend's update pass: unscale and check, clipping, and the optimizer with its write-back
// (which counts the updates the working copy cannot show).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/base/error.hpp"
#include "engine/compute/cpu_backend.hpp"
#include "engine/core/write_back.hpp"
#include "engine/precision/mxfp8_cast.hpp"

namespace mpx::cpu {

void CpuBackend::unscale_and_check(const Tensor& grad, ScaleBy by, Tensor& unscaled) {
    const float inv_scale = by.resolve(m_scaler.scale);
    if (unscaled.size() != grad.size())
        throw ConfigError("", "unscale_and_check: the unscaled gradient's shape differs");
    const float* in = view(grad, m_a).data();
    float* out = m_c.shape(grad.rows(), grad.cols()).data();
    const std::size_t n = grad.size();
    // Each chunk's sum in double, element order within it (pieces hold whole chunks); the chunk
    // sums are then added in chunk order, as core::k_sum_chunk prescribes.
    const std::size_t chunks = (n + core::k_sum_chunk - 1) / core::k_sum_chunk;
    if (m_chunk_sums.size() < chunks) m_chunk_sums.resize(chunks);
    double* sums = m_chunk_sums.data();
    const core::Counts bad = counted_pieces(chunks, [&](std::size_t c0, std::size_t c1) {
        core::Counts part;
        for (std::size_t c = c0; c < c1; ++c) {
            const std::size_t end = std::min(n, (c + 1) * core::k_sum_chunk);
            double chunk = 0.0;
            for (std::size_t i = c * core::k_sum_chunk; i < end; ++i) {
                const float v = in[i] * inv_scale;
                out[i] = v;
                part.bad += !core::is_finite(v);
                chunk += static_cast<double>(v) * v;
            }
            sums[c] = chunk;
        }
        return part;
    });
    for (std::size_t c = 0; c < chunks; ++c) stats().sum_squares += sums[c];
    counts().bad += bad.bad;
    stats().found_bad += bad.bad;
    store(out, unscaled);
}

namespace {

// The optimizer's values a block at a time: small enough to stay in L1 between the passes over it.
constexpr std::size_t k_block = 256;

// n values of a tensor from `at` as floats into `out`: FP32 storage is read in place (returned),
// anything else decoded into `out`.
float* block_values(Tensor& t, std::size_t at, std::size_t n, float* out) {
    if (t.format() == Format::fp32) return static_cast<float*>(t.data()) + at;
    decode_buffer(t.format(), static_cast<const char*>(t.data()) + at * format_info(t.format()).storage_bytes, {out, n});
    return out;
}

// Stores n floats into t from `at` (a no-op for values that are t's FP32 storage), counted.
core::Counts store_block(const float* v, std::size_t n, Tensor& t, std::size_t at) {
    if (t.format() == Format::fp32) {
        core::Counts none;
        return v == static_cast<float*>(t.data()) + at ? none : encode_buffer(t.format(), {v, n}, static_cast<float*>(t.data()) + at);
    }
    return encode_buffer(t.format(), {v, n}, static_cast<char*>(t.data()) + at * format_info(t.format()).storage_bytes);
}

// One block's update: the arrays never overlap (the weights, the states and the gradient are
// separate tensors or stack blocks), which lets the compiler vectorise the loop (IEEE square root
// and division are correctly rounded in vector registers too: the same bits).
template <OptimizerKind K>
void update_block(const core::OptConsts& k, const float* __restrict g, float* __restrict w, float* __restrict m1,
                  float* __restrict m2, bool* __restrict moved, std::size_t m) {
    for (std::size_t i = 0; i < m; ++i) moved[i] = core::optimizer_element<K>(k, g[i], w[i], m1[i], m2[i]);
}

// The element updates of a stochastic or Kahan write-back (engine/core/write_back.hpp) for one
// block of m weights from `at`: `before` the stored weights (decoded), the states in m1/m2. The
// optimizer's FP32 change of each weight is needed whole (Kahan adds it to its compensation), so
// this loop keeps it per element rather than the vectorised update_block's new weights. AdamW's
// decoupled decay is applied to the stored weight first and left uncompensated, as optimi's
// kernels do (`param * weight_decay` cast to the parameter's type).
template <OptimizerKind K>
void cured_block(const core::OptConsts& k, WriteBack mode, std::uint64_t key, const float* g, const float* before,
                 float* m1, float* m2, Tensor& working, Tensor* comp, std::size_t at, std::size_t m,
                 core::Counts& counts) {
    const Format f = working.format();
    auto* out = static_cast<std::uint16_t*>(working.data()) + at;  // FP16/BF16: 2 bytes a weight
    auto* cbits = comp ? static_cast<std::uint16_t*>(comp->data()) + at : nullptr;
    const core::TallyEdges edges = core::tally_edges(f);
    core::OptConsts kd = k;
    if constexpr (K == OptimizerKind::adamw) kd.decay = 1.0f;  // the decay is applied apart
    const float keep = k.decay;
    for (std::size_t i = 0; i < m; ++i) {
        float theta = before[i];
        bool moved = false;
        if constexpr (K == OptimizerKind::adamw) {
            if (mode == WriteBack::kahan) {
                theta = core::round_value(f, theta * keep);
                moved = theta != before[i];
            }
        }
        float w = theta, update;
        moved = core::optimizer_element<K>(mode == WriteBack::kahan ? kd : k, g[i], w, m1[i], m2[i], update) || moved;
        if (mode == WriteBack::stochastic) {
            const std::uint32_t code = core::encode_bits_stochastic(f, w, core::round_word(key, at + i));
            out[i] = static_cast<std::uint16_t>(code);
            const float after = core::decode_bits(f, code);
            core::tally(edges, w, after, counts);
            core::count_cured_update(moved, before[i], core::round_value(f, w), after != before[i], counts);
        } else {
            const float c = core::decode_bits(f, cbits[i]);
            const core::KahanResult r = core::kahan_update(f, theta, c, update);
            out[i] = static_cast<std::uint16_t>(core::encode_bits(f, r.theta));
            cbits[i] = static_cast<std::uint16_t>(core::encode_bits(f, r.c));
            core::tally(edges, theta + update, r.theta, counts);
            const std::uint32_t cmag = core::bits_of(r.c) & 0x7fffffffu;
            if (cmag > counts.compensation_max) counts.compensation_max = cmag;
            core::count_cured_update(moved, before[i], core::round_value(f, theta + update),
                                     r.theta != before[i] || r.c != c, counts);
        }
    }
}

}  // namespace

void CpuBackend::optimizer_update(const OptimizerStep& s, const Tensor& grad, Tensor* master,
                      Tensor& working, Tensor& state1, Tensor* state2, OnInf on_inf,
                      Tensor* compensation, int param) {
    if (!step_applied(on_inf, stats().found_inf())) return;
    const WriteBack mode = s.write_back;
    if (mode != WriteBack::nearest &&
        (master || (working.format() != Format::fp16 && working.format() != Format::bf16)))
        throw ConfigError("", "optimizer_update: a stochastic or Kahan write-back needs FP16/BF16 weights and no master");
    if (mode == WriteBack::kahan &&
        (!compensation || compensation->format() != working.format() || compensation->size() != working.size()))
        throw ConfigError("", "optimizer_update: a Kahan write-back needs a compensation tensor like the working copy");
    const std::size_t n = grad.size();
    if (working.size() != n || state1.size() != n || (state2 && state2->size() != n) ||
        (master && (master->size() != n || master->format() != Format::fp32)))
        throw ConfigError("", "optimizer_update: shapes or master format do not match");
    core::OptConsts k = optimizer_consts(s);
    // Stochastic rounding's stream: Adam's step number t counts applied steps (t − 1 before this one).
    if (s.count == StepCount::backend &&  // lr at m_schedule, Adam's t = m_applied + 1
        !core::take_backend_counts(k, {m_lrs.data(), static_cast<long long>(m_lrs.size()), m_bias.data(),
                                     static_cast<long long>(m_bias.size())},
                                 m_schedule, m_applied))
        throw ConfigError("", "optimizer_update: schedule step " + std::to_string(m_schedule) + " or Adam's step " +
                                  std::to_string(m_applied + 1) + " is beyond the host's tables");
    const long long applied = s.count == StepCount::backend ? m_applied : s.t - 1;
    const std::uint64_t key = core::round_key(s.round_seed, static_cast<std::uint32_t>(param),
                                              static_cast<std::uint64_t>(applied));
    const float* g = view(grad, m_a).data();
    const bool collecting = m_collecting && site() >= 0;
    const Format lands_in = master ? Format::fp32 : working.format();  // the weight updated
    // Each weight is read once and written once: a block of k_block weights, states and working
    // values is decoded into the stack, updated, stored, and the working copy's new values decoded
    // from the block just stored (in L1) to count the updates it cannot show (below half its ulp).
    // Pieces of whole blocks run in parallel; their counts and ulp bins are summed after.
    const std::size_t blocks = (n + k_block - 1) / k_block;
    const std::size_t piece_n = std::min(piece_count(n), blocks);  // pieces of whole blocks
    struct Part {
        core::Counts weights, states;
        core::Bins ulp, stored;
    };
    core::Counts& c = counts();
    core::Bins* ulp_bins = collecting ? &m_hist->update_ulp[site() / k_tensor_kinds] : nullptr;
    core::Bins* stored_bins = bins();
    const auto add = [&](const Part& part) {
        c += part.weights;
        c += part.states;
        if (ulp_bins) *ulp_bins += part.ulp;
        if (stored_bins) *stored_bins += part.stored;
    };
    core::with_optimizer(k.kind, [&](auto kind) {
        constexpr OptimizerKind K = decltype(kind)::value;
        const auto run_piece = [&](std::size_t piece, Part& part) {
            const core::OptConsts kc = k;  // a local: no store through w, m1 or m2 may change it
            const auto [b0, b1] = piece_range(blocks, piece_n, piece);
            float wb[k_block], before[k_block], after[k_block], s1b[k_block], s2b[k_block];
            for (std::size_t blk = b0; blk < b1; ++blk) {
                const std::size_t at = blk * k_block, m = std::min(k_block, n - at);
                // The working copy before (a copy: the store below overwrites it), and the
                // weights the optimizer reads: the FP32 master, else the working copy's values.
                decode_buffer(working.format(), static_cast<const char*>(working.data()) + at * format_info(working.format()).storage_bytes, {before, m});
                float* w = master ? static_cast<float*>(master->data()) + at : wb;
                if (!master) std::memcpy(wb, before, m * sizeof(float));
                float* m1 = block_values(state1, at, m, s1b);
                float* m2 = K == OptimizerKind::sgd ? s2b : block_values(*state2, at, m, s2b);  // SGD: unused
                if (mode != WriteBack::nearest) {
                    if (collecting) {  // the histograms see the change and the new weights
                        for (std::size_t i = 0; i < m; ++i) {
                            float wi = before[i], m1i = m1[i], m2i = m2[i], update;
                            core::optimizer_element<K>(kc, g[at + i], wi, m1i, m2i, update);
                            ++part.ulp.n[core::update_ulp_slot(lands_in, before[i], update)];
                        }
                    }
                    cured_block<K>(kc, mode, key, g + at, before, m1, m2, working, compensation, at, m, part.weights);
                    if (collecting) {
                        const float* now = block_values(working, at, m, after);
                        bin_values(&part.stored, now, m);
                    }
                    part.states += store_block(m1, m, state1, at);
                    if (K != OptimizerKind::sgd) part.states += store_block(m2, m, *state2, at);
                    continue;
                }
                bool moved[k_block];
                if (!collecting) {
                    update_block<K>(kc, g + at, w, m1, m2, moved, m);
                } else {
                    for (std::size_t i = 0; i < m; ++i) {
                        const float prev = w[i];
                        float update;
                        moved[i] = core::optimizer_element<K>(kc, g[at + i], w[i], m1[i], m2[i], update);
                        ++part.ulp.n[core::update_ulp_slot(lands_in, prev, update)];
                    }
                    bin_values(&part.stored, w, m);  // the weights as stored, on the site's bins
                }
                part.states += store_block(m1, m, state1, at);
                if (K != OptimizerKind::sgd) part.states += store_block(m2, m, *state2, at);
                part.weights += store_block(w, m, working, at);
                const float* now = block_values(working, at, m, after);
                for (std::size_t i = 0; i < m; ++i) core::count_update(moved[i], before[i], now[i], part.weights);
            }
        };
        if (piece_n == 1) {
            Part part;
            run_piece(0, part);
            return add(part);
        }
        Part parts[k_max_pieces];
        parallel_for(piece_n, [&](std::size_t i) { run_piece(i, parts[i]); });
        for (std::size_t i = 0; i < piece_n; ++i) add(parts[i]);
    });
}

}  // namespace mpx::cpu
