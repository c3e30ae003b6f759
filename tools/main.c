/* main.c - entry point of the `ctsdb` program: dispatches argv[1] to a subcommand from the
 * generated table (see tools/tool.h) and prints --help. */
#include <stdio.h>
#include <string.h>

#include "tools/tool.h"

#define X(name) extern const struct tool_command tool_cmd_##name;
#include "tool_commands.inc"
#undef X

static const struct tool_command *const main_commands[] = {
#define X(name) &tool_cmd_##name,
#include "tool_commands.inc"
#undef X
};

#define MAIN_NCOMMANDS (sizeof(main_commands) / sizeof(main_commands[0]))

static void main_usage(FILE *out)
{
    fprintf(out, "usage: ctsdb <command> [options]\n\n"
                 "ctsdb is a time-series database in the OpenTSDB style.\n\ncommands:\n");
    for (size_t i = 0; i < MAIN_NCOMMANDS; i++)
        fprintf(out, "  %-14s %s\n", main_commands[i]->name, main_commands[i]->summary);
    fprintf(out, "\n`ctsdb <command> --help` describes a command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        main_usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version"))
        argv[1] = "version";
    for (size_t i = 0; i < MAIN_NCOMMANDS; i++)
        if (!strcmp(argv[1], main_commands[i]->name))
            return main_commands[i]->run(argc - 1, argv + 1);
    fprintf(stderr, "ctsdb: unknown command '%s' (see ctsdb --help)\n", argv[1]);
    return 2;
}
