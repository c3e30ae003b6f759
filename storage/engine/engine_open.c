/* engine_open.c - placeholder entry of the embedded engine until storage/engine/ lands: opening
 * an embedded store fails with a clear error. Replaced by the engine's store.c. */
#include "storage/wc_backend.h"

int engine_store_open(const struct wc_options *o, struct wc_store **out, struct ct_err *err)
{
    (void)o;
    (void)out;
    return ct_err_set(err, CT_EUNSUPPORTED, "the embedded engine is not built yet");
}
