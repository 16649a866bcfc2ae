/* peak FILE PROGRAM ARGS...: runs PROGRAM in a fresh fork of this small process, waits for it and
 * writes its exit code (-1 for a signal) and its own peak memory in KiB to FILE.
 *
 * A child spawned straight from a large test process would report that process's peak as its own:
 * Linux keeps, in a process's peak, the peak of the memory it had before its exec, and a spawned
 * child shares (or copies) its parent's memory until then. A fork of this small program does not. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: peak FILE PROGRAM ARGS...\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        execv(argv[2], argv + 2);
        perror("execv");
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("wait4");
        return 2;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror("fopen");
        return 2;
    }
    fprintf(f, "%d %ld", WIFEXITED(status) ? WEXITSTATUS(status) : -1, ru.ru_maxrss);
    return fclose(f) == 0 ? 0 : 2;
}
