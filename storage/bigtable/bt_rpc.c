/* bt_rpc.c - the gRPC C-core call driver (see bt_rpc.h).
 *
 * A call is three batches on its own pluck completion queue: (1) SEND_INITIAL_METADATA +
 * SEND_MESSAGE + SEND_CLOSE_FROM_CLIENT + RECV_INITIAL_METADATA, (2) RECV_STATUS_ON_CLIENT,
 * (3) one RECV_MESSAGE at a time. Each batch's tag is the address of its `pending` flag.
 *
 * Invariants: (1) a batch is started only when its flag is clear, and its flag is cleared only
 * by plucking its tag, so bt_call_free() can wait for exactly what is outstanding; (2) the
 * message handed out by bt_call_recv() is `cur` (a slice we hold) until the next recv or free;
 * (3) gRPC is initialised once per bt_rpc (grpc_init/grpc_shutdown are reference counted).
 * Locking: none needed; a call is used by one thread, channels are thread-safe. */
#include "storage/bigtable/bt_rpc.h"

#include <errno.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/clock.h"
#include "storage/wc.h"

#define BT_RPC_MAX_MD         8
#define BT_RPC_MAX_RECV_BYTES (256 << 20)

struct bt_rpc {
    grpc_channel *data;
    grpc_channel *admin; /* may equal data */
    grpc_channel_credentials *creds;
    atomic_bool interrupted; /* bt_rpc_interrupt: calls are cancelled, new ones refused */
};

struct bt_call {
    struct bt_rpc *r;
    bool cancelled; /* cancelled by bt_rpc_interrupt */
    grpc_call *call;
    grpc_completion_queue *cq;
    char method[128];
    grpc_metadata md[BT_RPC_MAX_MD];
    size_t nmd;
    grpc_byte_buffer *send;
    grpc_metadata_array init_md;
    grpc_metadata_array trail_md;
    grpc_status_code status;
    grpc_slice details;
    grpc_byte_buffer *recv;
    grpc_slice cur;
    bool have_cur;
    /* batch tags: non-zero while the batch is outstanding */
    char send_pending;
    char status_pending;
    char recv_pending;
};

static char *bt_read_whole_file(const char *path, struct ct_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        ct_err_errno(err, CT_EIO, errno, "cannot open service-account key %s", path);
        return NULL;
    }
    struct bt_buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        if (bt_buf_append(&b, chunk, n) == SIZE_MAX) {
            fclose(f);
            bt_buf_free(&b);
            ct_err_set(err, CT_ENOMEM, "out of memory reading %s", path);
            return NULL;
        }
    fclose(f);
    if (bt_buf_append(&b, "", 1) == SIZE_MAX) {
        bt_buf_free(&b);
        ct_err_set(err, CT_ENOMEM, "out of memory reading %s", path);
        return NULL;
    }
    return (char *)b.p;
}

/* Reconnect backoff of the channels. gRPC's defaults (1 s, growing 1.6x to 120 s) made a TSD
 * whose backend was away for a few seconds wait 7-16 s more after the backend returned: the
 * calls waited (wait-for-ready) for a reconnect attempt that the backoff had put far off. With
 * these the channel tries again at most BT_RPC_RECONNECT_MAX_MS (+-20% jitter) after its last
 * failed attempt, so calls resume within about half a second of the backend's return; a backend
 * that stays away costs one connection attempt per half second. */
#define BT_RPC_RECONNECT_INITIAL_MS 100
#define BT_RPC_RECONNECT_MAX_MS     500

static grpc_channel *bt_channel_new(const char *target, grpc_channel_credentials *creds)
{
    grpc_arg args[3];
    args[0].type = GRPC_ARG_INTEGER;
    args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
    args[0].value.integer = BT_RPC_MAX_RECV_BYTES;
    args[1].type = GRPC_ARG_INTEGER;
    args[1].key = (char *)GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS;
    args[1].value.integer = BT_RPC_RECONNECT_INITIAL_MS;
    args[2].type = GRPC_ARG_INTEGER;
    args[2].key = (char *)GRPC_ARG_MAX_RECONNECT_BACKOFF_MS;
    args[2].value.integer = BT_RPC_RECONNECT_MAX_MS;
    grpc_channel_args ca = {3, args};
    return grpc_channel_create(target, creds, &ca);
}

int bt_rpc_open(const struct bt_rpc_options *o, struct bt_rpc **out, struct ct_err *err)
{
    struct bt_rpc *r = calloc(1, sizeof(*r));
    if (!r)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating a grpc client");
    grpc_init();
    if (o->insecure) {
        r->creds = grpc_insecure_credentials_create();
    } else if (o->sa_key_path && *o->sa_key_path) {
        char *json = bt_read_whole_file(o->sa_key_path, err);
        if (!json)
            goto fail;
        grpc_call_credentials *jwt = grpc_service_account_jwt_access_credentials_create(
            json, grpc_max_auth_token_lifetime(), NULL);
        free(json);
        if (!jwt) {
            ct_err_set(err, CT_EINVAL, "service-account key %s is not a valid JSON key",
                       o->sa_key_path);
            goto fail;
        }
        grpc_channel_credentials *ssl = grpc_ssl_credentials_create(NULL, NULL, NULL, NULL);
        r->creds = ssl ? grpc_composite_channel_credentials_create(ssl, jwt, NULL) : NULL;
        if (ssl)
            grpc_channel_credentials_release(ssl);
        grpc_call_credentials_release(jwt);
    } else {
        r->creds = grpc_google_default_credentials_create(NULL);
        if (!r->creds) {
            ct_err_set(err, CT_EINVAL,
                       "no Application Default Credentials found (set "
                       "GOOGLE_APPLICATION_CREDENTIALS or give a service-account key)");
            goto fail;
        }
    }
    if (!r->creds) {
        ct_err_set(err, CT_EIO, "cannot create grpc channel credentials");
        goto fail;
    }
    r->data = bt_channel_new(o->data_target, r->creds);
    if (o->admin_target && strcmp(o->admin_target, o->data_target) != 0)
        r->admin = bt_channel_new(o->admin_target, r->creds);
    else
        r->admin = r->data;
    if (!r->data || !r->admin) {
        ct_err_set(err, CT_EIO, "cannot create grpc channel to %s", o->data_target);
        goto fail;
    }
    *out = r;
    return CT_OK;
fail:
    bt_rpc_close(r);
    return err->code;
}

void bt_rpc_close(struct bt_rpc *r)
{
    if (!r)
        return;
    if (r->admin && r->admin != r->data)
        grpc_channel_destroy(r->admin);
    if (r->data)
        grpc_channel_destroy(r->data);
    if (r->creds)
        grpc_channel_credentials_release(r->creds);
    free(r);
    grpc_shutdown_blocking();
}

int64_t bt_request_ms(int64_t ms)
{
    uint64_t d = wc_request_deadline();
    if (!d)
        return ms;
    uint64_t now = clock_mono_ns();
    if (now >= d)
        return -1;
    int64_t left = (int64_t)((d - now + 999999u) / 1000000u);
    return ms <= 0 || left < ms ? left : ms;
}

static gpr_timespec bt_deadline(int64_t ms)
{
    if (ms <= 0)
        return gpr_inf_future(GPR_CLOCK_MONOTONIC);
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

/* Waits for one outstanding batch (REQUIRES: its flag set). Returns false on timeout. */
#define BT_INTERRUPT_POLL_MS 50 /* how often a waiting call looks at bt_rpc_interrupt */

void bt_rpc_interrupt(struct bt_rpc *r)
{
    if (r)
        atomic_store(&r->interrupted, true);
}

/* Waits for one outstanding batch (REQUIRES: its flag set), in slices so that an interrupt
 * cancels the call (then the batch completes at once, without a message or with CANCELLED).
 * Returns false on timeout. */
static bool bt_call_wait(struct bt_call *c, char *tag, gpr_timespec deadline)
{
    for (;;) {
        gpr_timespec slice = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                          gpr_time_from_millis(BT_INTERRUPT_POLL_MS, GPR_TIMESPAN));
        bool last = gpr_time_cmp(deadline, slice) <= 0;
        grpc_event ev = grpc_completion_queue_pluck(c->cq, tag, last ? deadline : slice, NULL);
        if (ev.type != GRPC_QUEUE_TIMEOUT) {
            *tag = 0;
            return true;
        }
        if (last)
            return false;
        if (!c->cancelled && atomic_load(&c->r->interrupted)) {
            c->cancelled = true;
            grpc_call_cancel(c->call, NULL);
        }
    }
}

int bt_call_start(struct bt_rpc *r, enum bt_channel ch, const char *method, const struct bt_md *md,
                  size_t nmd, const void *req, size_t reqlen, int64_t deadline_ms,
                  struct bt_call **out, struct ct_err *err)
{
    if (nmd > BT_RPC_MAX_MD)
        return ct_err_set(err, CT_EINVAL, "too many request headers (%zu)", nmd);
    if (atomic_load(&r->interrupted))
        return ct_err_set(err, CT_ECLOSED, "%s: not sent: the store is shutting down", method);
    /* the request's deadline (wc_request_deadline) bounds the call too */
    deadline_ms = bt_request_ms(deadline_ms);
    if (deadline_ms < 0)
        return ct_err_set(err, CT_EUNAVAIL,
                          "%s: not sent: the request's deadline passed (Bigtable did not answer "
                          "its earlier calls in time)",
                          method);
    struct bt_call *c = calloc(1, sizeof(*c));
    if (!c)
        return ct_err_set(err, CT_ENOMEM, "out of memory starting %s", method);
    c->r = r;
    snprintf(c->method, sizeof(c->method), "%s", method);
    grpc_metadata_array_init(&c->init_md);
    grpc_metadata_array_init(&c->trail_md);
    c->details = grpc_empty_slice();
    c->cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_slice msl = grpc_slice_from_copied_string(method);
    c->call = grpc_channel_create_call(ch == BT_CHANNEL_ADMIN ? r->admin : r->data, NULL,
                                       GRPC_PROPAGATE_DEFAULTS, c->cq, msl, NULL,
                                       bt_deadline(deadline_ms), NULL);
    grpc_slice_unref(msl);
    if (!c->call) {
        bt_call_free(c);
        return ct_err_set(err, CT_EIO, "cannot create grpc call %s", method);
    }
    for (size_t i = 0; i < nmd; i++) {
        c->md[i].key = grpc_slice_from_copied_string(md[i].key);
        c->md[i].value = grpc_slice_from_copied_string(md[i].value);
    }
    c->nmd = nmd;
    grpc_slice body = grpc_slice_from_copied_buffer(req, reqlen);
    c->send = grpc_raw_byte_buffer_create(&body, 1);
    grpc_slice_unref(body);

    grpc_op ops[4];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    /* while the channel reconnects (after the backend restarted), the call waits for it within
     * its deadline instead of failing at once with UNAVAILABLE during gRPC's backoff */
    ops[0].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY;
    ops[0].data.send_initial_metadata.count = c->nmd;
    ops[0].data.send_initial_metadata.metadata = c->md;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = c->send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &c->init_md;
    if (grpc_call_start_batch(c->call, ops, 4, &c->send_pending, NULL) != GRPC_CALL_OK) {
        bt_call_free(c);
        return ct_err_set(err, CT_EIO, "cannot start grpc call %s", method);
    }
    c->send_pending = 1;
    grpc_op st;
    memset(&st, 0, sizeof(st));
    st.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    st.data.recv_status_on_client.trailing_metadata = &c->trail_md;
    st.data.recv_status_on_client.status = &c->status;
    st.data.recv_status_on_client.status_details = &c->details;
    if (grpc_call_start_batch(c->call, &st, 1, &c->status_pending, NULL) != GRPC_CALL_OK) {
        bt_call_free(c);
        return ct_err_set(err, CT_EIO, "cannot start grpc call %s", method);
    }
    c->status_pending = 1;
    *out = c;
    return CT_OK;
}

static void bt_call_drop_cur(struct bt_call *c)
{
    if (c->have_cur) {
        grpc_slice_unref(c->cur);
        c->have_cur = false;
    }
}

int bt_call_recv(struct bt_call *c, int64_t wait_ms, struct wc_bytes *msg, struct ct_err *err)
{
    bt_call_drop_cur(c);
    if (!c->recv_pending) {
        grpc_op op;
        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &c->recv;
        c->recv = NULL;
        if (grpc_call_start_batch(c->call, &op, 1, &c->recv_pending, NULL) != GRPC_CALL_OK)
            return ct_err_set(err, CT_EIO, "%s: cannot receive a message", c->method);
        c->recv_pending = 1;
    }
    int64_t w = bt_request_ms(wait_ms); /* within the request's deadline */
    if (w != wait_ms)
        wait_ms = w > 0 ? w : 1;
    if (!bt_call_wait(c, &c->recv_pending, bt_deadline(wait_ms))) {
        grpc_call_cancel(c->call, NULL);
        bt_call_wait(c, &c->recv_pending, gpr_inf_future(GPR_CLOCK_MONOTONIC));
        if (c->recv)
            grpc_byte_buffer_destroy(c->recv);
        c->recv = NULL;
        return ct_err_set(err, CT_EUNAVAIL, "%s: no answer from Bigtable within %lld ms", c->method,
                          (long long)wait_ms);
    }
    if (c->cancelled) {
        if (c->recv)
            grpc_byte_buffer_destroy(c->recv);
        c->recv = NULL;
        return ct_err_set(err, CT_ECLOSED, "%s: cancelled: the store is shutting down", c->method);
    }
    if (!c->recv)
        return CT_NOTFOUND;
    grpc_byte_buffer_reader reader;
    if (!grpc_byte_buffer_reader_init(&reader, c->recv)) {
        grpc_byte_buffer_destroy(c->recv);
        c->recv = NULL;
        return ct_err_set(err, CT_ECORRUPT, "%s: cannot decompress a message", c->method);
    }
    c->cur = grpc_byte_buffer_reader_readall(&reader);
    c->have_cur = true;
    grpc_byte_buffer_reader_destroy(&reader);
    grpc_byte_buffer_destroy(c->recv);
    c->recv = NULL;
    *msg = wc_bytes_of(GRPC_SLICE_START_PTR(c->cur), GRPC_SLICE_LENGTH(c->cur));
    return CT_OK;
}

const char *bt_rpc_code_name(int code)
{
    static const char *names[] = {
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    };
    return code >= 0 && code < (int)(sizeof(names) / sizeof(names[0])) ? names[code] : "UNKNOWN";
}

int bt_rpc_code(int code)
{
    switch (code) {
    case 0:
        return CT_OK;
    case 5:
        return CT_NOTFOUND;
    case 6:
        return CT_EEXIST;
    case 3:
    case 9:
    case 11:
        return CT_EINVAL;
    case 4:
    case 14:
        return CT_EUNAVAIL;
    case 12:
        return CT_EUNSUPPORTED;
    case 8:
        return CT_ELIMIT;
    default:
        return CT_EIO;
    }
}

bool bt_rpc_retryable(int code, const char *details)
{
    if (bt_request_ms(0) < 0) /* the request's deadline passed: no time for another attempt */
        return false;
    if (code == BT_GRPC_UNAVAILABLE || code == BT_GRPC_ABORTED || code == BT_GRPC_DEADLINE_EXCEEDED)
        return true;
    /* a stream reset by the peer or a proxy surfaces as INTERNAL */
    return code == BT_GRPC_INTERNAL && details &&
           (strstr(details, "RST_STREAM") || strstr(details, "Rst Stream") ||
            strstr(details, "stream reset"));
}

int bt_call_finish(struct bt_call *c, int *grpc_code, struct ct_err *err)
{
    bt_call_drop_cur(c);
    gpr_timespec inf = gpr_inf_future(GPR_CLOCK_MONOTONIC);
    if (c->recv_pending) { /* the caller stopped reading: end the call */
        grpc_call_cancel(c->call, NULL);
        bt_call_wait(c, &c->recv_pending, inf);
        if (c->recv)
            grpc_byte_buffer_destroy(c->recv);
        c->recv = NULL;
    }
    if (c->send_pending)
        bt_call_wait(c, &c->send_pending, inf);
    if (c->status_pending)
        bt_call_wait(c, &c->status_pending, inf);
    if (grpc_code)
        *grpc_code = (int)c->status;
    if (c->status == GRPC_STATUS_OK)
        return CT_OK;
    if (c->cancelled)
        return ct_err_set(err, CT_ECLOSED, "%s: cancelled: the store is shutting down", c->method);
    if (c->status == GRPC_STATUS_NOT_FOUND &&
        !strncmp(c->method, BT_RPC_DATA_PREFIX, strlen(BT_RPC_DATA_PREFIX)))
        /* a data call names a table: NOT_FOUND means the table is missing (never a row's
         * absence, which is an empty answer), a failure of the store, not a normal outcome */
        return ct_err_set(err, CT_EIO, "table missing in Bigtable: %s: NOT_FOUND: %.*s", c->method,
                          (int)GRPC_SLICE_LENGTH(c->details),
                          (const char *)GRPC_SLICE_START_PTR(c->details));
    return ct_err_set(err, bt_rpc_code((int)c->status), "%s: %s: %.*s", c->method,
                      bt_rpc_code_name((int)c->status), (int)GRPC_SLICE_LENGTH(c->details),
                      (const char *)GRPC_SLICE_START_PTR(c->details));
}

void bt_call_free(struct bt_call *c)
{
    if (!c)
        return;
    bt_call_drop_cur(c);
    gpr_timespec inf = gpr_inf_future(GPR_CLOCK_MONOTONIC);
    if (c->call && (c->recv_pending || c->status_pending))
        grpc_call_cancel(c->call, NULL);
    if (c->recv_pending)
        bt_call_wait(c, &c->recv_pending, inf);
    if (c->recv)
        grpc_byte_buffer_destroy(c->recv);
    if (c->send_pending)
        bt_call_wait(c, &c->send_pending, inf);
    if (c->status_pending)
        bt_call_wait(c, &c->status_pending, inf);
    if (c->call)
        grpc_call_unref(c->call);
    if (c->send)
        grpc_byte_buffer_destroy(c->send);
    for (size_t i = 0; i < c->nmd; i++) {
        grpc_slice_unref(c->md[i].key);
        grpc_slice_unref(c->md[i].value);
    }
    grpc_metadata_array_destroy(&c->init_md);
    grpc_metadata_array_destroy(&c->trail_md);
    grpc_slice_unref(c->details);
    if (c->cq) {
        grpc_completion_queue_shutdown(c->cq);
        while (grpc_completion_queue_pluck(c->cq, NULL, inf, NULL).type != GRPC_QUEUE_SHUTDOWN) {
        }
        grpc_completion_queue_destroy(c->cq);
    }
    free(c);
}

int bt_rpc_unary(struct bt_rpc *r, enum bt_channel ch, const char *method, const struct bt_md *md,
                 size_t nmd, const void *req, size_t reqlen, int64_t deadline_ms,
                 struct bt_buf *resp, int *grpc_code, struct ct_err *err)
{
    struct bt_call *c;
    int rc = bt_call_start(r, ch, method, md, nmd, req, reqlen, deadline_ms, &c, err);
    if (rc != CT_OK) {
        if (grpc_code) /* never sent: no gRPC status; not retryable */
            *grpc_code = BT_GRPC_CANCELLED;
        return rc;
    }
    resp->len = 0;
    struct wc_bytes msg;
    rc = bt_call_recv(c, 0, &msg, err);
    if (rc == CT_OK && bt_buf_append(resp, msg.data, msg.len) == SIZE_MAX) {
        bt_call_free(c);
        return ct_err_set(err, CT_ENOMEM, "%s: out of memory for the answer", method);
    }
    if (rc == CT_OK || rc == CT_NOTFOUND) {
        rc = bt_call_finish(c, grpc_code, err);
    } else if (grpc_code) { /* no answer in time (retryable), or interrupted (not) */
        *grpc_code = rc == CT_ECLOSED ? BT_GRPC_CANCELLED : BT_GRPC_DEADLINE_EXCEEDED;
    }
    bt_call_free(c);
    return rc;
}
