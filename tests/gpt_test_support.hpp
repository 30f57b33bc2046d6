// What the GPT's session tests share: a GPT small enough to train in a blink.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/run/session.hpp"

namespace mpx::test {

// 2 blocks, 2 heads, width 32, context 16, batch 4 on Debian's fortunes; held-out loss every 5 steps.
inline SessionConfig small_gpt(std::vector<std::string> runs, long long steps) {
    SessionConfig c;
    c.model.kind = ModelKind::gpt;
    c.model.gpt = GptConfig{2, 2, 32, 16, true, 0};
    c.data.kind = DatasetKind::text;
    c.data.n_test = 32;
    c.train.batch = 4;
    c.train.optimizer = OptimizerKind::adamw;
    c.train.lr = 1e-3;
    c.eval_every = 5;
    c.steps = steps;
    c.runs = std::move(runs);
    return c;
}

}  // namespace mpx::test
