// Steps that overlap: the pool's chains (engine/base/parallel.hpp) run each chain's pieces in order,
// one at a time, and start one chain's next piece while another still runs this one; a session's
// step_ahead on several threads trains its runs that way (engine/run/session_overlap.cpp) and still
// gives the records of lockstep, in step order, bit for bit.
#include "engine/base/parallel.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/run/session.hpp"
#include "session_test_support.hpp"

#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

using namespace mpx;
using namespace mpx::test;

namespace {

// records[step][run] of a whole session through step_ahead (finish_pending at the end), and how
// many calls left a step pending.
std::vector<std::vector<StepRecord>> train_ahead(Session& s, int* left_pending = nullptr) {
    std::vector<std::vector<StepRecord>> out;
    while (!s.finished()) {
        for (auto& recs : s.step_ahead()) out.push_back(recs);
        if (left_pending) *left_pending += s.pending();
    }
    if (auto recs = s.finish_pending(); !recs.empty()) out.push_back(recs);
    return out;
}

}  // namespace

class TestOverlappingSteps : public QObject {
    Q_OBJECT

private slots:
    void cleanup() { set_thread_count(1); }

    // Chain 0's piece 0 waits until chain 1 has started its piece 1, which only a thread done with
    // chain 1's piece 0 can start while chain 0's piece 0 still runs: a barrier between pieces 0
    // and 1 would keep it waiting (5 s, then it gives up and the test fails).
    void a_chain_starts_its_next_piece_while_another_finishes_this_one() {
        set_thread_count(2);
        std::atomic<bool> started_1_1{false}, waited_in_vain{false};
        Chains chains(2, [&](std::size_t chain, long long piece) {
            if (chain == 1 && piece == 1) started_1_1 = true;
            if (chain == 0 && piece == 0) {
                const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                while (!started_1_1 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
                waited_in_vain = !started_1_1;
            }
        });
        chains.restart(0);
        chains.open_to(1);
        chains.wait_for(1);
        QVERIFY(started_1_1);
        QVERIFY(!waited_in_vain);
    }

    // Every chain's pieces run once each, in order, never two of one chain at once, and none
    // before it is opened; on 1, 2 and 3 threads, opened one number at a time as a session does.
    void each_chain_runs_its_pieces_once_in_order() {
        for (unsigned threads : {1u, 2u, 3u}) {
            set_thread_count(threads);
            constexpr std::size_t k_chains = 4;
            constexpr long long k_first = 5, k_pieces = 200;
            std::vector<std::vector<long long>> seen(k_chains);
            std::vector<std::atomic<int>> inside(k_chains);
            std::atomic<long long> opened{k_first - 1};
            std::atomic<int> overlapped{0}, early{0};
            Chains chains(k_chains, [&](std::size_t c, long long piece) {
                overlapped += inside[c].fetch_add(1) != 0;
                early += piece > opened.load();
                seen[c].push_back(piece);  // one piece of a chain at a time: no lock needed
                inside[c].fetch_sub(1);
            });
            chains.restart(k_first);
            for (long long p = k_first; p < k_first + k_pieces; ++p) {
                opened = p;
                chains.open_to(p);
                if (p > k_first) chains.wait_for(p - 1);  // one piece number left running, as step_ahead
            }
            chains.wait_for(k_first + k_pieces - 1);
            QCOMPARE(overlapped.load(), 0);
            QCOMPARE(early.load(), 0);
            for (const auto& s : seen) {
                QCOMPARE(static_cast<long long>(s.size()), k_pieces);
                for (long long k = 0; k < k_pieces; ++k) QCOMPARE(s[static_cast<std::size_t>(k)], k_first + k);
            }
        }
    }

    // A piece that throws: pieces of a lower number still run, none of a later number starts once
    // it has thrown; wait_for below it returns, at or above it rethrows that exception; restart
    // clears it.
    void a_piece_that_throws_stops_its_number_and_later() {
        set_thread_count(3);
        std::mutex m;
        std::vector<std::pair<std::size_t, long long>> ran;
        Chains chains(3, [&](std::size_t c, long long piece) {
            {
                std::lock_guard<std::mutex> lock(m);
                ran.emplace_back(c, piece);
            }
            if (c == 1 && piece == 2) throw std::runtime_error("chain 1, piece 2");
        });
        chains.restart(0);
        chains.open_to(2);
        chains.wait_for(1);
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, chains.wait_for(2));
        chains.open_to(4);
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, chains.wait_for(4));
        chains.stop();
        // Pieces 0 and 1 of every chain, chain 1's piece 2, and piece 2 of the others only where
        // it started before chain 1's threw.
        int below = 0;
        for (const auto& [c, piece] : ran) {
            QVERIFY2(piece <= 2, qPrintable(QStringLiteral("chain %1 ran piece %2").arg(c).arg(piece)));
            below += piece < 2;
        }
        QCOMPARE(below, 6);
        QVERIFY(std::count(ran.begin(), ran.end(), std::pair<std::size_t, long long>(1, 2)) == 1);
        chains.restart(10);
        ran.clear();
        chains.open_to(10);
        chains.wait_for(10);
        QCOMPARE(ran.size(), std::size_t(3));
    }

    // The default preset (evaluation every 50 steps, histograms, three runs of unequal cost):
    // overlapping on 2 and 3 threads, the records and the histograms are lockstep's on one thread,
    // and a step is left pending on most calls.
    void the_default_preset_overlapping_gives_the_bits_of_lockstep() {
        SessionConfig c = load_config("default");
        c.steps = 230;
        set_thread_count(1);
        Session one(c);
        const auto expected = train(one, c.steps);
        for (unsigned threads : {2u, 3u}) {
            set_thread_count(threads);
            Session s(c);
            int left_pending = 0;
            const auto got = train_ahead(s, &left_pending);
            QVERIFY2(differs(got, expected).isEmpty(), qPrintable(differs(got, expected)));
            QVERIFY2(left_pending > c.steps * 9 / 10, qPrintable(QString::number(left_pending)));
            for (std::size_t r = 0; r < s.run_count(); ++r) {
                const auto& a = one.run(r).histograms().snapshots();
                const auto& b = s.run(r).histograms().snapshots();
                QVERIFY(!a.empty());
                QCOMPARE(b.size(), a.size());
                for (std::size_t k = 0; k < a.size(); ++k) {
                    QCOMPARE(b[k].step, a[k].step);
                    QCOMPARE(b[k].layer_counts.size(), a[k].layer_counts.size());
                    QCOMPARE(std::memcmp(b[k].layer_counts.data(), a[k].layer_counts.data(),
                                         a[k].layer_counts.size() * sizeof(a[k].layer_counts[0])), 0);
                }
            }
        }
    }

    // A session reset, saved or destroyed with a step pending: reset waits for the step and
    // replays from step 0; destroying it waits too (the runs outlive their steps).
    void reset_or_destroyed_while_a_step_is_pending() {
        SessionConfig c = small_config({"fp32", "amp-fp16", "amp-bf16"}, 30);
        c.model.dropout = 0.1f;
        set_thread_count(1);
        Session one(c);
        const auto expected = train(one, c.steps);
        set_thread_count(2);
        Session s(c);
        for (int k = 0; k < 5; ++k) s.step_ahead();
        QVERIFY(s.pending());
        QVERIFY_THROWS_EXCEPTION(std::logic_error, s.step());
        s.reset();
        QVERIFY(!s.pending());
        QCOMPARE(s.steps_done(), 0LL);
        const auto again = train_ahead(s);
        QVERIFY2(differs(again, expected).isEmpty(), qPrintable(differs(again, expected)));
        auto gone = std::make_unique<Session>(c);
        for (int k = 0; k < 3; ++k) gone->step_ahead();
        QVERIFY(gone->pending());
        gone.reset();
        // A pending step finished by finish_pending, then trained on with step(): the same bits.
        Session mixed(c);
        std::vector<std::vector<StepRecord>> recs;
        while (mixed.steps_done() < 12) {
            for (auto& r : mixed.step_ahead()) recs.push_back(r);
        }
        if (auto r = mixed.finish_pending(); !r.empty()) recs.push_back(r);
        QCOMPARE(recs.size(), std::size_t(12));
        while (!mixed.finished()) recs.push_back(mixed.step());
        QVERIFY2(differs(recs, expected).isEmpty(), qPrintable(differs(recs, expected)));
    }
};

QTEST_APPLESS_MAIN(TestOverlappingSteps)
#include "test_overlapping_steps.moc"
