// procfs text generators. Formats follow fs/proc in Linux (array.c, task_mmu.c,
// proc_namespace.c, cpuinfo.c for x86) closely enough for the programs that parse them.
#include "sentry/fsimpl/procfs_gen.h"

#include <cpuid.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace usentry::sentry::fsimpl {
namespace {

uint32_t DevMajor(uint64_t dev) { return ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfffu); }
uint32_t DevMinor(uint64_t dev) { return (dev & 0xff) | ((dev >> 12) & ~0xffu); }

struct Cpuid {
  uint32_t a = 0, b = 0, c = 0, d = 0;
};
Cpuid Query(uint32_t leaf, uint32_t sub = 0) {
  Cpuid r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) r = Cpuid{};
  return r;
}

// cpuinfo "flags": the common subset, named as Linux names them.
std::string CpuFlags() {
  struct Bit {
    int reg;  // 0 edx(1), 1 ecx(1), 2 ebx(7), 3 ecx(7), 4 edx(0x80000001), 5 ecx(0x80000001)
    int bit;
    const char* name;
  };
  static const Bit kBits[] = {
      {0, 0, "fpu"},           {0, 1, "vme"},         {0, 2, "de"},         {0, 3, "pse"},
      {0, 4, "tsc"},           {0, 5, "msr"},         {0, 6, "pae"},        {0, 7, "mce"},
      {0, 8, "cx8"},           {0, 9, "apic"},        {0, 11, "sep"},       {0, 12, "mtrr"},
      {0, 13, "pge"},          {0, 14, "mca"},        {0, 15, "cmov"},      {0, 16, "pat"},
      {0, 17, "pse36"},        {0, 19, "clflush"},    {0, 23, "mmx"},       {0, 24, "fxsr"},
      {0, 25, "sse"},          {0, 26, "sse2"},       {0, 28, "ht"},        {4, 11, "syscall"},
      {4, 20, "nx"},           {4, 26, "pdpe1gb"},    {4, 27, "rdtscp"},    {4, 29, "lm"},
      {1, 0, "pni"},           {1, 1, "pclmulqdq"},   {1, 9, "ssse3"},      {1, 12, "fma"},
      {1, 13, "cx16"},         {1, 19, "sse4_1"},     {1, 20, "sse4_2"},    {1, 22, "movbe"},
      {1, 23, "popcnt"},       {1, 25, "aes"},        {1, 26, "xsave"},     {1, 28, "avx"},
      {1, 29, "f16c"},         {1, 30, "rdrand"},     {5, 0, "lahf_lm"},    {5, 5, "abm"},
      {5, 8, "3dnowprefetch"}, {2, 0, "fsgsbase"},    {2, 3, "bmi1"},       {2, 5, "avx2"},
      {2, 7, "smep"},          {2, 8, "bmi2"},        {2, 9, "erms"},       {2, 16, "avx512f"},
      {2, 17, "avx512dq"},     {2, 18, "rdseed"},     {2, 19, "adx"},       {2, 20, "smap"},
      {2, 23, "clflushopt"},   {2, 24, "clwb"},       {2, 28, "avx512cd"},  {2, 29, "sha_ni"},
      {2, 30, "avx512bw"},     {2, 31, "avx512vl"},   {3, 1, "avx512vbmi"}, {3, 8, "gfni"},
      {3, 9, "vaes"},          {3, 10, "vpclmulqdq"}, {3, 22, "rdpid"},
  };
  Cpuid l1 = Query(1), l7 = Query(7), e1 = Query(0x80000001);
  const uint32_t regs[6] = {l1.d, l1.c, l7.b, l7.c, e1.d, e1.c};
  std::vector<std::string> names;
  for (const Bit& b : kBits) {
    if (regs[b.reg] & (1u << b.bit)) names.push_back(b.name);
  }
  return absl::StrJoin(names, " ");
}

}  // namespace

std::string FormatStat(const ProcStatInfo& s) {
  // 52 fields; unknown ones are 0 as Linux shows them to unprivileged readers.
  return absl::StrFormat(
      "%d (%s) %c %d %d %d %d %d %u %u %u %u %u %u %u %d %d %d %d %d %d %u %u %d %u %u %u %u "
      "%u %u %u %u %u %u %u %u %u %d %d %u %u %u %u %d %u %u %u %u %u %u %u %d\n",
      s.pid, s.comm, s.state, s.ppid, s.pgrp, s.session, s.tty_nr, s.tpgid,
      0x400000u /*flags: PF_RANDOMIZE*/, 0u, 0u, 0u, 0u, s.utime, s.stime, s.cutime, s.cstime,
      20 /*priority*/, 0 /*nice*/, s.num_threads, 0 /*itrealvalue*/, s.starttime, s.vsize, s.rss,
      ~0ull /*rsslim*/, 0u /*startcode*/, 0u /*endcode*/, s.startstack, 0u, 0u, s.signal, s.blocked,
      s.sigignore, s.sigcatch, 0u /*wchan*/, 0u, 0u, s.exit_signal, 0 /*processor*/,
      0u /*rt_priority*/, 0u /*policy*/, 0u /*delayacct*/, 0u /*guest*/, 0 /*cguest*/,
      0u /*start_data*/, 0u /*end_data*/, s.start_brk, s.arg_start, s.arg_end, s.env_start,
      s.env_end, s.exit_code);
}

std::string FormatStatus(const ProcStatusInfo& s) {
  const char* state = s.state == 'R'   ? "R (running)"
                      : s.state == 'Z' ? "Z (zombie)"
                      : s.state == 'T' ? "T (stopped)"
                                       : "S (sleeping)";
  uint64_t caps = s.root_caps ? 0x1ffffffffffull : 0;
  std::string cpus_mask = absl::StrFormat("%x", s.ncpus >= 64 ? ~0ull : (1ull << s.ncpus) - 1);
  std::string out;
  absl::StrAppendFormat(&out, "Name:\t%s\nUmask:\t%04o\nState:\t%s\n", s.name, s.umask, state);
  absl::StrAppendFormat(&out, "Tgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\nTracerPid:\t0\n", s.tgid,
                        s.pid, s.ppid);
  absl::StrAppendFormat(&out, "Uid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\n", s.uid[0], s.uid[1],
                        s.uid[2], s.uid[3], s.gid[0], s.gid[1], s.gid[2], s.gid[3]);
  absl::StrAppendFormat(&out, "FDSize:\t%u\nGroups:\t%s\n", s.fd_size,
                        absl::StrJoin(s.groups, " "));
  absl::StrAppendFormat(&out,
                        "VmPeak:\t%8u kB\nVmSize:\t%8u kB\nVmLck:\t%8u kB\nVmPin:\t%8u kB\n"
                        "VmHWM:\t%8u kB\nVmRSS:\t%8u kB\nVmData:\t%8u kB\nVmStk:\t%8u kB\n"
                        "VmExe:\t%8u kB\nVmLib:\t%8u kB\nVmPTE:\t%8u kB\nVmSwap:\t%8u kB\n",
                        s.vm_size_kb, s.vm_size_kb, 0u, 0u, s.vm_rss_kb, s.vm_rss_kb, s.vm_data_kb,
                        s.vm_stk_kb, s.vm_exe_kb, 0u, 0u, 0u);
  absl::StrAppendFormat(&out, "Threads:\t%d\nSigQ:\t0/31805\n", s.threads);
  absl::StrAppendFormat(&out,
                        "SigPnd:\t%016x\nShdPnd:\t%016x\nSigBlk:\t%016x\nSigIgn:\t%016x\n"
                        "SigCgt:\t%016x\n",
                        s.sig_pnd, s.shd_pnd, s.sig_blk, s.sig_ign, s.sig_cgt);
  absl::StrAppendFormat(&out,
                        "CapInh:\t%016x\nCapPrm:\t%016x\nCapEff:\t%016x\nCapBnd:\t%016x\n"
                        "CapAmb:\t%016x\nNoNewPrivs:\t0\nSeccomp:\t0\n",
                        0u, caps, caps, 0x1ffffffffffull, 0u);
  absl::StrAppendFormat(&out, "Cpus_allowed:\t%s\nCpus_allowed_list:\t0-%d\n", cpus_mask,
                        s.ncpus - 1);
  absl::StrAppend(&out, "voluntary_ctxt_switches:\t0\nnonvoluntary_ctxt_switches:\t0\n");
  return out;
}

std::string FormatMapsLine(const ProcMapsEntry& e) {
  std::string line = absl::StrFormat(
      "%08x-%08x %c%c%c%c %08x %02x:%02x %u ", e.start, e.end, (e.prot & PROT_READ) ? 'r' : '-',
      (e.prot & PROT_WRITE) ? 'w' : '-', (e.prot & PROT_EXEC) ? 'x' : '-', e.shared ? 's' : 'p',
      e.offset, DevMajor(e.dev), DevMinor(e.dev), e.ino);
  if (!e.name.empty()) {
    // Linux pads the name to column 73 (25 + 6 * sizeof(void*) - 1 characters).
    if (line.size() < 73) line.append(73 - line.size(), ' ');
    line += e.name;
  }
  line += '\n';
  return line;
}

std::string FormatLimits(const std::vector<ProcLimit>& rlimits) {
  // fs/proc/base.c's names and units, in RLIMIT_* order.
  static constexpr struct {
    const char* name;
    const char* unit;
  } kNames[] = {
      {"Max cpu time", "seconds"},        {"Max file size", "bytes"},
      {"Max data size", "bytes"},         {"Max stack size", "bytes"},
      {"Max core file size", "bytes"},    {"Max resident set", "bytes"},
      {"Max processes", "processes"},     {"Max open files", "files"},
      {"Max locked memory", "bytes"},     {"Max address space", "bytes"},
      {"Max file locks", "locks"},        {"Max pending signals", "signals"},
      {"Max msgqueue size", "bytes"},     {"Max nice priority", nullptr},
      {"Max realtime priority", nullptr}, {"Max realtime timeout", "us"},
  };
  auto value = [](uint64_t v) {
    return v == RLIM_INFINITY ? std::string("unlimited") : std::to_string(v);
  };
  std::string out =
      absl::StrFormat("%-25s %-20s %-20s %-10s\n", "Limit", "Soft Limit", "Hard Limit", "Units");
  for (size_t i = 0; i < rlimits.size() && i < std::size(kNames); i++) {
    absl::StrAppendFormat(&out, "%-25s %-20s %-20s ", kNames[i].name, value(rlimits[i].cur),
                          value(rlimits[i].max));
    if (kNames[i].unit) absl::StrAppendFormat(&out, "%-10s", kNames[i].unit);
    out += '\n';
  }
  return out;
}

std::string FormatSmapsRollup(const ProcSmapsRollup& r) {
  ProcMapsEntry head{r.start, r.end, 0, false, 0, 0, 0, "[rollup]"};
  std::string out = FormatMapsLine(head);
  auto kb = [&](const char* field, uint64_t bytes) {
    absl::StrAppendFormat(&out, "%-16s%8u kB\n", absl::StrCat(field, ":"), bytes / 1024);
  };
  kb("Rss", r.rss);
  kb("Pss", r.pss);
  kb("Pss_Dirty", r.pss - std::min(r.pss, r.private_clean + r.shared_clean));
  kb("Pss_Anon", r.pss_anon);
  kb("Pss_File", r.pss_file);
  kb("Pss_Shmem", r.pss_shmem);
  kb("Shared_Clean", r.shared_clean);
  kb("Shared_Dirty", r.shared_dirty);
  kb("Private_Clean", r.private_clean);
  kb("Private_Dirty", r.private_dirty);
  kb("Referenced", r.rss);
  kb("Anonymous", r.anonymous);
  for (const char* zero : {"KSM", "LazyFree", "AnonHugePages", "ShmemPmdMapped", "FilePmdMapped",
                           "Shared_Hugetlb", "Private_Hugetlb", "Swap", "SwapPss", "Locked"}) {
    kb(zero, 0);
  }
  return out;
}

std::string FormatMountsLine(const ProcMountEntry& m) {
  return absl::StrCat(m.fstype, " ", m.mount_point, " ", m.fstype, " ", m.read_only ? "ro" : "rw",
                      m.no_exec ? ",noexec" : "", " 0 0\n");
}

std::string FormatMountinfoLine(const ProcMountEntry& m) {
  return absl::StrFormat("%d %d %d:%d / %s %s%s - %s %s %s\n", m.id, m.parent_id, DevMajor(m.dev),
                         DevMinor(m.dev), m.mount_point, m.read_only ? "ro" : "rw",
                         m.no_exec ? ",noexec" : "", m.fstype, m.fstype, m.read_only ? "ro" : "rw");
}

std::string GenerateCpuinfo(int ncpus) {
  Cpuid l0 = Query(0), l1 = Query(1);
  char vendor[13] = {};
  memcpy(vendor, &l0.b, 4);
  memcpy(vendor + 4, &l0.d, 4);
  memcpy(vendor + 8, &l0.c, 4);
  char brand[49] = {};
  if (Query(0x80000000).a >= 0x80000004) {
    for (uint32_t i = 0; i < 3; ++i) {
      Cpuid r = Query(0x80000002 + i);
      memcpy(brand + 16 * i, &r, 16);
    }
  }
  uint32_t family = (l1.a >> 8) & 0xf, model = (l1.a >> 4) & 0xf, stepping = l1.a & 0xf;
  if (family == 0xf) family += (l1.a >> 20) & 0xff;
  if (family >= 6) model |= ((l1.a >> 16) & 0xf) << 4;
  std::string flags = CpuFlags();
  std::string model_name = brand;
  // The brand string is left-padded with spaces on some CPUs.
  model_name.erase(0, model_name.find_first_not_of(' '));
  std::string out;
  for (int i = 0; i < ncpus; ++i) {
    absl::StrAppendFormat(
        &out,
        "processor\t: %d\nvendor_id\t: %s\ncpu family\t: %u\nmodel\t\t: %u\nmodel name\t: %s\n"
        "stepping\t: %u\ncpu MHz\t\t: 2000.000\ncache size\t: 32768 KB\nphysical id\t: 0\n"
        "siblings\t: %d\ncore id\t\t: %d\ncpu cores\t: %d\napicid\t\t: %d\nfpu\t\t: yes\n"
        "fpu_exception\t: yes\ncpuid level\t: %u\nwp\t\t: yes\nflags\t\t: %s\n"
        "bogomips\t: 4000.00\nclflush size\t: 64\ncache_alignment\t: 64\n"
        "address sizes\t: 46 bits physical, 48 bits virtual\npower management:\n\n",
        i, vendor, family, model, model_name, stepping, ncpus, i, ncpus, i, l0.a, flags);
  }
  return out;
}

std::string GenerateProcStat(int ncpus, int64_t boot_time_sec, int processes, int running) {
  std::string out = "cpu  0 0 0 0 0 0 0 0 0 0\n";
  for (int i = 0; i < ncpus; ++i) absl::StrAppendFormat(&out, "cpu%d 0 0 0 0 0 0 0 0 0 0\n", i);
  absl::StrAppendFormat(&out,
                        "intr 0\nctxt 0\nbtime %d\nprocesses %d\nprocs_running %d\n"
                        "procs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
                        boot_time_sec, processes, running);
  return out;
}

std::string GenerateMeminfo(uint64_t total_kb, uint64_t used_kb) {
  uint64_t free_kb = total_kb > used_kb ? total_kb - used_kb : 0;
  return absl::StrFormat(
      "MemTotal:       %8u kB\nMemFree:        %8u kB\nMemAvailable:   %8u kB\n"
      "Buffers:        %8u kB\nCached:         %8u kB\nSwapCached:     %8u kB\n"
      "Active:         %8u kB\nInactive:       %8u kB\nSwapTotal:      %8u kB\n"
      "SwapFree:       %8u kB\nShmem:          %8u kB\nHugePages_Total:   %5u\n"
      "HugePages_Free:    %5u\nHugepagesize:   %8u kB\n",
      total_kb, free_kb, free_kb, 0u, 0u, 0u, used_kb, 0u, 0u, 0u, 0u, 0u, 0u, 2048u);
}

std::string GenerateUptime(double uptime_sec, int ncpus) {
  return absl::StrFormat("%.2f %.2f\n", uptime_sec, uptime_sec * ncpus);
}

std::string GenerateLoadavg(int running, int total, int32_t last_pid) {
  return absl::StrFormat("0.00 0.00 0.00 %d/%d %d\n", running, total, last_pid);
}

std::string GenerateVersion() {
  return absl::StrCat("Linux version ", kProcOsRelease, " (usentry@usentry) (gcc (usentry)) ",
                      kProcOsVersion, "\n");
}

std::string GenerateFilesystems() {
  return "nodev\tsysfs\nnodev\ttmpfs\nnodev\tproc\nnodev\tdevtmpfs\nnodev\tpipefs\n"
         "nodev\toverlay\nnodev\t9p\nnodev\tdevpts\n";
}

int HostCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

std::string RandomUuid() {
  uint8_t b[16] = {};
  if (getrandom(b, sizeof(b), 0) != sizeof(b)) {
    // Practically unreachable; a fixed-but-valid UUID beats failing the read.
    memset(b, 0x5a, sizeof(b));
  }
  b[6] = (b[6] & 0x0f) | 0x40;  // version 4
  b[8] = (b[8] & 0x3f) | 0x80;  // RFC 4122 variant
  return absl::StrFormat("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
                         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                         b[12], b[13], b[14], b[15]);
}

}  // namespace usentry::sentry::fsimpl
