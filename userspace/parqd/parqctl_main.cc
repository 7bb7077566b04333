// SPDX-License-Identifier: GPL-2.0
//
// parqctl: the parq credit table, qdisc statistics and parallel jobs from
// the shell.

#include <iostream>

#include "ctl/cli.h"
#include "ctl/ctl.h"

using namespace parq::parqd;

int main(int argc, char** argv) {
  auto parsed = ParseCtlArgs(std::vector<std::string>(argv, argv + argc),
                             std::cout, std::cerr);
  if (const int* code = std::get_if<int>(&parsed))
    return *code;
  JobEnv jobs;
  jobs.probe = SystemCgroupProbe();
  jobs.nft = SystemNft();
  return RunCtl(std::get<CtlArgs>(parsed), OpenGenlCreditTable, std::cout,
                std::cerr, jobs, OpenGenlMonitor);
}
