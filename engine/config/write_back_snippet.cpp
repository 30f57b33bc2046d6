// The write-back's library calls (engine/config/write_back_snippet.hpp).
#include "engine/config/write_back_snippet.hpp"

#include "engine/base/text.hpp"

namespace mpx {

std::string write_back_snippet(const RunInfo& run, const TrainConfig& t) {
    if (run.write_back == WriteBack::nearest) return {};
    const std::string lr = format_number(t.lr);
    const std::string dtype = run.spec.low == Format::bf16 ? "torch.bfloat16" : "torch.float16";
    std::string s = "# " + run.label + ": weights in " + dtype + " with no FP32 master (model.to(" + dtype + "))\n";
    if (run.write_back == WriteBack::kahan) {
        // optimi: kahan_sum defaults on for FP16/BF16 parameters (optimi/adam.py, optimi/sgd.py).
        const char* cls = t.optimizer == OptimizerKind::sgd ? "SGD" : t.optimizer == OptimizerKind::adam ? "Adam" : "AdamW";
        s += "# Kahan-compensated updates: optimi keeps a compensation buffer in the parameters' dtype\n";
        s += "import optimi\n";
        s += std::string("optimizer = optimi.") + cls + "(model.parameters(), lr=" + lr;
        if (t.optimizer == OptimizerKind::sgd && t.momentum > 0) s += ", momentum=" + format_number(t.momentum);
        if (t.weight_decay > 0) s += ", weight_decay=" + format_number(t.weight_decay);
        s += ", kahan_sum=True)\n";
        return s;
    }
    s += "# Stochastic rounding of the write-back (mpx's stream; torchao draws torch.randint words)\n";
    if (run.spec.low != Format::bf16)
        return s + "# no library call: torchao's and llm.c's stochastic rounding write BF16 only; FP16 needs "
                   "your own rounding of the FP32 update\n";
    if (t.optimizer == OptimizerKind::sgd)
        return s + "# no library call for SGD: torchao's bf16_stochastic_round comes with its Adam optimizers "
                   "(torchao.optim._Adam, _AdamW)\n";
    const char* cls = t.optimizer == OptimizerKind::adam ? "_Adam" : "_AdamW";
    s += "import torchao.optim\n";
    s += std::string("optimizer = torchao.optim.") + cls + "(model.parameters(), lr=" + lr;
    if (t.weight_decay > 0) s += ", weight_decay=" + format_number(t.weight_decay);
    s += ", bf16_stochastic_round=True)\n";
    return s;
}

}  // namespace mpx
