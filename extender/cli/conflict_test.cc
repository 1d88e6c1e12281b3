// Concurrent edits of the policy ConfigMap between the CLI's GET and its PUT (the fake API
// server's request hook makes them): detected by the resourceVersion precondition, re-read,
// re-applied and re-validated — never lost, never overwritten — and bounded.

#include <gtest/gtest.h>

#include <atomic>

#include "extender/cli/owned_policy.h"
#include "extender/cli/testing/cli_fixture.h"

namespace taskgov::cli {
namespace {

using testing::CliFixture;
using testing::CliRun;
using testing::ConfigData;
using testing::HyperPodQuotaJson;

constexpr char kItem[] = "/api/v1/namespaces/taskgov-system/configmaps/taskgov-config";
const std::string kGet = std::string("GET ") + kItem;
const std::string kPut = std::string("PUT ") + kItem;

class ConflictTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cli_.Start());
    cli_.PutConfigMap({{"hyperpod-ml.json", HyperPodQuotaJson("ml", "ml.p5.48xlarge", 1)}});
    CliRun a = cli_.Run(
        {"quota", "create", "team-a", "--instance-type", "ml.p5.48xlarge", "--count", "1"});
    ASSERT_EQ(a.code, 0) << a.err;
  }

  // Before each of the next `times` PUTs of the ConfigMap (-1: every one), `edit` changes its
  // data in the store, as another client would between the CLI's GET and PUT.
  void EditBeforePut(std::function<void(ConfigData*)> edit, int times) {
    auto left = std::make_shared<std::atomic<int>>(times);
    cli_.api().SetRequestHook(
        [this, edit, left](const std::string& method, const std::string& path) {
          if (method != "PUT" || path != kItem || left->load() == 0) return;
          left->fetch_sub(1);
          ConfigData data = cli_.Data();
          edit(&data);
          cli_.PutConfigMap(data);
          ++edits_;
        });
  }

  std::vector<std::string> RequestsSince(size_t first) const {
    std::vector<std::string> all = cli_.ConfigMapRequests();
    return std::vector<std::string>(all.begin() + static_cast<ptrdiff_t>(first), all.end());
  }

  CliFixture cli_;
  std::atomic<int> edits_{0};
};

TEST_F(ConflictTest, AHandEditMeanwhileIsKeptAndTheChangeReapplied) {
  const std::string other = HyperPodQuotaJson("other", "ml.g5.12xlarge", 1);
  EditBeforePut([&](ConfigData* d) { (*d)["other.json"] = other; }, 1);
  const size_t first = cli_.ConfigMapRequests().size();
  const std::string rv = cli_.ResourceVersion();
  CliRun update = cli_.Run({"quota", "update", "team-a", "--borrow-limit", "80"});
  ASSERT_EQ(update.code, 0) << update.err;
  EXPECT_EQ(edits_.load(), 1);
  EXPECT_EQ(update.err,
            "conflict: taskgov-system/taskgov-config changed since it was read (resourceVersion " +
                rv +
                ": Operation cannot be fulfilled on configmaps \"taskgov-config\": the object has "
                "been modified; please apply your changes to the latest version and try again); "
                "reading it again and re-applying the change (attempt 2 of 5)\n");
  EXPECT_EQ(RequestsSince(first), std::vector<std::string>({kGet, kPut, kGet, kPut}));
  ConfigData data = cli_.Data();
  EXPECT_EQ(data["other.json"], other);  // not lost
  common::Result<OwnedPolicy> owned = ParseOwned(data["taskgov-cli.yaml"]);
  ASSERT_TRUE(owned.ok()) << owned.error().message;
  ASSERT_NE(owned->FindTeam("team-a"), nullptr);
  EXPECT_EQ(owned->FindTeam("team-a")->borrow_limit, 80);
  EXPECT_EQ(cli_.Run({"quota", "list", "-o", "name"}).out, "quota/ml\nquota/other\nquota/team-a\n");
}

TEST_F(ConflictTest, AnotherWriterOfTheCliKeyIsNotOverwritten) {
  // Another admin's CLI added team-x to the CLI's key meanwhile.
  EditBeforePut(
      [](ConfigData* d) {
        common::Result<OwnedPolicy> owned = ParseOwned((*d)["taskgov-cli.yaml"]);
        ASSERT_TRUE(owned.ok());
        TeamQuota x;
        x.name = "team-x";
        x.cohort = "hyperpod";
        x.compute = {ComputeLine{"ml.g5.12xlarge", 1, {}, {}, {}}};
        owned->teams.push_back(x);
        (*d)["taskgov-cli.yaml"] = RenderOwned(*owned);
      },
      1);
  CliRun create = cli_.Run(
      {"quota", "create", "team-b", "--instance-type", "ml.g5.12xlarge", "--accelerators", "2"});
  ASSERT_EQ(create.code, 0) << create.err;
  common::Result<OwnedPolicy> owned = ParseOwned(cli_.Data()["taskgov-cli.yaml"]);
  ASSERT_TRUE(owned.ok());
  EXPECT_NE(owned->FindTeam("team-a"), nullptr);
  EXPECT_NE(owned->FindTeam("team-b"), nullptr);
  EXPECT_NE(owned->FindTeam("team-x"), nullptr);
  // The diff printed is the one written: against the content with team-x.
  EXPECT_NE(create.out.find(" name: team-x\n"), std::string::npos) << create.out;
}

TEST_F(ConflictTest, AConcurrentEditThatMakesTheChangeWrongIsRevalidated) {
  // Someone defined team-b by hand meanwhile: the create, re-applied, now refuses.
  const std::string hand_b = HyperPodQuotaJson("team-b", "ml.g5.12xlarge", 1);
  EditBeforePut([&](ConfigData* d) { (*d)["team-b.json"] = hand_b; }, 1);
  const size_t first = cli_.ConfigMapRequests().size();
  CliRun create = cli_.Run(
      {"quota", "create", "team-b", "--instance-type", "ml.g5.12xlarge", "--accelerators", "2"});
  EXPECT_EQ(create.code, 1);
  EXPECT_TRUE(create.err.ends_with(
      "error: quota/team-b already exists (in key team-b.json): use 'taskgov quota update "
      "team-b' to change it\n"))
      << create.err;
  EXPECT_EQ(RequestsSince(first), std::vector<std::string>({kGet, kPut, kGet}));
  ConfigData data = cli_.Data();
  EXPECT_EQ(data["team-b.json"], hand_b);
  common::Result<OwnedPolicy> owned = ParseOwned(data["taskgov-cli.yaml"]);
  ASSERT_TRUE(owned.ok());
  EXPECT_EQ(owned->FindTeam("team-b"), nullptr);
}

TEST_F(ConflictTest, GivesUpAfterFiveConflictsHavingWrittenNothing) {
  std::atomic<int> n{0};  // written on the fake API server's thread
  EditBeforePut(
      [&](ConfigData* d) { (*d)["busy.json"] = HyperPodQuotaJson("busy", "ml.g5.12xlarge", ++n); },
      -1);
  const size_t first = cli_.ConfigMapRequests().size();
  const size_t first_recorded = cli_.api().requests().size();
  CliRun update = cli_.Run({"quota", "update", "team-a", "--borrow-limit", "80"});
  EXPECT_EQ(update.code, 1);
  EXPECT_TRUE(update.err.ends_with(
      "error: taskgov-system/taskgov-config changed during each of 5 attempts (someone else is "
      "writing it), so nothing was written: run the command again\n"))
      << update.err;
  std::vector<std::string> requests = RequestsSince(first);
  EXPECT_EQ(std::count(requests.begin(), requests.end(), kPut), 5);
  EXPECT_EQ(edits_.load(), 5);
  std::vector<scheduler::kube::testing::RecordedRequest> recorded = cli_.api().requests();
  for (size_t i = first_recorded; i < recorded.size(); ++i) {
    const auto& r = recorded[i];
    if (r.method == "PUT" && r.path == kItem) {
      EXPECT_EQ(r.status, 409);
    }
  }
  ConfigData data = cli_.Data();
  EXPECT_EQ(data["busy.json"], HyperPodQuotaJson("busy", "ml.g5.12xlarge", n.load()));
  common::Result<OwnedPolicy> owned = ParseOwned(data["taskgov-cli.yaml"]);
  ASSERT_TRUE(owned.ok());
  EXPECT_EQ(owned->FindTeam("team-a")->borrow_limit, std::nullopt);
}

}  // namespace
}  // namespace taskgov::cli
