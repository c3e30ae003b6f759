/* shell.h - `ctsdb shell`, the HBase-shell-compatible admin shell over storage/wc.h
 * (docs/shell.md). The one header of the shell module (tools/shell_*.c); it exists so
 * tools/cmd_shell.c and the unit tests can reach the parser, the output formatting and the
 * command layer.
 *
 *   shell_parse.c   lexer and parser: text -> commands with typed arguments ("Syntax")
 *   shell_format.c  binary-string form, TTL display, describe's family line ("Output")
 *   shell_exec.c    the commands ("Commands") mapped onto wc.h calls, and their output
 *   shell_meta.c    the read-only hbase:meta view of the catalog
 *   shell_run.c     reading scripts and interactive lines, continuation, errors, Took lines */
#ifndef CT_SHELL_H
#define CT_SHELL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "storage/ct_err.h"
#include "storage/wc.h"

/* ---- parse tree (shell_parse.c) ----------------------------------------------------------
 * Layouts are public because the command layer and the tests walk the tree. */

enum shell_val_kind {
    SHELL_VAL_STR = 0,   /* 'single' or "double" quoted: bytes in str/len (may hold NULs) */
    SHELL_VAL_INT = 1,   /* num */
    SHELL_VAL_BOOL = 2,  /* num is 0 or 1 */
    SHELL_VAL_NIL = 3,   /* nil */
    SHELL_VAL_CONST = 4, /* an upper-case constant such as NAME or VERSIONS: its name in str */
    SHELL_VAL_ARRAY = 5, /* items[0..n) */
    SHELL_VAL_DICT = 6,  /* n pairs: key items[2i], value items[2i+1]; keys are STR or CONST */
};

struct shell_val {
    enum shell_val_kind kind;
    int line, col; /* where the value starts (1-based) */
    char *str;     /* STR, CONST: NUL-terminated copy of the bytes (len excludes the NUL) */
    size_t len;
    int64_t num;
    struct shell_val *items; /* ARRAY, DICT */
    size_t n;                /* ARRAY: items; DICT: pairs */
};

struct shell_cmd {
    char *name;
    int line, col;
    struct shell_val *args; /* an omitted-braces final dictionary is one DICT argument */
    size_t nargs;
};

struct shell_prog {
    struct shell_cmd *cmds;
    size_t n;
};

/* Where and why parsing failed. */
struct shell_perr {
    int line, col;
    char msg[200];
};

/* shell_parse() outcome besides CT_OK / CT_EINVAL / CT_ENOMEM: the text ends inside an open
 * `[` or `{` or after a trailing `,` or `=>`; the caller should read another line and retry. */
#define SHELL_PARSE_INCOMPLETE 2

/* Parses `len` bytes of text whose first line is numbered `first_line`. On CT_OK *out holds the
 * commands (possibly none), freed with shell_prog_free(). On CT_EINVAL perr says where and why;
 * on SHELL_PARSE_INCOMPLETE perr holds the end position. *out is empty unless CT_OK. */
CT_MUST_CHECK int shell_parse(const char *text, size_t len, int first_line, struct shell_prog *out,
                              struct shell_perr *perr);
void shell_prog_free(struct shell_prog *p); /* accepts an empty or zeroed program */

/* A short description of a value kind for error messages ("a string", "an array", ...). */
const char *shell_val_kind_name(enum shell_val_kind k);

/* ---- output formatting (shell_format.c) --------------------------------------------------- */

/* Writes bytes in HBase's binary-string form: 0x20..0x7E except '\' as themselves, every other
 * byte as \xHH (upper-case hex). */
void shell_fput_binary(FILE *f, const uint8_t *p, size_t n);
/* Decodes HBase's binary-string form (Bytes.toBytesBinary): `\xHH` (either hex case) becomes one
 * byte, everything else is copied. Writes at most n bytes to out; returns the decoded length. */
size_t shell_binary_decode(const char *s, size_t n, uint8_t *out);
/* The describe form of a TTL in seconds: FOREVER, "<s> SECOND(S)" below 60, else
 * "<s> SECONDS (<d> DAY(S) <h> HOUR(S) <m> MINUTE(S) <s> SECOND(S))" with only non-zero parts. */
void shell_format_ttl(int64_t ttl_s, char *out, size_t cap);
/* Writes describe's line for one family: {NAME => 'f', BLOOMFILTER => 'ROW', ...} (no newline). */
void shell_fput_family(FILE *f, const struct wc_family_desc *fd);
/* Writes ", {TABLE_ATTRIBUTES => {K => 'v', ...}}" for the table attributes that differ from
 * their defaults (keys sorted), or nothing. */
void shell_fput_table_attributes(FILE *f, const struct wc_table_desc *d);

/* ---- the hbase:meta view (shell_meta.c) -------------------------------------------------- */

#define SHELL_META_TABLE   "hbase:meta" /* the name users read */
#define SHELL_META_SCRATCH "meta"       /* the table inside the view's scratch store */

struct shell_meta; /* opaque */

/* Builds the read-only hbase:meta view of the store `src`: a scratch embedded store (in a new
 * directory under $TMPDIR, or /tmp) holding table SHELL_META_SCRATCH with one row per table
 * ("<table>", table:state ENABLED or DISABLED) and one per region ("<table>,<start key>,<id>",
 * info:regioninfo "{ENCODED => id, NAME => '...', STARTKEY => '...', ENDKEY => '...'}",
 * info:server `server`, info:state OPEN or CLOSED); table names without "default:". Returns a
 * new view in *out, freed (store closed, directory removed) with shell_meta_free(). */
CT_MUST_CHECK int shell_meta_build(struct wc_store *src, const char *server,
                                   struct shell_meta **out, struct ct_err *err);
struct wc_store *shell_meta_store(const struct shell_meta *m);
void shell_meta_free(struct shell_meta *m); /* accepts NULL */

/* ---- the shell (shell_exec.c, shell_run.c) ------------------------------------------------ */

struct shell_options {
    /* The store's options as the TSD's configuration names them (tsdstore_wc_options: the
     * Bigtable project, instance, endpoints, credentials, deadline; the engine's sizes), or NULL
     * for wc_options_init()'s defaults; borrowed (with its strings) until shell_free. backend and
     * data_dir below override its fields. */
    const struct wc_options *store;
    enum wc_backend_kind backend;
    const char *data_dir; /* embedded: the data directory (borrowed until shell_free) */
    FILE *out;            /* results and Took lines */
    FILE *err;            /* ERROR lines */
    bool tty;             /* out is a terminal: pad table columns */
    int width;            /* terminal width when tty (columns) */
};

struct shell; /* opaque: defined in shell_exec.c */

/* Returns a new shell in *out, freed with shell_free(). The store is opened on the first command
 * that needs it. */
CT_MUST_CHECK int shell_new(const struct shell_options *o, struct shell **out, struct ct_err *err);
void shell_free(struct shell *sh); /* closes the store; accepts NULL */

/* Runs one command, printing its output (without the Took line). On failure err holds the
 * message shown after "ERROR: " and nothing was changed by the command. */
CT_MUST_CHECK int shell_exec(struct shell *sh, const struct shell_cmd *cmd, struct ct_err *err);
/* The options the shell was created with (streams, terminal width). */
const struct shell_options *shell_options_of(const struct shell *sh);
/* Makes scans and counts stop with "interrupted" once *flag is non-zero (set by a SIGINT
 * handler; NULL = never). Borrows flag until shell_free. */
void shell_set_interrupt_flag(struct shell *sh, volatile sig_atomic_t *flag);
/* Whether an `exit`/`quit` command has run. */
bool shell_exit_requested(const struct shell *sh);

/* Runs a whole script (the text of -e or a file): commands one by one, each followed by its
 * Took line; stops at the first error, printing "ERROR: <message>" (and, for syntax errors, the
 * line and a caret) to o->err. Returns 0, or 1 after an error. */
int shell_run_text(struct shell *sh, const char *text, size_t len);
/* Reads commands from `in` line by line (continuing while a bracket is open). Interactive: with
 * line editing and history, errors do not stop the loop. Returns the exit status (0 or 1). */
int shell_run_stream(struct shell *sh, FILE *in, bool interactive);

#endif
