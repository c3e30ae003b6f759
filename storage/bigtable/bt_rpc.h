/* bt_rpc.h - a minimal gRPC client over gRPC's C core: channels to the Bigtable data and admin
 * endpoints and one call driver for unary and server-streaming methods.
 *
 * A call sends its one request message with the initial metadata and half-closes at once, then
 * receives messages until the stream ends, then the status. Messages are opaque bytes (the
 * protobuf-c encoding is the caller's). Each call has its own completion queue, so calls may run
 * from any thread and several may be in flight at once. Internal to storage/bigtable/. */
#ifndef CT_BT_RPC_H
#define CT_BT_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/bigtable/bt_buf.h"
#include "storage/ct_err.h"
#include "storage/wc.h"

/* gRPC status codes used by callers (the values are gRPC's). */
enum {
    BT_GRPC_OK = 0,
    BT_GRPC_CANCELLED = 1,
    BT_GRPC_INVALID_ARGUMENT = 3,
    BT_GRPC_DEADLINE_EXCEEDED = 4,
    BT_GRPC_NOT_FOUND = 5,
    BT_GRPC_ALREADY_EXISTS = 6,
    BT_GRPC_FAILED_PRECONDITION = 9,
    BT_GRPC_ABORTED = 10,
    BT_GRPC_UNIMPLEMENTED = 12,
    BT_GRPC_INTERNAL = 13,
    BT_GRPC_UNAVAILABLE = 14,
};

/* The method prefix of the data API (whose NOT_FOUND means a missing table). */
#define BT_RPC_DATA_PREFIX "/google.bigtable.v2.Bigtable/"

enum bt_channel {
    BT_CHANNEL_DATA = 0,
    BT_CHANNEL_ADMIN = 1,
};

struct bt_rpc_options {
    const char *data_target;  /* gRPC target: host:port or unix:/path */
    const char *admin_target; /* may equal data_target */
    bool insecure;            /* plaintext (the emulator); else TLS with call credentials */
    const char *sa_key_path;  /* service-account JSON key (JWT access); NULL = ADC */
};

struct bt_rpc; /* opaque */

/* Initialises gRPC and opens the channels (connections are made lazily, on the first call).
 * Returns a new client in *out, closed with bt_rpc_close(). */
CT_MUST_CHECK int bt_rpc_open(const struct bt_rpc_options *o, struct bt_rpc **out,
                              struct ct_err *err);
/* Every call must be freed first; accepts NULL. */
void bt_rpc_close(struct bt_rpc *r);
/* Cancels every call in flight (within BT_INTERRUPT_POLL_MS; they end with CT_ECLOSED) and
 * refuses new ones (CT_ECLOSED): the shutdown of a process whose backend may not answer. Any
 * thread; accepts NULL. */
void bt_rpc_interrupt(struct bt_rpc *r);

/* A request header. */
struct bt_md {
    const char *key; /* lower case */
    const char *value;
};

struct bt_call; /* opaque */

/* Starts `method` ("/package.Service/Method") with the request bytes and headers (all copied).
 * deadline_ms > 0 bounds the whole call; 0 = no call deadline (streams bound each message with
 * bt_call_recv's wait instead). Returns a new call in *out, freed with bt_call_free(). */
CT_MUST_CHECK int bt_call_start(struct bt_rpc *r, enum bt_channel ch, const char *method,
                                const struct bt_md *md, size_t nmd, const void *req, size_t reqlen,
                                int64_t deadline_ms, struct bt_call **out, struct ct_err *err);
/* Receives the next response message: CT_OK with its bytes in *msg (valid until the next recv or
 * free), CT_NOTFOUND at the end of the stream (then call bt_call_finish), CT_ETIMEOUT when none
 * arrived within wait_ms (> 0; the call is then cancelled; CT_EUNAVAIL). Every wait and call
 * deadline is clipped to the calling thread's request deadline (wc_request_deadline); a call
 * started after it passed fails at once with CT_EUNAVAIL. */
CT_MUST_CHECK int bt_call_recv(struct bt_call *c, int64_t wait_ms, struct wc_bytes *msg,
                               struct ct_err *err);
/* Waits for the call's status. Returns CT_OK if it is OK, else the mapped ct code (see
 * bt_rpc_code()) with "<method>: <status name>: <details>" in err. The gRPC code goes to
 * *grpc_code when not NULL. */
CT_MUST_CHECK int bt_call_finish(struct bt_call *c, int *grpc_code, struct ct_err *err);
/* Cancels the call if it is still running, waits for what is outstanding and frees it; accepts
 * NULL. */
void bt_call_free(struct bt_call *c);

/* Runs a unary call: the response bytes replace resp's contents. Returns as bt_call_finish. */
CT_MUST_CHECK int bt_rpc_unary(struct bt_rpc *r, enum bt_channel ch, const char *method,
                               const struct bt_md *md, size_t nmd, const void *req, size_t reqlen,
                               int64_t deadline_ms, struct bt_buf *resp, int *grpc_code,
                               struct ct_err *err);

/* The ct code for a gRPC status: NOT_FOUND -> CT_NOTFOUND (bt_call_finish: CT_EIO "table
 * missing" for a data-API call), ALREADY_EXISTS -> CT_EEXIST, INVALID_ARGUMENT/
 * FAILED_PRECONDITION/OUT_OF_RANGE -> CT_EINVAL, DEADLINE_EXCEEDED and UNAVAILABLE ->
 * CT_EUNAVAIL, UNIMPLEMENTED -> CT_EUNSUPPORTED, RESOURCE_EXHAUSTED -> CT_ELIMIT, others CT_EIO. */
int bt_rpc_code(int grpc_code);
/* Whether a failed call may be retried when the operation is idempotent (UNAVAILABLE, ABORTED,
 * DEADLINE_EXCEEDED of one attempt, and INTERNAL stream resets), never once the calling
 * thread's request deadline has passed. */
bool bt_rpc_retryable(int grpc_code, const char *details);
/* ms (0 = unbounded) clipped to what remains of the calling thread's request deadline
 * (wc_request_deadline): ms when there is none, -1 once it has passed. */
int64_t bt_request_ms(int64_t ms);
/* The gRPC name of a status code ("UNAVAILABLE"). */
const char *bt_rpc_code_name(int grpc_code);

#endif
