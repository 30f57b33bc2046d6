// The compute interface a run trains through: the CPU backend (Eigen) and the CUDA backend implement
// it. Rule: every op computes in FP32 from the operands' stored values with engine/core/op_math.hpp's
// arithmetic and rounds its result into the destination's format; what the rounding did is added to
// the backend's step record (StepStats) under the pass the run has set, so both backends count
// underflow and overflow at the same storage boundaries and the GPU never stops to report them.
// Aliasing: an op's outputs must not overlap its inputs, except where an op says otherwise
// (dropout, scale and clip work in place; unscale_and_check may write its input).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/compute/histograms.hpp"
#include "engine/precision/fp8_scaling.hpp"
#include "engine/compute/tensor.hpp"
#include "engine/core/accumulate.hpp"
#include "engine/core/attention.hpp"
#include "engine/core/op_math.hpp"
#include "engine/core/scaler_rule.hpp"
#include "engine/core/step_stats.hpp"

namespace mpx {


enum class Accumulate : std::uint8_t { overwrite, add };

// The GPT's attention: B sequences of T positions, H heads over C channels (head size C / H).
struct AttentionShape {
    int batch = 1, T = 1, heads = 1, embd = 1;
    int head_size() const { return embd / heads; }
};
// How one attention computes: the batched products' format, where 1/√d goes (core::attention_factors)
// and the soft-cap (0: none).
struct AttentionOptions {
    Format compute = Format::fp32;  // the products' operands are cast to this
    Format output = Format::fp32;   // their results and the element-wise ops on them are stored in this
    core::AttentionFactors factors;
    float softcap = 0.0f;
    // The format q and k are stored in before the factors multiply them (the factors' products are
    // rounded into it): unset, `output` (q and k as the QKV Linear stored them); under QK-norm the
    // norm's output format (FP32 under CUDA autocast: layer_norm gives FP32).
    std::optional<Format> qk;
    // Dropout on the probabilities (nanoGPT's attn_dropout): element i of probs (B·H·T, T) kept where
    // core::dropout_keeps(dropout, dropout_seed, i), times 1/(1 − p), rounded into probs' format; the
    // product with v reads the dropped values, the softmax's backward the stored ones. 0: none.
    float dropout = 0.0f;
    std::uint64_t dropout_seed = 0;
};

struct OptimizerStep {
    OptimizerKind kind = OptimizerKind::adam;
    // The hyperparameters as torch.optim holds them, Python doubles (optimizer_consts derives and
    // rounds the kernels' FP32 scalars from them); lr is the schedule's FP32 value.
    double lr = 1e-3;
    double momentum = 0.9;       // SGD
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    double weight_decay = 0.0;   // SGD/Adam: L2 added to the gradient; AdamW: decoupled
    long long t = 1;             // Adam step number (bias correction), counts applied steps only
    // backend: t is the backend's applied steps + 1 and lr its schedule table at its schedule count
    StepCount count = StepCount::given;
    // How the new weights reach a working copy stored narrow with no master (engine/core/
    // write_back.hpp; LayerPrecision::write_back): stochastic rounding draws from the stream of
    // (round_seed, the parameter's index, t − 1), Kahan keeps the parameter's compensation tensor.
    WriteBack write_back = WriteBack::nearest;
    std::uint64_t round_seed = 0;
};
// Adam's bias corrections for step t, in double as torch.optim's `1 - beta1 ** step` (std::pow on
// the host: one value on both backends).
core::BiasCorrection bias_correction(double beta1, double beta2, long long t);
// The per-step scalars of the element arithmetic (core::optimizer_element), computed once on the
// host; Adam's from bias_correction(β1, β2, s.t).
core::OptConsts optimizer_consts(const OptimizerStep& s);

// One parameter tensor for the ops over all parameters at once (unscale_all, clip_all,
// optimizer_all): its layer (counted at that layer's unscaled and optimizer sites), its gradient, the
// unscaled gradient (may be the gradient's own tensor: in place), which the optimizer reads, the FP32
// master copy (nullable), the working copy and the optimizer states (state2 nullable: SGD), and for
// the write-back its index in the model (the SR stream) and Kahan compensation (nullable).
struct ParamRef {
    int layer = 0;
    const Tensor* grad = nullptr;
    Tensor* unscaled = nullptr;
    Tensor* master = nullptr;
    Tensor* working = nullptr;
    Tensor* state1 = nullptr;
    Tensor* state2 = nullptr;
    int index = 0;
    Tensor* compensation = nullptr;
};

// One parameter's gradient the penalty reads and the FP32 direction tensor (its shape) it writes.
struct PenaltyRef {
    const Tensor* grad = nullptr;
    Tensor* direction = nullptr;
};
// The penalty of one micro-batch: train.penalty's form, train.gradient_penalty's λ, and whether the
// gradients are multiplied by 1/S (penalty_unscale; false when they were taken from the unscaled loss).
struct PenaltyOptions {
    PenaltyKind kind = PenaltyKind::norm;
    double lambda = 0.0;
    bool unscale = true;
};

class Backend {
public:
    virtual ~Backend() = default;
    Backend() = default;
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    virtual std::string name() const = 0;     // "CPU (Eigen)" or the GPU's name
    virtual bool is_gpu() const = 0;

    Tensor alloc(Format f, int rows, int cols, MemCategory c);
    const MemoryTotals& memory() const { return m_memory; }
    // Bytes a real implementation holds that the emulation does not allocate (FP4 runs' packed
    // copies: the CPU casts each GEMM's operands afresh), counted under `c` for the run's life.
    void count_held(MemCategory c, std::int64_t bytes) { m_memory.bytes[static_cast<int>(c)] += bytes; }

    // ---- the step record ----
    // Zeroes the record (queued behind earlier work on the GPU).
    virtual void begin_step() = 0;
    // Where the following ops add their counts: layer `layer`, tensors of `kind`. An op that writes
    // several kinds of tensor counts each under its own kind at that layer (linear_forward: its
    // operand casts under `operand`; linear_backward: the dy cast, dw/db and dx under
    // grad_operand, grad_weight and grad_input).
    void set_site(int layer, TensorKind kind) {
        m_layer = layer;
        m_site = site_index(layer, kind);
    }
    // The following ops count nowhere (recomputation, uploads of targets, evaluation).
    void set_uncounted() { m_site = -1; }
    // The current site's index, -1 when uncounted; and the site of another kind at its layer.
    int site() const { return m_site; }
    int site(TensorKind kind) const { return m_site < 0 ? -1 : site_index(m_layer, kind); }
    void set_site_index(int index) {  // as site() returned it (wrappers forwarding to a backend)
        m_site = index;
        m_layer = index < 0 ? 0 : index / k_tensor_kinds;
    }
    // The FP8 scaling of the linear ops that follow (nullptr: their `compute` format is a plain
    // cast); `g` must outlive them. The layer is the current site's.
    void set_fp8(const Fp8Gemm* g) { m_fp8 = g; }
    const Fp8Gemm* fp8() const { return m_fp8; }
    // The accumulation models of the linear ops that follow (nullptr or all exact: FP32 accumulation
    // as the backend's GEMM does it); `a` must outlive them. Backends without the models refuse the
    // others with a ConfigError.
    void set_accumulation(const GemmAccumulation* a) { m_accumulation = a && !a->all_exact() ? a : nullptr; }
    const GemmAccumulation* accumulation() const { return m_accumulation; }
    int layer() const { return m_layer; }
    // The step's work is all queued (after its scaler_update): a backend may start it now (the
    // CUDA backend launches a step captured into a CUDA graph here). read_stats follows.
    virtual void end_step() {}
    // A step whose queueing failed part-way (an op threw): the backend drops what it kept of it.
    virtual void abort_step() noexcept {}
    // Waits for every queued op and returns the record: the one wait of a training step.
    virtual const StepStats& read_stats() = 0;
    // Records one step late. A backend that holds_two_steps() keeps two step records: begin_step
    // takes the other one, so the record of the step begun before the current one stays as it was
    // and read_previous_stats() returns it, waiting only for that step (on a GPU the host reads step
    // N's record while step N+1 runs). Histograms are not kept twice: a step that collects is read
    // before the next begins.
    virtual bool holds_two_steps() const { return false; }
    virtual const StepStats& read_previous_stats();
    // Bins this step's stores into exponent histograms (engine/compute/histograms.hpp) for a model of
    // `layers` layers (0: this step does not collect); call after begin_step. Only those layers'
    // bins are zeroed and read back: the rest of StepHistograms is left as it was.
    virtual void collect_histograms(int layers) = 0;
    // After read_stats: the bins of a step that collected, else nullptr (the copy back from the
    // GPU happens here, only on collecting steps).
    virtual const StepHistograms* read_histograms() = 0;

    // ---- transfers ----
    // upload rounds floats into dst's format (counted); download and copy between formats are not
    // counted (copy rounds when dst is narrower).
    virtual void upload(std::span<const float> src, Tensor& dst) = 0;
    virtual void download(const Tensor& src, std::span<float> dst) = 0;
    virtual void copy(const Tensor& src, Tensor& dst) = 0;           // same shape, any formats
    virtual void fill(Tensor& dst, float value) = 0;

    // ---- linear layers ----
    // y (B, out) = x (B, in) · wᵀ (in, out) + b (out); GEMM operands cast to `compute` (the casts
    // are counted, as autocast's), FP32 accumulation (cuBLAS compute type 32F), bias added in FP32
    // before rounding into y.
    virtual void linear_forward(const Tensor& x, const Tensor& w, const Tensor* b, Format compute,
                                Tensor& y) = 0;
    // dx (B, in) = dy (B, out) · w (out, in); dy's cast to `compute` counted (w's cast was counted
    // by the forward pass, whose cast copy autocast keeps for backward).
    virtual void linear_backward_input(const Tensor& dy, const Tensor& w, Format compute,
                                       Tensor& dx) = 0;
    // dw (out, in) (+)= round_through(dyᵀ · x); db (out) (+)= round_through(column sums of dy as
    // stored, core::column_sum). round_through is the format the GEMM writes (autocast: the low
    // format) before dw's format (core::accumulate_element).
    virtual void linear_backward_weight(const Tensor& dy, const Tensor& x, Format compute,
                                        Format round_through, Tensor& dw, Tensor* db,
                                        Accumulate acc) = 0;
    // Both backward GEMMs of one layer: dw, db as linear_backward_weight, and dx (when given) as
    // linear_backward_input. Backends may share work between the two (the CPU casts dy once).
    virtual void linear_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Format compute,
                                 Format round_through, Tensor& dw, Tensor* db, Accumulate acc,
                                 Tensor* dx) {
        linear_backward_weight(dy, x, compute, round_through, dw, db, acc);
        if (dx) linear_backward_input(dy, w, compute, *dx);
    }

    // ---- element-wise and per-row ops ----
    virtual void activation_forward(Activation a, const Tensor& z, Tensor& h) = 0;
    // dz = dh ⊙ act'(z)
    virtual void activation_backward(Activation a, const Tensor& z, const Tensor& dh,
                                     Tensor& dz) = 0;
    // y = γ ⊙ (x − μ)/√(σ² + ε) + β per row, statistics in FP32; mean/rstd (B, 1) FP32 kept for
    // backward.
    virtual void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   Tensor& y, Tensor& mean, Tensor& rstd) = 0;
    virtual void layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                    const Tensor& rstd, const Tensor& dy, Tensor& dx,
                                    Tensor& dgamma, Tensor& dbeta, Accumulate acc) = 0;
    // h *= mask / (1 − p) in place, with a mask drawn from (seed); the same seed gives the same mask.
    virtual void dropout(Tensor& h, float p, std::uint64_t seed) = 0;

    // ---- the GPT's ops (engine/model/gpt.hpp; arithmetic in engine/core/attention.hpp) ----
    // The CPU backend has them; a backend without them refuses with a ConfigError (the CUDA
    // backend until a GPU run has measured it: the GPT trains on the CPU).
    // x (B·T, C) = wte[tokens[n]] + wpe[n mod T], added in FP32, rounded into x's format.
    virtual void embedding_forward(std::span<const int> tokens, int T, const Tensor& wte, const Tensor& wpe,
                                   Tensor& x);
    // dwte (V, C) (+)= Σ over rows n with tokens[n] = v of dx (B·T, C); dwpe (T, C) (+)= Σ_b dx[b·T + t];
    // each sum in FP32 in row order, then stored in the gradient's format (counted).
    virtual void embedding_backward(std::span<const int> tokens, int T, const Tensor& dx, Tensor& dwte,
                                    Accumulate acc_wte, Tensor& dwpe, Accumulate acc_wpe);
    // out = a + b, added in FP32 and rounded into out's format (the residual stream: autocast adds in
    // the wider input's format, which out is given).
    virtual void add(const Tensor& a, const Tensor& b, Tensor& out);
    // dst = src rounded into dst's format, then times dropout's mask of (seed) and 1/(1 − p), rounded
    // again (both counted): a residual branch's dropout backward, whose gradient the add's backward
    // casts into the branch's format first, as autograd does.
    virtual void dropout_from(const Tensor& src, Tensor& dst, float p, std::uint64_t seed);
    // dst (N·H, w/H) as flat rows = src (N, ·)[:, col0 : col0 + w], w = dst.size() / N: the columns of
    // one of q, k, v, a row per (position, head) (QK-norm's LayerNorm rows); set_columns puts them
    // back, dst[:, col0 : col0 + w] = src. Values are converted into the destination's format
    // (uncounted: the norm's output was counted when stored).
    virtual void copy_columns(const Tensor& src, int col0, Tensor& dst);
    virtual void set_columns(const Tensor& src, int col0, Tensor& dst);
    // layernorm_forward with LayerNorm's statistics computed in `stats` (norm.stats = storage:
    // core::layernorm_row_stats_in, every op of the statistics rounded into `stats`; each row's mean,
    // variance and rstd tallied at the current site, before the output). FP32 is layernorm_forward.
    virtual void layernorm_forward_stats_in(Format stats, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                            Tensor& y, Tensor& mean, Tensor& rstd);
    // Causal self-attention over qkv (B·T, 3C) (q, k, v side by side, head h at columns h·C/H..):
    // q, k (times the factors of o.factors, rounded) and v cast to o.compute (counted under
    // operand); scores = q·kᵀ (B·H·T, T) rounded to o.compute (counted under output: where they
    // pass 65504), times factors.scores and soft-capped (each op rounded, counted there); the causal
    // softmax in FP32 into probs (B·H·T, T) in probs' format and their cast to o.compute (both
    // counted under activation); y (B·T, C) = probs·v rounded into y's format (counted under the next
    // layer's input: the GPT's attention projection reads it).
    // Masked positions hold 0 in scores and probs.
    virtual void attention_forward(const Tensor& qkv, const AttentionShape& s, const AttentionOptions& o,
                                   Tensor& scores, Tensor& probs, Tensor& y);
    // Its backward from dy (B·T, C): dy cast (grad_operand); dprobs = dy·vᵀ (grad_activation); the
    // softmax's, soft-cap's and scale's backward in the scores' format (grad_output); dq, dk, dv
    // rounded to o.compute and stored into dqkv (B·T, 3C) (grad_input). Operands are recomputed
    // from qkv and probs as the forward pass rounded them.
    virtual void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& dy,
                                    const AttentionShape& s, const AttentionOptions& o, Tensor& dqkv);

    // ---- Hessian-vector products (Pearlmutter's R-operator; the rules: engine/core/r_op.hpp) ----
    // An R-pass runs beside the first-order pass that left its values (z, the norms' statistics,
    // the gradients) in place, stores each R{·} in the format its first-order twin has and counts
    // its roundings at the site set (the model's: its layer's backward sites; histograms bin
    // first-order values only). v is the direction (each parameter's (V, c)). A backend
    // without them refuses with a ConfigError naming train.gradient_penalty (the CUDA backend until
    // a GPU run has measured them); FP8/FP4 GEMMs are refused by the run.
    // rz (B, out) = x (B, in) · Vᵀ + rx (B, in) · Wᵀ + c: both products in FP32 (operands cast to
    // `compute`; V's and rx's casts counted under grad_operand), summed, c added, one rounding; rx null: 0.
    virtual void linear_r_forward(const Tensor& x, const Tensor* rx, const Tensor& w, const Tensor& v, const Tensor* c,
                                  Format compute, Tensor& rz);
    // hw (out, in) (+)= round_through(rdyᵀ·x + dyᵀ·rx); hb (out) (+)= round_through(column sums of rdy);
    // rdx (B, in) = rdy·W + dy·V (both summed in FP32, one rounding through the GEMM's output format).
    virtual void linear_r_backward(const Tensor& dy, const Tensor& rdy, const Tensor& x, const Tensor* rx,
                                   const Tensor& w, const Tensor& v, Format compute, Format round_through, Tensor& hw,
                                   Tensor* hb, Accumulate acc, Tensor* rdx);
    // rh = σ′(z)⊙rz (activation_backward's arithmetic; not binned: histograms show first-order values).
    virtual void activation_r_forward(Activation a, const Tensor& z, const Tensor& rz, Tensor& rh);
    // rdz = σ″(z)⊙rz⊙dh + σ′(z)⊙rdh (core::act_r_backward).
    virtual void activation_r_backward(Activation a, const Tensor& z, const Tensor& rz, const Tensor& dh,
                                       const Tensor& rdh, Tensor& rdz);
    // ry = R{LayerNorm(x)} along rx, rγ, rβ, from layernorm_forward's mean and rstd (B, 1).
    virtual void layernorm_r_forward(const Tensor& x, const Tensor& rx, const Tensor& gamma, const Tensor& rgamma,
                                     const Tensor& rbeta, const Tensor& mean, const Tensor& rstd, Tensor& ry);
    // rdx = R{layernorm_backward's dx}; hγ, hβ (+)= R{dγ}, R{dβ}.
    virtual void layernorm_r_backward(const Tensor& x, const Tensor& rx, const Tensor& gamma, const Tensor& rgamma,
                                      const Tensor& mean, const Tensor& rstd, const Tensor& dy, const Tensor& rdy,
                                      Tensor& rdx, Tensor& hgamma, Tensor& hbeta, Accumulate acc);
    // rdlogits (B, C) = R{softmax_cross_entropy's dlogits} along rlogits, with the same `scale`
    // (nothing is added to the record's loss); mse_r: R{mse's dpred} along rpred.
    virtual void softmax_cross_entropy_r(const Tensor& logits, const Tensor& rlogits, ScaleBy scale,
                                         Tensor& rdlogits);
    virtual void mse_r(const Tensor& rpred, ScaleBy scale, Tensor& rdpred);
    // PyTorch's gradient penalty on the gradients in `ps` (REFERENCE.md): ĝ = grad · k (k = 1/S as
    // unscale_and_check forms it, or 1), each tensor's Σ ĝ² in FP32 (k_sum_chunk chunks, in order),
    // the tensors' sums added in FP32 in order, P = √Σ (norm) or Σ (squared_norm); λ·P is added to
    // the record's penalty_sum, and each direction becomes coef·ĝ (FP32), coef = S·λ·k/P (norm) or
    // 2·S·λ·k (squared): the v whose H·v through the pass that made `grad` is the penalty's gradient
    // for the total loss scaled by S (the backend's scale).
    virtual void gradient_penalty(std::span<const PenaltyRef> ps, const PenaltyOptions& o);

    // ---- losses: the mean loss goes into the record's loss_sum ----
    // ...unless set_loss_recorded(false): a second gradient of a loss already counted (a penalty
    // run's scaled pass after gradients of the unscaled loss) adds nothing. On until changed.
    void set_loss_recorded(bool on) { m_loss_recorded = on; }
    bool loss_recorded() const { return m_loss_recorded; }
    // `scale` is a host value, or ScaleBy::loss(weight, parts): core::loss_factor of the backend's
    // own loss scale (set_scaler), resolved where the op runs.
    // Mean softmax cross-entropy of logits (B, C) against labels, in FP32; dlogits = scale ·
    // ∂loss/∂logits, rounded into dlogits' format. Labels outside 0..C−1 are a ConfigError.
    virtual void softmax_cross_entropy(const Tensor& logits, std::span<const int> labels,
                                       ScaleBy scale, Tensor& dlogits) = 0;
    // The same plus PaLM's z-loss z_loss·mean over rows of (log Z)² (train.z_loss,
    // core::softmax_xent_z_row): the record's loss is the sum of both means, dlogits both gradients
    // summed in FP32 before the one rounding. z_loss = 0 is softmax_cross_entropy itself; a backend
    // without it refuses another value with a ConfigError naming train.z_loss.
    virtual void softmax_cross_entropy_z(const Tensor& logits, std::span<const int> labels, float z_loss, ScaleBy scale,
                                         Tensor& dlogits);
    // Mean over all elements of (pred − target)², target in FP32.
    virtual void mse(const Tensor& pred, const Tensor& target, ScaleBy scale, Tensor& dpred) = 0;
    // Classification accuracy of logits against labels (evaluation only: waits for the result).
    virtual double accuracy(const Tensor& logits, std::span<const int> labels) = 0;

    // ---- the loss scaler (engine/core/scaler_rule.hpp), held by the backend ----
    // The scaler's rule and state (a run's start, a live change, a resume), queued like any op: the
    // ops after it read this state. Until it is first called: kind none, scale 1.
    virtual void set_scaler(const ScalerRule& rule, const ScalerState& state) = 0;
    // One update of the held state by core::update_scaler with this step's found-inf (the record's
    // found_bad); the state before and after, the event and the at-minimum refusal go into the
    // record (StepStats::scaler), which is how the host learns the new scale.
    virtual void scaler_update() = 0;

    // ---- the step counts, held by the backend: Adam's applied steps, the LR schedule's steps ----
    // table (t = 1..table.size()): bias_correction(β1, β2, t), which optimizer_update with
    // StepCount::backend reads at t = applied steps + 1 (a t beyond the table is a ConfigError, on
    // the GPU a step that changes nothing: the run keeps the table ahead of its step count).
    virtual void set_bias_corrections(std::span<const core::BiasCorrection> table) = 0;
    virtual void set_applied_steps(long long n) = 0;  // a run's start (0) and a resume
    // After a step's optimizer_update calls: the count += 1 unless the step was skipped (on_inf
    // skip and the record found inf/NaN: step_applied); the count after it goes into the record
    // (StepStats::applied_steps).
    virtual void count_applied_step(OnInf on_inf) = 0;
    // lrs[k]: the learning rate after k schedule steps (float of lr_at), which optimizer_update with
    // StepCount::backend reads at the schedule count (beyond the table: as for t above).
    virtual void set_lr_schedule(std::span<const float> lrs) = 0;
    virtual void set_schedule_steps(long long n) = 0;  // a run's start (0) and a resume
    // After a step: the schedule count += 1 when the step was applied or `advance_on_skip`; the
    // count after it goes into the record (StepStats::schedule_steps).
    virtual void count_schedule_step(OnInf on_inf, bool advance_on_skip) = 0;

    // ---- FP8 delayed scaling's amax histories, held by the backend ----
    // The histories by fp8_index(layer, tensor) (states beyond `states` hold none): each state's
    // len values from its offset in `hist`. A run's start and a resume.
    virtual void set_amax_histories(std::span<const core::AmaxHistoryState> states,
                                    std::span<const float> hist) = 0;
    // After a step: every active history takes its tensor's amax from the record (StepStats::fp8)
    // and gives the next step's scale (core::amax_history_push); skipped steps included, as TE's.
    virtual void update_amax_histories() = 0;
    // The histories as set_amax_histories takes them (a wait on the GPU: for saving a run).
    virtual void read_amax_histories(std::vector<core::AmaxHistoryState>& states,
                                     std::vector<float>& hist) = 0;

    // ---- gradients and the optimizer ----
    // unscaled = grad · inv_scale, multiplied in FP32 and stored in unscaled's format; counts every
    // inf/NaN (bad) and adds the sum of squares. unscaled may be grad itself (in place).
    // inv_scale is a host value, or ScaleBy::unscale(): core::inverse_scale of the backend's scale.
    virtual void unscale_and_check(const Tensor& grad, ScaleBy inv_scale, Tensor& unscaled) = 0;
    // t *= factor in place (rounded back into t's format, uncounted).
    virtual void scale(Tensor& t, float factor) = 0;
    // Gradient clipping by the global norm in the record (core::clip_factor), in place; nothing on a
    // step that found inf/NaN.
    virtual void clip_to_norm(Tensor& t, double max_norm) = 0;
    // One optimizer step on FP32 master weights (or, without a master, on the working copy in its
    // own format), then write-back into the working copy; the states keep their own formats
    // (rounded after each update, counted). Counts updates the working copy lost. s.write_back
    // other than nearest needs a working copy without master; kahan its `compensation` (working's
    // format and shape); `param` numbers the tensor's stochastic-rounding stream.
    virtual void optimizer_update(const OptimizerStep& s, const Tensor& grad, Tensor* master,
                                  Tensor& working, Tensor& state1, Tensor* state2, OnInf on_inf,
                                  Tensor* compensation = nullptr, int param = 0) = 0;

    // ---- all parameters at once ----
    // What the single-tensor ops above do, tensor by tensor in the span's order, as one op: each
    // tensor counted at its own layer's site (unscaled, optimizer), the sums of squares added in the
    // same order, so the results are the single ops' bits. The CPU runs the single ops in a loop
    // (these defaults); the CUDA backend launches one kernel over all tensors for each. The site
    // afterwards is the last tensor's.
    virtual void unscale_all(std::span<const ParamRef> ps, ScaleBy inv_scale);
    virtual void clip_all(std::span<const ParamRef> ps, double max_norm);  // each unscaled tensor
    virtual void optimizer_all(const OptimizerStep& s, std::span<const ParamRef> ps, OnInf on_inf);

protected:
    virtual void* raw_alloc(std::size_t bytes) = 0;
    virtual void raw_free(void* p) noexcept = 0;

private:
    friend class Tensor;
    void release(Tensor& t) noexcept;
    MemoryTotals m_memory;
    int m_layer = 0;
    int m_site = -1;
    const Fp8Gemm* m_fp8 = nullptr;
    const GemmAccumulation* m_accumulation = nullptr;
    bool m_loss_recorded = true;
};

// Runs one op alone and returns what it counted (tests and the GPU/CPU comparison; a wait on the
// GPU). The record is cleared before and after, so it must not be called inside a step.
template <class Op>
core::Counts counted(Backend& be, Op&& op) {
    be.begin_step();
    be.set_site(0, TensorKind::output);
    op();
    const core::Counts c = be.read_stats().total();
    be.begin_step();
    be.set_uncounted();
    return c;
}

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace mpx
