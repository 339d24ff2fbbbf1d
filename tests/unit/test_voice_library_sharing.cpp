// Replicas of chatterbox-server sharing one voice folder (a ReadWriteMany volume): VoiceLibrary
// objects on one folder, in this process and in forked writer processes. A voice stored through one is
// listed and used by the others at once, an overwrite and a delete too; writers of one name in several
// processes leave one whole voice with its own metadata and let exactly one create it; a writer killed
// with SIGKILL at random points leaves the old voice or the new one, and no temp file survives the
// next opening; another process's write in progress is never taken for a leftover.

#include "server/voice_library.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace chatterbox;
namespace fs = std::filesystem;

namespace {

// A valid voice whose every value is `fill` (so a voice mixed from two writes shows), large enough
// (≈ 1.3 MB on disk) that a kill lands inside writes.
VoiceConditionals uniform_voice(int fill) {
    VoiceConditionals voice;
    voice.t3.speaker_emb.assign(256, float(fill));
    voice.t3.prompt_tokens.assign(150, fill);
    voice.s3gen.prompt_tokens.assign(150, fill);
    voice.s3gen.prompt_mel.assign(size_t(80) * 4000, float(fill));
    voice.s3gen.xvector.assign(192, float(fill));
    return voice;
}

// The fill of a uniform voice, or -1 when its values disagree (a torn or mixed voice).
int fill_of(const VoiceConditionals &voice) {
    const float fill = voice.t3.speaker_emb.at(0);
    auto all = [fill](const auto &values) {
        for (const auto value : values)
            if (float(value) != fill) return false;
        return true;
    };
    const bool uniform = all(voice.t3.speaker_emb) && all(voice.t3.prompt_tokens) && all(voice.s3gen.prompt_tokens) &&
                         all(voice.s3gen.prompt_mel) && all(voice.s3gen.xvector);
    return uniform ? int(fill) : -1;
}

std::vector<std::string> temp_files(const std::string &dir) {
    std::vector<std::string> out;
    for (const auto &entry : fs::directory_iterator(dir))
        if (entry.path().filename().string().rfind(".tmp-", 0) == 0) out.push_back(entry.path().filename().string());
    return out;
}

// Runs `work` in a forked child that exits 0 when it returns, 1 when it throws.
template <typename Work> pid_t fork_writer(Work work) {
    const pid_t pid = fork();
    if (pid == 0) {
        int code = 0;
        try {
            work();
        } catch (const std::exception &e) {
            std::fprintf(stderr, "writer %d: %s\n", int(getpid()), e.what());
            code = 1;
        }
        _exit(code);
    }
    return pid;
}

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

int exit_code(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return exit_code_of(status);
}

} // namespace

TEST(VoiceLibrarySharing, AStoreAnOverwriteAndADeleteAreSeenByEveryReplicaAtOnce) {
    const std::string dir = (fs::path(test::temp_dir("shared_voices")) / "library").string();
    server::VoiceLibrary first(dir), second(dir);
    ASSERT_TRUE(second.list().empty());

    ASSERT_TRUE(first.store("ann", uniform_voice(3), 2.5, false));
    ASSERT_NE(second.voice("ann"), nullptr);
    EXPECT_EQ(fill_of(*second.voice("ann")), 3);
    ASSERT_EQ(second.list().size(), 1u);
    EXPECT_EQ(second.list()[0].source_seconds, 2.5);
    // The name is taken for every replica, not only the one that stored it.
    EXPECT_FALSE(second.store("ann", uniform_voice(4), 1.0, false));

    ASSERT_TRUE(second.store("ann", uniform_voice(5), 7.0, true));
    EXPECT_EQ(fill_of(*first.voice("ann")), 5);
    EXPECT_EQ(first.info("ann")->source_seconds, 7.0);

    EXPECT_TRUE(first.remove("ann"));
    EXPECT_EQ(second.voice("ann"), nullptr);
    EXPECT_FALSE(second.info("ann"));
    EXPECT_TRUE(second.list().empty());
    EXPECT_FALSE(second.remove("ann"));
    EXPECT_EQ(second.voice("../ann"), nullptr) << "a name that is no voice name is no file either";
}

TEST(VoiceLibrarySharing, WritersOfOneNameInSeveralProcessesLeaveOneWholeVoiceWithItsOwnMetadata) {
    const std::string dir = (fs::path(test::temp_dir("shared_voices_writers")) / "library").string();
    constexpr int kWriters = 4, kWrites = 12;
    std::vector<pid_t> writers;
    for (int writer = 1; writer <= kWriters; ++writer)
        writers.push_back(fork_writer([&dir, writer] {
            server::VoiceLibrary library(dir);
            for (int i = 0; i < kWrites; ++i)
                if (!library.store("same", uniform_voice(writer), double(writer), true))
                    throw std::runtime_error("refused");
        }));
    // Meanwhile a reader in another replica sees, each time, one writer's voice with that writer's
    // metadata (or no voice yet).
    server::VoiceLibrary reader(dir);
    std::set<int> seen;
    std::vector<int> codes;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (codes.size() < writers.size() && std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (waitpid(-1, &status, WNOHANG) > 0) codes.push_back(exit_code_of(status));
        const auto voice = reader.voice("same");
        const auto info = reader.info("same");
        if (!voice || !info) continue;
        const int fill = fill_of(*voice);
        ASSERT_GE(fill, 1) << "a torn or mixed voice";
        seen.insert(fill);
    }
    ASSERT_EQ(codes, std::vector<int>(writers.size(), 0)) << "the writers did not all finish in time, or failed";
    EXPECT_GE(seen.size(), 1u);

    server::VoiceLibrary after(dir);
    EXPECT_TRUE(after.problems().empty());
    const auto voice = after.voice("same");
    ASSERT_NE(voice, nullptr);
    const int fill = fill_of(*voice);
    ASSERT_GE(fill, 1);
    EXPECT_EQ(after.info("same")->source_seconds, double(fill)) << "the metadata of another write";
    EXPECT_TRUE(temp_files(dir).empty());
}

TEST(VoiceLibrarySharing, OfWritersCreatingOneNameInSeveralProcessesExactlyOneSucceeds) {
    const std::string dir = (fs::path(test::temp_dir("shared_voices_create")) / "library").string();
    constexpr int kWriters = 4;
    std::vector<pid_t> writers;
    // Exit code 0: stored; 3: refused as taken.
    for (int writer = 1; writer <= kWriters; ++writer)
        writers.push_back(fork_writer([&dir, writer] {
            server::VoiceLibrary library(dir);
            if (!library.store("new", uniform_voice(writer), double(writer), false)) _exit(3);
        }));
    std::multiset<int> codes;
    for (pid_t pid : writers) codes.insert(exit_code(pid));
    EXPECT_EQ(codes.count(0), 1u);
    EXPECT_EQ(codes.count(3), size_t(kWriters - 1));
    server::VoiceLibrary after(dir);
    ASSERT_NE(after.voice("new"), nullptr);
    EXPECT_EQ(after.info("new")->source_seconds, double(fill_of(*after.voice("new"))));
}

TEST(VoiceLibrarySharing, AWriterKilledMidWriteLeavesTheOldVoiceOrTheNew) {
    const std::string dir = (fs::path(test::temp_dir("shared_voices_kill")) / "library").string();
    {
        server::VoiceLibrary library(dir);
        ASSERT_TRUE(library.store("v", uniform_voice(1), 1.0, false));
    }
    std::mt19937 random(47);
    std::set<int> survivors;
    for (int round = 0; round < 12; ++round) {
        const int next = round + 2;
        const pid_t writer = fork_writer([&dir, next] {
            server::VoiceLibrary library(dir);
            for (int fill = next;; fill = fill == next ? next + 100 : next)
                library.store("v", uniform_voice(fill), fill, true);
        });
        // Every other round waits for one of its stores to land first (on a loaded machine the writer
        // may not have started within the random delay), so that new voices survive too.
        if (round % 2) {
            const auto before = fs::last_write_time(dir + "/v.voice");
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (fs::last_write_time(dir + "/v.voice") == before && std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(random() % 60));
        kill(writer, SIGKILL);
        EXPECT_EQ(exit_code(writer), 128 + SIGKILL);

        server::VoiceLibrary reopened(dir);
        const auto voice = reopened.voice("v");
        ASSERT_NE(voice, nullptr) << "round " << round << ": " << testing::PrintToString(reopened.problems());
        const int fill = fill_of(*voice);
        ASSERT_GE(fill, 1) << "round " << round << ": a torn voice";
        survivors.insert(fill);
        // Its metadata is its own, or none (killed between the two renames): never another write's.
        const double seconds = reopened.info("v")->source_seconds;
        EXPECT_TRUE(seconds == fill || seconds == 0) << "voice " << fill << " with metadata of " << seconds;
        EXPECT_TRUE(temp_files(dir).empty()) << "a leftover was kept: " << testing::PrintToString(temp_files(dir));
    }
    EXPECT_GE(survivors.size(), 2u) << "the writes never landed between kills";
}

TEST(VoiceLibrarySharing, AnotherReplicasWriteInProgressIsNoLeftover) {
    const std::string dir = (fs::path(test::temp_dir("shared_voices_scratch")) / "library").string();
    {
        const server::VoiceLibrary::Scratch upload(dir, "an upload being turned into a voice", ".wav");
        // A replica starting now (in this process: flock'ed files are told apart per open file).
        const server::VoiceLibrary starting(dir);
        EXPECT_TRUE(fs::exists(upload.path()));
        EXPECT_TRUE(starting.problems().empty());
    }
    // Replicas starting over and over while another stores: none of its temp files (its own, nor the
    // GGUF writer's beside it) is taken away from it, so every store succeeds.
    const pid_t writer = fork_writer([&dir] {
        server::VoiceLibrary library(dir);
        for (int i = 0; i < 40; ++i) library.store("busy", uniform_voice(1 + i % 2), 1 + i % 2, true);
    });
    int status = 0, openings = 0;
    while (waitpid(writer, &status, WNOHANG) == 0) {
        const server::VoiceLibrary starting(dir);
        for (const std::string &problem : starting.problems()) ADD_FAILURE() << problem;
        ++openings;
    }
    EXPECT_EQ(exit_code_of(status), 0) << "a store failed while replicas opened the folder";
    EXPECT_GT(openings, 0);
}
