// SPDX-License-Identifier: GPL-2.0
//
// Tests of tc_link.cc: the rtnetlink requests that add a parq class and
// the fw filter on its mark, byte for byte as the kernel reads them; how
// a listing's answer is read (the class a filter sends to, by kind);
// handles as tc prints them; and the real kernel's answer for lo and for
// a device that does not exist.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/parq.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "netlink/tc_link.h"

namespace {

using namespace parq::parqd;

struct MsgFree {
  void operator()(nl_msg* m) const { nlmsg_free(m); }
};
using Msg = std::unique_ptr<nl_msg, MsgFree>;

const tcmsg& Tcm(nl_msg* m) {
  return *static_cast<const tcmsg*>(nlmsg_data(nlmsg_hdr(m)));
}

// The message's TCA_KIND, and its TCA_OPTIONS parsed into `opts`.
std::string KindAndOptions(nl_msg* m, nlattr** opts, int max) {
  nlattr* tb[TCA_MAX + 1] = {};
  EXPECT_EQ(nlmsg_parse(nlmsg_hdr(m), sizeof(tcmsg), tb, TCA_MAX, nullptr), 0);
  EXPECT_NE(tb[TCA_OPTIONS], nullptr);
  if (!tb[TCA_KIND] || !tb[TCA_OPTIONS])
    return "";
  // The kernel's tc policies want the options nested.
  EXPECT_TRUE(nla_type(tb[TCA_OPTIONS]) == TCA_OPTIONS &&
              (tb[TCA_OPTIONS]->nla_type & NLA_F_NESTED));
  EXPECT_EQ(nla_parse_nested(opts, max, tb[TCA_OPTIONS], nullptr), 0);
  return nla_get_string(tb[TCA_KIND]);
}

TEST(TcLinkTest, ParqClassRequest) {
  Msg add(ParqClassRequest(3, 0x10000, 0x11000, 31'250'000, true));
  ASSERT_TRUE(add);
  const nlmsghdr* h = nlmsg_hdr(add.get());
  EXPECT_EQ(h->nlmsg_type, RTM_NEWTCLASS);
  EXPECT_EQ(h->nlmsg_flags,
            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  EXPECT_EQ(Tcm(add.get()).tcm_ifindex, 3);
  EXPECT_EQ(Tcm(add.get()).tcm_parent, 0x10000u);
  EXPECT_EQ(Tcm(add.get()).tcm_handle, 0x11000u);
  nlattr* o[TCA_PARQ_CLASS_MAX + 1] = {};
  EXPECT_EQ(KindAndOptions(add.get(), o, TCA_PARQ_CLASS_MAX), "parq");
  ASSERT_NE(o[TCA_PARQ_CLASS_RATE], nullptr);
  EXPECT_EQ(nla_len(o[TCA_PARQ_CLASS_RATE]), 8);
  EXPECT_EQ(nla_get_u64(o[TCA_PARQ_CLASS_RATE]), 31'250'000u);
  EXPECT_EQ(o[TCA_PARQ_CLASS_IDT], nullptr);
  // A change must not create: a class deleted meanwhile stays deleted.
  Msg change(ParqClassRequest(3, 0x10000, 0x11000, 1, false));
  ASSERT_TRUE(change);
  EXPECT_EQ(nlmsg_hdr(change.get())->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
}

TEST(TcLinkTest, FwFilterRequestAndItsListing) {
  Msg m(FwFilterRequest(3, 0x70000, 0x1000, 0x10000000, 0xffff0000, 0x71000));
  ASSERT_TRUE(m);
  const nlmsghdr* h = nlmsg_hdr(m.get());
  EXPECT_EQ(h->nlmsg_type, RTM_NEWTFILTER);
  EXPECT_EQ(h->nlmsg_flags,
            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  EXPECT_EQ(Tcm(m.get()).tcm_parent, 0x70000u);
  EXPECT_EQ(Tcm(m.get()).tcm_handle, 0x10000000u);  // fw: the mark
  // Priority 4096, every protocol.
  EXPECT_EQ(Tcm(m.get()).tcm_info, (0x1000u << 16) | htons(ETH_P_ALL));
  nlattr* o[TCA_FW_MAX + 1] = {};
  EXPECT_EQ(KindAndOptions(m.get(), o, TCA_FW_MAX), "fw");
  ASSERT_NE(o[TCA_FW_CLASSID], nullptr);
  ASSERT_NE(o[TCA_FW_MASK], nullptr);
  EXPECT_EQ(nla_get_u32(o[TCA_FW_CLASSID]), 0x71000u);
  EXPECT_EQ(nla_get_u32(o[TCA_FW_MASK]), 0xffff0000u);
  // The kernel lists a filter as it was asked for: read back, it names
  // its class.
  auto f = ParseTcObject(h);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(*f, (TcObject{0x10000000, 0x70000, 0x1000, "fw", 0x71000}));
}

// A filter's class is read for the kinds whose first option is it, and
// for no other; a malformed answer is skipped, not misread.
TEST(TcLinkTest, ParseTcObjectReadsOnlyWhatItKnows) {
  const auto filter = [](const char* kind, int type, const void* v, int len) {
    nl_msg* m = nlmsg_alloc_simple(RTM_NEWTFILTER, 0);
    tcmsg t{};
    t.tcm_info = TC_H_MAKE(16u << 16, htons(ETH_P_IP));
    nlmsg_append(m, &t, sizeof(t), NLMSG_ALIGNTO);
    nla_put_string(m, TCA_KIND, kind);
    nlattr* n = nla_nest_start(m, TCA_OPTIONS);
    nla_put(m, type, len, v);
    nla_nest_end(m, n);
    return Msg(m);
  };
  const uint32_t cls = 0x10010;
  auto u32 = ParseTcObject(nlmsg_hdr(filter("u32", 1, &cls, 4).get()));
  ASSERT_TRUE(u32.has_value());
  EXPECT_EQ(u32->prio, 16u);
  EXPECT_EQ(u32->classid, cls);
  // bpf's attribute 1 is its action, not its class.
  auto bpf = ParseTcObject(nlmsg_hdr(filter("bpf", 1, &cls, 4).get()));
  ASSERT_TRUE(bpf.has_value());
  EXPECT_EQ(bpf->classid, std::nullopt);
  // A classid of the wrong size.
  const uint16_t short_id = 1;
  auto bad = ParseTcObject(nlmsg_hdr(filter("fw", 1, &short_id, 2).get()));
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->classid, std::nullopt);
  // No kind; a message shorter than its tcmsg.
  Msg bare(nlmsg_alloc_simple(RTM_NEWTCLASS, 0));
  tcmsg t{};
  nlmsg_append(bare.get(), &t, sizeof(t), NLMSG_ALIGNTO);
  EXPECT_EQ(ParseTcObject(nlmsg_hdr(bare.get())), std::nullopt);
  Msg cut(nlmsg_alloc_simple(RTM_NEWTCLASS, 0));
  EXPECT_EQ(ParseTcObject(nlmsg_hdr(cut.get())), std::nullopt);
}

// A name the kernel takes, in a suggested command line, stays one word
// that the shell does not expand.
TEST(TcLinkTest, ShellWord) {
  EXPECT_EQ(ShellWord("eth0.10"), "eth0.10");
  EXPECT_EQ(ShellWord("e$(reboot)"), "'e$(reboot)'");
  EXPECT_EQ(ShellWord("a'b"), "'a'\\''b'");
  EXPECT_EQ(ShellWord("eth0#1"), "'eth0#1'");
}

TEST(TcLinkTest, HandlesAsTcPrintsThem) {
  EXPECT_EQ(TcHandleText(0x10000), "1:");
  EXPECT_EQ(TcHandleText(0x11000), "1:1000");
  EXPECT_EQ(TcHandleText(0xffff2a0f), "ffff:2a0f");
  EXPECT_EQ(TcHandleText(TC_H_ROOT), "root");
}

// The kernel this runs on: lo's root qdisc is listed; a device that is
// not there is named in the error, and nothing is sent for it.
TEST(TcLinkTest, RealKernel) {
  auto lo = RtnlTcLink("lo")->Qdiscs();
  ASSERT_TRUE(lo.ok()) << lo.error().Text();
  int roots = 0;
  for (const TcObject& q : lo.value())
    roots += q.parent == TC_H_ROOT;
  EXPECT_EQ(roots, 1);
  auto none = RtnlTcLink("parq-no-such0");
  auto q = none->Qdiscs();
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().error, ENODEV);
  EXPECT_EQ(q.error().message, "no device parq-no-such0");
  auto e = none->SetParqClass(0x10000, 0x11000, 1, true);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->error, ENODEV);
  // The kernel refuses (no such class; or no permission): its errno, not
  // a failure to read the answer.
  e = RtnlTcLink("lo")->DelClass(0x11000);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->error == ENOENT || e->error == EINVAL || e->error == EPERM)
      << e->Text();
  EXPECT_EQ(e->message.rfind("class del 1:1000 dev lo: ", 0), 0u) << e->Text();
}

}  // namespace
