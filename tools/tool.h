/* tool.h - the `ctsdb` command line: how a subcommand is declared.
 *
 * Each tools/cmd_<name>.c defines exactly one
 *     const struct tool_command tool_cmd_<name> = {"<name>", "<one-line summary>", run};
 * at the start of a line; the build collects them into the table that tools/main.c dispatches on
 * (so adding a command touches no shared file). run() gets argv with argv[0] = the command name
 * and returns the process exit status (0 ok, 1 failure, 2 usage error). */
#ifndef CT_TOOL_H
#define CT_TOOL_H

struct tool_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

#endif
