// CudaBackend: each op checks its tensors and queues kernels and GEMMs on the backend's stream; the
// counts go into the device step record, read back by read_stats() with one copy into pinned
// memory. Rule: the same operands, formulas and rounding points as engine/compute/cpu_backend.cpp, op for
// op; no op waits for the device except download, accuracy and read_stats. Impl is in
// backend_impl.hpp; the step-state ops (scaler, Adam's count) in cuda_step_state.cpp.
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <stdexcept>

#include "cuda/backend_impl.hpp"
#include "cuda/device.hpp"

namespace mpx::cuda {
namespace {

std::string device_unusable(int device) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        const DeviceProbe p = probe_device();
        return p.reason.empty() ? "no CUDA device present" : p.reason;
    }
    if (device < 0 || device >= count)
        return "there is no CUDA device " + std::to_string(device) + " (this machine has " +
               std::to_string(count) + ")";
    return {};
}

// Accumulation models (engine/core/accumulate.hpp) run on the CPU backend only: the CUDA backend has
// not run on a GPU yet, and nothing GPU-only is added before it has (docs/gpu.md).
void require_exact_accumulation(const GemmAccumulation* a) {
    if (a)
        throw ConfigError("runs", "accumulation models (+acc-…, the accumulate section) run on the CPU backend "
                                  "only; choose device cpu for these runs");
}

}  // namespace


CudaBackend::CudaBackend(int device, CudaOptions options) {
    const std::string why = device_unusable(device);
    if (!why.empty())
        throw DeviceError("cannot use the GPU: " + why +
                          "; train on the CPU backend (--device cpu)");
    CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    m = std::make_unique<Impl>(device, prop, options.graphs);
    const cudaError_t img = probe_kernel_image(m->s());
    if (img != cudaSuccess) {
        cudaGetLastError();
        throw DeviceError("this build has no GPU code that runs on " + m->name +
                          " (compute capability " + std::to_string(prop.major) + "." +
                          std::to_string(prop.minor) + "): " + cudaGetErrorString(img) +
                          "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(m->cc) +
                          " or train on the CPU backend (--device cpu)");
    }
    set_scaler(core::no_scaler(), ScalerState{});  // as the CPU backend starts: kind none, scale 1
    set_applied_steps(0);
    set_schedule_steps(0);
}

CudaBackend::~CudaBackend() {
    if (m) cudaSetDevice(m->device);  // the scratch is freed on this backend's device
}

std::string CudaBackend::name() const { return m->name; }

std::size_t CudaBackend::device_free_bytes() const {
    std::size_t free = 0, total = 0;
    CUDA_CHECK(cudaSetDevice(m->device));
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return free;
}

std::size_t CudaBackend::device_total_bytes() const {
    std::size_t free = 0, total = 0;
    CUDA_CHECK(cudaSetDevice(m->device));
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return total;
}

int CudaBackend::compute_capability() const { return m->cc; }

long long CudaBackend::host_syncs() const { return m->syncs; }
long long CudaBackend::graph_launches() const { return m->graphs.launched; }
long long CudaBackend::graph_instantiations() const { return m->graphs.instantiated; }

void CudaBackend::require_format_support(Format f) const {
    if (f == Format::bf16 && m->cc < 80)
        throw DeviceError("BF16 needs a GPU of compute capability 8.0 or newer; " + m->name +
                          " is " + std::to_string(m->cc / 10) + "." + std::to_string(m->cc % 10) +
                          "; choose FP16 or the CPU backend");
    // FP32, TF32 (pre-rounded operands: exact FP32 products on any GPU), FP16 and the FP8 formats
    // (computed as FP16, where their values are exact) run everywhere this build does.
}

void* CudaBackend::raw_alloc(std::size_t bytes) {
    CUDA_CHECK(cudaSetDevice(m->device));
    return device_malloc(bytes);
}

void CudaBackend::raw_free(void* p) noexcept {
    cudaSetDevice(m->device);
    cudaFree(p);  // nothing sensible to do with a failure in a destructor path
}

// ---- the step record ---------------------------------------------------------------------------

void CudaBackend::begin_step() {
    m->use();
    m->begin_step_capture();  // CUDA graphs: the step's work from here is captured
    // The other record, so the previous step's stays readable (with graphs: the same one). It
    // becomes the current one only once its clearing is queued (a throw leaves the slots as they were).
    const int next = m->graphs.enabled ? m->slot : m->slot ^ 1;
    CUDA_CHECK(cudaMemsetAsync(m->record_at(next), 0, sizeof(StepStats), m->s()));
    m->slot = next;
    m->record_copy[next].queued = false;  // a copy of this slot's old record: nobody waits for it
    m->collecting = false;
}

void CudaBackend::collect_histograms(int layers) {
    m->collecting = layers > 0;
    if (!m->collecting) return;
    m->use();
    m->hist.reserve(sizeof(StepHistograms));
    m->hist_layers = std::min(layers, k_max_layers);
    StepHistograms* h = m->hists();
    CUDA_CHECK(cudaMemsetAsync(h->site, 0, m->hist_layers * k_tensor_kinds * sizeof(core::Bins), m->s()));
    CUDA_CHECK(cudaMemsetAsync(h->update_ulp, 0, m->hist_layers * sizeof(core::Bins), m->s()));
}

const StepHistograms* CudaBackend::read_histograms() {
    if (!m->collecting) return nullptr;
    m->use();
    if (!m->host_hist) m->host_hist = std::make_unique<StepHistograms>();
    // After read_stats the stream is idle: this copy waits only for itself (collecting steps only).
    const StepHistograms* h = m->hists();
    CUDA_CHECK(cudaMemcpyAsync(m->host_hist->site, h->site,
                               m->hist_layers * k_tensor_kinds * sizeof(core::Bins),
                               cudaMemcpyDeviceToHost, m->s()));
    CUDA_CHECK(cudaMemcpyAsync(m->host_hist->update_ulp, h->update_ulp,
                               m->hist_layers * sizeof(core::Bins), cudaMemcpyDeviceToHost, m->s()));
    m->wait();
    return m->host_hist.get();
}

void CudaBackend::end_step() {
    m->use();
    m->launch_captured_step();  // CUDA graphs: the captured step runs now, as one graph
    m->queue_record_copy(m->slot);  // the record comes back with one asynchronous copy
}

void CudaBackend::abort_step() noexcept {
    cudaSetDevice(m->device);
    m->drop_capture();
    m->params_host.clear();  // its upload may have been captured and dropped: upload it again
}

const StepStats& CudaBackend::read_stats() {
    m->use();
    m->launch_captured_step();  // a captured step that was not ended (a lone op, a test)
    m->queue_record_copy(m->slot);  // queued at end_step in a run (nothing counts after it)
    m->wait();  // the stream is idle after it (read_histograms relies on that)
    m->record_copy[m->slot].queued = false;
    m->free_deferred();  // no capture is open: the session ends each run's before any wait
    return *m->host_record[m->slot].p;
}

bool CudaBackend::holds_two_steps() const { return !m->graphs.enabled; }

const StepStats& CudaBackend::read_previous_stats() {
    if (m->graphs.enabled)  // a captured step's uploads and record are not kept twice
        throw std::logic_error("the CUDA backend with CUDA graphs keeps one step record");
    m->use();
    // Only the copy queued at the previous step's end is waited for: the current step runs on.
    // Without it, something else began a step since (the record was cleared): refuse.
    if (!m->record_copy[m->slot ^ 1].queued)
        throw std::logic_error("read_previous_stats: the previous step did not end, or another step began since");
    return m->wait_for_record(m->slot ^ 1);
}

// ---- transfers ---------------------------------------------------------------------------------

void CudaBackend::upload(std::span<const float> src, Tensor& dst) {
    require_own(this, {&dst});
    require(src.size() >= dst.size(), "upload: fewer values than the tensor holds");
    m->use();
    const std::size_t n = dst.size();
    float* stage = m->aux.get<float>(n);  // (n) FP32
    m->upload_bytes(stage, src.data(), n * sizeof(float));  // through pinned memory: src may change
    cuda::encode(stage, dst.format(), dst.data(), n, m->sink(site()), m->s());
}

void CudaBackend::download(const Tensor& src, std::span<float> dst) {
    require_own(this, {&src});
    require(dst.size() >= src.size(), "download: the destination is smaller than the tensor");
    m->use();
    const std::size_t n = src.size();
    const void* from = src.data();
    if (info(src.format()).storage_bytes != 4) {  // FP32/TF32 containers are the values already
        float* stage = m->aux.get<float>(n);
        cuda::decode(src.data(), src.format(), stage, n, m->s());
        from = stage;
    }
    if (n)
        CUDA_CHECK(
            cudaMemcpyAsync(dst.data(), from, n * sizeof(float), cudaMemcpyDeviceToHost, m->s()));
    m->wait();
}

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
    require_own(this, {&src, &dst});
    require(src.size() == dst.size(), "copy: shapes differ");
    m->use();
    if (src.format() == dst.format()) {
        if (src.bytes())
            CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(),
                                       cudaMemcpyDeviceToDevice, m->s()));
        return;
    }
    cuda::convert(src.data(), src.format(), Format::fp32, dst.data(), dst.format(), src.size(),
                  nullptr, m->s());
}

void CudaBackend::fill(Tensor& dst, float value) {
    require_own(this, {&dst});
    m->use();
    cuda::fill(dst.data(), dst.format(), value, dst.size(), m->s());
}

// ---- linear layers -----------------------------------------------------------------------------
// Row-major (r, c) is column-major (c, r) with leading dimension c, so each row-major product is
// handed to cuBLAS transposed: y = x·wᵀ becomes yᵀ = w·xᵀ, and so on.

void CudaBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor* b, Format compute,
                                 Tensor& y) {
    require_exact_accumulation(accumulation());
    require_own(this, {&x, &w, b, &y});
    const int B = x.rows(), in = x.cols(), out = w.rows();
    require(w.cols() == in && y.rows() == B && y.cols() == out,
            "linear_forward: shapes do not match");
    require(!b || b->size() == static_cast<std::size_t>(out),
            "linear_forward: bias size is not out");
    m->use();
    const Sink counts = m->sink(site());
    const Sink casts = m->sink(site(TensorKind::operand));
    if (const Fp8Gemm* g = fp8()) {
        const float* wa = m->fp8_operand(w, *g, Fp8Tensor::w, true, m->op_a, casts,
                                         m->fp8_record(site(), layer(), Fp8Tensor::w));
        const float* xb = m->fp8_operand(x, *g, Fp8Tensor::x, true, m->op_b, casts,
                                         m->fp8_record(site(), layer(), Fp8Tensor::x));
        float* acc = m->acc.get<float>(static_cast<std::size_t>(B) * out);
        m->gemm.run(GemmInput::fp32, true, false, out, B, in, wa, in, xb, in, acc, out);
        if (g->recipe != Fp8Recipe::block)
            cuda::fp8_descale(acc, static_cast<std::size_t>(B) * out, m->fp8_slot(Fp8Tensor::x),
                              m->fp8_slot(Fp8Tensor::w), m->s());
        cuda::bias_store(acc, b ? b->data() : nullptr, b ? b->format() : Format::fp32, Format::fp32, y.data(),
                         y.format(), B, out, counts, m->s());
        return;
    }
    require_format_support(compute);
    const void* wa = m->operand(w, compute, m->op_a, casts);            // column-major (in, out)
    const void* xb = m->operand(x, compute, m->op_b, casts);            // column-major (in, B)
    float* acc = m->acc.get<float>(static_cast<std::size_t>(B) * out);  // column-major (out, B)
    m->gemm.run(gemm_input(compute), true, false, out, B, in, wa, in, xb, in, acc, out);
    cuda::bias_store(acc, b ? b->data() : nullptr, b ? b->format() : Format::fp32, core::bias_format(compute),
                     y.data(), y.format(), B, out, counts, m->s());
}

namespace {
void check_backward_shapes(const Tensor& dy, const Tensor* x, const Tensor* w, const Tensor* dw,
                           const Tensor* db, const Tensor* dx) {
    const int B = dy.rows(), out = dy.cols();
    require(!w || w->rows() == out, "linear backward: w does not match dy");
    require(!x || x->rows() == B, "linear backward: x does not match dy");
    require(!dw || (x && dw->rows() == out && dw->cols() == x->cols()),
            "linear backward: dw does not match");
    require(!db || db->size() == static_cast<std::size_t>(out), "linear backward: db size is not out");
    require(!dx || (w && dx->rows() == B && dx->cols() == w->cols()),
            "linear backward: dx does not match");
}
}  // namespace

// The backward GEMMs on dy already cast (dyb: column-major (out, B)); x's and w's casts were
// counted by the forward pass and are not counted again.
struct BackwardGemms {
    static void input(CudaBackend::Impl& m, const void* dyb, const Tensor& w, Format compute,
                      int B, Tensor& dx, Sink counts) {
        const int out = w.rows(), in = w.cols();
        const void* wa = m.operand(w, compute, m.op_a, nullptr);          // column-major (in, out)
        float* acc = m.acc.get<float>(static_cast<std::size_t>(B) * in);  // column-major (in, B)
        m.gemm.run(gemm_input(compute), false, false, in, B, out, wa, in, dyb, out, acc, in);
        // Written in the GEMM's output format first (core::gemm_output_format), then stored in dx's,
        // as the CPU backend does.
        const Format written = core::gemm_output_format(compute);
        if (written != Format::fp32 && written != dx.format())
            cuda::accumulate(acc, written, false, dx.data(), dx.format(), dx.size(), counts, m.s());
        else
            cuda::encode(acc, dx.format(), dx.data(), dx.size(), counts, m.s());
    }
    static void weight(CudaBackend::Impl& m, const void* dyb, const Tensor& dy, const Tensor& x,
                       Format compute, Format round_through, Tensor& dw, Tensor* db, bool add,
                       Sink counts) {
        const int B = dy.rows(), out = dy.cols(), in = x.cols();
        const void* xa = m.operand(x, compute, m.op_a, nullptr);  // column-major (in, B)
        float* values = m.acc.get<float>(dw.size());              // column-major (in, out) = dw
        m.gemm.run(gemm_input(compute), false, true, in, out, B, xa, in, dyb, out, values, in);
        cuda::accumulate(values, round_through, add, dw.data(), dw.format(), dw.size(), counts,
                         m.s());
        if (!db) return;
        // Bias gradient: FP32 column sums of dy as stored (not cast to the compute format).
        float* sums = m.aux.get<float>(static_cast<std::size_t>(out));  // (out)
        cuda::column_sums(dy.data(), dy.format(), B, out, sums, m.s());
        cuda::accumulate(sums, round_through, add, db->data(), db->format(), db->size(), counts,
                         m.s());
    }
};

void CudaBackend::linear_backward_input(const Tensor& dy, const Tensor& w, Format compute,
                                        Tensor& dx) {
    linear_backward_parts(dy, nullptr, &w, compute, Format::fp32, nullptr, nullptr,
                          Accumulate::overwrite, &dx);
}

void CudaBackend::linear_backward_weight(const Tensor& dy, const Tensor& x, Format compute,
                                         Format round_through, Tensor& dw, Tensor* db,
                                         Accumulate acc) {
    linear_backward_parts(dy, &x, nullptr, compute, round_through, &dw, db, acc, nullptr);
}

void CudaBackend::linear_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                  Format compute, Format round_through, Tensor& dw, Tensor* db,
                                  Accumulate acc, Tensor* dx) {
    linear_backward_parts(dy, &x, &w, compute, round_through, &dw, db, acc, dx);
}

void CudaBackend::linear_backward_parts(const Tensor& dy, const Tensor* x, const Tensor* w,
                                        Format compute, Format round_through, Tensor* dw,
                                        Tensor* db, Accumulate acc, Tensor* dx) {
    require_exact_accumulation(accumulation());
    require_own(this, {&dy, x, w, dw, db, dx});
    check_backward_shapes(dy, x, w, dw, db, dx);
    if (fp8()) return fp8_backward(dy, x, w, round_through, dw, db, acc, dx);
    require_format_support(compute);
    m->use();
    const void* dyb = m->operand(dy, compute, m->op_b, m->sink(site(TensorKind::grad_operand)));
    if (dw) BackwardGemms::weight(*m, dyb, dy, *x, compute, round_through, *dw, db,
                                  acc == Accumulate::add, m->sink(site(TensorKind::grad_weight)));
    if (dx) BackwardGemms::input(*m, dyb, *w, compute, dy.rows(), *dx,
                                 m->sink(site(TensorKind::grad_input)));
}

// The CPU backend's fp8_backward: dy cast and recorded once (MXFP8: blocked along rows for dx and
// down columns for dw), w and x cast again with the forward pass's scales, uncounted.
void CudaBackend::fp8_backward(const Tensor& dy, const Tensor* x, const Tensor* w,
                               Format round_through, Tensor* dw, Tensor* db, Accumulate acc,
                               Tensor* dx) {
    m->use();
    const Fp8Gemm& g = *fp8();
    const bool block = g.recipe == Fp8Recipe::block;
    const int B = dy.rows(), out = dy.cols();
    core::Fp8Record* dy_record = m->fp8_record(site(), layer(), Fp8Tensor::dy);
    const Sink dy_counts = m->sink(site(TensorKind::grad_operand));
    const float* dyb = nullptr;  // column-major (out, B)
    if (dx) {
        dyb = m->fp8_operand(dy, g, Fp8Tensor::dy, true, m->op_b, dy_counts, dy_record);
        const int in = w->cols();
        const float* wa = m->fp8_operand(*w, g, Fp8Tensor::w, false, m->op_a, nullptr, nullptr);
        float* c = m->acc.get<float>(static_cast<std::size_t>(B) * in);  // column-major (in, B)
        m->gemm.run(GemmInput::fp32, false, false, in, B, out, wa, in, dyb, out, c, in);
        if (!block)
            cuda::fp8_descale(c, static_cast<std::size_t>(B) * in, m->fp8_slot(Fp8Tensor::dy),
                              m->fp8_slot(Fp8Tensor::w), m->s());
        cuda::encode(c, dx->format(), dx->data(), dx->size(), m->sink(site(TensorKind::grad_input)),
                     m->s());
    }
    if (!dw) return;
    if (!dyb)
        dyb = m->fp8_operand(dy, g, Fp8Tensor::dy, !block, m->op_b, dy_counts, dy_record);
    else if (block)
        dyb = m->fp8_operand(dy, g, Fp8Tensor::dy, false, m->fp8_op, nullptr, nullptr);
    const int in = x->cols();
    const float* xa = m->fp8_operand(*x, g, Fp8Tensor::x, false, m->op_a, nullptr, nullptr);
    float* values = m->acc.get<float>(dw->size());  // column-major (in, out) = dw
    m->gemm.run(GemmInput::fp32, false, true, in, out, B, xa, in, dyb, out, values, in);
    if (!block)
        cuda::fp8_descale(values, dw->size(), m->fp8_slot(Fp8Tensor::dy), m->fp8_slot(Fp8Tensor::x),
                          m->s());
    const Sink counts = m->sink(site(TensorKind::grad_weight));
    const bool add = acc == Accumulate::add;
    cuda::accumulate(values, round_through, add, dw->data(), dw->format(), dw->size(), counts,
                     m->s());
    if (!db) return;
    float* sums = m->aux.get<float>(static_cast<std::size_t>(out));  // (out)
    cuda::column_sums(dy.data(), dy.format(), B, out, sums, m->s());
    cuda::accumulate(sums, round_through, add, db->data(), db->format(), db->size(), counts, m->s());
}

// ---- element-wise and per-row ops --------------------------------------------------------------

void CudaBackend::activation_forward(Activation a, const Tensor& z, Tensor& h) {
    require_own(this, {&z, &h});
    require(z.size() == h.size(), "activation_forward: shapes differ");
    m->use();
    cuda::activation_forward(a, z.data(), z.format(), h.data(), h.format(), z.size(),
                             m->sink(site()), m->s());
}

void CudaBackend::activation_backward(Activation a, const Tensor& z, const Tensor& dh, Tensor& dz) {
    require_own(this, {&z, &dh, &dz});
    require(z.size() == dh.size() && z.size() == dz.size(), "activation_backward: shapes differ");
    m->use();
    cuda::activation_backward(a, z.data(), z.format(), dh.data(), dh.format(), dz.data(),
                              dz.format(), z.size(), m->sink(site()), m->s());
}

void CudaBackend::layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    Tensor& y, Tensor& mean, Tensor& rstd) {
    require_own(this, {&x, &gamma, &beta, &y, &mean, &rstd});
    const int B = x.rows(), D = x.cols();
    require(y.rows() == B && y.cols() == D && gamma.size() == static_cast<std::size_t>(D) &&
                beta.size() == static_cast<std::size_t>(D),
            "layernorm_forward: shapes do not match");
    require(mean.format() == Format::fp32 && rstd.format() == Format::fp32 &&
                mean.size() == static_cast<std::size_t>(B) &&
                rstd.size() == static_cast<std::size_t>(B),
            "layernorm_forward: mean and rstd must be FP32 (B, 1)");
    m->use();
    cuda::layernorm_forward(x.data(), x.format(), gamma.data(), gamma.format(), beta.data(),
                            beta.format(), y.data(), y.format(), static_cast<float*>(mean.data()),
                            static_cast<float*>(rstd.data()), B, D, m->sink(site()), m->s());
}

void CudaBackend::layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                     const Tensor& rstd, const Tensor& dy, Tensor& dx,
                                     Tensor& dgamma, Tensor& dbeta, Accumulate acc) {
    require_own(this, {&x, &gamma, &mean, &rstd, &dy, &dx, &dgamma, &dbeta});
    const int B = x.rows(), D = x.cols();
    const auto d = static_cast<std::size_t>(D);
    require(dy.rows() == B && dy.cols() == D && dx.rows() == B && dx.cols() == D &&
                gamma.size() == d && dgamma.size() == d && dbeta.size() == d,
            "layernorm_backward: shapes do not match");
    require(mean.format() == Format::fp32 && rstd.format() == Format::fp32,
            "layernorm_backward: mean and rstd must be FP32");
    m->use();
    const Sink counts = m->sink(site());
    float* row_sums = m->aux.get<float>(2 * static_cast<std::size_t>(B));  // (2, B)
    float* sums = m->aux2.get<float>(2 * d);                               // dγ (D), dβ (D)
    cuda::layernorm_backward(
        x.data(), x.format(), gamma.data(), gamma.format(), static_cast<const float*>(mean.data()),
        static_cast<const float*>(rstd.data()), dy.data(), dy.format(), dx.data(), dx.format(),
        sums, sums + d, row_sums, B, D, counts, m->s());
    const bool add = acc == Accumulate::add;
    cuda::accumulate(sums, dgamma.format(), add, dgamma.data(), dgamma.format(), d, counts, m->s());
    cuda::accumulate(sums + d, dbeta.format(), add, dbeta.data(), dbeta.format(), d, counts,
                     m->s());
}

void CudaBackend::dropout(Tensor& h, float p, std::uint64_t seed) {
    require_own(this, {&h});
    m->use();
    cuda::dropout(h.data(), h.format(), p, core::dropout_keep_scale(p), seed, h.size(),
                  m->counters(site()), m->s());
}

// ---- losses ------------------------------------------------------------------------------------

void CudaBackend::softmax_cross_entropy(const Tensor& logits, std::span<const int> labels,
                                        ScaleBy scale, Tensor& dlogits) {
    require_own(this, {&logits, &dlogits});
    const int B = logits.rows(), C = logits.cols();
    require(dlogits.rows() == B && dlogits.cols() == C, "softmax_cross_entropy: shapes differ");
    require(C > 0, "softmax_cross_entropy: no classes");
    const std::vector<int> l = m->checked_labels(labels, B, C);
    m->use();
    const int* dl = m->upload_labels(l);
    float* row_loss = m->aux.get<float>(static_cast<std::size_t>(B));  // (B)
    const float inv_b = 1.0f / static_cast<float>(B);
    cuda::softmax_xent(logits.data(), logits.format(), dl, B, C, inv_b, scale,
                       &m->steps()->scaler, row_loss, dlogits.data(), dlogits.format(),
                       m->sink(site()), m->rec(), m->s());
}

void CudaBackend::mse(const Tensor& pred, const Tensor& target, ScaleBy scale, Tensor& dpred) {
    require_own(this, {&pred, &target, &dpred});
    require(pred.size() == target.size() && pred.size() == dpred.size(), "mse: shapes differ");
    m->use();
    const std::size_t n = pred.size();
    float* squared = m->aux.get<float>(n);  // (n)
    cuda::mse(pred.data(), pred.format(), target.data(), target.format(), n, scale,
              &m->steps()->scaler, squared, dpred.data(), dpred.format(), m->sink(site()),
              m->rec(), m->s());
}

double CudaBackend::accuracy(const Tensor& logits, std::span<const int> labels) {
    require_own(this, {&logits});
    const int B = logits.rows(), C = logits.cols();
    if (B == 0) return 0.0;
    require(C > 0, "accuracy: no classes");
    require(labels.size() >= static_cast<std::size_t>(B), "accuracy: fewer labels than rows");
    // Out-of-range labels simply never match (as on the CPU); clamp them away from the device.
    std::vector<int> l(labels.begin(), labels.begin() + B);
    for (int& v : l)
        if (v < 0 || v >= C) v = -1;
    m->use();
    CUDA_CHECK(cudaMemsetAsync(m->eval_counts.data(), 0, sizeof(Counts), m->s()));
    cuda::accuracy(logits.data(), logits.format(), m->upload_labels(l), B, C,
                   static_cast<Counts*>(m->eval_counts.data()), m->s());
    CUDA_CHECK(cudaMemcpyAsync(m->host_eval_counts.p, m->eval_counts.data(), sizeof(Counts),
                               cudaMemcpyDeviceToHost, m->s()));
    m->wait();
    return static_cast<double>(m->host_eval_counts.p->hits) / B;
}

// ---- gradients (the update pass: cuda_update.cpp) ---------------------------------------------------------------

void CudaBackend::scale(Tensor& t, float factor) {
    require_own(this, {&t});
    m->use();
    cuda::scale(t.data(), t.format(), factor, t.size(), m->s());
}

std::unique_ptr<Backend> make_cuda_backend(int device, CudaOptions options) {
    return std::make_unique<CudaBackend>(device, options);
}

}  // namespace mpx::cuda
