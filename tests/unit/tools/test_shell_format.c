/* test_shell_format.c - the shell's output forms (docs/shell.md, "Output"): binary strings both
 * ways, TTL display, describe's family line and table attributes, and the argument checks commands
 * make before they touch a store. */
#include <stdlib.h>
#include <string.h>

#include "tests/lib/ctest.h"
#include "tools/shell.h"

static char *format_binary(const void *p, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    shell_fput_binary(f, p, n);
    fclose(f);
    return buf;
}

static void test_binary_form_escapes_all_but_printable_ascii(void **state)
{
    (void)state;
    char *s = format_binary("row1 ~!", 7);
    assert_string_equal(s, "row1 ~!");
    free(s);
    s = format_binary("\x00r\x7f\x80\xff\\\n", 7);
    assert_string_equal(s, "\\x00r\\x7F\\x80\\xFF\\x5C\\x0A");
    free(s);
    s = format_binary("", 0);
    assert_string_equal(s, "");
    free(s);
}

static void test_binary_decode_reads_hex_escapes_either_case(void **state)
{
    (void)state;
    uint8_t out[32];
    size_t n = shell_binary_decode("\\x00r\\xfF\\xAb", 13, out);
    assert_int_equal(n, 4);
    assert_memory_equal(out, "\x00r\xff\xab", 4);
    /* not an escape: copied literally */
    n = shell_binary_decode("a\\xZ1\\x4", 8, out);
    assert_int_equal(n, 8);
    assert_memory_equal(out, "a\\xZ1\\x4", 8);
    /* every byte string survives a round trip through the binary form */
    uint8_t all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    char *s = format_binary(all, 256);
    uint8_t back[256];
    n = shell_binary_decode(s, strlen(s), back);
    assert_int_equal(n, 256);
    assert_memory_equal(back, all, 256);
    free(s);
}

static void test_ttl_display_forms(void **state)
{
    (void)state;
    char b[128];
    shell_format_ttl(WC_TTL_FOREVER, b, sizeof(b));
    assert_string_equal(b, "FOREVER");
    shell_format_ttl(1, b, sizeof(b));
    assert_string_equal(b, "1 SECOND");
    shell_format_ttl(59, b, sizeof(b));
    assert_string_equal(b, "59 SECONDS");
    shell_format_ttl(60, b, sizeof(b));
    assert_string_equal(b, "60 SECONDS (1 MINUTE)");
    shell_format_ttl(18000, b, sizeof(b));
    assert_string_equal(b, "18000 SECONDS (5 HOURS)");
    shell_format_ttl(86400, b, sizeof(b));
    assert_string_equal(b, "86400 SECONDS (1 DAY)");
    shell_format_ttl(90061, b, sizeof(b));
    assert_string_equal(b, "90061 SECONDS (1 DAY 1 HOUR 1 MINUTE 1 SECOND)");
    shell_format_ttl(2 * 86400 + 120 + 5, b, sizeof(b));
    assert_string_equal(b, "172925 SECONDS (2 DAYS 2 MINUTES 5 SECONDS)");
    shell_format_ttl(3600 + 1, b, 12); /* truncates, never overflows */
    assert_int_equal(strlen(b), 11);
}

static char *format_family(const struct wc_family_desc *fd)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    shell_fput_family(f, fd);
    fclose(f);
    return buf;
}

static void test_family_line_lists_every_attribute_in_order(void **state)
{
    (void)state;
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    char *s = format_family(&fd);
    assert_string_equal(s, "{NAME => 'f', BLOOMFILTER => 'ROW', IN_MEMORY => 'false', VERSIONS => "
                           "'1', KEEP_DELETED_CELLS => 'FALSE', DATA_BLOCK_ENCODING => 'NONE', "
                           "COMPRESSION => 'NONE', TTL => 'FOREVER', MIN_VERSIONS => '0', "
                           "BLOCKCACHE => 'true', BLOCKSIZE => '65536', REPLICATION_SCOPE => "
                           "'0'}");
    free(s);
    wc_family_desc_init(&fd, "colfam1");
    fd.versions = 5;
    fd.min_versions = 1;
    fd.ttl_s = 18000;
    fd.compression = WC_COMPRESSION_SNAPPY;
    fd.bloom = WC_BLOOM_ROWCOL;
    fd.in_memory = true;
    fd.blockcache = false;
    fd.keep_deleted = WC_KEEP_DELETED_TTL;
    fd.encoding = WC_ENCODING_FAST_DIFF;
    fd.blocksize = 4096;
    s = format_family(&fd);
    assert_string_equal(s, "{NAME => 'colfam1', BLOOMFILTER => 'ROWCOL', IN_MEMORY => 'true', "
                           "VERSIONS => '5', KEEP_DELETED_CELLS => 'TTL', DATA_BLOCK_ENCODING => "
                           "'FAST_DIFF', COMPRESSION => 'SNAPPY', TTL => '18000 SECONDS (5 "
                           "HOURS)', MIN_VERSIONS => '1', BLOCKCACHE => 'false', BLOCKSIZE => "
                           "'4096', REPLICATION_SCOPE => '0'}");
    free(s);
}

static void test_table_attributes_show_only_non_defaults_sorted(void **state)
{
    (void)state;
    struct wc_table_desc d;
    wc_table_desc_init(&d, "t");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    shell_fput_table_attributes(f, &d);
    fflush(f);
    assert_int_equal(len, 0);
    d.readonly = true;
    d.max_filesize = 1048576;
    d.durability = WC_DURABILITY_ASYNC_WAL;
    d.compaction_enabled = false;
    shell_fput_table_attributes(f, &d);
    fclose(f);
    assert_string_equal(buf, ", {TABLE_ATTRIBUTES => {COMPACTION_ENABLED => 'false', DURABILITY "
                             "=> 'ASYNC_WAL', MAX_FILESIZE => '1048576', READONLY => 'true'}}");
    free(buf);
}

/* Runs a one-command script on a shell whose store is never opened (the data directory does not
 * matter: these commands fail their argument checks first). Returns stderr's text. */
static char *run_script(const char *text, int *status, bool silent)
{
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(&obuf, &olen), *errf = open_memstream(&ebuf, &elen);
    struct shell_options o = {0};
    o.backend = WC_BACKEND_EMBEDDED;
    o.data_dir = "/nonexistent/ctsdb-shell-test";
    o.out = out;
    o.err = errf;
    struct shell *sh;
    struct ct_err err = {0};
    assert_int_equal(shell_new(&o, &sh, &err), CT_OK);
    *status = shell_run_text(sh, text, strlen(text));
    shell_free(sh);
    fclose(out);
    fclose(errf);
    if (silent)
        assert_int_equal(olen, 0); /* a failed command prints nothing on stdout */
    else
        assert_non_null(strstr(obuf, "Took "));
    free(obuf);
    return ebuf;
}

static void expect_error(const char *script, const char *needle)
{
    int status;
    char *e = run_script(script, &status, true);
    assert_int_equal(status, 1);
    if (strncmp(e, "ERROR: ", 7) || !strstr(e, needle))
        fail_msg("[%s]: stderr [%s] lacks [%s]", script, e, needle);
    free(e);
}

static void test_commands_check_arguments_before_the_store(void **state)
{
    (void)state;
    expect_error("create 't'", "at least one column family");
    expect_error("create 't', {NAME => 'f', BLOOMFILTER => 'BOGUS'}",
                 "BLOOMFILTER must be one of NONE, ROW, ROWCOL (got 'BOGUS')");
    expect_error("create 't', {NAME => 'f', COMPRESSION => 'LZMA9'}",
                 "COMPRESSION must be one of NONE, SNAPPY, GZ");
    expect_error("create 't', {NAME => 'f', VERSIONS => 1, MIN_VERSIONS => 2}",
                 "MIN_VERSIONS (2) must be <= VERSIONS (1)");
    expect_error("create 't', {NAME => 'f', BLOCKSIZE => 100}", "BLOCKSIZE must be between");
    expect_error("create 't', {NAME => 'f', TTL => 0}", "TTL must be > 0");
    expect_error("create 't', {NAME => 'f', TTL => '-5'}", "TTL must be > 0");
    expect_error("create 't', {NAME => 'f', VERSIONS => 'x'}", "VERSIONS must be an integer");
    expect_error("create 't', {NAME => 'f', BOGUS => 1}", "unknown column family attribute BOGUS");
    expect_error("create 't', 'f', {FOO => 1}", "unknown table attribute FOO");
    expect_error("create 't', 'f', NUMREGIONS => 4", "NUMREGIONS needs SPLITALGO");
    expect_error("create 't', 'f', SPLITALGO => 'HexStringSplit'", "SPLITALGO needs NUMREGIONS");
    expect_error("create 't', 'f', NUMREGIONS => 1, SPLITALGO => 'HexStringSplit'",
                 "NUMREGIONS must be at least 2");
    expect_error("create 't', 'f', NUMREGIONS => 3, SPLITALGO => 'Nope'",
                 "SPLITALGO must be HexStringSplit or UniformSplit");
    expect_error("create 't', 'f', SPLITS => ['a', '']", "split keys must not be empty");
    expect_error("create 't', 'f', SPLITS => ['b', 'a', '\\x62']", "split key 'b' is given twice");
    expect_error("create 't', {NAME => 'a:b'}", "illegal character");
    expect_error("create 'bad name', 'f'", "illegal character ' '");
    expect_error("put 't', 'r', 'f:q'", "wrong arguments for 'put'");
    expect_error("put 't', 'r', 'f:q', 'v', -1", "timestamp must be >= 0");
    expect_error("get 't', 'r', {COLUMN => 'f', TIMERANGE => [5, 1]}", "above max");
    expect_error("get 't', 'r', {BOGUS => 1}", "unknown option BOGUS");
    expect_error("scan 't', {FILTER => \"ValueFilter(=, 'x')\"}", "unsupported filter ValueFilter");
    expect_error("scan 't', {FILTER => \"PrefixFilter('a') OR PrefixFilter('b')\"}",
                 "OR is not supported");
    expect_error("scan 't', {FILTER => \"ColumnRangeFilter('a', yes, 'c', false)\"}",
                 "expected true or false");
    expect_error("scan 't', {LIMIT => -1}", "LIMIT must be >= 0");
    expect_error("scan 't', 'r'", "wrong arguments for 'scan'");
    expect_error("count 't', {INTERVAL => 0}", "INTERVAL must be >= 1");
    expect_error("status 'verbose'", "'summary', 'simple' or 'detailed'");
    expect_error("nosuchcommand 't'", "unknown command 'nosuchcommand'");
    expect_error("incr 't', 'r', 'f'", "needs a column 'family:qualifier'");
    expect_error("delete 't', 'r'", "wrong arguments for 'delete'");
    expect_error("list 'a(', 'b'", "wrong arguments for 'list'");
    expect_error("list '('", "bad regular expression");
}

static void test_script_stops_at_first_error_with_caret(void **state)
{
    (void)state;
    int status;
    char *e = run_script("help\n\ncreate 't', (1..9).map{|i| i}\nhelp\n", &status, false);
    assert_int_equal(status, 1);
    assert_string_equal(e, "ERROR: syntax error at line 3, column 13: unexpected '('\n"
                           "create 't', (1..9).map{|i| i}\n"
                           "            ^\n");
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary_form_escapes_all_but_printable_ascii),
        cmocka_unit_test(test_binary_decode_reads_hex_escapes_either_case),
        cmocka_unit_test(test_ttl_display_forms),
        cmocka_unit_test(test_family_line_lists_every_attribute_in_order),
        cmocka_unit_test(test_table_attributes_show_only_non_defaults_sorted),
        cmocka_unit_test(test_commands_check_arguments_before_the_store),
        cmocka_unit_test(test_script_stops_at_first_error_with_caret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
