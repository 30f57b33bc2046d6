// The GPT's ops on the CPU: embeddings, the residual add and causal self-attention, loops over
// engine/core/attention.hpp. Rule: work is split by sequence and head (attention) or done in row
// order (embedding sums), never along a sum, so the thread count changes no bit; every value a
// framework stores is rounded where it stores it, and counted at the site the model set.
#include <algorithm>
#include <string>

#include "engine/base/error.hpp"
#include "engine/compute/cpu_backend.hpp"

namespace mpx::cpu {

namespace {
// Rounds values in place into f, the rounding's counts added to *to (nullptr: uncounted).
void round_stage(Format f, float* v, std::size_t n, core::Counts* to) {
    const RoundStats c = round_pieces(f, v, n);
    if (to) *to += c;
}
void multiply(float* v, std::size_t n, float factor) {
    pieces(n, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) v[i] = v[i] * factor;
    });
}
// Attention's dropout on the probabilities (v: (B·H·T, T) as flat elements), rounded into f.
void drop_probs(const AttentionOptions& o, float* v, std::size_t n, Format f, core::Counts* to) {
    const float keep = core::dropout_keep_scale(o.dropout);
    pieces(n, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) v[i] = core::dropout_value(v[i], o.dropout, keep, o.dropout_seed, i);
    });
    round_stage(f, v, n, to);
}
void check_tokens(std::span<const int> tokens, int rows, int vocab, int T, int wpe_rows) {
    if (static_cast<int>(tokens.size()) != rows)
        throw ConfigError("", "embedding: " + std::to_string(tokens.size()) + " tokens for " + std::to_string(rows) + " rows");
    if (T < 1 || rows % T != 0 || T > wpe_rows)
        throw ConfigError("", "embedding: " + std::to_string(rows) + " rows are not whole windows of " + std::to_string(T));
    for (const int t : tokens)
        if (t < 0 || t >= vocab)
            throw ConfigError("", "embedding: token " + std::to_string(t) + " outside the vocabulary of " + std::to_string(vocab));
}
}  // namespace

void CpuBackend::embedding_forward(std::span<const int> tokens, int T, const Tensor& wte, const Tensor& wpe,
                                   Tensor& x) {
    const int N = x.rows(), C = x.cols();
    check_tokens(tokens, N, wte.rows(), T, wpe.rows());
    CMap te = view(wte, m_a), pe = view(wpe, m_b);
    float* out = m_c.shape(N, C).data();
    pieces(static_cast<std::size_t>(N), [&](std::size_t b, std::size_t e) {
        for (std::size_t n = b; n < e; ++n)
            for (int c = 0; c < C; ++c)
                out[n * C + c] = te(tokens[n], c) + pe(static_cast<int>(n % static_cast<std::size_t>(T)), c);
    });
    store(out, x);
}

void CpuBackend::embedding_backward(std::span<const int> tokens, int T, const Tensor& dx, Tensor& dwte,
                                    Accumulate acc_wte, Tensor& dwpe, Accumulate acc_wpe) {
    const int N = dx.rows(), C = dx.cols();
    check_tokens(tokens, N, dwte.rows(), T, dwpe.rows());
    CMap g = view(dx, m_a);
    float* te = m_c.shape(dwte.rows(), C).data();
    float* pe = m_d.shape(dwpe.rows(), C).data();
    std::fill(te, te + dwte.size(), 0.0f);
    std::fill(pe, pe + dwpe.size(), 0.0f);
    // Row order: a token's rows add up in the order they occur (one thread; the sums are small).
    for (int n = 0; n < N; ++n) {
        float* t = te + static_cast<std::size_t>(tokens[static_cast<std::size_t>(n)]) * C;
        float* p = pe + static_cast<std::size_t>(n % T) * C;
        for (int c = 0; c < C; ++c) {
            t[c] = t[c] + g(n, c);
            p[c] = p[c] + g(n, c);
        }
    }
    accumulate_into(te, dwte.size(), Format::fp32, dwte, acc_wte, sink());
    accumulate_into(pe, dwpe.size(), Format::fp32, dwpe, acc_wpe, sink());
}

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& out) {
    if (a.size() != out.size() || b.size() != out.size()) throw ConfigError("", "add: shapes differ");
    const float* x = view(a, m_a).data();
    const float* y = view(b, m_b).data();
    float* o = m_c.shape(out.rows(), out.cols()).data();
    pieces(out.size(), [&](std::size_t s, std::size_t e) {
        for (std::size_t i = s; i < e; ++i) o[i] = x[i] + y[i];
    });
    store(o, out);
}

void CpuBackend::dropout_from(const Tensor& src, Tensor& dst, float p, std::uint64_t seed) {
    if (src.size() != dst.size()) throw ConfigError("", "dropout_from: shapes differ");
    const float* x = view(src, m_a).data();
    float* o = m_c.shape(dst.rows(), dst.cols()).data();
    std::copy(x, x + dst.size(), o);
    round_stage(dst.format(), o, dst.size(), &counts());  // the add's backward: cast to the branch's format
    const float keep = core::dropout_keep_scale(p);
    pieces(dst.size(), [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) o[i] = core::dropout_value(o[i], p, keep, seed, i);
    });
    store(o, dst, Sink{&counts(), nullptr});
}

void CpuBackend::copy_columns(const Tensor& src, int col0, Tensor& dst) {
    const int N = src.rows();
    const std::size_t w = dst.size() / static_cast<std::size_t>(N);
    if (w * static_cast<std::size_t>(N) != dst.size() || col0 < 0 || col0 + static_cast<long long>(w) > src.cols())
        throw ConfigError("", "copy_columns: shapes do not match");
    CMap s = view(src, m_a);
    float* o = m_c.shape(dst.rows(), dst.cols()).data();
    pieces(static_cast<std::size_t>(N), [&](std::size_t b, std::size_t e) {
        for (std::size_t n = b; n < e; ++n)
            for (std::size_t c = 0; c < w; ++c) o[n * w + c] = s(static_cast<Eigen::Index>(n), col0 + static_cast<Eigen::Index>(c));
    });
    encode_pieces(dst.format(), o, dst.size(), dst.data());
}

void CpuBackend::set_columns(const Tensor& src, int col0, Tensor& dst) {
    const int N = dst.rows();
    const std::size_t w = src.size() / static_cast<std::size_t>(N);
    if (w * static_cast<std::size_t>(N) != src.size() || col0 < 0 || col0 + static_cast<long long>(w) > dst.cols())
        throw ConfigError("", "set_columns: shapes do not match");
    const float* s = view(src, m_a).data();
    Map d = m_c.shape(dst.rows(), dst.cols());
    decode_pieces(dst.format(), dst.data(), d.data(), dst.size());
    pieces(static_cast<std::size_t>(N), [&](std::size_t b, std::size_t e) {
        for (std::size_t n = b; n < e; ++n)
            for (std::size_t c = 0; c < w; ++c) d(static_cast<Eigen::Index>(n), col0 + static_cast<Eigen::Index>(c)) = s[n * w + c];
    });
    encode_pieces(dst.format(), d.data(), dst.size(), dst.data());
}

void CpuBackend::attention_operands(const Tensor& qkv, const AttentionShape& s, const AttentionOptions& o,
                                    core::Counts* to) {
    const int N = s.batch * s.T, C = s.embd;
    if (qkv.rows() != N || qkv.cols() != 3 * C) throw ConfigError("", "attention: qkv is not (B·T, 3C)");
    CMap x = view(qkv, m_a);
    float* q = m_q.shape(N, C).data();
    float* k = m_k.shape(N, C).data();
    float* v = m_v.shape(N, C).data();
    pieces(static_cast<std::size_t>(N), [&](std::size_t b, std::size_t e) {
        for (std::size_t n = b; n < e; ++n)
            for (int c = 0; c < C; ++c) {
                q[n * C + c] = x(n, c);
                k[n * C + c] = x(n, C + c);
                v[n * C + c] = x(n, 2 * C + c);
            }
    });
    const std::size_t size = static_cast<std::size_t>(N) * C;
    // q·f and k·f are ops in q's format (o.output), then autocast's cast for the product (none
    // where q is stored in the compute format, as autocast stores the qkv Linear's output). A cast
    // that changes nothing is not counted, as a Linear's operand cast is not.
    const bool cast = qkv.format() != o.compute;
    const Format qk = o.qk.value_or(o.output);
    if (o.factors.q != 1.0f) {
        multiply(q, size, o.factors.q);
        round_stage(qk, q, size, to);
    }
    if (o.factors.k != 1.0f) {
        multiply(k, size, o.factors.k);
        round_stage(qk, k, size, to);
    }
    if (cast) {
        round_stage(o.compute, q, size, to);
        round_stage(o.compute, k, size, to);
        round_stage(o.compute, v, size, to);
    }
}

void CpuBackend::attention_scores(const AttentionShape& s, const AttentionOptions& o, core::Counts* to) {
    const int T = s.T, C = s.embd, hs = s.head_size();
    const std::size_t rows = static_cast<std::size_t>(s.batch) * s.heads * T, size = rows * T;
    float* S = m_s.shape(static_cast<Eigen::Index>(rows), T).data();
    const float* q = m_q.data();
    const float* k = m_k.data();
    parallel_for(static_cast<std::size_t>(s.batch) * s.heads, [&](std::size_t bh) {
        const std::size_t b = bh / s.heads, h = bh % s.heads;
        for (int i = 0; i < T; ++i) {
            const float* qi = q + (b * T + i) * C + h * hs;
            float* row = S + (bh * T + i) * T;
            for (int j = 0; j <= i; ++j) {
                const float* kj = k + (b * T + j) * C + h * hs;
                row[j] = core::dot([&](int c) { return qi[c]; }, [&](int c) { return kj[c]; }, hs);
            }
            for (int j = i + 1; j < T; ++j) row[j] = 0.0f;
        }
    });
    round_stage(o.output, S, size, to);  // the product's output: where the scores pass 65504
    if (o.factors.scores != 1.0f) {
        multiply(S, size, o.factors.scores);
        round_stage(o.output, S, size, to);
    }
    if (o.softcap > 0.0f) {
        float* t = m_t.shape(static_cast<Eigen::Index>(rows), T).data();
        const float c = o.softcap;
        pieces(size, [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) S[i] = core::softcap_divide(S[i], c);
        });
        round_stage(o.output, S, size, to);
        pieces(size, [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) t[i] = core::softcap_tanh(S[i]);
        });
        round_stage(o.output, t, size, to);
        pieces(size, [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) S[i] = core::softcap_multiply(t[i], c);
        });
        round_stage(o.output, S, size, to);
    }
}

void CpuBackend::attention_forward(const Tensor& qkv, const AttentionShape& s, const AttentionOptions& o,
                                   Tensor& scores, Tensor& probs, Tensor& y) {
    const int T = s.T, C = s.embd, hs = s.head_size(), N = s.batch * T;
    const std::size_t rows = static_cast<std::size_t>(s.batch) * s.heads * T, size = rows * T;
    attention_operands(qkv, s, o, &counts_at(TensorKind::operand));
    attention_scores(s, o, &counts_at(TensorKind::output));
    float* S = m_s.data();
    encode_pieces(scores.format(), S, size, scores.data());  // already rounded: counted above
    float* P = m_p.shape(static_cast<Eigen::Index>(rows), T).data();
    parallel_for(rows, [&](std::size_t r) {
        core::causal_softmax_row(S + r * T, static_cast<int>(r % static_cast<std::size_t>(T)), T, P + r * T);
    });
    store(P, probs, sink(TensorKind::activation));
    // The product reads the probabilities as stored, cast to the compute format.
    decode_pieces(probs.format(), probs.data(), P, size);
    if (o.dropout > 0.0f) drop_probs(o, P, size, probs.format(), &counts_at(TensorKind::activation));
    // (Counted with the probabilities: the operand site precedes the scores in the step's order.)
    if (probs.format() != o.compute) round_stage(o.compute, P, size, &counts_at(TensorKind::activation));
    float* Y = m_out.shape(N, C).data();
    const float* v = m_v.data();
    parallel_for(static_cast<std::size_t>(s.batch) * s.heads, [&](std::size_t bh) {
        const std::size_t b = bh / s.heads, h = bh % s.heads;
        // y_i = Σ_{j ≤ i} p_ij v_j, each element summed in j order, the channel loop innermost.
        for (int i = 0; i < T; ++i) {
            const float* pi = P + (bh * T + i) * T;
            float* yi = Y + (b * T + i) * C + h * hs;
            std::fill_n(yi, hs, 0.0f);
            for (int j = 0; j <= i; ++j) {
                const float* vj = v + (b * T + j) * C + h * hs;
                for (int d = 0; d < hs; ++d) yi[d] = yi[d] + pi[j] * vj[d];
            }
        }
    });
    // y is the projection's input: counted there (the next layer's input site), after the scores
    // and probabilities in the step's order.
    const int y_site = site() < 0 ? -1 : site_index(layer() + 1, TensorKind::input);
    store(Y, y, Sink{&at(y_site), bins_at(y_site)});
}

void CpuBackend::attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& dy,
                                    const AttentionShape& s, const AttentionOptions& o, Tensor& dqkv) {
    const int T = s.T, C = s.embd, hs = s.head_size(), N = s.batch * T;
    const std::size_t rows = static_cast<std::size_t>(s.batch) * s.heads * T, size = rows * T;
    const std::size_t heads = static_cast<std::size_t>(s.batch) * s.heads, nc = static_cast<std::size_t>(N) * C;
    // The forward pass's operands again, uncounted (it counted them).
    attention_operands(qkv, s, o, nullptr);
    if (o.softcap > 0.0f) attention_scores(s, o, nullptr);  // the cap's tanh output, into m_t
    float* P = m_p.shape(static_cast<Eigen::Index>(rows), T).data();
    decode_pieces(probs.format(), probs.data(), P, size);
    float* Pc = m_s.shape(static_cast<Eigen::Index>(rows), T).data();
    std::copy(P, P + size, Pc);
    if (o.dropout > 0.0f) drop_probs(o, Pc, size, probs.format(), nullptr);  // the product's operand, as forward
    if (probs.format() != o.compute) round_stage(o.compute, Pc, size, nullptr);
    float* g = m_dy.shape(N, C).data();
    decode_pieces(dy.format(), dy.data(), g, nc);
    if (dy.format() != o.compute) round_stage(o.compute, g, nc, &counts_at(TensorKind::grad_operand));
    const float* q = m_q.data();
    const float* k = m_k.data();
    const float* v = m_v.data();
    float* dP = m_dp.shape(static_cast<Eigen::Index>(rows), T).data();
    float* dv = m_dv.shape(N, C).data();
    parallel_for(heads, [&](std::size_t bh) {
        const std::size_t b = bh / s.heads, h = bh % s.heads;
        for (int i = 0; i < T; ++i) {
            const float* gi = g + (b * T + i) * C + h * hs;
            float* row = dP + (bh * T + i) * T;
            for (int j = 0; j <= i; ++j)
                row[j] = core::dot([&](int c) { return gi[c]; }, [&](int c) { return v[(b * T + j) * C + h * hs + c]; }, hs);
            for (int j = i + 1; j < T; ++j) row[j] = 0.0f;
        }
        // dv_j = Σ_{i ≥ j} p_ij dy_i, each element summed in i order (i outermost: rows stay contiguous).
        for (int j = 0; j < T; ++j) std::fill_n(dv + (b * T + j) * C + h * hs, hs, 0.0f);
        for (int i = 0; i < T; ++i) {
            const float* gi = g + (b * T + i) * C + h * hs;
            for (int j = 0; j <= i; ++j) {
                const float p = Pc[(bh * T + i) * T + j];
                float* dvj = dv + (b * T + j) * C + h * hs;
                for (int d = 0; d < hs; ++d) dvj[d] = dvj[d] + p * gi[d];
            }
        }
    });
    round_stage(o.output, dP, size, &counts_at(TensorKind::grad_activation));
    // Dropout's backward: the same mask and 1/(1 − p), in the probabilities' format (autograd casts
    // the product's gradient back to it first: exact, as the product's format is no wider).
    if (o.dropout > 0.0f) drop_probs(o, dP, size, probs.format(), &counts_at(TensorKind::grad_activation));
    round_stage(o.output, dv, nc, nullptr);
    // Softmax backward in FP32 from the probabilities as stored, its result in the scores' format.
    float* G = m_ds.shape(static_cast<Eigen::Index>(rows), T).data();
    parallel_for(rows, [&](std::size_t r) {
        core::causal_softmax_backward_row(P + r * T, dP + r * T, static_cast<int>(r % static_cast<std::size_t>(T)), T,
                                          G + r * T);
    });
    core::Counts* at_out = &counts_at(TensorKind::grad_output);
    round_stage(o.output, G, size, at_out);
    if (o.softcap > 0.0f) {
        const float c = o.softcap;
        const float* t = m_t.data();
        multiply(G, size, c);
        round_stage(o.output, G, size, at_out);
        pieces(size, [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) G[i] = core::tanh_backward(G[i], t[i]);
        });
        round_stage(o.output, G, size, at_out);
        pieces(size, [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) G[i] = G[i] / c;
        });
        round_stage(o.output, G, size, at_out);
    }
    if (o.factors.scores != 1.0f) {
        multiply(G, size, o.factors.scores);
        round_stage(o.output, G, size, at_out);
    }
    float* dq = m_dq.shape(N, C).data();
    float* dk = m_dk.shape(N, C).data();
    parallel_for(heads, [&](std::size_t bh) {
        const std::size_t b = bh / s.heads, h = bh % s.heads;
        // dq_i = Σ_{j ≤ i} g_ij k_j and dk_j = Σ_{i ≥ j} g_ij q_i, each element summed in j (dq) or
        // i (dk) order, with the channel loop innermost.
        for (int j = 0; j < T; ++j) std::fill_n(dk + (b * T + j) * C + h * hs, hs, 0.0f);
        for (int i = 0; i < T; ++i) {
            float* dqi = dq + (b * T + i) * C + h * hs;
            const float* qi = q + (b * T + i) * C + h * hs;
            std::fill_n(dqi, hs, 0.0f);
            for (int j = 0; j <= i; ++j) {
                const float gij = G[(bh * T + i) * T + j];
                const float* kj = k + (b * T + j) * C + h * hs;
                float* dkj = dk + (b * T + j) * C + h * hs;
                for (int d = 0; d < hs; ++d) dqi[d] = dqi[d] + gij * kj[d];
                for (int d = 0; d < hs; ++d) dkj[d] = dkj[d] + gij * qi[d];
            }
        }
    });
    round_stage(o.output, dq, nc, nullptr);
    round_stage(o.output, dk, nc, nullptr);
    if (o.factors.q != 1.0f) {
        multiply(dq, nc, o.factors.q);
        round_stage(o.qk.value_or(o.output), dq, nc, nullptr);
    }
    if (o.factors.k != 1.0f) {
        multiply(dk, nc, o.factors.k);
        round_stage(o.qk.value_or(o.output), dk, nc, nullptr);
    }
    float* out = m_out.shape(N, 3 * C).data();
    pieces(static_cast<std::size_t>(N), [&](std::size_t b, std::size_t e) {
        for (std::size_t n = b; n < e; ++n)
            for (int c = 0; c < C; ++c) {
                out[n * 3 * C + c] = dq[n * C + c];
                out[n * 3 * C + C + c] = dk[n * C + c];
                out[n * 3 * C + 2 * C + c] = dv[n * C + c];
            }
    });
    store(out, dqkv, sink(TensorKind::grad_input));
}

}  // namespace mpx::cpu
