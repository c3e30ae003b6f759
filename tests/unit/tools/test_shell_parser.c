/* test_shell_parser.c - the shell's lexer and parser (docs/shell.md, "Syntax"): strings and their
 * escapes, integers, booleans, arrays, dictionaries, omitted braces of a final dictionary,
 * multi-line continuation, comments, and syntax errors with their line and column. */
#include <stdlib.h>
#include <string.h>

#include "tests/lib/ctest.h"
#include "tools/shell.h"

/* Parses text that must parse; fails the test otherwise. */
static void parse_ok(const char *text, struct shell_prog *p)
{
    struct shell_perr pe;
    int rc = shell_parse(text, strlen(text), 1, p, &pe);
    if (rc != CT_OK)
        fail_msg("parse of [%s] failed (%d) at %d:%d: %s", text, rc, pe.line, pe.col, pe.msg);
}

static void parse_err(const char *text, int line, int col, const char *needle)
{
    struct shell_prog p;
    struct shell_perr pe;
    int rc = shell_parse(text, strlen(text), 1, &p, &pe);
    assert_int_equal(rc, CT_EINVAL);
    assert_int_equal(p.n, 0);
    if (pe.line != line || pe.col != col || !strstr(pe.msg, needle))
        fail_msg("[%s]: got %d:%d '%s', want %d:%d '%s'", text, pe.line, pe.col, pe.msg, line, col,
                 needle);
}

static void test_parse_command_with_string_int_and_bool_args(void **state)
{
    (void)state;
    struct shell_prog p;
    parse_ok("put 't1', 'row1', 'f:q', 'v', 1234\nscan 't', {REVERSED => true, LIMIT => -1}", &p);
    assert_int_equal(p.n, 2);
    struct shell_cmd *c = &p.cmds[0];
    assert_string_equal(c->name, "put");
    assert_int_equal(c->nargs, 5);
    assert_int_equal(c->args[0].kind, SHELL_VAL_STR);
    assert_string_equal(c->args[2].str, "f:q");
    assert_int_equal(c->args[4].kind, SHELL_VAL_INT);
    assert_int_equal(c->args[4].num, 1234);
    assert_int_equal(c->args[1].line, 1);
    assert_int_equal(c->args[1].col, 11);
    c = &p.cmds[1];
    assert_int_equal(c->line, 2);
    assert_int_equal(c->nargs, 2);
    assert_int_equal(c->args[1].kind, SHELL_VAL_DICT);
    assert_int_equal(c->args[1].n, 2);
    assert_int_equal(c->args[1].items[0].kind, SHELL_VAL_CONST);
    assert_string_equal(c->args[1].items[0].str, "REVERSED");
    assert_int_equal(c->args[1].items[1].kind, SHELL_VAL_BOOL);
    assert_int_equal(c->args[1].items[1].num, 1);
    assert_int_equal(c->args[1].items[3].num, -1);
    shell_prog_free(&p);
}

static void test_single_quotes_know_only_backslash_and_quote_escapes(void **state)
{
    (void)state;
    struct shell_prog p;
    parse_ok("get 'a\\'b', 'c\\\\d', '\\x00r\\n'", &p);
    struct shell_cmd *c = &p.cmds[0];
    assert_string_equal(c->args[0].str, "a'b");
    assert_string_equal(c->args[1].str, "c\\d");
    /* \x and \n stay literal inside single quotes */
    assert_int_equal(c->args[2].len, 7);
    assert_memory_equal(c->args[2].str, "\\x00r\\n", 7);
    shell_prog_free(&p);
}

static void test_double_quotes_decode_hex_and_control_escapes(void **state)
{
    (void)state;
    struct shell_prog p;
    parse_ok("put \"\\x00r\", \"a\\tb\\n\", \"\\\\\\\"\", \"\\xfF\\0\\r\"", &p);
    struct shell_cmd *c = &p.cmds[0];
    assert_int_equal(c->args[0].len, 2);
    assert_memory_equal(c->args[0].str, "\0r", 2);
    assert_string_equal(c->args[1].str, "a\tb\n");
    assert_string_equal(c->args[2].str, "\\\"");
    assert_int_equal(c->args[3].len, 3);
    assert_memory_equal(c->args[3].str, "\xff\0\r", 3);
    shell_prog_free(&p);
}

static void test_omitted_braces_make_one_final_dictionary(void **state)
{
    (void)state;
    struct shell_prog p;
    parse_ok("create 't', 'f', SPLITS => ['m', 'n'], MAX_FILESIZE => '1024'", &p);
    struct shell_cmd *c = &p.cmds[0];
    assert_int_equal(c->nargs, 3);
    struct shell_val *d = &c->args[2];
    assert_int_equal(d->kind, SHELL_VAL_DICT);
    assert_int_equal(d->n, 2);
    assert_string_equal(d->items[0].str, "SPLITS");
    assert_int_equal(d->items[1].kind, SHELL_VAL_ARRAY);
    assert_int_equal(d->items[1].n, 2);
    assert_string_equal(d->items[1].items[1].str, "n");
    assert_string_equal(d->items[2].str, "MAX_FILESIZE");
    assert_string_equal(d->items[3].str, "1024");
    shell_prog_free(&p);
    /* a string key starts one too: alter 't', 'delete' => 'f' */
    parse_ok("alter 't', 'delete' => 'f'", &p);
    assert_int_equal(p.cmds[0].nargs, 2);
    assert_int_equal(p.cmds[0].args[1].kind, SHELL_VAL_DICT);
    assert_int_equal(p.cmds[0].args[1].items[0].kind, SHELL_VAL_STR);
    assert_string_equal(p.cmds[0].args[1].items[0].str, "delete");
    shell_prog_free(&p);
}

static void test_hbase_guide_examples_parse_verbatim(void **state)
{
    (void)state;
    struct shell_prog p;
    parse_ok("create 'test', { NAME => 'info', COMPRESSION => 'snappy' }, {NUMREGIONS => 9, "
             "SPLITALGO => 'HexStringSplit'}",
             &p);
    assert_int_equal(p.cmds[0].nargs, 3);
    assert_int_equal(p.cmds[0].args[2].n, 2);
    assert_int_equal(p.cmds[0].args[2].items[1].num, 9);
    shell_prog_free(&p);
    parse_ok("create 'mytable', { NAME => 'colfam1', VERSIONS => 5, MIN_VERSIONS => '1', "
             "TTL => '18000' }",
             &p);
    assert_int_equal(p.cmds[0].args[1].n, 4);
    assert_string_equal(p.cmds[0].args[1].items[7].str, "18000");
    shell_prog_free(&p);
    parse_ok("scan 'hbase:meta', {FILTER => \"ColumnRangeFilter('a', true, 'c', false)\"}", &p);
    assert_string_equal(p.cmds[0].args[1].items[1].str, "ColumnRangeFilter('a', true, 'c', false)");
    shell_prog_free(&p);
}

static void test_comments_blank_lines_and_semicolons(void **state)
{
    (void)state;
    struct shell_prog p;
    parse_ok("# a comment\n\n  list   # trailing comment\nput 't','r#1','f','x'; exists 't'\n", &p);
    assert_int_equal(p.n, 3);
    assert_string_equal(p.cmds[0].name, "list");
    assert_int_equal(p.cmds[0].nargs, 0);
    assert_int_equal(p.cmds[0].line, 3);
    assert_string_equal(p.cmds[1].args[1].str, "r#1"); /* '#' inside a string is data */
    assert_string_equal(p.cmds[2].name, "exists");
    shell_prog_free(&p);
    parse_ok("", &p);
    assert_int_equal(p.n, 0);
    shell_prog_free(&p);
}

static void test_open_brackets_and_trailing_comma_ask_for_more(void **state)
{
    (void)state;
    const char *partial[] = {"create 't', {NAME => 'f',\n", "create 't', 'f', SPLITS => [\n",
                             "put 't', 'r',\n", "create 't', {NAME =>\n", "scan 't', {\n"};
    for (size_t i = 0; i < sizeof(partial) / sizeof(partial[0]); i++) {
        struct shell_prog p;
        struct shell_perr pe;
        assert_int_equal(shell_parse(partial[i], strlen(partial[i]), 1, &p, &pe),
                         SHELL_PARSE_INCOMPLETE);
        assert_int_equal(p.n, 0);
    }
    struct shell_prog p;
    parse_ok("create 't', {NAME => 'f',\n   VERSIONS => 3\n}, SPLITS => [\n'a',\n'b'\n]\nlist", &p);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.cmds[0].args[1].n, 2);
    assert_int_equal(p.cmds[0].args[1].items[3].line, 2);
    assert_int_equal(p.cmds[0].args[1].items[3].col, 16);
    assert_int_equal(p.cmds[0].args[2].items[1].n, 2);
    assert_int_equal(p.cmds[1].line, 7);
    shell_prog_free(&p);
}

static void test_syntax_errors_name_line_and_column(void **state)
{
    (void)state;
    parse_err("create 't', (1..9).map{|i| i}", 1, 13, "unexpected '('");
    parse_err("list\nput 't' 'r'", 2, 9, "unexpected string");
    parse_err("put 't', 'r", 1, 10, "unterminated string");
    parse_err("put \"a\\qb\"", 1, 7, "unknown escape");
    parse_err("put \"\\xZZ\"", 1, 6, "hex escape");
    parse_err("get 't', foo", 1, 10, "'foo'");
    parse_err("get 't', 1.5", 1, 10, "floating-point");
    parse_err("get 't', 99999999999999999999", 1, 10, "out of range");
    parse_err("'t'", 1, 1, "expected a command name");
    parse_err("scan 't', {LIMIT 3}", 1, 18, "expected '=>'");
    parse_err("scan 't', {1 => 3}", 1, 12, "dictionary key");
    parse_err("scan 't', [1 2]", 1, 14, "expected ',' or ']'");
    parse_err("create 't', SPLITS => ['a'], 'f'\n", 1, 30, "only more pairs");
    parse_err("get 't', 'r' }", 1, 14, "unexpected '}'");
    parse_err("create 't', {NAME => 'f'\n  VERSIONS => 1}", 2, 3, "expected ',' or '}'");
}

static void test_nesting_depth_is_bounded(void **state)
{
    (void)state;
    char deep[400];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof(deep), "get ");
    for (int i = 0; i < 100; i++)
        deep[n++] = '[';
    deep[n] = 0;
    struct shell_prog p;
    struct shell_perr pe;
    assert_int_equal(shell_parse(deep, n, 1, &p, &pe), CT_EINVAL);
    assert_non_null(strstr(pe.msg, "nesting"));
}

static void test_first_line_number_offsets_positions(void **state)
{
    (void)state;
    struct shell_prog p;
    struct shell_perr pe;
    assert_int_equal(shell_parse("list\nget (", 10, 41, &p, &pe), CT_EINVAL);
    assert_int_equal(pe.line, 42);
    assert_int_equal(pe.col, 5);
}

/* Byte mutations of valid commands (a fixed seed, bounded count) never crash the parser, and every
 * failure names a position inside the text. Run under ASan this also checks memory use. */
static void test_mutated_input_fails_cleanly_at_a_position_inside_it(void **state)
{
    (void)state;
    static const char *const seeds[] = {
        "create 'test', { NAME => 'info', COMPRESSION => 'snappy' }, {NUMREGIONS => 9, "
        "SPLITALGO => 'HexStringSplit'}",
        "scan 't', {STARTROW => \"\\x00r\", COLUMNS => ['f:a', 'g'], FILTER => "
        "\"PrefixFilter('r')\"}",
        "alter 't', 'delete' => 'f'; put 't', 'r', 'f:q', 'v', 12\nget 't', 'r', [\n'f:q',\n]",
    };
    const char alphabet[] = "'\"\\[]{},=>#;\n x0-:aZ_";
    unsigned seed = 12345;
    for (int iter = 0; iter < 20000; iter++) {
        const char *src = seeds[iter % 3];
        char buf[256];
        size_t n = strlen(src);
        memcpy(buf, src, n);
        int edits = 1 + iter % 4;
        for (int e = 0; e < edits; e++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % n;
            seed = seed * 1103515245u + 12345u;
            int op = (int)((seed >> 8) % 3);
            seed = seed * 1103515245u + 12345u;
            char c = alphabet[(seed >> 8) % (sizeof(alphabet) - 1)];
            if (op == 0) {
                buf[at] = c;
            } else if (op == 1 && n + 1 < sizeof(buf)) {
                memmove(buf + at + 1, buf + at, n - at);
                buf[at] = c;
                n++;
            } else if (n > 1) {
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
            }
        }
        struct shell_prog p;
        struct shell_perr pe;
        int rc = shell_parse(buf, n, 1, &p, &pe);
        assert_true(rc == CT_OK || rc == CT_EINVAL || rc == SHELL_PARSE_INCOMPLETE);
        if (rc == CT_OK) {
            shell_prog_free(&p);
            continue;
        }
        assert_int_equal(p.n, 0);
        assert_true(pe.line >= 1 && pe.line <= 1 + (int)n);
        assert_true(pe.col >= 1 && pe.col <= (int)n + 1);
        assert_true(pe.msg[0] != 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_command_with_string_int_and_bool_args),
        cmocka_unit_test(test_single_quotes_know_only_backslash_and_quote_escapes),
        cmocka_unit_test(test_double_quotes_decode_hex_and_control_escapes),
        cmocka_unit_test(test_omitted_braces_make_one_final_dictionary),
        cmocka_unit_test(test_hbase_guide_examples_parse_verbatim),
        cmocka_unit_test(test_comments_blank_lines_and_semicolons),
        cmocka_unit_test(test_open_brackets_and_trailing_comma_ask_for_more),
        cmocka_unit_test(test_syntax_errors_name_line_and_column),
        cmocka_unit_test(test_nesting_depth_is_bounded),
        cmocka_unit_test(test_first_line_number_offsets_positions),
        cmocka_unit_test(test_mutated_input_fails_cleanly_at_a_position_inside_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
