// RecordBuffer under real threads, the suite the TSan build runs (scripts/test.sh --deep): a
// producer appends records and starts new sessions while the consumer drains, as the engine worker
// and the window's timer do. Rule: every record drained belongs to the session drained with it,
// steps arrive in order within a session, and none is lost or doubled.
#include <QtTest>

#include <atomic>
#include <thread>

#include "ui/session/record_buffer.hpp"

using namespace mpx::gui;

class TestRecordBufferThreads : public QObject {
    Q_OBJECT

private slots:
    void drains_every_record_with_its_session_while_a_producer_appends() {
        RecordBuffer buffer;
        constexpr int k_sessions = 20, k_steps = 2000;
        std::atomic<bool> done{false};
        std::thread producer([&] {
            for (int s = 1; s <= k_sessions; ++s) {
                auto info = std::make_shared<SessionInfo>();
                info->generation = static_cast<quint64>(s);
                buffer.beginSession(info);
                for (int step = 0; step < k_steps; ++step) {
                    std::vector<mpx::StepRecord> recs(1);
                    recs[0].step = step;
                    recs[0].run = s;  // the session it was made in, to check against the drained info
                    buffer.append(recs);
                }
            }
            done = true;
        });
        long long drained = 0, last_step = -1;
        quint64 generation = 0;
        bool ok = true;
        while (!done || buffer.pending() > 0) {
            const Drained d = buffer.drain();
            if (!d.session) continue;
            if (d.session->generation != generation) generation = d.session->generation, last_step = -1;
            for (const auto& r : d.records) {
                ok = ok && static_cast<quint64>(r.run) == generation && r.step == last_step + 1;
                last_step = r.step;
                ++drained;
            }
        }
        producer.join();
        QVERIFY(ok);
        QCOMPARE(buffer.pending(), std::size_t(0));
        // A new session drops what the old one left undrained, so the count is at most the total;
        // the last session is always drained whole.
        QVERIFY(drained <= static_cast<long long>(k_sessions) * k_steps);
        QCOMPARE(last_step, static_cast<long long>(k_steps - 1));
        QCOMPARE(generation, static_cast<quint64>(k_sessions));
    }
};

QTEST_APPLESS_MAIN(TestRecordBufferThreads)
#include "test_record_buffer_threads.moc"
