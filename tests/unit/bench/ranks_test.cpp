// A multi-process NCCL job's ranks (bench/ranks.hpp): the flags, torchrun's environment, and the
// rendezvous's lines, without sockets (the CLI test runs two dlrig processes through them); the
// job's links over socket pairs.
#include "dlrig/bench/ranks.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include <map>

namespace dlrig::bench {
namespace {

EnvLookup env_of(std::map<std::string, std::string> m) {
  return [m](const char *name) -> std::optional<std::string> {
    auto it = m.find(name);
    return it == m.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(Ranks, FlagsGiveTheJob) {
  auto s = rank_spec({1, 4, "node0:29500"}, env_of({}));
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_TRUE(*s);
  EXPECT_EQ((*s)->rank, 1);
  EXPECT_EQ((*s)->nranks, 4);
  EXPECT_EQ((*s)->host, "node0");
  EXPECT_EQ((*s)->port, 29500);
  EXPECT_FALSE((*s)->local_rank);
  EXPECT_EQ((*s)->source, "--rank/--nranks/--rendezvous");
  auto v6 = rank_spec({0, 2, "[fe80::1]:1234"}, env_of({{"DLRIG_RENDEZVOUS_TIMEOUT_S", "5"}}));
  ASSERT_TRUE(v6 && *v6);
  EXPECT_EQ((*v6)->host, "fe80::1");
  EXPECT_EQ((*v6)->timeout, std::chrono::seconds(5));
}

TEST(Ranks, FlagsThatDoNotFitAreUsageErrors) {
  for (const RankFlags &f : {RankFlags{1, std::nullopt, ""}, RankFlags{1, 2, ""},
                             RankFlags{2, 2, "h:1"}, RankFlags{0, 2, "h"}, RankFlags{0, 2, "h:0"},
                             RankFlags{0, 2, "h:65536"}, RankFlags{0, 2, ":29500"}}) {
    auto s = rank_spec(f, env_of({}));
    ASSERT_FALSE(s) << f.rendezvous;
    EXPECT_EQ(s.error().kind, ErrorKind::usage);
  }
  auto t = rank_spec({0, 2, "h:1"}, env_of({{"DLRIG_RENDEZVOUS_TIMEOUT_S", "soon"}}));
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("DLRIG_RENDEZVOUS_TIMEOUT_S"), std::string::npos);
}

// --rendezvous alone under mpirun, srun or mpiexec: the launcher's rank, size and local rank.
TEST(Ranks, ALaunchersVariablesWithRendezvousAlone) {
  const RankFlags alone{std::nullopt, std::nullopt, "node0:29500"};
  auto ompi = rank_spec(alone, env_of({{"OMPI_COMM_WORLD_RANK", "5"},
                                       {"OMPI_COMM_WORLD_SIZE", "16"},
                                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  ASSERT_TRUE(ompi && *ompi) << (ompi ? "" : ompi.error().message);
  EXPECT_EQ((*ompi)->rank, 5);
  EXPECT_EQ((*ompi)->nranks, 16);
  EXPECT_EQ((*ompi)->local_rank, 1);
  EXPECT_EQ((*ompi)->host, "node0");
  EXPECT_EQ((*ompi)->port, 29500);
  EXPECT_NE((*ompi)->source.find("Open MPI"), std::string::npos);
  auto slurm = rank_spec(
      alone, env_of({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "3"}}));
  ASSERT_TRUE(slurm && *slurm);
  EXPECT_EQ((*slurm)->rank, 3);
  EXPECT_EQ((*slurm)->local_rank, 3);
  EXPECT_NE((*slurm)->source.find("Slurm"), std::string::npos);
  auto pmi = rank_spec(alone, env_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}));
  ASSERT_TRUE(pmi && *pmi);
  EXPECT_EQ((*pmi)->nranks, 2);
  EXPECT_FALSE((*pmi)->local_rank);
  // No launcher, or one whose numbers do not fit: usage, naming the variables.
  auto none = rank_spec(alone, env_of({}));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, ErrorKind::usage);
  EXPECT_NE(none.error().message.find("SLURM_PROCID"), std::string::npos);
  auto bad = rank_spec(alone, env_of({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("SLURM_PROCID=4 SLURM_NTASKS=4 (Slurm)"), std::string::npos)
      << bad.error().message;
  // Without --rendezvous a launcher's variables alone ask for nothing (the ordinary run).
  auto plain = rank_spec({}, env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}));
  ASSERT_TRUE(plain);
  EXPECT_FALSE(*plain);
}

TEST(Ranks, TorchrunsEnvironmentWhenNoFlagIsGiven) {
  auto s = rank_spec({}, env_of({{"RANK", "3"},
                                 {"WORLD_SIZE", "8"},
                                 {"LOCAL_RANK", "1"},
                                 {"MASTER_ADDR", "10.0.0.1"},
                                 {"MASTER_PORT", "29400"}}));
  ASSERT_TRUE(s && *s);
  EXPECT_EQ((*s)->rank, 3);
  EXPECT_EQ((*s)->nranks, 8);
  EXPECT_EQ((*s)->local_rank, 1);
  EXPECT_EQ((*s)->host, "10.0.0.1");
  EXPECT_EQ((*s)->port, 29401); // MASTER_PORT + 1: torchrun's store holds MASTER_PORT
  EXPECT_NE((*s)->source.find("torchrun"), std::string::npos);
  // No job: nothing set, or a world of one (the ordinary single-process run).
  EXPECT_FALSE(*rank_spec({}, env_of({})));
  EXPECT_FALSE(*rank_spec({}, env_of({{"WORLD_SIZE", "1"}, {"RANK", "0"}})));
  // The flags win over the environment.
  auto f = rank_spec({0, 2, "a:1"}, env_of({{"RANK", "5"}, {"WORLD_SIZE", "8"}}));
  ASSERT_TRUE(f && *f);
  EXPECT_EQ((*f)->nranks, 2);
  auto missing = rank_spec({}, env_of({{"WORLD_SIZE", "2"}, {"RANK", "0"}}));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("MASTER_ADDR, MASTER_PORT are not"), std::string::npos)
      << missing.error().message;
  auto bad = rank_spec(
      {}, env_of({{"WORLD_SIZE", "2"}, {"RANK", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("RANK=\"2\""), std::string::npos) << bad.error().message;
}

TEST(Ranks, TheRendezvousLinesRoundTripAndJunkIsNamed) {
  auto h = parse_hello(hello_line(3, 8, "0000:18:00.0@6b1f", "nccl.all_reduce tier=quick"));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->rank, 3);
  EXPECT_EQ(h->nranks, 8);
  EXPECT_EQ(h->gpu, "0000:18:00.0@6b1f");
  EXPECT_EQ(h->plan, "nccl.all_reduce tier=quick");
  EXPECT_FALSE(parse_hello("GET / HTTP/1.1"));
  EXPECT_FALSE(parse_hello("dlrig-nccl-rendezvous 1 rank=1 nranks=2 plan=x")); // version 1
  EXPECT_FALSE(parse_hello("dlrig-nccl-rendezvous 2 rank=x nranks=2 gpu=unknown plan=x"));
  EXPECT_FALSE(parse_hello("dlrig-nccl-rendezvous 2 rank=1 nranks=2 plan=x")); // no gpu
  EXPECT_FALSE(parse_hello("dlrig-nccl-rendezvous 2 rank=1 nranks=2 gpu= plan=x"));
  UniqueId id{};
  for (std::size_t i = 0; i < id.size(); ++i)
    id[i] = static_cast<unsigned char>(i * 7);
  auto back = parse_id_line(id_line(id), "h:1");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, id);
  auto refused = parse_id_line("error rank 0: nranks differ", "h:1");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::bad_input);
  EXPECT_NE(refused.error().message.find("refused this rank: rank 0: nranks differ"),
            std::string::npos);
  auto junk = parse_id_line("HTTP/1.1 400 Bad Request", "h:1");
  ASSERT_FALSE(junk);
  EXPECT_NE(junk.error().message.find("h:1 is not a dlrig rank 0"), std::string::npos)
      << junk.error().message;
  EXPECT_FALSE(parse_id_line("id 00", "h:1")); // too short
}

// Rank 0's links to three ranks (socket pairs): "done" then a close is no loss, a close without
// "done" is, an abort's reason is passed on as sent, junk is named; the others hear rank 0's tell.
TEST(Ranks, JobLinksTellAFinishedRankFromOneThatStopped) {
  JobLinks links;
  std::vector<int> far; // the other ranks' ends
  for (int r = 1; r <= 3; ++r) {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    links.add(r, tcp::Socket(fds[0], "peer" + std::to_string(r)));
    far.push_back(fds[1]);
  }
  auto say = [&](int r, const std::string &text) {
    ASSERT_EQ(::write(far[static_cast<std::size_t>(r - 1)], text.data(), text.size()),
              static_cast<ssize_t>(text.size()));
  };
  EXPECT_FALSE(links.lost()); // nothing sent, nothing closed
  say(1, "do");
  EXPECT_FALSE(links.lost()); // half a line
  say(1, "ne\n");
  ::close(far[0]);
  EXPECT_FALSE(links.lost()); // rank 1 finished, then closed
  links.tell("abort rank 0 was interrupted");
  char got[64] = {};
  ASSERT_GT(::read(far[1], got, sizeof got - 1), 0);
  EXPECT_STREQ(got, "abort rank 0 was interrupted\n");
  say(2, "abort rank 2 failed nccl.all_reduce 2 ranks 1 MiB: out of memory\n");
  auto why = links.lost();
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "rank 2 failed nccl.all_reduce 2 ranks 1 MiB: out of memory");
  ::close(far[2]);
  why = links.lost();
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("rank 3 (peer3) closed its connection before finishing its run"),
            std::string::npos)
      << *why;
  EXPECT_FALSE(links.lost()); // each loss is told once
  ::close(far[1]);

  JobLinks junk;
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  junk.add(0, tcp::Socket(fds[0], "rank0host:29500"));
  ASSERT_EQ(::write(fds[1], "GET /\n", 6), 6);
  why = junk.lost();
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("rank 0 (rank0host:29500) sent \"GET /\""), std::string::npos) << *why;
  ::close(fds[1]);
}

// A link over TCP probes a silent peer (keep-alive after 5 s, every 2 s, 3 probes), so a rank
// whose host vanishes without closing its connection is seen gone in about 11 s.
TEST(Ranks, JobLinksProbeASilentPeer) {
  auto listener = tcp::listen_on(0);
  ASSERT_TRUE(listener) << listener.error().message;
  sockaddr_in6 a{};
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(listener->fd(), reinterpret_cast<sockaddr *>(&a), &len), 0);
  const int port = ntohs(a.sin6_port);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto client = tcp::connect_to("127.0.0.1", port, deadline);
  ASSERT_TRUE(client) << client.error().message;
  auto server = tcp::accept_one(*listener, deadline);
  ASSERT_TRUE(server) << server.error().message;
  const int fd = server->fd();
  JobLinks links;
  links.add(1, std::move(*server));
  auto option = [&](int level, int name) {
    int v = 0;
    socklen_t l = sizeof v;
    EXPECT_EQ(::getsockopt(fd, level, name, &v, &l), 0);
    return v;
  };
  EXPECT_EQ(option(SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(option(IPPROTO_TCP, TCP_KEEPIDLE), 5);
  EXPECT_EQ(option(IPPROTO_TCP, TCP_KEEPINTVL), 2);
  EXPECT_EQ(option(IPPROTO_TCP, TCP_KEEPCNT), 3);
}

} // namespace
} // namespace dlrig::bench
