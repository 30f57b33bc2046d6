#include "engine/io/torch_export.hpp"

#include <cstdint>
#include <fstream>
#include <unistd.h>

#include "engine/base/error.hpp"
#include "engine/base/memory_budget.hpp"
#include "engine/base/quote.hpp"
#include "engine/config/backend_names.hpp"
#include "engine/config/run_plan.hpp"
#include "engine/core/op_math.hpp"
#include "engine/io/export.hpp"
#include "engine/io/npy.hpp"
#include "engine/model/dataset.hpp"
#include "engine/core/attention.hpp"
#include "engine/model/gpt.hpp"
#include "engine/model/model.hpp"
#include "engine/precision/format.hpp"
#include "engine/run/run.hpp"
#include "engine/run/session.hpp"

namespace mpx {
namespace {

// The framework whose configuration a preset's snippet is written for; none for static and none.
std::optional<Framework> snippet_framework(std::string_view preset) {
    if (auto f = enum_parse<Framework>(preset)) return f;
    if (preset == "deepspeed-legacy") return Framework::deepspeed;
    if (preset == "tf-keras-legacy") return Framework::keras;
    if (preset == "nemo") return Framework::megatron;
    return std::nullopt;
}

nlohmann::json layer_json(const LayerPrecision& p) {
    return {{"compute", to_string(p.compute)},           {"activation", to_string(p.activation)},
            {"weight", to_string(p.weight)},             {"grad_through", to_string(p.grad_through)},
            {"grad", to_string(p.grad)},                 {"master", p.master},
            {"unscaled", to_string(p.unscaled)},         {"state", to_string(p.state)}};
}

// autocast expresses a run whose every low-precision layer computes and stores in one format with
// FP32 weights (amp, selective, adaptive, a kept FP32 output layer); other runs are written as
// their working copies in that format (half-*, pure-*), or need no low precision at all.
nlohmann::json autocast_of(const std::vector<LayerPrecision>& layers) {
    std::optional<Format> low;
    for (const LayerPrecision& p : layers) {
        if (p.weight != Format::fp32) return nullptr;
        if (p.compute == Format::fp32 || p.compute == Format::tf32) continue;
        if (p.activation != p.compute || (low && *low != p.compute)) return nullptr;
        low = p.compute;
    }
    if (!low) return nullptr;
    return std::string(to_string(*low));
}

struct Folder {
    std::filesystem::path dir;
    std::vector<std::string> files;
    void write(const std::string& name, const std::string& bytes) {
        const auto path = dir / name;
        std::filesystem::create_directories(path.parent_path());
        std::ofstream f(path, std::ios::binary);
        f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        f.close();
        if (!f) throw IoError("cannot write " + path.string());
        files.push_back(name);
    }
};

std::vector<long long> shape_of(const RowMatrix& m) { return {static_cast<long long>(m.rows()), static_cast<long long>(m.cols())}; }
std::string npy_of(const RowMatrix& m) {
    return npy_floats(shape_of(m), std::span<const float>(m.data(), static_cast<std::size_t>(m.size())));
}
std::string npy_labels(const std::vector<int>& y) {
    std::vector<std::int32_t> v(y.begin(), y.end());
    return npy_ints({static_cast<long long>(v.size())}, v);
}

// The per-step files grow with the steps: a learning rate, the batches' indices and, with dropout,
// a byte per mask element. Each is built in memory and then as its .npy text, so twice its size is
// held at once. Refused before the data set is made, naming the settings that size it.
void check_export_size(const SessionConfig& cfg) {
    const std::uint64_t draws = saturating_mul(saturating_mul(static_cast<std::uint64_t>(cfg.steps),
                                                              static_cast<std::uint64_t>(cfg.train.accumulation)),
                                               static_cast<std::uint64_t>(cfg.train.batch));
    std::uint64_t per_draw = sizeof(std::int32_t);  // the batch index (the GPT: a window's start)
    if (cfg.model.dropout > 0.0f)
        for (std::size_t l = 1; l + 1 < cfg.model.sizes.size(); ++l) per_draw += static_cast<std::uint64_t>(cfg.model.sizes[l]);
    const std::uint64_t bytes = saturating_mul(draws, per_draw) + saturating_mul(static_cast<std::uint64_t>(cfg.steps), sizeof(float));
    const std::string what = "an export of " + std::to_string(cfg.steps) + " steps (" + byte_size(bytes) +
                             " of batches" + (cfg.model.dropout > 0.0f ? " and dropout masks" : "") + ")";
    const std::string fix = "lower steps (--steps), train.batch or train.accumulation";
    if (bytes > k_max_torch_export_bytes)
        throw ConfigError("steps", what + " is more than the " + byte_size(k_max_torch_export_bytes) +
                                       " an export may write; " + fix);
    check_memory(saturating_mul(bytes, 2), "steps", what, fix);
}

// The GPT's part of session.json and its data: the text's token ids, the held-out windows, the
// initial weights by nanoGPT's parameter names, each parameter's site layer, and per run the
// formats of the stream between ops (gpt.hpp), so the script repeats none of mpx's rules.
void write_gpt(const SessionConfig& cfg, const TextCorpus& text, const InitialWeights& init, nlohmann::json& s, Folder& f) {
    const GptConfig& g = cfg.model.gpt;
    const core::AttentionFactors fac = core::attention_factors(cfg.model.attention.scale, g.n_embd / g.n_head);
    const std::vector<std::string> names = gpt_param_names(g, cfg.model.attention.qk_norm);
    const std::vector<int> layers = gpt_param_layers(g, cfg.model.attention.qk_norm);
    nlohmann::json params = nlohmann::json::array();
    for (std::size_t i = 0; i < names.size(); ++i) {
        const RowMatrix& t = init.tensors[i];
        params.push_back({{"name", names[i]}, {"layer", layers[i]}, {"norm", is_gpt_norm_param(names[i])}});
        // nn.Module's shapes: biases and LayerNorm's γ, β are vectors.
        const bool vector = t.rows() == 1 && names[i].find("wpe") == std::string::npos;
        f.write("data/init/" + names[i] + ".npy",
                vector ? npy_floats({static_cast<long long>(t.size())}, std::span<const float>(t.data(), static_cast<std::size_t>(t.size())))
                       : npy_of(t));
    }
    s["model"] = {{"kind", "gpt"},
                  {"n_layer", g.n_layer},
                  {"n_head", g.n_head},
                  {"n_embd", g.n_embd},
                  {"block_size", g.block_size},
                  {"vocab_size", g.vocab},
                  {"tie_embeddings", g.tie_embeddings},
                  {"layernorm_eps", core::k_layernorm_eps},
                  {"autocast_policy", to_string(cfg.model.autocast)},
                  {"attention",
                   {{"scale", to_string(cfg.model.attention.scale)},
                    {"q_factor", fac.q},
                    {"k_factor", fac.k},
                    {"scores_factor", fac.scores},
                    {"softmax", to_string(cfg.model.attention.softmax)},
                    {"softcap", cfg.model.attention.softcap},
                    {"qk_norm", cfg.model.attention.qk_norm}}},
                  {"norm", {{"stats", to_string(cfg.model.norm_stats)}}},
                  {"params", std::move(params)}};
    s["text"] = {{"source", text.source}, {"characters", text.characters()}, {"train_size", text.train_size},
                 {"vocab", text.vocab}};
    std::vector<std::int32_t> ids(text.ids.begin(), text.ids.end());
    f.write("data/tokens.npy", npy_ints({static_cast<long long>(ids.size())}, ids));
    const std::vector<std::size_t> eval = eval_window_starts(text, g.block_size, cfg.train.batch, cfg.data.n_test);
    const std::vector<std::int32_t> starts(eval.begin(), eval.end());
    f.write("data/eval_starts.npy", npy_ints({static_cast<long long>(starts.size())}, starts));
}

}  // namespace

std::string torch_export_refusal(const SessionConfig& cfg, const std::string& label) {
    const RunInfo info = resolve_run(label, cfg);
    if (is_fp4(info.spec.mode))
        return "FP4 runs are not supported by this exporter (PyTorch 1.13 has no FP4 format; "
               "`mpx-cli run --snippet transformer-engine` prints Transformer Engine's NVFP4 recipe and Megatron's flags)";
    if (is_fp8(info.spec.mode))
        return "FP8 runs are not supported by this exporter (PyTorch's own FP8 training, torchao's float8, needs "
               "PyTorch 2.x on an FP8 GPU, and its scaling recipes are not mpx's; Transformer Engine's recipe is what "
               "`mpx-cli run --snippet transformer-engine` prints)";
    if (info.spec.mode == Mode::adaptive)
        return "adaptive runs are not supported by this exporter (mpx's own rule switches them between AMP and FP32 "
               "as they train, which the script does not carry; export amp-" +
               std::string(to_string(info.spec.low)) + " and fp32 instead)";
    if (info.write_back != WriteBack::nearest)
        return "its " + std::string(to_string(info.write_back)) + " write-back is not supported by this exporter";
    if (!info.accumulation.all_exact())
        return "its accumulation model is not supported by this exporter (PyTorch's GEMMs accumulate as its "
               "library does)";
    if (!info.spec.gpt_switches.empty())
        return "its GPT switch +" + std::string(enum_name(info.spec.gpt_switches.front())) +
               " is not carried by this exporter (the script's attention, norm and autocast settings are the "
               "session's, for every run); export the session with the switch set for all, e.g. --set "
               "attention.scale=before";
    return {};
}

std::vector<std::string> export_torch(const SessionConfig& cfg, const std::filesystem::path& out_as_given) {
    if (out_as_given.empty()) throw ConfigError("--out", "name the folder to write");
    // Where it lands, "." and ".." resolved ("dir/" names the folder "dir"); messages show the name as given.
    const std::string named = quoted_text(out_as_given.string());
    std::filesystem::path out = std::filesystem::absolute(out_as_given).lexically_normal();
    if (!out.has_filename()) out = out.parent_path();
    if (!out.has_filename() || out == out.root_path())
        throw ConfigError("--out", named + " is the root folder; name a new folder");
    validate(cfg);
    if (cfg.model.kind == ModelKind::gpt && cfg.model.dropout > 0.0f)
        throw ConfigError("model.dropout", "the GPT's dropout masks come from mpx's counter-based RNG at four places a "
                                           "block, which PyTorch's RNG cannot reproduce and train.py does not read; export "
                                           "it with --set model.dropout=0");
    if (cfg.model.kind == ModelKind::gpt && cfg.train.gradient_penalty > 0.0)
        throw ConfigError("train.gradient_penalty", "mpx trains no gradient penalty on the GPT (its R-rules are the MLP's "
                                                    "only), so the script would have nothing to match; export it with "
                                                    "--set train.gradient_penalty=0");
    std::string refused;  // every run that cannot be exported, in one line
    int count = 0;
    for (const std::string& label : cfg.runs)
        if (const std::string why = torch_export_refusal(cfg, label); !why.empty()) {
            refused += (refused.empty() ? "" : "; ") + label + ": " + why;
            ++count;
        }
    if (count > 0)
        throw ConfigError("runs", refused + (count == 1 ? "; leave it out with --precision" : "; leave them out with --precision"));
    if (!cfg.live_changes.empty())
        throw ConfigError("live_changes", "a session with settings changed while it trained is not exported; "
                                          "export its configuration without them");
    std::error_code ec;
    const bool existing = std::filesystem::exists(out, ec);
    if (existing && (!std::filesystem::is_directory(out, ec) || !std::filesystem::is_empty(out, ec)))
        throw ConfigError("--out", named + " exists and is not an empty folder; name a new folder");
    const auto parent = out.parent_path();
    if (!std::filesystem::is_directory(parent, ec))
        throw ConfigError("--out", "the folder of " + named + " does not exist");

    const long long steps = cfg.steps;
    const int accum = cfg.train.accumulation, batch = cfg.train.batch, L = cfg.model.layers();
    check_export_size(cfg);

    const bool gpt = cfg.model.kind == ModelKind::gpt;
    SessionConfig with_vocab = cfg;  // the GPT's vocabulary is the text's
    std::shared_ptr<const TextCorpus> text;
    Dataset data;
    if (gpt) {
        text = read_session_text(with_vocab);
        data.text = text;
        data.features = cfg.model.gpt.block_size;
        data.outputs = with_vocab.model.gpt.vocab;
        data.loss = LossKind::cross_entropy;
    } else {
        data = make_dataset(cfg.data);
    }
    const InitialWeights init = init_weights(with_vocab.model, cfg.seed);

    // A new folder is written beside it and renamed into place whole. An empty folder that exists is
    // kept and filled (it may be the shell's working folder, `--out .`: a rename over it would leave
    // the user in a deleted folder), from a temporary inside it, on its own file system.
    Folder f;
    f.dir = existing ? out / (".export.tmp-" + std::to_string(::getpid()))
                     : parent / (out.filename().string() + ".tmp-" + std::to_string(::getpid()));
    std::filesystem::remove_all(f.dir, ec);
    const TemporaryFolderGuard on_signal(f.dir);  // a SIGTERM mid-export leaves no OUT.tmp-<pid>/
    struct Cleanup {
        const std::filesystem::path& dir;
        bool done = false;
        ~Cleanup() {
            std::error_code e;
            if (!done) std::filesystem::remove_all(dir, e);
        }
    } cleanup{f.dir};
    std::filesystem::create_directories(f.dir);

    nlohmann::json s;
    s["format"] = "mpx-export-torch";
    s["version"] = 1;
    s["program"] = std::string("mpx ") + MPX_VERSION;
    s["preset"] = cfg.name;
    s["steps"] = steps;
    s["seed"] = cfg.seed;
    s["eval_every"] = cfg.eval_every;
    s["loss"] = data.loss == LossKind::cross_entropy ? "cross_entropy" : "mse";
    s["features"] = data.features;
    s["outputs"] = data.outputs;
    if (!gpt) s["model"] = {{"sizes", cfg.model.sizes},
                  {"activation", to_string(cfg.model.activation)},
                  {"layernorm", cfg.model.layernorm},
                  {"layernorm_eps", core::k_layernorm_eps},
                  {"dropout", cfg.model.dropout},
                  {"dropout_keep_scale", cfg.model.dropout > 0.0f ? core::dropout_keep_scale(cfg.model.dropout) : 1.0f}};
    const TrainConfig& t = cfg.train;
    s["train"] = {{"batch", batch},
                  {"accumulation", accum},
                  {"clip_norm", t.clip_norm},
                  {"loss_weight", t.loss_weight},
                  {"optimizer", to_string(t.optimizer)},
                  {"momentum", t.momentum},
                  {"beta1", t.beta1},
                  {"beta2", t.beta2},
                  {"eps", t.eps},
                  {"weight_decay", t.weight_decay},
                  {"advance_on_skip", t.advance_on_skip},
                  {"z_loss", t.z_loss}};
    // PyTorch's gradient-penalty recipe (docs/penalty.md): λ and the form; each run's two steps of
    // it below, where a mistake switch or a run's suffix drops one (as Run::setup_penalty resolves them).
    if (t.gradient_penalty > 0.0) {
        s["train"]["gradient_penalty"] = t.gradient_penalty;
        s["train"]["penalty"] = std::string(enum_name(t.penalty));
    }
    // The learning rate after k schedule steps, as the optimizer is given it (FP32), for k < steps.
    std::vector<float> lrs;
    for (long long k = 0; k < steps; ++k) lrs.push_back(static_cast<float>(lr_at(t, k, steps)));
    f.write("data/lr.npy", npy_floats({steps}, lrs));

    nlohmann::json runs = nlohmann::json::array();
    for (const std::string& label : cfg.runs) {
        const RunInfo info = resolve_run(label, cfg);
        const std::vector<LayerPrecision> prec = run_precisions(info, with_vocab, init);
        nlohmann::json r;
        r["label"] = info.label;
        r["precision"] = info.spec.precision();
        r["mode"] = to_string(info.spec.mode);
        r["layers"] = nlohmann::json::array();
        for (const LayerPrecision& p : prec) r["layers"].push_back(layer_json(p));
        r["autocast"] = autocast_of(prec);
        if (gpt) {  // the formats of the stream between the GPT's ops, per site layer
            nlohmann::json norm = nlohmann::json::array(), stats = nlohmann::json::array(), probs = nlohmann::json::array();
            for (const LayerPrecision& p : prec) {
                norm.push_back(to_string(gpt_norm_format(cfg.model, p)));
                stats.push_back(to_string(gpt_norm_stats_format(cfg.model, p)));
                probs.push_back(to_string(gpt_probs_format(cfg.model, p)));
            }
            r["gpt_formats"] = {{"residual", to_string(prec.front().weight)}, {"norm", std::move(norm)},
                                {"norm_stats", std::move(stats)}, {"probs", std::move(probs)}};
        }
        nlohmann::json sc;
        to_json(sc, info.scaler);
        r["scaler"] = sc;
        r["skips_on_inf"] = LossScaler(info.scaler).skips_on_inf();
        if (t.gradient_penalty > 0.0) {
            const auto mistake = info.spec.penalty_mistake;
            const bool scaled = t.penalty_scaled_grads && mistake != PenaltyMistake::unscaled_grads;
            r["penalty"] = {{"scaled_grads", scaled},
                            {"unscale", scaled && t.penalty_unscale && mistake != PenaltyMistake::no_unscale}};
        }
        if (info.scaler.kind == ScalerKind::dynamic) {
            const ScalerPresetSource src = scaler_preset_source(info.scaler.preset == "custom" ? "pytorch" : info.scaler.preset);
            r["scaler_follows"] = {{"framework", src.framework}, {"source", src.source}};
            if (const auto fw = snippet_framework(info.scaler.preset))
                r["snippet"] = {{"framework", to_string(*fw)}, {"text", framework_snippet(info.scaler, *fw)}};
        }
        runs.push_back(std::move(r));
    }
    s["runs"] = std::move(runs);
    s["config"] = to_json(cfg);
    // The configuration is there to read (and for compare --expect's settings check): train.py trains
    // from model, train, runs and data/, which the engine derived from it. Editing it changes nothing.
    s["config_note"] = "for reading only: train.py trains from model, train, runs and the data/ files, which mpx derived "
                       "from this configuration; to change a setting, change it in mpx and export again";

    // The data, the initial weights, every step's batches and masks.
    if (gpt) write_gpt(with_vocab, *text, init, s, f);
    else f.write("data/x_train.npy", npy_of(data.x_train));
    if (!gpt) {
        f.write("data/x_test.npy", npy_of(data.x_test));
        if (data.loss == LossKind::cross_entropy) {
            f.write("data/y_train.npy", npy_labels(data.y_train));
            f.write("data/y_test.npy", npy_labels(data.y_test));
        } else {
            f.write("data/t_train.npy", npy_of(data.t_train));
            f.write("data/t_test.npy", npy_of(data.t_test));
        }
    }
    for (int i = 0; i < L && !gpt; ++i) {
        const std::string name = "data/init_fc" + std::to_string(i + 1);
        f.write(name + "_weight.npy", npy_of(init.w[static_cast<std::size_t>(i)]));
        const RowMatrix& b = init.b[static_cast<std::size_t>(i)];
        f.write(name + "_bias.npy", npy_floats({static_cast<long long>(b.size())}, std::span<const float>(b.data(), static_cast<std::size_t>(b.size()))));
    }
    BatchSampler sampler(sampler_examples(data, cfg.model.gpt.block_size), static_cast<std::size_t>(batch), cfg.seed);
    std::vector<std::int32_t> order;
    order.reserve(static_cast<std::size_t>(steps * accum * batch));
    for (long long k = 0; k < steps * accum; ++k)
        for (int i : sampler.next()) order.push_back(i);
    f.write("data/batches.npy", npy_ints({steps, accum, batch}, order));
    if (cfg.model.dropout > 0.0f) {
        for (int l = 0; l + 1 < L; ++l) {
            const int width = cfg.model.sizes[static_cast<std::size_t>(l) + 1];
            const std::size_t n = static_cast<std::size_t>(batch) * static_cast<std::size_t>(width);
            std::vector<std::uint8_t> keep(static_cast<std::size_t>(steps * accum) * n);
            std::size_t at = 0;
            for (long long step = 0; step < steps; ++step)
                for (int k = 0; k < accum; ++k) {
                    const std::uint64_t seed = dropout_layer_seed(dropout_step_seed(cfg.seed, step, k), l);
                    for (std::size_t e = 0; e < n; ++e) keep[at++] = core::dropout_keeps(cfg.model.dropout, seed, e) ? 1 : 0;
                }
            f.write("data/dropout_fc" + std::to_string(l + 1) + ".npy", npy_bytes_u8({steps, accum, batch, width}, keep));
        }
    }
    f.write("session.json", s.dump(1) + "\n");
    const std::string_view script = torch_train_script();
    f.write("train.py", std::string(script));
    std::filesystem::permissions(f.dir / "train.py", std::filesystem::perms::owner_exec | std::filesystem::perms::group_exec |
                                                         std::filesystem::perms::others_exec,
                                 std::filesystem::perm_options::add, ec);

    if (!existing) {
        std::filesystem::rename(f.dir, out, ec);
        if (ec) throw IoError("cannot move the export into " + named + ": " + ec.message());
        cleanup.done = true;
        return f.files;
    }
    // Renames within one folder: a failure moves back what had moved, so the folder is left empty.
    std::vector<std::filesystem::path> entries, moved;
    for (const auto& e : std::filesystem::directory_iterator(f.dir)) entries.push_back(e.path().filename());
    for (const auto& e : entries) {
        std::filesystem::rename(f.dir / e, out / e, ec);
        if (ec) {
            const std::string why = ec.message();
            for (const auto& m : moved) std::filesystem::rename(out / m, f.dir / m, ec);
            throw IoError("cannot move the export into " + named + ": " + why);
        }
        moved.push_back(e);
    }
    return f.files;
}

}  // namespace mpx
