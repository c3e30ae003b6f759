/* fuzz_shell.c - libFuzzer target for the `ctsdb shell` parser (tools/shell_parse.c): any text
 * parses, asks for more input, or fails with a position inside the text. */
#include <stdlib.h>
#include <string.h>

#include "tools/shell.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size ? size : 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    struct shell_prog prog;
    memset(&prog, 0, sizeof(prog));
    struct shell_perr perr;
    memset(&perr, 0, sizeof(perr));
    int rc = shell_parse(s, size, 1, &prog, &perr);
    if (rc == CT_OK)
        shell_prog_free(&prog);
    else if (rc == CT_EINVAL && (perr.line < 1 || !perr.msg[0]))
        abort();
    free(s);
    return 0;
}
