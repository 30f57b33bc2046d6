// libFuzzer target for every reader of text the user controls: a configuration file
// (parse_config_text), --set assignments (apply_overrides), a saved state (load_session_state; one
// that loads must save and load back to itself), a value of `mpx-cli format`, a run CSV as `mpx-cli compare` reads it (RunTable::parse) and a
// recorded trace and its histograms as `mpx-cli replay` reads them, a DeepSpeed or Megatron-LM log as `mpx-cli trace
// --from-deepspeed-log` / `--from-megatron-log` read them, a matrix as `mpx-cli gemm` and `quantize` read it, and a
// GPT's text (parse_text, what data.text_file reads). Rule: any input ends in a result or a typed error (ConfigError,
// IoError, CLI11's parse errors), never a crash, a sanitizer finding or another exception type.
// The first byte picks the reader; the rest is its text.
#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/commands.hpp"
#include "app/cli/matrix_io.hpp"
#include "engine/base/error.hpp"
#include "engine/config/session_config.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/io/run_compare.hpp"
#include "engine/io/trace.hpp"
#include "engine/model/text_corpus.hpp"
#include "engine/run/session.hpp"

namespace {

// A state may name any configuration; building one larger than this would measure the data
// generator's speed, not the reader.
bool small_enough(const nlohmann::json& j) {
    try {
        const mpx::SessionConfig c = mpx::session_config_from_json(j.at("config"));
        long long width = 0;
        for (int s : c.model.sizes) width = std::max<long long>(width, s);
        return c.data.n_train + c.data.n_test <= 4096 && width <= 256 && c.train.batch <= 256 &&
               c.model.sizes.size() <= 6;
    } catch (const std::exception&) {
        return true;  // load_state reports it
    }
}

void read_state(const std::string& text) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {  // not JSON, or a number beyond double
        return;
    }
    if (j.is_object() && j.contains("config") && !small_enough(j)) return;
    // A state that loads saves every field it read (FP8 amax histories, Kahan compensation and
    // compensation_max, scaler state, counts) within the ranges the reader accepts: it must load
    // again, and saving that gives the same state (issue 41, class 5).
    const nlohmann::json saved = mpx::save_state(*mpx::load_session_state(j));
    if (mpx::save_state(*mpx::load_session_state(saved)) != saved) __builtin_trap();
}

void format_value(const std::string& text) {
    CLI::App app;
    mpx::cli::add_format_command(app);
    std::vector<std::string> args{"mpx-cli", "format", "--csv", "--", text};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    std::ostringstream sink;
    auto* out = std::cout.rdbuf(sink.rdbuf());
    auto* err = std::cerr.rdbuf(sink.rdbuf());
    try {
        app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::Error&) {
    }
    std::cout.rdbuf(out);
    std::cerr.rdbuf(err);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    try {
        switch (data[0] % 11) {
            case 0: (void)mpx::parse_config_text(text, "fuzz"); break;
            case 1: {
                mpx::SessionConfig c;
                std::vector<std::string> sets;
                std::stringstream ss(text);
                for (std::string line; std::getline(ss, line);) sets.push_back(line);
                mpx::apply_overrides(c, sets);
                // The result must survive the round trip every export makes.
                (void)mpx::session_config_from_json(nlohmann::json::parse(mpx::to_json(c).dump()));
                break;
            }
            case 2: read_state(text); break;
            case 3: format_value(text); break;
            case 4: {  // a table compared with itself must agree, and its report must be written
                const mpx::RunTable t = mpx::RunTable::parse(text, "fuzz.csv");
                const mpx::CompareReport r = mpx::compare_runs(t, t, {});
                if (!r.agree()) __builtin_trap();
                (void)mpx::report_text(r);
                (void)mpx::report_csv(r);
                break;
            }
            case 5: {  // a trace that reads is replayed, and its replay written
                const mpx::Trace t = mpx::parse_trace(text, "fuzz.csv");
                const mpx::ReplayResult r = mpx::replay_trace(t, mpx::scaler_preset("deepspeed"));
                (void)mpx::replay_csv(t, r);
                break;
            }
            case 7: {  // a trace's histograms, against a two-step trace (steps 0 and 40)
                mpx::Trace t = mpx::parse_trace(
                    "# mpx-trace 1; fuzz\nstep,scale,found_inf,skipped,loss,amax,amax_site,censored,forward_nonfinite,"
                    "forward_site,grad_norm,lr\n0,1024,0,0,1,0.5,fc1,0,0,,1,0.01\n40,1024,0,0,1,0.5,fc1,0,0,,1,0.01\n",
                    "fuzz.csv");
                mpx::parse_trace_histograms(t, text, "fuzz.histograms.csv");
                // Read counts add up without wrapping (the reader refuses a file whose total passes
                // 2^64 - 1), and every share a replay gives lies in [0, 1] (issue 41, class 6).
                unsigned long long total = 0;
                for (const mpx::TraceHistogram& h : t.histograms) {
                    for (const unsigned long long c : h.bins)
                        if (__builtin_add_overflow(total, c, &total)) __builtin_trap();
                    if (__builtin_add_overflow(total, h.zeros, &total) || __builtin_add_overflow(total, h.nonfinite, &total))
                        __builtin_trap();
                }
                for (const mpx::ReplayStep& s : mpx::replay_trace(t, mpx::scaler_preset("static")).steps)
                    if (s.underflow_share && !(*s.underflow_share >= 0.0 && *s.underflow_share <= 1.0)) __builtin_trap();
                break;
            }
            case 8: (void)mpx::cli::parse_matrix(text, "fuzz.csv", "--in"); break;  // gemm's and quantize's matrices
            case 9: {  // a Megatron-LM log likewise
                const mpx::Trace t = mpx::trace_from_megatron_log(text, "fuzz.log", mpx::scaler_preset("megatron"));
                (void)mpx::parse_trace(mpx::trace_csv(t), "fuzz.csv");
                break;
            }
            case 6: {  // a DeepSpeed log rebuilt as a trace must read back from its own CSV
                const mpx::Trace t = mpx::trace_from_deepspeed_log(text, "fuzz.log", mpx::scaler_preset("deepspeed"));
                (void)mpx::parse_trace(mpx::trace_csv(t), "fuzz.csv");
                break;
            }
            case 10: {  // a text: ids and vocabulary give back its bytes (a leading BOM skipped)
                const mpx::TextCorpus c = mpx::parse_text(text, "fuzz.txt", 1);
                std::string back;
                for (const std::uint16_t id : c.ids) back += c.vocab.at(id);
                const std::string_view body = std::string_view(text).starts_with("\xEF\xBB\xBF")
                                                  ? std::string_view(text).substr(3) : std::string_view(text);
                if (back != body || c.train_size != c.characters() * 9 / 10) __builtin_trap();
                (void)mpx::bigram_entropy(c);
                break;
            }
        }
    } catch (const mpx::ConfigError&) {
    } catch (const mpx::IoError&) {
    }
    return 0;
}
