// The GPT's buffers, forward and backward, following nanoGPT's model.py op by op (docs/gpt.md).
#include "engine/model/gpt.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/base/error.hpp"
#include "engine/core/rng.hpp"

namespace mpx {

namespace {
bool low(Format f) { return f == Format::fp16 || f == Format::bf16; }
// The layer's low format for the ops autocast moves with it: its compute format, or for an FP8/FP4
// Linear layer the recipe's base (BF16, its activations' format).
Format low_compute(const LayerPrecision& p) { return p.fp8 ? p.activation : p.compute; }

// The shapes of gpt_param_names' parameters, in order: (rows, cols); biases and norms (1, n).
std::vector<std::pair<int, int>> gpt_param_shapes(const GptConfig& g, bool qk_norm) {
    const int C = g.n_embd, hs = g.n_embd / g.n_head;
    std::vector<std::pair<int, int>> s{{g.vocab, C}, {g.block_size, C}};
    for (int b = 0; b < g.n_layer; ++b) {
        const std::pair<int, int> attn[] = {{1, C}, {1, C}, {3 * C, C}, {1, 3 * C}, {C, C}, {1, C}};
        const std::pair<int, int> mlp[] = {{1, C}, {1, C}, {4 * C, C}, {1, 4 * C}, {C, 4 * C}, {1, C}};
        s.insert(s.end(), std::begin(attn), std::end(attn));
        if (qk_norm) s.insert(s.end(), 2, {1, hs});
        s.insert(s.end(), std::begin(mlp), std::end(mlp));
    }
    s.push_back({1, C});
    s.push_back({1, C});
    if (!g.tie_embeddings) s.push_back({g.vocab, C});
    return s;
}
}  // namespace

std::vector<std::string> gpt_param_names(const GptConfig& g, bool qk_norm) {
    std::vector<std::string> n{"transformer.wte.weight", "transformer.wpe.weight"};
    for (int b = 0; b < g.n_layer; ++b) {
        const std::string h = "transformer.h." + std::to_string(b) + ".";
        for (const char* part : {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                                 "attn.c_proj.bias"})
            n.push_back(h + part);
        if (qk_norm)
            for (const char* part : {"attn.q_norm.weight", "attn.k_norm.weight"})
                n.push_back(h + part);
        for (const char* part : {"ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"})
            n.push_back(h + part);
    }
    n.push_back("transformer.ln_f.weight");
    n.push_back("transformer.ln_f.bias");
    if (!g.tie_embeddings) n.push_back("lm_head.weight");
    return n;
}

std::vector<int> gpt_param_layers(const GptConfig& g, bool qk_norm) {
    std::vector<int> layers{0, 0};  // wte, wpe: the embedding
    for (int b = 0; b < g.n_layer; ++b) {
        const int qkv = gpt_layer(GptSite::qkv, b), att = gpt_layer(GptSite::attn, b), proj = gpt_layer(GptSite::attn_proj, b),
                  fc = gpt_layer(GptSite::mlp_fc, b), mp = gpt_layer(GptSite::mlp_proj, b);
        for (const int l : {qkv, qkv, qkv, qkv, proj, proj}) layers.push_back(l);
        if (qk_norm) layers.insert(layers.end(), 2, att);  // QK-norm's γ: the attention's
        for (const int l : {fc, fc, fc, fc, mp, mp}) layers.push_back(l);
    }
    const int head = gpt_lm_head_layer(g);
    layers.push_back(head);
    layers.push_back(head);
    if (!g.tie_embeddings) layers.push_back(head);
    return layers;
}

bool is_gpt_norm_param(const std::string& name) {
    return name.find("ln_1.") != std::string::npos || name.find("ln_2.") != std::string::npos ||
           name.find("ln_f.") != std::string::npos || name.find("q_norm.") != std::string::npos ||
           name.find("k_norm.") != std::string::npos;
}

InitialWeights init_gpt_weights(const ModelConfig& m, std::uint64_t seed) {
    const GptConfig& g = m.gpt;
    if (g.vocab < 1) throw ConfigError("data", "the GPT's vocabulary is not known yet (the session reads the text first)");
    const auto names = gpt_param_names(g, m.attention.qk_norm);
    const auto shapes = gpt_param_shapes(g, m.attention.qk_norm);
    InitialWeights iw;
    const double residual_sd = 0.02 / std::sqrt(2.0 * g.n_layer);
    for (std::size_t i = 0; i < names.size(); ++i) {
        const auto [rows, cols] = shapes[i];
        const std::string& n = names[i];
        RowMatrix t(rows, cols);
        const auto ends = [&](const char* suffix) {
            const std::string s(suffix);
            return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
        };
        if (ends("ln_1.weight") || ends("ln_2.weight") || ends("ln_f.weight") || ends("q_norm.weight") || ends("k_norm.weight"))
            t.setOnes();
        else if (ends(".bias")) t.setZero();
        else {
            const double sd = (ends("c_proj.weight") ? residual_sd : 0.02) * g.init_scale;
            Rng rng = Rng::derive(seed, 2000 + static_cast<std::uint64_t>(i));
            for (Eigen::Index k = 0; k < t.size(); ++k) t.data()[k] = static_cast<float>(sd * rng.normal());
            // model.qk_init_scale: the q and k rows (the first 2·n_embd of c_attn's 3·n_embd), drawn
            // as above and then multiplied, so 1 leaves every bit as it was.
            if (ends("attn.c_attn.weight") && g.qk_init_scale != 1.0f)
                for (Eigen::Index k = 0; k < Eigen::Index{2} * g.n_embd * t.cols(); ++k)
                    t.data()[k] = static_cast<float>(static_cast<double>(t.data()[k]) * g.qk_init_scale);
        }
        iw.tensors.push_back(std::move(t));
    }
    return iw;
}

InitialWeights gpt_weights_with_qk_norm(const GptConfig& g, const InitialWeights& without) {
    const auto names = gpt_param_names(g, true);
    InitialWeights iw;
    std::size_t next = 0;
    for (const std::string& n : names) {
        if (n.ends_with("q_norm.weight") || n.ends_with("k_norm.weight")) {
            RowMatrix gamma(1, g.n_embd / g.n_head);
            gamma.setOnes();
            iw.tensors.push_back(std::move(gamma));
        } else {
            if (next >= without.tensors.size()) throw std::logic_error("gpt_weights_with_qk_norm: weights of another model");
            iw.tensors.push_back(without.tensors[next++]);
        }
    }
    if (next != without.tensors.size()) throw std::logic_error("gpt_weights_with_qk_norm: weights of another model");
    return iw;
}

void gpt_recipe_layers(const ModelConfig& m, int bf16_first, int bf16_last, std::vector<LayerPrecision>& prec) {
    const int linear = linear_layer_count(m);
    int k = 0;  // the Linear layer's place in forward order
    for (int l = 0; l < static_cast<int>(prec.size()); ++l) {
        LayerPrecision& p = prec[static_cast<std::size_t>(l)];
        const bool is_linear = is_linear_layer(m, l);
        const bool kept = is_linear && (k < bf16_first || k >= linear - bf16_last);
        k += is_linear ? 1 : 0;
        if (!p.fp8 || (is_linear && !kept)) continue;
        p.compute = p.activation;  // amp-bf16: the recipe's base
        p.fp8 = false;
        p.grad_compute = Format::fp32;
    }
}

Gpt::Gpt(Backend& be, const ModelConfig& cfg, std::vector<LayerPrecision> precisions, int batch, const InitialWeights& init,
         OptimizerKind opt)
    : m_be(be), m_cfg(cfg), m_prec(std::move(precisions)), m_batch(batch) {
    validate(cfg);
    const GptConfig& g = cfg.gpt;
    const int L = cfg.layers(), C = g.n_embd, T = g.block_size, N = batch * T, V = g.vocab, H = g.n_head;
    if (static_cast<int>(m_prec.size()) != L) throw std::logic_error("Gpt: one precision per site layer");
    const bool qkn = cfg.attention.qk_norm;
    const int hs = C / H;
    const auto shapes = gpt_param_shapes(g, qkn);
    if (init.tensors.size() != shapes.size()) throw std::logic_error("Gpt: initial weights of another model");
    m_fp8.resize(static_cast<std::size_t>(L));
    for (int i = 0; i < L; ++i) {
        Fp8Gemm& f = m_fp8[static_cast<std::size_t>(i)];
        f.layer = i;
        f.fwd = prec(i).compute;
        f.grad = prec(i).grad_compute;
    }
    m_resid = prec(0).weight;
    const int head = gpt_lm_head_layer(g);
    // Parameters in gpt_param_names' order; reserved so the pointers below stay valid.
    m_params.reserve(shapes.size());
    std::size_t next = 0;
    const LayerPrecision norm{};  // LayerNorm's affine parameters stay FP32 in every mode (as the MLP's)
    const std::vector<int> param_layers = gpt_param_layers(g, qkn);
    const auto param = [&](int layer, const LayerPrecision& lp) {
        if (param_layers[next] != layer) throw std::logic_error("Gpt: parameters out of gpt_param_layers' order");
        m_params.push_back(make_param(be, init.tensors[next++], lp, opt));
        m_params.back().layer = layer;
        return &m_params.back();
    };
    m_wte = param(0, prec(0));
    m_wpe = param(0, prec(0));
    m_blocks.resize(static_cast<std::size_t>(g.n_layer));
    const auto A = MemCategory::activations, W = MemCategory::workspace;
    for (int b = 0; b < g.n_layer; ++b) {
        Block& k = m_blocks[static_cast<std::size_t>(b)];
        const int qkv = gpt_layer(GptSite::qkv, b), att = gpt_layer(GptSite::attn, b), proj = gpt_layer(GptSite::attn_proj, b),
                  fc = gpt_layer(GptSite::mlp_fc, b), mp = gpt_layer(GptSite::mlp_proj, b);
        k.ln1_g = param(qkv, norm);
        k.ln1_b = param(qkv, norm);
        k.qkv_w = param(qkv, prec(qkv));
        k.qkv_b = param(qkv, prec(qkv));
        k.proj_w = param(proj, prec(proj));
        k.proj_b = param(proj, prec(proj));
        if (qkn) {
            k.qn_g = param(att, norm);
            k.kn_g = param(att, norm);
            // Each head's q and k as rows of head_size: the QKV Linear's values, their LayerNorm
            // statistics (FP32) and outputs, and the packed q, k, v attention reads.
            const Format nf = norm_format(att);
            k.q_in = be.alloc(prec(qkv).activation, N * H, hs, A);
            k.k_in = be.alloc(prec(qkv).activation, N * H, hs, A);
            k.q_mean = be.alloc(Format::fp32, N * H, 1, A);
            k.q_rstd = be.alloc(Format::fp32, N * H, 1, A);
            k.k_mean = be.alloc(Format::fp32, N * H, 1, A);
            k.k_rstd = be.alloc(Format::fp32, N * H, 1, A);
            k.qk_out = be.alloc(nf, N * H, hs, W);
            k.qkv_n = be.alloc(nf, N, 3 * C, A);
            if (m_qk_beta.empty()) {  // no β (ViT-22B's norms have none): zeros, and a sink for its gradient
                m_qk_beta = be.alloc(Format::fp32, 1, hs, W);
                be.fill(m_qk_beta, 0.0f);
                m_qk_dbeta = be.alloc(Format::fp32, 1, hs, W);
            }
        }
        k.ln2_g = param(fc, norm);
        k.ln2_b = param(fc, norm);
        k.fc_w = param(fc, prec(fc));
        k.fc_b = param(fc, prec(fc));
        k.mp_w = param(mp, prec(mp));
        k.mp_b = param(mp, prec(mp));
        k.ln1 = be.alloc(norm_format(qkv), N, C, A);
        k.ln1_mean = be.alloc(Format::fp32, N, 1, A);
        k.ln1_rstd = be.alloc(Format::fp32, N, 1, A);
        k.qkv = be.alloc(prec(qkv).activation, N, 3 * C, A);
        // The scores are kept for the views only (backward recomputes them): workspace.
        k.scores = be.alloc(prec(att).activation, batch * H * T, T, W);
        k.probs = be.alloc(probs_format(att), batch * H * T, T, A);
        k.atty = be.alloc(prec(att).activation, N, C, A);
        k.proj = be.alloc(prec(proj).activation, N, C, A);
        k.mid = be.alloc(m_resid, N, C, A);
        k.ln2 = be.alloc(norm_format(fc), N, C, A);
        k.ln2_mean = be.alloc(Format::fp32, N, 1, A);
        k.ln2_rstd = be.alloc(Format::fp32, N, 1, A);
        k.fc = be.alloc(prec(fc).activation, N, 4 * C, A);
        k.gelu = be.alloc(prec(fc).activation, N, 4 * C, A);
        k.mp = be.alloc(prec(mp).activation, N, C, A);
        k.out = be.alloc(m_resid, N, C, A);
        std::vector<Format> formats{prec(fc).activation, prec(proj).activation, prec(qkv).activation};
        if (cfg.dropout > 0.0f) formats.push_back(prec(mp).activation);
        for (const auto& shared : m_grads)
            if (shared->formats == formats) k.g = shared.get();
        if (!k.g) {
            auto set = std::make_unique<Grads>();
            Grads* d = set.get();
            d->formats = formats;
            d->d_gelu = be.alloc(prec(fc).activation, N, 4 * C, W);
            d->d_fc = be.alloc(prec(fc).activation, N, 4 * C, W);
            // A LayerNorm's output gradient comes from the Linear's backward GEMM, in its output format.
            d->d_ln2 = be.alloc(prec(fc).activation, N, C, W);
            d->d_mid_branch = be.alloc(m_resid, N, C, W);
            d->d_mid = be.alloc(m_resid, N, C, W);
            d->d_atty = be.alloc(prec(proj).activation, N, C, W);
            d->d_qkv = be.alloc(prec(qkv).activation, N, 3 * C, W);
            d->d_ln1 = be.alloc(prec(qkv).activation, N, C, W);
            d->d_in_branch = be.alloc(m_resid, N, C, W);
            if (cfg.dropout > 0.0f) {  // each c_proj's output gradient through dropout's mask
                d->d_proj = be.alloc(prec(proj).activation, N, C, W);
                d->d_mp = be.alloc(prec(mp).activation, N, C, W);
            }
            if (qkn) {
                d->d_qk_out = be.alloc(prec(qkv).activation, N * H, hs, W);
                d->d_qk_in = be.alloc(prec(qkv).activation, N * H, hs, W);
            }
            k.g = d;
            m_grads.push_back(std::move(set));
        }
    }
    m_d_in[0] = be.alloc(m_resid, N, C, W);
    if (g.n_layer > 1) m_d_in[1] = be.alloc(m_resid, N, C, W);
    m_lnf_g = param(head, norm);
    m_lnf_b = param(head, norm);
    m_head = g.tie_embeddings ? m_wte : param(head, prec(head));
    m_x0 = be.alloc(m_resid, N, C, A);
    m_lnf = be.alloc(norm_format(head), N, C, A);
    m_lnf_mean = be.alloc(Format::fp32, N, 1, A);
    m_lnf_rstd = be.alloc(Format::fp32, N, 1, A);
    m_logits = be.alloc(prec(head).activation, N, V, A);
    m_dlogits = be.alloc(prec(head).activation, N, V, W);
    m_dlnf = be.alloc(prec(head).activation, N, C, W);
    m_dx_last = be.alloc(m_resid, N, C, W);
    m_target = be.alloc(Format::fp32, 1, 1, W);
    m_tokens.assign(static_cast<std::size_t>(N), 0);
    for (std::size_t i = 0; i < m_params.size(); ++i) m_params[i].index = static_cast<int>(i);
    // What a forward pass writes, a whole number of rows per sequence each: set_input shrinks them
    // to the sequences it is given.
    for (Block& k : m_blocks) {
        for (Tensor* t : {&k.ln1, &k.ln1_mean, &k.ln1_rstd, &k.qkv, &k.scores, &k.probs, &k.atty, &k.proj, &k.mid, &k.ln2,
                          &k.ln2_mean, &k.ln2_rstd, &k.fc, &k.gelu, &k.mp, &k.out})
            m_forward_buffers.push_back(t);
        if (qkn)
            for (Tensor* t : {&k.q_in, &k.k_in, &k.q_mean, &k.q_rstd, &k.k_mean, &k.k_rstd, &k.qk_out, &k.qkv_n})
                m_forward_buffers.push_back(t);
    }
    for (Tensor* t : {&m_x0, &m_lnf, &m_lnf_mean, &m_lnf_rstd, &m_logits}) m_forward_buffers.push_back(t);
    m_sequences = batch;
}

Format gpt_norm_format(const ModelConfig& m, const LayerPrecision& p) {
    if (p.weight != Format::fp32) return p.activation;  // a model cast to FP16/BF16: every op in it
    if (m.autocast == AutocastPolicy::cpu_1_13 && low(low_compute(p))) return low_compute(p);
    return Format::fp32;  // CUDA autocast: layer_norm gives FP32
}

Format gpt_probs_format(const ModelConfig& m, const LayerPrecision& p) {
    if (!low(low_compute(p))) return Format::fp32;
    if (p.weight != Format::fp32 || m.attention.softmax == SoftmaxFormat::storage || m.autocast == AutocastPolicy::cpu_1_13)
        return p.activation;
    return Format::fp32;  // CUDA autocast: softmax gives FP32
}

Format gpt_norm_stats_format(const ModelConfig& m, const LayerPrecision& p) {
    return m.norm_stats == NormStats::storage && low(low_compute(p)) ? low_compute(p) : Format::fp32;
}

Format Gpt::norm_format(int linear_layer) const { return gpt_norm_format(m_cfg, prec(linear_layer)); }
Format Gpt::probs_format(int attn_layer) const { return gpt_probs_format(m_cfg, prec(attn_layer)); }

void Gpt::set_input(const RowMatrix& x) {
    const int T = m_cfg.gpt.block_size;
    if (x.rows() < 1 || x.rows() > m_batch || x.cols() != T)
        throw std::logic_error("Gpt::set_input: a batch of another shape");
    for (Eigen::Index i = 0; i < x.size(); ++i) m_tokens[static_cast<std::size_t>(i)] = static_cast<int>(x.data()[i]);
    const int sequences = static_cast<int>(x.rows());
    if (sequences == m_sequences) return;
    for (Tensor* t : m_forward_buffers) t->use_rows(t->allocated_rows() / m_batch * sequences);
    m_sequences = sequences;
}

void Gpt::at(int layer, TensorKind kind) {
    if (m_counting) m_be.set_site(layer, kind);
    else m_be.set_uncounted();
}

void Gpt::linear(int layer, const Tensor& x, const Param& w, const Param* b, Tensor& y) {
    const LayerPrecision& p = prec(layer);
    at(layer, TensorKind::output);
    m_be.set_fp8(fp8_of(layer));
    m_be.set_accumulation(&p.accumulate);
    m_be.linear_forward(x, w.working, b ? &b->working : nullptr, p.compute, y);
    m_be.set_accumulation(nullptr);
    m_be.set_fp8(nullptr);
}

void Gpt::linear_back(int layer, const Tensor& dy, const Tensor& x, Param& w, Param* b, Accumulate acc, Tensor* dx) {
    const LayerPrecision& p = prec(layer);
    at(layer, TensorKind::grad_weight);  // the op counts dy's cast, dw/db and dx under their kinds
    if (auto& f = m_fp8[static_cast<std::size_t>(layer)].fp4) f->sr_seed = m_seed;  // the gradients' SR stream
    m_be.set_fp8(fp8_of(layer));
    m_be.set_accumulation(&p.accumulate);
    m_be.linear_backward(dy, x, w.working, p.compute, p.grad_through, w.grad, b ? &b->grad : nullptr, acc, dx);
    m_be.set_accumulation(nullptr);
    m_be.set_fp8(nullptr);
}

void Gpt::drop(int layer, Tensor& t) {
    if (dropping()) m_be.dropout(t, m_cfg.dropout, dropout_layer_seed(m_seed, layer));
}

const Tensor& Gpt::drop_back(int layer, const Tensor& src, Tensor& dst) {
    if (m_cfg.dropout <= 0.0f) return src;
    at(layer, TensorKind::grad_output);
    m_be.dropout_from(src, dst, m_cfg.dropout, dropout_layer_seed(m_seed, layer));
    return dst;
}

AttentionShape Gpt::attention_shape() const {
    return {m_sequences, m_cfg.gpt.block_size, m_cfg.gpt.n_head, m_cfg.gpt.n_embd};
}

AttentionOptions Gpt::attention_options(int block) const {
    const LayerPrecision& p = prec(gpt_layer(GptSite::attn, block));
    AttentionOptions o;
    o.compute = p.compute;
    o.output = p.activation;
    o.factors = core::attention_factors(m_cfg.attention.scale, m_cfg.gpt.n_embd / m_cfg.gpt.n_head);
    o.softcap = m_cfg.attention.softcap;
    if (m_cfg.attention.qk_norm) o.qk = norm_format(gpt_layer(GptSite::attn, block));
    if (dropping()) {
        o.dropout = m_cfg.dropout;
        o.dropout_seed = dropout_layer_seed(m_seed, gpt_layer(GptSite::attn, block));
    }
    return o;
}

// QK-norm: each head's q (then k) copied out of the QKV Linear's output as rows of head_size,
// LayerNorm'd (FP32 statistics; output in the norm's format, counted at the attention's normalized
// site) and packed with v into qkv_n, which attention reads.
void Gpt::qk_norm_forward(Block& k, int att) {
    const int C = m_cfg.gpt.n_embd;
    m_be.set_uncounted();
    m_be.copy(k.qkv, k.qkv_n);  // v (and, overwritten below, q and k) in the norm's format
    for (int i = 0; i < 2; ++i) {
        Tensor& in = i == 0 ? k.q_in : k.k_in;
        m_be.set_uncounted();
        m_be.copy_columns(k.qkv, i * C, in);
        at(att, TensorKind::normalized);
        m_be.layernorm_forward(in, (i == 0 ? k.qn_g : k.kn_g)->working, m_qk_beta, k.qk_out, i == 0 ? k.q_mean : k.k_mean,
                               i == 0 ? k.q_rstd : k.k_rstd);
        m_be.set_uncounted();
        m_be.set_columns(k.qk_out, i * C, k.qkv_n);
    }
}

// Its backward, in place on the block's d_qkv (its q and k columns: the gradient at the norms'
// outputs, replaced by the gradient at their inputs; v's stays): LayerNorm's backward per head's
// rows, γ's gradient summed over every (position, head) row.
void Gpt::qk_norm_backward(Block& k, int att, Accumulate acc) {
    const int C = m_cfg.gpt.n_embd;
    Grads& d = *k.g;
    for (int i = 0; i < 2; ++i) {
        m_be.set_uncounted();
        m_be.copy_columns(d.d_qkv, i * C, d.d_qk_out);
        at(att, TensorKind::grad_activation);
        m_be.layernorm_backward(i == 0 ? k.q_in : k.k_in, (i == 0 ? k.qn_g : k.kn_g)->working, i == 0 ? k.q_mean : k.k_mean,
                                i == 0 ? k.q_rstd : k.k_rstd, d.d_qk_out, d.d_qk_in, (i == 0 ? k.qn_g : k.kn_g)->grad,
                                m_qk_dbeta, Accumulate::overwrite);
        m_be.set_uncounted();
        m_be.set_columns(d.d_qk_in, i * C, d.d_qkv);
    }
}

const Tensor& Gpt::forward(std::uint64_t dropout_seed, bool train, Pass pass) {
    if (m_sequences < m_batch && (train || pass != Pass::uncounted))
        throw std::logic_error("Gpt::forward: fewer sequences than the batch are for an uncounted pass only");
    m_counting = pass != Pass::uncounted;
    m_train = train;
    m_seed = dropout_seed;
    const GptConfig& g = m_cfg.gpt;
    at(0, TensorKind::output);
    const std::span<const int> tokens(m_tokens.data(), static_cast<std::size_t>(m_sequences) * g.block_size);
    m_be.embedding_forward(tokens, g.block_size, m_wte->working, m_wpe->working, m_x0);
    drop(0, m_x0);
    const AttentionShape shape = attention_shape();
    for (int b = 0; b < g.n_layer; ++b) {
        Block& k = m_blocks[static_cast<std::size_t>(b)];
        const int qkv = gpt_layer(GptSite::qkv, b), att = gpt_layer(GptSite::attn, b), proj = gpt_layer(GptSite::attn_proj, b),
                  fc = gpt_layer(GptSite::mlp_fc, b), mp = gpt_layer(GptSite::mlp_proj, b);
        const Tensor& x = block_input(b);
        at(qkv, TensorKind::normalized);
        m_be.layernorm_forward_stats_in(norm_stats_format(qkv), x, k.ln1_g->working, k.ln1_b->working, k.ln1, k.ln1_mean,
                                       k.ln1_rstd);
        linear(qkv, k.ln1, *k.qkv_w, k.qkv_b, k.qkv);
        if (m_cfg.attention.qk_norm) qk_norm_forward(k, att);
        at(att, TensorKind::output);
        m_be.attention_forward(attention_input(k), shape, attention_options(b), k.scores, k.probs, k.atty);
        linear(proj, k.atty, *k.proj_w, k.proj_b, k.proj);
        drop(proj, k.proj);
        at(proj, TensorKind::activation);
        m_be.add(x, k.proj, k.mid);
        at(fc, TensorKind::normalized);
        m_be.layernorm_forward_stats_in(norm_stats_format(fc), k.mid, k.ln2_g->working, k.ln2_b->working, k.ln2, k.ln2_mean,
                                       k.ln2_rstd);
        linear(fc, k.ln2, *k.fc_w, k.fc_b, k.fc);
        at(fc, TensorKind::activation);
        m_be.activation_forward(Activation::gelu, k.fc, k.gelu);
        linear(mp, k.gelu, *k.mp_w, k.mp_b, k.mp);
        drop(mp, k.mp);
        at(mp, TensorKind::activation);
        m_be.add(k.mid, k.mp, k.out);
    }
    const int head = gpt_lm_head_layer(g);
    at(head, TensorKind::normalized);
    m_be.layernorm_forward_stats_in(norm_stats_format(head), block_input(g.n_layer), m_lnf_g->working, m_lnf_b->working, m_lnf,
                                   m_lnf_mean, m_lnf_rstd);
    linear(head, m_lnf, *m_head, nullptr, m_logits);
    return m_logits;
}

void Gpt::backward(const Tensor& dlogits, std::uint64_t dropout_seed, Accumulate acc) {
    if (m_sequences < m_batch) throw std::logic_error("Gpt::backward after a pass over fewer sequences than the batch");
    m_counting = true;
    m_train = true;  // the forward pass before it trained
    m_seed = dropout_seed;
    const GptConfig& g = m_cfg.gpt;
    const int head = gpt_lm_head_layer(g);
    // The LM head writes the token table's gradient first when tied; the embedding adds to it.
    linear_back(head, dlogits, m_lnf, *m_head, nullptr, acc, &m_dlnf);
    at(head, TensorKind::grad_activation);
    m_be.layernorm_backward(block_input(g.n_layer), m_lnf_g->working, m_lnf_mean, m_lnf_rstd, m_dlnf, m_dx_last,
                            m_lnf_g->grad, m_lnf_b->grad, acc);
    Tensor* dout = &m_dx_last;  // the gradient at the current block's output
    const AttentionShape shape = attention_shape();
    for (int b = g.n_layer - 1; b >= 0; --b) {
        Block& k = m_blocks[static_cast<std::size_t>(b)];
        const int qkv = gpt_layer(GptSite::qkv, b), att = gpt_layer(GptSite::attn, b), proj = gpt_layer(GptSite::attn_proj, b),
                  fc = gpt_layer(GptSite::mlp_fc, b), mp = gpt_layer(GptSite::mlp_proj, b);
        Grads& d = *k.g;
        Tensor& d_in = m_d_in[b % 2];  // dout is the other one (or ln_f's)
        linear_back(mp, drop_back(mp, *dout, d.d_mp), k.gelu, *k.mp_w, k.mp_b, acc, &d.d_gelu);
        at(fc, TensorKind::grad_activation);
        m_be.activation_backward(Activation::gelu, k.fc, d.d_gelu, d.d_fc);
        linear_back(fc, d.d_fc, k.ln2, *k.fc_w, k.fc_b, acc, &d.d_ln2);
        at(fc, TensorKind::grad_activation);
        m_be.layernorm_backward(k.mid, k.ln2_g->working, k.ln2_mean, k.ln2_rstd, d.d_ln2, d.d_mid_branch, k.ln2_g->grad,
                                k.ln2_b->grad, acc);
        at(proj, TensorKind::grad_output);  // the residual: the block's gradient and the MLP's add
        m_be.add(*dout, d.d_mid_branch, d.d_mid);
        linear_back(proj, drop_back(proj, d.d_mid, d.d_proj), k.atty, *k.proj_w, k.proj_b, acc, &d.d_atty);
        at(att, TensorKind::grad_output);
        m_be.attention_backward(attention_input(k), k.probs, d.d_atty, shape, attention_options(b), d.d_qkv);
        if (m_cfg.attention.qk_norm) qk_norm_backward(k, att, acc);
        linear_back(qkv, d.d_qkv, k.ln1, *k.qkv_w, k.qkv_b, acc, &d.d_ln1);
        at(qkv, TensorKind::grad_activation);
        m_be.layernorm_backward(block_input(b), k.ln1_g->working, k.ln1_mean, k.ln1_rstd, d.d_ln1, d.d_in_branch,
                                k.ln1_g->grad, k.ln1_b->grad, acc);
        at(qkv, TensorKind::grad_output);
        m_be.add(d.d_mid, d.d_in_branch, d_in);
        dout = &d_in;
    }
    if (m_cfg.dropout > 0.0f) {  // the embeddings' dropout, in place on the gradient at its output
        at(0, TensorKind::grad_output);
        m_be.dropout(*dout, m_cfg.dropout, dropout_layer_seed(m_seed, 0));
    }
    at(0, TensorKind::grad_weight);
    m_be.embedding_backward(m_tokens, g.block_size, *dout, m_wte->grad, g.tie_embeddings ? Accumulate::add : acc,
                            m_wpe->grad, acc);
}

const Tensor& Gpt::linear_input(int layer) const {
    if (layer == gpt_lm_head_layer(m_cfg.gpt)) return m_lnf;
    const Block& k = m_blocks.at(static_cast<std::size_t>((layer - 1) / 5));
    const Tensor* in[] = {&k.ln1, nullptr, &k.atty, &k.ln2, &k.gelu};
    const Tensor* t = layer > 0 ? in[(layer - 1) % 5] : nullptr;
    if (!t) throw std::logic_error("Gpt::linear_input: layer " + std::to_string(layer) + " is not a Linear layer");
    return *t;
}

Format Gpt::stored_format(int layer, HistTensor t) const {
    const GptConfig& g = m_cfg.gpt;
    const LayerPrecision& p = prec(layer);
    const Param* w = nullptr;
    if (layer == 0) w = m_wte;
    else if (layer == gpt_lm_head_layer(g)) w = m_head;
    else {
        const Block& k = m_blocks[static_cast<std::size_t>((layer - 1) / 5)];
        const Param* ws[] = {k.qkv_w, nullptr, k.proj_w, k.fc_w, k.mp_w};
        w = ws[(layer - 1) % 5];
    }
    switch (t) {
        case HistTensor::input:
        case HistTensor::normalized: return is_linear_layer(m_cfg, layer) && layer != 0 ? norm_format(layer) : m_resid;
        case HistTensor::preact:
        case HistTensor::output:
        case HistTensor::grad_output: return layer == 0 ? m_resid : p.activation;
        case HistTensor::grad_weight:
            if (!w) return Format::fp32;
            return p.grad_through != Format::fp32 ? p.grad_through : w->grad.format();
        case HistTensor::grad_weight_unscaled: return w ? w->grad32.empty() ? w->grad.format() : w->grad32.format() : Format::fp32;
        case HistTensor::weight: return w ? w->working.format() : Format::fp32;
        case HistTensor::update_ulp: return w ? (w->has_master() ? Format::fp32 : w->working.format()) : Format::fp32;
    }
    return Format::fp32;
}

}  // namespace mpx
