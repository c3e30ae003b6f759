/* test_bigtable_emu.h - starts and stops Google's Bigtable emulator for the Bigtable test
 * programs (tests/unit/storage/test_bigtable_*.c); included by exactly one file per program.
 *
 * emulator_start() runs cbtemulator on 127.0.0.1 port 0, waits (at most 20 s) for its
 * "running on 127.0.0.1:PORT" line and sets BIGTABLE_EMULATOR_HOST; emulator_stop() stops it by
 * PID (SIGINT, then SIGKILL after 5 s). A missing emulator sets emu_missing (tests then skip())
 * and is a failure only when CI=true. */
#ifndef CT_TEST_BIGTABLE_EMU_H
#define CT_TEST_BIGTABLE_EMU_H

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define EMULATOR "/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator"

static pid_t emu_pid = -1;
static char emu_addr[64];
static bool emu_missing;

/* LeakSanitizer: gRPC keeps a few process-wide objects alive after grpc_shutdown. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libgrpc\nleak:libgpr\nleak:libabsl\nleak:libre2\nleak:libssl\nleak:libcrypto\n";
}

static int emulator_start(void **state)
{
    (void)state;
    if (access(EMULATOR, X_OK) != 0) {
        const char *ci = getenv("CI");
        fprintf(stderr, "bigtable emulator not found at %s: %s\n", EMULATOR,
                ci && !strcmp(ci, "true") ? "FAILING (CI=true)" : "SKIPPING these tests");
        emu_missing = true;
        return ci && !strcmp(ci, "true") ? -1 : 0;
    }
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char *argv[] = {EMULATOR, "-host", "127.0.0.1", "-port", "0", NULL};
    if (posix_spawn(&emu_pid, EMULATOR, &fa, NULL, argv, environ) != 0)
        return -1;
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    /* wait (at most 20 s) for "Cloud Bigtable emulator running on 127.0.0.1:PORT" */
    char line[512];
    size_t n = 0;
    struct pollfd pfd = {fds[0], POLLIN, 0};
    for (int waited = 0; waited < 200 && n < sizeof(line) - 1; waited++) {
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        ssize_t r = read(fds[0], line + n, sizeof(line) - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        line[n] = 0;
        char *p = strstr(line, "running on ");
        if (p && strchr(p, '\n')) {
            sscanf(p + strlen("running on "), "%63s", emu_addr);
            break;
        }
    }
    close(fds[0]);
    if (!emu_addr[0]) {
        fprintf(stderr, "bigtable emulator did not report its address\n");
        return -1;
    }
    setenv("BIGTABLE_EMULATOR_HOST", emu_addr, 1);
    return 0;
}

static int emulator_stop(void **state)
{
    (void)state;
    if (emu_pid <= 0)
        return 0;
    kill(emu_pid, SIGINT);
    for (int i = 0; i < 50; i++) {
        if (waitpid(emu_pid, NULL, WNOHANG) == emu_pid)
            return 0;
        usleep(100000);
    }
    kill(emu_pid, SIGKILL);
    waitpid(emu_pid, NULL, 0);
    return 0;
}

#endif
