/* shell_parse.c - lexer and parser of the shell's command language (docs/shell.md, "Syntax"): the
 * subset of Ruby that HBase shell scripts use.
 *
 *   program := { statement (newline | ';') }
 *   statement := [ name [ arg { ',' arg } ] ]          name: a lower-case identifier
 *   arg := value | pair { ',' pair }                   (a final dictionary without braces)
 *   value := 'str' | "str" | int | true | false | nil | CONST | '[' values ']' | '{' pairs '}'
 *   pair := (CONST | 'str' | "str") '=>' value
 *
 * Newlines are blanks inside brackets and after ',' or '=>'; '#' starts a comment outside
 * strings. Single-quoted strings know only \\ and \'; double-quoted ones \xHH, \n, \t, \r, \0,
 * \\ and \" (and \' , \e, \a, \s for Ruby compatibility). Anything else is a syntax error at a
 * line and column.
 *
 * Invariants: (1) every value records the line and column where it starts; (2) on any outcome
 * but CT_OK nothing is left allocated; (3) text running out inside a bracket or after ',' / '=>'
 * is SHELL_PARSE_INCOMPLETE, never an error, so a reader can ask for more lines. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "storage/coding.h"
#include "tools/shell.h"

enum shell_tok_kind {
    TOK_EOF,
    TOK_NEWLINE, /* also ';' */
    TOK_STR,
    TOK_INT,
    TOK_IDENT, /* lower-case: command names, true, false, nil */
    TOK_CONST, /* upper-case first letter */
    TOK_ARROW,
    TOK_COMMA,
    TOK_LBRACK,
    TOK_RBRACK,
    TOK_LBRACE,
    TOK_RBRACE,
};

struct shell_tok {
    enum shell_tok_kind kind;
    int line, col;
    char *str; /* STR, IDENT, CONST: owned by the token until taken */
    size_t len;
    int64_t num;
};

struct shell_parser {
    const char *p, *end;
    int line;
    const char *line_start;
    struct shell_tok tok; /* the current (lookahead) token */
    struct shell_perr *perr;
    int rc; /* CT_OK until the first error or SHELL_PARSE_INCOMPLETE */
};

static int parse_fail(struct shell_parser *ps, int line, int col, const char *fmt, ...)
    CT_PRINTF(4, 5);

static int parse_fail(struct shell_parser *ps, int line, int col, const char *fmt, ...)
{
    if (ps->rc != CT_OK)
        return ps->rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->perr->msg, sizeof(ps->perr->msg), fmt, ap);
    va_end(ap);
    ps->perr->line = line;
    ps->perr->col = col;
    ps->rc = CT_EINVAL;
    return ps->rc;
}

static int parse_incomplete(struct shell_parser *ps)
{
    if (ps->rc != CT_OK)
        return ps->rc;
    ps->perr->line = ps->line;
    ps->perr->col = (int)(ps->p - ps->line_start) + 1;
    snprintf(ps->perr->msg, sizeof(ps->perr->msg), "unexpected end of input");
    ps->rc = SHELL_PARSE_INCOMPLETE;
    return ps->rc;
}

static int parse_col(const struct shell_parser *ps, const char *at)
{
    return (int)(at - ps->line_start) + 1;
}

/* ---- lexer ------------------------------------------------------------------------------ */

/* A growable byte buffer for string literals. */
struct parse_buf {
    char *p;
    size_t len, cap;
};

static int parse_buf_put(struct parse_buf *b, char c)
{
    if (b->len + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        char *np = realloc(b->p, cap);
        if (!np)
            return CT_ENOMEM;
        b->p = np;
        b->cap = cap;
    }
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
    return CT_OK;
}

static const char *parse_describe_char(char c, char *buf, size_t cap)
{
    if (isprint((unsigned char)c))
        snprintf(buf, cap, "'%c'", c);
    else
        snprintf(buf, cap, "byte 0x%02X", (unsigned char)c);
    return buf;
}

static int lex_string(struct shell_parser *ps, struct shell_tok *t)
{
    char quote = *ps->p;
    const char *start = ps->p;
    struct parse_buf b = {0};
    ps->p++;
    if (parse_buf_put(&b, 0) != CT_OK) /* allocate even for '' */
        goto nomem;
    b.len = 0;
    for (;;) {
        if (ps->p >= ps->end || *ps->p == '\n') {
            free(b.p);
            return parse_fail(ps, ps->line, parse_col(ps, start), "unterminated string");
        }
        char c = *ps->p;
        if (c == quote) {
            ps->p++;
            break;
        }
        if (c != '\\') {
            if (parse_buf_put(&b, c) != CT_OK)
                goto nomem;
            ps->p++;
            continue;
        }
        /* an escape */
        if (ps->p + 1 >= ps->end) {
            free(b.p);
            return parse_fail(ps, ps->line, parse_col(ps, start), "unterminated string");
        }
        char e = ps->p[1];
        const char *esc = ps->p;
        ps->p += 2;
        if (quote == '\'') {
            if (e == '\\' || e == '\'') {
                if (parse_buf_put(&b, e) != CT_OK)
                    goto nomem;
            } else {
                /* every other backslash is literal in single quotes */
                if (parse_buf_put(&b, '\\') != CT_OK)
                    goto nomem;
                ps->p--;
            }
            continue;
        }
        char out;
        switch (e) {
        case 'n':
            out = '\n';
            break;
        case 't':
            out = '\t';
            break;
        case 'r':
            out = '\r';
            break;
        case '0':
            out = '\0';
            break;
        case 'a':
            out = '\a';
            break;
        case 'e':
            out = 27;
            break;
        case 's':
            out = ' ';
            break;
        case '\\':
        case '"':
        case '\'':
        case '#':
            out = e;
            break;
        case 'x': {
            int h1 = ps->p < ps->end ? coding_hex_digit(*ps->p) : -1;
            if (h1 < 0) {
                free(b.p);
                return parse_fail(ps, ps->line, parse_col(ps, esc),
                                  "invalid hex escape: \\x needs one or two hex digits");
            }
            ps->p++;
            int v = h1;
            int h2 = ps->p < ps->end ? coding_hex_digit(*ps->p) : -1;
            if (h2 >= 0) {
                v = v * 16 + h2;
                ps->p++;
            }
            out = (char)v;
            break;
        }
        default: {
            char d[16];
            free(b.p);
            return parse_fail(ps, ps->line, parse_col(ps, esc),
                              "unknown escape \\%s in a double-quoted string",
                              isprint((unsigned char)e) ? (d[0] = e, d[1] = 0, d)
                                                        : parse_describe_char(e, d, sizeof(d)));
        }
        }
        if (parse_buf_put(&b, out) != CT_OK)
            goto nomem;
    }
    t->kind = TOK_STR;
    t->str = b.p;
    t->len = b.len;
    return CT_OK;
nomem:
    free(b.p);
    return parse_fail(ps, ps->line, parse_col(ps, start), "out of memory");
}

static int lex_number(struct shell_parser *ps, struct shell_tok *t)
{
    const char *start = ps->p;
    const char *q = ps->p;
    if (*q == '-' || *q == '+')
        q++;
    while (q < ps->end && (isdigit((unsigned char)*q) || *q == '_'))
        q++;
    if (q < ps->end && *q == '.' && q + 1 < ps->end && isdigit((unsigned char)q[1]))
        return parse_fail(ps, ps->line, parse_col(ps, start),
                          "floating-point numbers are not supported");
    if (q < ps->end && (isalpha((unsigned char)*q)))
        return parse_fail(ps, ps->line, parse_col(ps, q), "unexpected '%c' after a number", *q);
    char digits[64];
    size_t n = 0;
    for (const char *r = start; r < q; r++) {
        if (*r == '_')
            continue;
        if (n + 1 >= sizeof(digits))
            return parse_fail(ps, ps->line, parse_col(ps, start), "integer out of range");
        digits[n++] = *r;
    }
    digits[n] = 0;
    errno = 0;
    char *endp;
    long long v = strtoll(digits, &endp, 10);
    if (errno == ERANGE || *endp)
        return parse_fail(ps, ps->line, parse_col(ps, start), "integer out of range");
    t->kind = TOK_INT;
    t->num = v;
    ps->p = q;
    return CT_OK;
}

/* Reads the next token into ps->tok (the previous one must have been taken or freed). */
static int lex_next(struct shell_parser *ps)
{
    struct shell_tok *t = &ps->tok;
    memset(t, 0, sizeof(*t));
    for (;;) {
        while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r'))
            ps->p++;
        if (ps->p < ps->end && *ps->p == '#') {
            while (ps->p < ps->end && *ps->p != '\n')
                ps->p++;
        }
        /* a backslash at the end of a line continues it */
        if (ps->p + 1 < ps->end && ps->p[0] == '\\' && ps->p[1] == '\n') {
            ps->p += 2;
            ps->line++;
            ps->line_start = ps->p;
            continue;
        }
        break;
    }
    t->line = ps->line;
    t->col = parse_col(ps, ps->p);
    if (ps->p >= ps->end) {
        t->kind = TOK_EOF;
        return CT_OK;
    }
    char c = *ps->p;
    if (c == '\n') {
        ps->p++;
        ps->line++;
        ps->line_start = ps->p;
        t->kind = TOK_NEWLINE;
        return CT_OK;
    }
    switch (c) {
    case ';':
        ps->p++;
        t->kind = TOK_NEWLINE;
        return CT_OK;
    case ',':
        ps->p++;
        t->kind = TOK_COMMA;
        return CT_OK;
    case '[':
        ps->p++;
        t->kind = TOK_LBRACK;
        return CT_OK;
    case ']':
        ps->p++;
        t->kind = TOK_RBRACK;
        return CT_OK;
    case '{':
        ps->p++;
        t->kind = TOK_LBRACE;
        return CT_OK;
    case '}':
        ps->p++;
        t->kind = TOK_RBRACE;
        return CT_OK;
    case '\'':
    case '"':
        return lex_string(ps, t);
    case '=':
        if (ps->p + 1 < ps->end && ps->p[1] == '>') {
            ps->p += 2;
            t->kind = TOK_ARROW;
            return CT_OK;
        }
        break;
    default:
        break;
    }
    if (isdigit((unsigned char)c) ||
        ((c == '-' || c == '+') && ps->p + 1 < ps->end && isdigit((unsigned char)ps->p[1])))
        return lex_number(ps, t);
    if (isalpha((unsigned char)c) || c == '_') {
        const char *s = ps->p;
        while (ps->p < ps->end && (isalnum((unsigned char)*ps->p) || *ps->p == '_'))
            ps->p++;
        size_t n = (size_t)(ps->p - s);
        t->str = malloc(n + 1);
        if (!t->str)
            return parse_fail(ps, t->line, t->col, "out of memory");
        memcpy(t->str, s, n);
        t->str[n] = 0;
        t->len = n;
        t->kind = isupper((unsigned char)c) ? TOK_CONST : TOK_IDENT;
        return CT_OK;
    }
    char d[16];
    return parse_fail(ps, t->line, t->col, "unexpected %s", parse_describe_char(c, d, sizeof(d)));
}

static const char *parse_tok_name(const struct shell_tok *t, char *buf, size_t cap)
{
    switch (t->kind) {
    case TOK_EOF:
        return "end of input";
    case TOK_NEWLINE:
        return "end of line";
    case TOK_STR:
        return "string";
    case TOK_INT:
        return "integer";
    case TOK_IDENT:
    case TOK_CONST:
        snprintf(buf, cap, "'%s'", t->str);
        return buf;
    case TOK_ARROW:
        return "'=>'";
    case TOK_COMMA:
        return "','";
    case TOK_LBRACK:
        return "'['";
    case TOK_RBRACK:
        return "']'";
    case TOK_LBRACE:
        return "'{'";
    case TOK_RBRACE:
        return "'}'";
    }
    return "token";
}

static void parse_tok_free(struct shell_tok *t)
{
    free(t->str);
    t->str = NULL;
}

/* Advances to the next token, freeing the current one's string. */
static int parse_advance(struct shell_parser *ps)
{
    parse_tok_free(&ps->tok);
    return lex_next(ps);
}

/* Advances past newlines (inside brackets or after ',' and '=>'); EOF there is incomplete. */
static int parse_advance_blank(struct shell_parser *ps)
{
    if (parse_advance(ps) != CT_OK)
        return ps->rc;
    while (ps->tok.kind == TOK_NEWLINE)
        if (parse_advance(ps) != CT_OK)
            return ps->rc;
    if (ps->tok.kind == TOK_EOF)
        return parse_incomplete(ps);
    return CT_OK;
}

static int parse_unexpected(struct shell_parser *ps, const char *wanted)
{
    char b[64];
    if (ps->tok.kind == TOK_EOF)
        return parse_incomplete(ps);
    return parse_fail(ps, ps->tok.line, ps->tok.col, "unexpected %s%s%s",
                      parse_tok_name(&ps->tok, b, sizeof(b)), wanted ? ", expected " : "",
                      wanted ? wanted : "");
}

/* ---- values ----------------------------------------------------------------------------- */

static void parse_val_free(struct shell_val *v)
{
    free(v->str);
    for (size_t i = 0; i < (v->kind == SHELL_VAL_DICT ? 2 * v->n : v->n); i++)
        parse_val_free(&v->items[i]);
    free(v->items);
    memset(v, 0, sizeof(*v));
}

/* Appends a value to a growable array. */
static int parse_push(struct shell_val **items, size_t *n, size_t *cap, struct shell_val *v)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        struct shell_val *ni = realloc(*items, nc * sizeof(*ni));
        if (!ni)
            return CT_ENOMEM;
        *items = ni;
        *cap = nc;
    }
    (*items)[(*n)++] = *v;
    memset(v, 0, sizeof(*v));
    return CT_OK;
}

static int parse_value(struct shell_parser *ps, struct shell_val *out, int depth);

/* Parses `key => value` pairs into dict (whose items are 2 per pair) until `close` (TOK_RBRACE)
 * or, for an omitted-braces dictionary (close == TOK_EOF), until the end of the statement. The
 * current token is the first key. */
static int parse_pairs(struct shell_parser *ps, struct shell_val *dict, enum shell_tok_kind close,
                       int depth, struct shell_val *first_key)
{
    size_t cap = 0, count = 0;
    for (;;) {
        struct shell_val key = {0};
        if (first_key) {
            key = *first_key; /* already read by the caller, which gives it to us */
            memset(first_key, 0, sizeof(*first_key));
            first_key = NULL;
        } else {
            if (close == TOK_RBRACE && ps->tok.kind == TOK_RBRACE)
                break;
            if (ps->tok.kind != TOK_STR && ps->tok.kind != TOK_CONST) {
                if (ps->tok.kind == TOK_EOF)
                    return parse_incomplete(ps);
                char b[64];
                return parse_fail(ps, ps->tok.line, ps->tok.col,
                                  "unexpected %s, expected a dictionary key (a NAME or a string)",
                                  parse_tok_name(&ps->tok, b, sizeof(b)));
            }
            if (parse_value(ps, &key, depth + 1) != CT_OK)
                return ps->rc;
        }
        if (parse_push(&dict->items, &count, &cap, &key) != CT_OK) {
            parse_val_free(&key);
            return parse_fail(ps, ps->tok.line, ps->tok.col, "out of memory");
        }
        dict->n = count / 2; /* keep the tree freeable: an odd item is freed below */
        if (ps->tok.kind != TOK_ARROW) {
            /* free the dangling key */
            struct shell_val *k = &dict->items[--count];
            int kline = k->line, kcol = k->col;
            parse_val_free(k);
            if (close != TOK_RBRACE && ps->tok.kind != TOK_EOF)
                return parse_fail(ps, kline, kcol,
                                  "expected KEY => value: after a dictionary written without "
                                  "braces only more pairs may follow");
            return parse_unexpected(ps, "'=>'");
        }
        if (parse_advance_blank(ps) != CT_OK) {
            parse_val_free(&dict->items[--count]);
            return ps->rc;
        }
        struct shell_val val = {0};
        if (parse_value(ps, &val, depth + 1) != CT_OK) {
            parse_val_free(&dict->items[--count]);
            return ps->rc;
        }
        if (parse_push(&dict->items, &count, &cap, &val) != CT_OK) {
            parse_val_free(&val);
            parse_val_free(&dict->items[--count]);
            return parse_fail(ps, ps->tok.line, ps->tok.col, "out of memory");
        }
        dict->n = count / 2;
        if (close == TOK_RBRACE)
            while (ps->tok.kind == TOK_NEWLINE)
                if (parse_advance(ps) != CT_OK)
                    return ps->rc;
        if (ps->tok.kind == TOK_COMMA) {
            if (parse_advance_blank(ps) != CT_OK)
                return ps->rc;
            continue;
        }
        if (close == TOK_RBRACE) {
            if (ps->tok.kind != TOK_RBRACE)
                return parse_unexpected(ps, "',' or '}'");
            break;
        }
        /* omitted braces: the statement must end here */
        if (ps->tok.kind != TOK_NEWLINE && ps->tok.kind != TOK_EOF)
            return parse_unexpected(ps, "',' or the end of the command");
        break;
    }
    return CT_OK;
}

/* Parses one value starting at the current token; leaves the token after it current. On
 * failure *out may hold a partial tree (parse_value frees it). */
static int parse_value_inner(struct shell_parser *ps, struct shell_val *out, int depth)
{
    struct shell_tok *t = &ps->tok;
    memset(out, 0, sizeof(*out));
    out->line = t->line;
    out->col = t->col;
    if (depth > 64)
        return parse_fail(ps, t->line, t->col, "nesting too deep");
    switch (t->kind) {
    case TOK_STR:
        out->kind = SHELL_VAL_STR;
        out->str = t->str;
        out->len = t->len;
        t->str = NULL;
        return parse_advance(ps);
    case TOK_INT:
        out->kind = SHELL_VAL_INT;
        out->num = t->num;
        return parse_advance(ps);
    case TOK_CONST:
        out->kind = SHELL_VAL_CONST;
        out->str = t->str;
        out->len = t->len;
        t->str = NULL;
        return parse_advance(ps);
    case TOK_IDENT:
        if (!strcmp(t->str, "true") || !strcmp(t->str, "false")) {
            out->kind = SHELL_VAL_BOOL;
            out->num = t->str[0] == 't';
            return parse_advance(ps);
        }
        if (!strcmp(t->str, "nil")) {
            out->kind = SHELL_VAL_NIL;
            return parse_advance(ps);
        }
        return parse_fail(ps, t->line, t->col, "unexpected '%s' (undefined name)", t->str);
    case TOK_LBRACK: {
        out->kind = SHELL_VAL_ARRAY;
        size_t cap = 0;
        if (parse_advance_blank(ps) != CT_OK)
            return ps->rc;
        while (t->kind != TOK_RBRACK) {
            struct shell_val item;
            if (parse_value(ps, &item, depth + 1) != CT_OK)
                return ps->rc;
            if (parse_push(&out->items, &out->n, &cap, &item) != CT_OK) {
                parse_val_free(&item);
                return parse_fail(ps, t->line, t->col, "out of memory");
            }
            while (t->kind == TOK_NEWLINE)
                if (parse_advance(ps) != CT_OK)
                    return ps->rc;
            if (t->kind == TOK_COMMA) {
                if (parse_advance_blank(ps) != CT_OK)
                    return ps->rc;
                continue;
            }
            if (t->kind != TOK_RBRACK)
                return parse_unexpected(ps, "',' or ']'");
        }
        return parse_advance(ps);
    }
    case TOK_LBRACE:
        out->kind = SHELL_VAL_DICT;
        if (parse_advance_blank(ps) != CT_OK)
            return ps->rc;
        if (parse_pairs(ps, out, TOK_RBRACE, depth, NULL) != CT_OK)
            return ps->rc;
        return parse_advance(ps);
    case TOK_EOF:
        return parse_incomplete(ps);
    default:
        return parse_unexpected(ps, "a value");
    }
}

static int parse_value(struct shell_parser *ps, struct shell_val *out, int depth)
{
    int rc = parse_value_inner(ps, out, depth);
    if (rc != CT_OK)
        parse_val_free(out);
    return rc;
}

/* Parses the arguments of a statement; the current token is the first one. */
static int parse_args(struct shell_parser *ps, struct shell_cmd *cmd)
{
    size_t cap = 0;
    struct shell_tok *t = &ps->tok;
    if (t->kind == TOK_NEWLINE || t->kind == TOK_EOF)
        return CT_OK;
    for (;;) {
        struct shell_val v;
        int line = t->line, col = t->col;
        if (parse_value(ps, &v, 0) != CT_OK)
            return ps->rc;
        if (t->kind == TOK_ARROW) {
            /* the first key of a dictionary written without braces: the rest are pairs */
            if (v.kind != SHELL_VAL_STR && v.kind != SHELL_VAL_CONST) {
                parse_val_free(&v);
                return parse_fail(ps, line, col, "a dictionary key must be a NAME or a string");
            }
            struct shell_val dict = {0};
            dict.kind = SHELL_VAL_DICT;
            dict.line = line;
            dict.col = col;
            if (parse_pairs(ps, &dict, TOK_EOF, 0, &v) != CT_OK) {
                parse_val_free(&v); /* if parse_pairs failed before taking it */
                parse_val_free(&dict);
                return ps->rc;
            }
            if (parse_push(&cmd->args, &cmd->nargs, &cap, &dict) != CT_OK) {
                parse_val_free(&dict);
                return parse_fail(ps, line, col, "out of memory");
            }
            return CT_OK;
        }
        if (parse_push(&cmd->args, &cmd->nargs, &cap, &v) != CT_OK) {
            parse_val_free(&v);
            return parse_fail(ps, line, col, "out of memory");
        }
        if (t->kind == TOK_COMMA) {
            if (parse_advance_blank(ps) != CT_OK)
                return ps->rc;
            continue;
        }
        if (t->kind == TOK_NEWLINE || t->kind == TOK_EOF)
            return CT_OK;
        return parse_unexpected(ps, "',' or the end of the command");
    }
}

static void parse_cmd_free(struct shell_cmd *c)
{
    free(c->name);
    for (size_t i = 0; i < c->nargs; i++)
        parse_val_free(&c->args[i]);
    free(c->args);
    memset(c, 0, sizeof(*c));
}

void shell_prog_free(struct shell_prog *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        parse_cmd_free(&p->cmds[i]);
    free(p->cmds);
    p->cmds = NULL;
    p->n = 0;
}

int shell_parse(const char *text, size_t len, int first_line, struct shell_prog *out,
                struct shell_perr *perr)
{
    struct shell_parser ps = {0};
    ps.p = text;
    ps.end = text + len;
    ps.line = first_line;
    ps.line_start = text;
    ps.perr = perr;
    memset(perr, 0, sizeof(*perr));
    memset(out, 0, sizeof(*out));
    size_t cap = 0;
    if (lex_next(&ps) != CT_OK)
        goto fail;
    for (;;) {
        while (ps.tok.kind == TOK_NEWLINE)
            if (parse_advance(&ps) != CT_OK)
                goto fail;
        if (ps.tok.kind == TOK_EOF)
            break;
        if (ps.tok.kind != TOK_IDENT) {
            char b[64];
            parse_fail(&ps, ps.tok.line, ps.tok.col, "unexpected %s, expected a command name",
                       parse_tok_name(&ps.tok, b, sizeof(b)));
            goto fail;
        }
        struct shell_cmd cmd = {0};
        cmd.name = ps.tok.str;
        cmd.line = ps.tok.line;
        cmd.col = ps.tok.col;
        ps.tok.str = NULL;
        int rc = parse_advance(&ps);
        if (rc == CT_OK)
            rc = parse_args(&ps, &cmd);
        if (rc != CT_OK) {
            parse_cmd_free(&cmd);
            goto fail;
        }
        if (out->n == cap) {
            size_t nc = cap ? cap * 2 : 4;
            struct shell_cmd *nv = realloc(out->cmds, nc * sizeof(*nv));
            if (!nv) {
                parse_cmd_free(&cmd);
                parse_fail(&ps, cmd.line, cmd.col, "out of memory");
                goto fail;
            }
            out->cmds = nv;
            cap = nc;
        }
        out->cmds[out->n++] = cmd;
    }
    parse_tok_free(&ps.tok);
    return CT_OK;
fail:
    parse_tok_free(&ps.tok);
    shell_prog_free(out);
    return ps.rc == CT_OK ? CT_EINVAL : ps.rc;
}

const char *shell_val_kind_name(enum shell_val_kind k)
{
    switch (k) {
    case SHELL_VAL_STR:
        return "a string";
    case SHELL_VAL_INT:
        return "an integer";
    case SHELL_VAL_BOOL:
        return "a boolean";
    case SHELL_VAL_NIL:
        return "nil";
    case SHELL_VAL_CONST:
        return "a constant";
    case SHELL_VAL_ARRAY:
        return "an array";
    case SHELL_VAL_DICT:
        return "a dictionary";
    }
    return "a value";
}
