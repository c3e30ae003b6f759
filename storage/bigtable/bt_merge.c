/* bt_merge.c - the ReadRows chunk merger (see bt_merge.h).
 *
 * States: NEW_ROW (the next chunk must start a row: key, family and qualifier set), ROW (the next
 * chunk starts a new cell of the current row, or resets it), CELL (the current cell's value
 * continues). The row in progress lives in `cur` (its bytes) and `cur_cells` (offsets into
 * `cur`); a commit copies it to the `out` queue, so a row in progress survives queue resets.
 *
 * Invariants: (1) every offset in cur_cells points into cur, every offset in out_cells and
 * out_rows into out; (2) popped <= nrows; (3) last_key holds the key of the last committed row,
 * and committed keys are strictly ordered in the read direction; (4) after an error `broken` is
 * set and every later feed fails. Not thread-safe: one scanner owns one merger. */
#include "storage/bigtable/bt_merge.h"

#include <stdlib.h>
#include <string.h>

#include "storage/bigtable/bt_buf.h"

enum bt_merge_state {
    BT_MERGE_NEW_ROW = 0,
    BT_MERGE_ROW = 1,
    BT_MERGE_CELL = 2,
};

/* A cell held as offsets into a buffer. */
struct bt_mcell {
    size_t fam_off, fam_len;
    size_t qual_off, qual_len;
    size_t val_off, val_len;
    size_t label_off, label_len;
    int64_t ts_us;
};

struct bt_mrow {
    size_t key_off, key_len;
    size_t first_cell, ncells;
};

struct bt_merge {
    bool reversed;
    bool broken;
    enum bt_merge_state state;
    /* row in progress */
    struct bt_buf cur;
    size_t cur_key_len; /* the key is at offset 0 of cur */
    struct bt_mcell *cur_cells;
    size_t cur_n, cur_cap;
    /* family and qualifier of the previous cell (offsets into cur) */
    bool have_col;
    /* committed rows waiting to be popped */
    struct bt_buf out;
    struct bt_mcell *out_cells;
    size_t out_ncells, out_cells_cap;
    struct bt_mrow *out_rows;
    size_t nrows, rows_cap, popped;
    /* what pop hands out */
    struct bt_cell *pop_cells;
    size_t pop_cap;
    struct bt_buf last_key;
    bool have_last;
    uint64_t committed;
};

int bt_merge_new(bool reversed, struct bt_merge **out, struct ct_err *err)
{
    struct bt_merge *m = calloc(1, sizeof(*m));
    if (!m)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating a row merger");
    m->reversed = reversed;
    *out = m;
    return CT_OK;
}

void bt_merge_free(struct bt_merge *m)
{
    if (!m)
        return;
    bt_buf_free(&m->cur);
    free(m->cur_cells);
    bt_buf_free(&m->out);
    free(m->out_cells);
    free(m->out_rows);
    free(m->pop_cells);
    bt_buf_free(&m->last_key);
    free(m);
}

static int bt_merge_fail(struct bt_merge *m, struct ct_err *err, const char *why)
{
    m->broken = true;
    return ct_err_set(err, CT_ECORRUPT, "invalid ReadRows stream: %s", why);
}

static int bt_merge_oom(struct bt_merge *m, struct ct_err *err)
{
    m->broken = true;
    return ct_err_set(err, CT_ENOMEM, "out of memory assembling a row");
}

static int bt_bytes_cmp(struct wc_bytes a, struct wc_bytes b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.data, b.data, n) : 0;
    if (c)
        return c;
    return a.len < b.len ? -1 : a.len > b.len;
}

static void bt_merge_drop_row(struct bt_merge *m)
{
    m->cur.len = 0;
    m->cur_key_len = 0;
    m->cur_n = 0;
    m->have_col = false;
    m->state = BT_MERGE_NEW_ROW;
}

static int bt_merge_commit(struct bt_merge *m, struct ct_err *err)
{
    if (bt_grow((void **)&m->out_rows, &m->rows_cap, m->nrows + 1, sizeof(*m->out_rows)) ||
        bt_grow((void **)&m->out_cells, &m->out_cells_cap, m->out_ncells + m->cur_n,
                sizeof(*m->out_cells)))
        return bt_merge_oom(m, err);
    size_t base = bt_buf_append(&m->out, m->cur.p, m->cur.len);
    if (base == SIZE_MAX)
        return bt_merge_oom(m, err);
    struct bt_mrow *r = &m->out_rows[m->nrows++];
    r->key_off = base;
    r->key_len = m->cur_key_len;
    r->first_cell = m->out_ncells;
    r->ncells = m->cur_n;
    for (size_t i = 0; i < m->cur_n; i++) {
        struct bt_mcell c = m->cur_cells[i];
        c.fam_off += base;
        c.qual_off += base;
        c.val_off += base;
        c.label_off += base;
        m->out_cells[m->out_ncells++] = c;
    }
    m->last_key.len = 0;
    if (bt_buf_append(&m->last_key, m->cur.p, m->cur_key_len) == SIZE_MAX)
        return bt_merge_oom(m, err);
    m->have_last = true;
    m->committed++;
    bt_merge_drop_row(m);
    return CT_OK;
}

/* A reset chunk must carry nothing but the flag. */
static bool bt_chunk_is_bare_reset(const struct bt_chunk *c)
{
    return c->reset_row && c->row_key.len == 0 && !c->has_family && !c->has_qualifier &&
           c->ts_us == 0 && c->nlabels == 0 && c->value.len == 0 && c->value_size == 0;
}

static int bt_merge_start_cell(struct bt_merge *m, const struct bt_chunk *c, struct ct_err *err)
{
    if (bt_grow((void **)&m->cur_cells, &m->cur_cap, m->cur_n + 1, sizeof(*m->cur_cells)))
        return bt_merge_oom(m, err);
    struct bt_mcell cell;
    memset(&cell, 0, sizeof(cell));
    if (c->has_family) {
        cell.fam_off = bt_buf_append(&m->cur, c->family.data, c->family.len);
        cell.fam_len = c->family.len;
    } else {
        const struct bt_mcell *prev = &m->cur_cells[m->cur_n - 1];
        cell.fam_off = prev->fam_off;
        cell.fam_len = prev->fam_len;
    }
    if (c->has_qualifier) {
        cell.qual_off = bt_buf_append(&m->cur, c->qualifier.data, c->qualifier.len);
        cell.qual_len = c->qualifier.len;
    } else {
        const struct bt_mcell *prev = &m->cur_cells[m->cur_n - 1];
        cell.qual_off = prev->qual_off;
        cell.qual_len = prev->qual_len;
    }
    cell.label_off = bt_buf_append(&m->cur, c->label.data, c->label.len);
    cell.label_len = c->label.len;
    if (c->value_size > 0 && bt_buf_reserve(&m->cur, (size_t)c->value_size) != 0)
        return bt_merge_oom(m, err);
    cell.val_off = bt_buf_append(&m->cur, c->value.data, c->value.len);
    cell.val_len = c->value.len;
    cell.ts_us = c->ts_us;
    if (cell.fam_off == SIZE_MAX || cell.qual_off == SIZE_MAX || cell.label_off == SIZE_MAX ||
        cell.val_off == SIZE_MAX)
        return bt_merge_oom(m, err);
    m->cur_cells[m->cur_n++] = cell;
    m->have_col = true;
    m->state = c->value_size > 0 ? BT_MERGE_CELL : BT_MERGE_ROW;
    return CT_OK;
}

int bt_merge_feed(struct bt_merge *m, const struct bt_chunk *c, struct ct_err *err)
{
    if (m->broken)
        return ct_err_set(err, CT_ECORRUPT, "invalid ReadRows stream: already broken");
    if (m->popped == m->nrows) { /* every queued row was handed out: reuse the queue */
        m->out.len = 0;
        m->out_ncells = 0;
        m->nrows = m->popped = 0;
    }
    if (c->reset_row && c->commit_row)
        return bt_merge_fail(m, err, "chunk both resets and commits");
    if (c->reset_row) {
        if (m->state == BT_MERGE_NEW_ROW)
            return bt_merge_fail(m, err, "reset_row without a row in progress");
        if (!bt_chunk_is_bare_reset(c))
            return bt_merge_fail(m, err, "reset_row chunk carries data");
        bt_merge_drop_row(m);
        return CT_OK;
    }
    switch (m->state) {
    case BT_MERGE_NEW_ROW: {
        if (c->row_key.len == 0)
            return bt_merge_fail(m, err, "a new row must start with its key");
        if (!c->has_family || !c->has_qualifier)
            return bt_merge_fail(m, err, "a new row must name its family and qualifier");
        if (m->have_last) {
            int cmp = bt_bytes_cmp(c->row_key, wc_bytes_of(m->last_key.p, m->last_key.len));
            if (m->reversed ? cmp >= 0 : cmp <= 0)
                return bt_merge_fail(m, err, "row keys out of order or repeated");
        }
        m->cur.len = 0;
        if (bt_buf_append(&m->cur, c->row_key.data, c->row_key.len) == SIZE_MAX)
            return bt_merge_oom(m, err);
        m->cur_key_len = c->row_key.len;
        m->cur_n = 0;
        int rc = bt_merge_start_cell(m, c, err);
        if (rc != CT_OK)
            return rc;
        break;
    }
    case BT_MERGE_ROW: {
        if (c->row_key.len && bt_bytes_cmp(c->row_key, wc_bytes_of(m->cur.p, m->cur_key_len)) != 0)
            return bt_merge_fail(m, err, "new row key before the previous row was committed");
        if (c->has_family && !c->has_qualifier)
            return bt_merge_fail(m, err, "a new family must come with a qualifier");
        int rc = bt_merge_start_cell(m, c, err);
        if (rc != CT_OK)
            return rc;
        break;
    }
    case BT_MERGE_CELL: {
        if (c->row_key.len || c->has_family || c->has_qualifier || c->ts_us != 0 || c->nlabels)
            return bt_merge_fail(m, err, "a split value's continuation names a new cell");
        struct bt_mcell *cell = &m->cur_cells[m->cur_n - 1];
        /* the value is the last thing appended to cur, so it grows in place */
        if (cell->val_off + cell->val_len != m->cur.len)
            return bt_merge_fail(m, err, "internal: split value is not at the end");
        if (bt_buf_append(&m->cur, c->value.data, c->value.len) == SIZE_MAX)
            return bt_merge_oom(m, err);
        cell->val_len += c->value.len;
        m->state = c->value_size > 0 ? BT_MERGE_CELL : BT_MERGE_ROW;
        break;
    }
    }
    if (c->commit_row) {
        if (m->state == BT_MERGE_CELL)
            return bt_merge_fail(m, err, "commit_row inside a split value");
        return bt_merge_commit(m, err);
    }
    return CT_OK;
}

int bt_merge_finish(struct bt_merge *m, struct ct_err *err)
{
    if (m->broken)
        return ct_err_set(err, CT_ECORRUPT, "invalid ReadRows stream: already broken");
    if (m->state != BT_MERGE_NEW_ROW)
        return bt_merge_fail(m, err, "stream ended inside an uncommitted row");
    return CT_OK;
}

void bt_merge_restart(struct bt_merge *m)
{
    bt_merge_drop_row(m);
    m->broken = false;
}

int bt_merge_pop(struct bt_merge *m, struct wc_bytes *key, const struct bt_cell **cells,
                 size_t *ncells)
{
    if (m->popped == m->nrows)
        return CT_NOTFOUND;
    const struct bt_mrow *r = &m->out_rows[m->popped++];
    if (bt_grow((void **)&m->pop_cells, &m->pop_cap, r->ncells ? r->ncells : 1,
                sizeof(*m->pop_cells))) {
        m->popped--;
        return CT_ENOMEM;
    }
    const uint8_t *b = m->out.p;
    for (size_t i = 0; i < r->ncells; i++) {
        const struct bt_mcell *c = &m->out_cells[r->first_cell + i];
        struct bt_cell *o = &m->pop_cells[i];
        o->family = wc_bytes_of(b + c->fam_off, c->fam_len);
        o->qualifier = wc_bytes_of(b + c->qual_off, c->qual_len);
        o->value = wc_bytes_of(b + c->val_off, c->val_len);
        o->label = wc_bytes_of(b + c->label_off, c->label_len);
        o->ts_us = c->ts_us;
    }
    *key = wc_bytes_of(b + r->key_off, r->key_len);
    *cells = m->pop_cells;
    *ncells = r->ncells;
    return CT_OK;
}

bool bt_merge_idle(const struct bt_merge *m)
{
    return m->state == BT_MERGE_NEW_ROW;
}

size_t bt_merge_pending(const struct bt_merge *m)
{
    return m->nrows - m->popped;
}

struct wc_bytes bt_merge_last_key(const struct bt_merge *m)
{
    return wc_bytes_of(m->last_key.p, m->have_last ? m->last_key.len : 0);
}

uint64_t bt_merge_committed(const struct bt_merge *m)
{
    return m->committed;
}
