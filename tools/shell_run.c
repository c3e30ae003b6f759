/* shell_run.c - feeding text to the shell: scripts (-e, a file, stdin) and the interactive loop
 * with libedit line editing and history.
 *
 * Lines are gathered until they parse as complete commands (a `[` or `{` still open, or a
 * trailing `,` / `=>`, asks for the next line); then each command runs and is followed by its
 * `Took N.NNNN seconds` line. Invariants: (1) in a script the first error (syntax or command)
 * prints `ERROR: <message>` on the error stream and stops with status 1, so nothing after it
 * runs; (2) interactively an error is printed and the pending text is dropped; (3) stdout is
 * flushed before anything goes to the error stream, so a terminal shows them in order;
 * (4) interactively, Ctrl-C at the prompt drops the line being typed and Ctrl-C during a scan or
 * count stops it ("interrupted"): SIGINT only sets shell_run_sigint, the one piece of global
 * state here (a signal handler has no other way to talk to the loop). While readline() waits the
 * handler is installed without SA_RESTART so the read returns; while a command runs, with it, so
 * system calls are restarted, not failed with EINTR. Scripts keep the default SIGINT (the process
 * ends; the write-ahead log keeps what was acknowledged). */
#include <editline/readline.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "storage/clock.h"
#include "tools/shell.h"

struct shell_reader {
    struct shell *sh;
    const struct shell_options *o;
    char *buf; /* pending text: complete lines not yet forming a command */
    size_t len, cap;
    int first_line; /* number of buf's first line */
    int next_line;  /* number of the next line fed */
    bool interactive;
};

enum {
    READER_OK = 0,
    READER_ERROR = 1,
    READER_EXIT = 2,
};

/* Prints a syntax error with the offending line and a caret under the column. */
static void reader_syntax_error(struct shell_reader *r, const struct shell_perr *pe)
{
    FILE *e = r->o->err;
    fflush(r->o->out);
    fprintf(e, "ERROR: syntax error at line %d, column %d: %s\n", pe->line, pe->col, pe->msg);
    /* find line pe->line in buf */
    const char *p = r->buf, *end = r->buf + r->len;
    for (int l = r->first_line; l < pe->line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    size_t n = eol ? (size_t)(eol - p) : (size_t)(end - p);
    fprintf(e, "%.*s\n", (int)n, p);
    for (int i = 1; i < pe->col; i++)
        putc((size_t)(i - 1) < n && p[i - 1] == '\t' ? '\t' : ' ', e);
    fputs("^\n", e);
    fflush(e);
}

static void reader_reset(struct shell_reader *r)
{
    r->len = 0;
    r->first_line = r->next_line;
}

/* Runs the commands of a parsed program. */
static int reader_run(struct shell_reader *r, const struct shell_prog *prog)
{
    for (size_t i = 0; i < prog->n; i++) {
        struct ct_err err = {0};
        uint64_t t0 = clock_mono_ns();
        int rc = shell_exec(r->sh, &prog->cmds[i], &err);
        double secs = (double)(clock_mono_ns() - t0) / 1e9;
        if (shell_exit_requested(r->sh))
            return READER_EXIT;
        if (rc != CT_OK) {
            fflush(r->o->out);
            fprintf(r->o->err, "ERROR: %s\n", err.msg);
            fflush(r->o->err);
            if (!r->interactive)
                return READER_ERROR;
            continue;
        }
        fprintf(r->o->out, "Took %.4f seconds\n", secs);
        fflush(r->o->out);
    }
    return READER_OK;
}

/* Adds one line (without its newline) and runs what became complete. */
static int reader_feed(struct shell_reader *r, const char *line, size_t n)
{
    if (r->len + n + 2 > r->cap) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap < r->len + n + 2)
            cap *= 2;
        char *nb = realloc(r->buf, cap);
        if (!nb) {
            fprintf(r->o->err, "ERROR: out of memory reading the script\n");
            return READER_ERROR;
        }
        r->buf = nb;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, line, n);
    r->len += n;
    r->buf[r->len++] = '\n';
    r->next_line++;
    struct shell_prog prog;
    struct shell_perr pe;
    int rc = shell_parse(r->buf, r->len, r->first_line, &prog, &pe);
    if (rc == SHELL_PARSE_INCOMPLETE)
        return READER_OK;
    if (rc != CT_OK) {
        reader_syntax_error(r, &pe);
        reader_reset(r);
        return r->interactive ? READER_OK : READER_ERROR;
    }
    reader_reset(r);
    rc = reader_run(r, &prog);
    shell_prog_free(&prog);
    return rc;
}

/* At the end of input: pending text is an unfinished command. */
static int reader_finish(struct shell_reader *r)
{
    if (r->len == 0)
        return READER_OK;
    struct shell_prog prog;
    struct shell_perr pe;
    int rc = shell_parse(r->buf, r->len, r->first_line, &prog, &pe);
    if (rc == CT_OK) { /* cannot happen: it was incomplete before */
        shell_prog_free(&prog);
        return READER_OK;
    }
    if (rc == SHELL_PARSE_INCOMPLETE) {
        /* point at the end of the last line */
        pe.line = r->next_line - 1;
        const char *last = r->buf + r->len - 1; /* the final '\n' */
        const char *s = last;
        while (s > r->buf && s[-1] != '\n')
            s--;
        pe.col = (int)(last - s) + 1;
        snprintf(pe.msg, sizeof(pe.msg), "unexpected end of input (an open '[' or '{'?)");
    }
    reader_syntax_error(r, &pe);
    reader_reset(r);
    return READER_ERROR;
}

static void reader_init(struct shell_reader *r, struct shell *sh, const struct shell_options *o,
                        bool interactive)
{
    memset(r, 0, sizeof(*r));
    r->sh = sh;
    r->o = o;
    r->first_line = r->next_line = 1;
    r->interactive = interactive;
}

int shell_run_text(struct shell *sh, const char *text, size_t len)
{
    struct shell_reader r;
    reader_init(&r, sh, shell_options_of(sh), false);
    const char *p = text, *end = text + len;
    int rc = READER_OK;
    while (p < end && rc == READER_OK) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        rc = reader_feed(&r, p, n);
        p = nl ? nl + 1 : end;
    }
    if (rc == READER_OK)
        rc = reader_finish(&r);
    free(r.buf);
    return rc == READER_ERROR ? 1 : 0;
}

static char *shell_history_path(void)
{
    const char *home = getenv("HOME");
    if (!home || !*home)
        return NULL;
    size_t n = strlen(home) + 32;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/.ctsdb_shell_history", home);
    return p;
}

static volatile sig_atomic_t shell_run_sigint;

static void shell_run_on_sigint(int sig)
{
    (void)sig;
    shell_run_sigint = 1;
}

/* Installs the SIGINT handler, with or without SA_RESTART (see (4)). */
static void shell_run_catch_sigint(bool restart, struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = shell_run_on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigaction(SIGINT, &sa, old);
}

int shell_run_stream(struct shell *sh, FILE *in, bool interactive)
{
    struct shell_reader r;
    reader_init(&r, sh, shell_options_of(sh), interactive);
    int rc = READER_OK;
    if (!interactive) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        while (rc == READER_OK && (n = getline(&line, &cap, in)) >= 0) {
            if (n > 0 && line[n - 1] == '\n')
                n--;
            rc = reader_feed(&r, line, (size_t)n);
        }
        free(line);
        if (rc == READER_OK)
            rc = reader_finish(&r);
        free(r.buf);
        return rc == READER_ERROR ? 1 : 0;
    }
    char *hist = shell_history_path();
    using_history();
    stifle_history(1000);
    if (hist && read_history(hist) != 0) {
        /* no history yet: fine */
    }
    struct sigaction saved;
    shell_run_catch_sigint(false, &saved);
    shell_set_interrupt_flag(sh, &shell_run_sigint);
    for (;;) {
        char prompt[64];
        snprintf(prompt, sizeof(prompt), "ctsdb(main):%03d:%d%c ", r.next_line, r.len ? 1 : 0,
                 r.len ? '*' : '>');
        shell_run_sigint = 0;
        shell_run_catch_sigint(false, NULL);
        char *line = readline(prompt);
        shell_run_catch_sigint(true, NULL);
        if (!line && shell_run_sigint) {
            /* Ctrl-C at the prompt: forget the pending lines, prompt again */
            putchar('\n');
            fflush(stdout);
            reader_reset(&r);
            continue;
        }
        if (!line) {
            putchar('\n');
            break;
        }
        if (*line)
            add_history(line);
        shell_run_sigint = 0;
        rc = reader_feed(&r, line, strlen(line));
        free(line);
        if (rc == READER_EXIT)
            break;
        rc = READER_OK;
    }
    shell_set_interrupt_flag(sh, NULL);
    sigaction(SIGINT, &saved, NULL);
    if (hist) {
        if (write_history(hist) != 0) {
            /* history is a convenience; failing to save it is not an error */
        }
        free(hist);
    }
    free(r.buf);
    return 0;
}
