// Check-then-use race on a rw mount: two processes keep swapping a real directory and
// a symlink pointing out of the mount into the name "dir" while a third opens
// "dir/file" over and over. Whatever interleaving the sentry and gofer see, an open
// must yield the in-mount file or an error, never a file outside the mount.
//
//   symlink_race DIR ESCAPE_TARGET... SECONDS
// DIR is inside a rw mount; each ESCAPE_TARGET becomes one symlink (absolute host
// paths, "../.." chains). Reports: opens that read the in-mount file, errors, and
// every foreign content verbatim ("foreign=...").
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "report.h"

static const char kInside[] = "inside-the-mount\n";

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// Moves `from` to "dir" and back, forever; failures are the race working as intended.
static void Swapper(const char* from) {
  for (;;) {
    if (rename(from, "dir") == 0) rename("dir", from);
  }
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: symlink_race DIR ESCAPE_TARGET... SECONDS\n");
    return 2;
  }
  const double seconds = atof(argv[argc - 1]);
  if (chdir(argv[1]) != 0 || mkdir("real", 0755) != 0) return Report("setup", -1), 1;
  int fd = open("real/file", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, kInside, strlen(kInside)) != (ssize_t)strlen(kInside)) {
    return Report("setup:file", -1), 1;
  }
  close(fd);

  pid_t swappers[16];
  int nswappers = 0;
  if ((swappers[nswappers++] = fork()) == 0) Swapper("real");
  for (int i = 2; i < argc - 1 && nswappers < 16; ++i) {
    char link_name[32];
    snprintf(link_name, sizeof(link_name), "link%d", i);
    if (symlink(argv[i], link_name) != 0) return Report(Name("setup:%s", link_name), -1), 1;
    if ((swappers[nswappers++] = fork()) == 0) Swapper(link_name);
  }

  long inside = 0, failed = 0, foreign = 0, attempts = 0;
  const double end = Now() + seconds;
  while (Now() < end) {
    ++attempts;
    int f = open("dir/file", O_RDONLY);
    if (f < 0) {
      ++failed;
      continue;
    }
    char buf[256];
    ssize_t n = read(f, buf, sizeof(buf) - 1);
    close(f);
    buf[n > 0 ? n : 0] = '\0';
    if (strcmp(buf, kInside) == 0) {
      ++inside;
    } else {
      ++foreign;
      printf("foreign=%s\n", buf);
    }
  }
  for (int i = 0; i < nswappers; ++i) kill(swappers[i], SIGKILL);
  for (int i = 0; i < nswappers; ++i) waitpid(swappers[i], NULL, 0);
  printf("attempts=%ld inside=%ld failed=%ld foreign=%ld\n", attempts, inside, failed, foreign);
  return 0;
}
