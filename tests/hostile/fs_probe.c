// Filesystem attack driver: runs the operations named on the command line, in order,
// and reports each one. Content read back is printed after "OK" so a test can see
// exactly what the sandbox handed out (a host marker must never appear).
//
//   read PATH            open O_RDONLY and read up to 4 KiB
//   write PATH           open O_WRONLY|O_CREAT|O_TRUNC and write "pwned\n"
//   openat DIR REL       open DIR as a directory, then openat(dirfd, REL) and read
//   chdir_read DIR REL   chdir(DIR), then open REL relative to it and read
//   fdpath DIR REL       open DIR, then read /proc/self/fd/<fd>/REL
//   list DIR             getdents: names, space separated
//   link OLD NEW | linkf OLD NEW (AT_SYMLINK_FOLLOW) | symlink TARGET LINK | rename OLD NEW |
//   unlink PATH | mkdir PATH readlink PATH | stat PATH (prints size)
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"

static void ReadFd(const char* name, int fd) {
  if (Report(name, fd) < 0) return;
  char buf[4097];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  if (n < 0) {
    Report(Name("%s:read", name), -1);
  } else {
    buf[n] = '\0';
    // Newlines flattened so one report stays one line; NULs (environ, cmdline) too,
    // so nothing after the first string is hidden.
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') buf[i] = '|';
      if (buf[i] == '\0') buf[i] = ' ';
    }
    printf("%s:content=%s\n", name, buf);
  }
  fflush(stdout);
  close(fd);
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* op = argv[i];
    const char* a = i + 1 < argc ? argv[i + 1] : "";
    const char* b = i + 2 < argc ? argv[i + 2] : "";
    char name[4096];
    if (strcmp(op, "read") == 0) {
      snprintf(name, sizeof(name), "read:%s", a);
      ReadFd(name, open(a, O_RDONLY));
      i += 1;
    } else if (strcmp(op, "write") == 0) {
      int fd = open(a, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        Report(Name("write:%s", a), write(fd, "pwned\n", 6));
        close(fd);
      } else {
        Report(Name("write:%s", a), -1);
      }
      i += 1;
    } else if (strcmp(op, "openat") == 0) {
      int dfd = open(a, O_RDONLY | O_DIRECTORY);
      snprintf(name, sizeof(name), "openat:%s:%s", a, b);
      if (dfd < 0) {
        Report(name, -1);
      } else {
        ReadFd(name, openat(dfd, b, O_RDONLY));
        close(dfd);
      }
      i += 2;
    } else if (strcmp(op, "fdpath") == 0) {
      // The /proc/self/fd magic link of a directory, then a path relative to it.
      int dfd = open(a, O_RDONLY | O_DIRECTORY);
      snprintf(name, sizeof(name), "fdpath:%s:%s", a, b);
      if (dfd < 0) {
        Report(name, -1);
      } else {
        char path[4096];
        snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, b);
        ReadFd(name, open(path, O_RDONLY));
        close(dfd);
      }
      i += 2;
    } else if (strcmp(op, "chdir_read") == 0) {
      snprintf(name, sizeof(name), "chdir_read:%s:%s", a, b);
      if (chdir(a) != 0) {
        Report(name, -1);
      } else {
        ReadFd(name, open(b, O_RDONLY));
      }
      i += 2;
    } else if (strcmp(op, "list") == 0) {
      DIR* d = opendir(a);
      if (d == NULL) {
        Report(Name("list:%s", a), -1);
      } else {
        printf("list:%s=OK", a);
        for (struct dirent* e; (e = readdir(d)) != NULL;) printf(" %s", e->d_name);
        printf("\n");
        fflush(stdout);
        closedir(d);
      }
      i += 1;
    } else if (strcmp(op, "link") == 0) {
      Report(Name("link:%s:%s", a, b), link(a, b));
      i += 2;
    } else if (strcmp(op, "linkf") == 0) {
      // Follows a symlink given as OLD: links whatever it resolves to.
      Report(Name("linkf:%s:%s", a, b), linkat(AT_FDCWD, a, AT_FDCWD, b, AT_SYMLINK_FOLLOW));
      i += 2;
    } else if (strcmp(op, "symlink") == 0) {
      Report(Name("symlink:%s:%s", a, b), symlink(a, b));
      i += 2;
    } else if (strcmp(op, "rename") == 0) {
      Report(Name("rename:%s:%s", a, b), rename(a, b));
      i += 2;
    } else if (strcmp(op, "unlink") == 0) {
      Report(Name("unlink:%s", a), unlink(a));
      i += 1;
    } else if (strcmp(op, "mkdir") == 0) {
      Report(Name("mkdir:%s", a), mkdir(a, 0755));
      i += 1;
    } else if (strcmp(op, "readlink") == 0) {
      char target[4096];
      ssize_t n = readlink(a, target, sizeof(target) - 1);
      if (Report(Name("readlink:%s", a), n) >= 0) {
        target[n] = '\0';
        printf("readlink:%s:content=%s\n", a, target);
      }
      i += 1;
    } else if (strcmp(op, "stat") == 0) {
      struct stat st;
      int rc = stat(a, &st);
      Report(Name("stat:%s", a), rc < 0 ? -1 : (long)st.st_size);
      i += 1;
    } else {
      fprintf(stderr, "fs_probe: unknown operation %s\n", op);
      return 2;
    }
  }
  return 0;
}
